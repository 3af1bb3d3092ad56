"""Validation throughput next to generation, at scale 1 and scale 10.

Builds each bundle in-process (like `orgseed build --no-prefect`), then validates it `--repeat` times and
reports the fastest run. Target: validating a bundle takes no longer than generating it.

    .venv/bin/python benchmarks/bench_validate.py [--scales 1 10] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
from pathlib import Path

from flows.build import BuildOptions, build_bundle
from generator.pipeline import LocalExecutor
from validators.run import validate_bundle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", default="crmarena")
    parser.add_argument("--keep", type=Path, help="build the bundles here instead of a temporary folder")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {platform.python_version()}, profile {args.profile}")
    header = (
        f"{'scale':>6} {'records':>9} {'generate s':>11} {'gen rec/s':>10} {'validate s':>11} "
        f"{'val rec/s':>10} {'val/gen':>8}   validate steps (s)"
    )
    print(header)
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for scale in args.scales:
            out = base / f"{args.profile}-x{scale:g}"
            opts = BuildOptions(profile=args.profile, scale=scale, out=str(out), force=True, engine="local")
            build = asyncio.run(build_bundle(opts, LocalExecutor()))
            runs = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                report = validate_bundle(out)
                runs.append((time.perf_counter() - t, report))
            seconds, report = min(runs, key=lambda r: r[0])
            steps = " ".join(f"{k}={v:.2f}" for k, v in report.timings.items() if k != "total")
            print(
                f"{scale:>6g} {report.records:>9,} {build.generation_seconds:>11.2f} "
                f"{build.records / build.generation_seconds:>10,.0f} {seconds:>11.2f} "
                f"{report.records / seconds:>10,.0f} {seconds / build.generation_seconds:>8.2f}   {steps}"
            )
            print(
                f"{'':>6} findings: {report.errors} errors, {report.warnings} warnings, {report.fatal} fatal"
            )


if __name__ == "__main__":
    main()
