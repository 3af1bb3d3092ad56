"""Validation throughput next to generation, at scale 1 and scale 10.

Each of `--repeat` rounds runs three fresh processes in turn, so that a slow spell of the machine hits all
of them: `orgseed build --no-prefect --per-task 0` (tasks are not part of what `validate` checks), whose
manifest gives the generation time as the build reports it: synthesis, text, near-duplicate rewriting and
writing the CSVs; generation alone as in bench_build.py (the same without writing anything); and
`validate_bundle` on the bundle just built (reading and parsing the CSVs, then every check). The fastest run
of each is reported. Target: validating a bundle takes no longer than generating it; the ratio is given
against both generation figures, since validation reads the files that generation writes.

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
from typing import Any

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


def validate_child(bundle: Path) -> dict[str, Any]:
    res = subprocess.run(
        [sys.executable, "-c", VALIDATE, str(bundle)], cwd=REPO, capture_output=True, text=True
    )
    if res.returncode != 0:
        raise SystemExit(f"validating {bundle} failed:\n{res.stderr[-3000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def build(profile: str, scale: float, out: Path) -> float:
    """Build the bundle in a fresh process; the generation seconds its manifest reports."""
    cmd = [sys.executable, "-m", "flows.cli", "build", "--no-prefect", "--profile", profile]
    cmd += ["--scale", str(scale), "--out", str(out), "--force", "--per-task", "0"]
    res = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"building {out} failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return float(json.loads((out / "manifest.json").read_text())["timings"]["generation_seconds"])


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
        f"{'scale':>6} {'records':>9} {'gen+write':>10} {'gen alone':>10} {'validate s':>11} {'val rec/s':>10} "
        f"{'val/g+w':>9} {'val/gen':>9}   validate steps (s)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for scale in args.scales:
            out = base / f"{args.profile}-x{scale:g}"
            builds, gens, vals = [], [], []
            for i in range(args.repeat):
                builds.append(build(args.profile, scale, out))
                gens.append(float(run_child("generate", scale, base / f"gen-{scale:g}-{i}")["seconds"]))
                vals.append(validate_child(out))
            val = min(vals, key=lambda r: float(r["seconds"]))
            build_s, gen_s = min(builds), min(gens)
            val_s, records = float(val["seconds"]), int(val["records"])
            steps = " ".join(f"{k}={v:.2f}" for k, v in val["timings"].items() if k != "total")
            print(
                f"{scale:>6g} {records:>9,} {build_s:>10.2f} {gen_s:>10.2f} {val_s:>11.2f} {records / val_s:>10,.0f} "
                f"{val_s / build_s:>9.2f} {val_s / gen_s:>9.2f}   {steps}"
            )
            print(
                f"{'':>6} findings: {val['errors']} errors, {val['warnings']} warnings, {val['fatal']} fatal"
            )
    print(f"finished {time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
