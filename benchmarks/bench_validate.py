"""Validation throughput next to generation, at scale 1 and scale 10.

For each scale the bundle is built once (`orgseed build --no-prefect --per-task 0`: tasks are not part of
what `validate` checks). Then generation alone (as in bench_build.py: synthesis, text writing and
near-duplicate rewriting, nothing written) and validation of the bundle from disk are each timed in fresh
processes, alternating generate/validate `--repeat` times so that a slow spell of the machine hits both; the
fastest run of each is reported, with the ratio. Target: validating takes no longer than generating.

    .venv/bin/python benchmarks/bench_validate.py [--scales 1 10] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_build import REPO, run_child

VALIDATE = r"""
import json, sys, time
from pathlib import Path
from validators.run import validate_bundle
t = time.perf_counter()
report = validate_bundle(Path(sys.argv[1]))
seconds = time.perf_counter() - t
print(json.dumps({"seconds": seconds, "records": report.records, "timings": report.timings,
                  "errors": report.errors, "warnings": report.warnings, "fatal": report.fatal}))
"""


def validate_child(bundle: Path) -> dict[str, object]:
    res = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(bundle)], cwd=REPO, capture_output=True, text=True
    )
    if res.returncode != 0:
        raise SystemExit(f"validating {bundle} failed:\n{res.stderr[-3000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def build(profile: str, scale: float, out: Path) -> None:
    cmd = [sys.executable, "-m", "flows.cli", "build", "--no-prefect", "--profile", profile]
    cmd += ["--scale", str(scale), "--out", str(out), "--force", "--per-task", "0"]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"building {out} failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", default="crmarena")
    parser.add_argument("--keep", type=Path, help="build the bundles here instead of a temporary folder")
    args = parser.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"profile {args.profile}, seed 0, offline writer; best of {args.repeat} fresh processes each")  # fmt: skip
    print(
        f"{'scale':>6} {'records':>9} {'generate s':>11} {'gen rec/s':>10} {'validate s':>11} "
        f"{'val rec/s':>10} {'val/gen':>8}   validate steps (s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for scale in args.scales:
            out = base / f"{args.profile}-x{scale:g}"
            build(args.profile, scale, out)
            gens, vals = [], []
            for i in range(args.repeat):
                gens.append(run_child("generate", scale, base / f"gen-{scale:g}-{i}"))
                vals.append(validate_child(out))
            gen = min(gens, key=lambda r: r["seconds"])
            val = min(vals, key=lambda r: float(str(r["seconds"])))
            gen_s, val_s, records = (
                float(gen["seconds"]),
                float(str(val["seconds"])),
                int(str(val["records"])),
            )
            timings = val["timings"]
            assert isinstance(timings, dict)
            steps = " ".join(f"{k}={v:.2f}" for k, v in timings.items() if k != "total")
            print(
                f"{scale:>6g} {records:>9,} {gen_s:>11.2f} {gen['records'] / gen_s:>10,.0f} {val_s:>11.2f} "
                f"{records / val_s:>10,.0f} {val_s / gen_s:>8.2f}   {steps}"
            )
            print(
                f"{'':>6} findings: {val['errors']} errors, {val['warnings']} warnings, {val['fatal']} fatal"
            )
    print(f"finished {time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
