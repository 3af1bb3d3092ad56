"""Build throughput and memory, printed as a table.

    .venv/bin/python benchmarks/bench_build.py [--scales 1 10] [--repeat 3] [--no-prefect-runs]

For each scale, in a fresh process each (so peak memory is per run):
- generation alone: synthesis + text writing + near-duplicate rewriting, in-process, nothing written to disk
  (`generator.pipeline.generate` with a no-op persist). Best of --repeat runs.
- build in-process: `orgseed build --no-prefect` (adds CSV writing, latent files, validation, the 1,170 task
  instances and both independent re-derivations of their answers, the manifest).
- build with Prefect: `orgseed build` (Prefect flow, one task per object × shard, thread runner), wall time of
  the whole command including Prefect's start-up; records/s is also given net of start-up
  (total − generation-step time is reported as overhead).
Records = all rows of all 16 objects. Peak memory = the process's maximum resident set size.
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

REPO = Path(__file__).resolve().parent.parent

CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
mode, scale, out = sys.argv[1], float(sys.argv[2]), Path(sys.argv[3])
if mode == "generate":
    from generator.pipeline import LocalExecutor, RunContext, RunSpec, generate, make_context
    from schemas.profile import load_profile
    run = RunSpec(profile=str(load_profile("crmarena").path), seed=0, scale=scale)
    rows = {}
    t = time.perf_counter()
    rc = RunContext(out, run, make_context(run))
    asyncio.run(generate(rc, LocalExecutor(), 1, lambda name, frame, fill: rows.__setitem__(name, len(frame))))
    seconds = time.perf_counter() - t
    records = sum(rows.values())
else:
    from flows.options import BuildOptions
    from flows.run import run_build
    opts = BuildOptions(profile="crmarena", scale=scale, out=str(out), force=True,
                        engine="local" if mode == "local" else "prefect", shards=2 if mode == "prefect" else 1,
                        per_task=None if scale >= 0.5 else 0)  # a tiny warm-up org cannot hold 130 tasks
    t = time.perf_counter()
    report = run_build(opts)
    seconds = time.perf_counter() - t
    records = report.records
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"seconds": seconds, "records": records, "peak_mb": peak}))
"""


def run_child(mode: str, scale: float, out: Path) -> dict[str, float]:
    env = {**os.environ, "PREFECT_HOME": str(out.parent / "prefect-home")}
    res = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(scale), str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
    )
    if res.returncode != 0:
        raise SystemExit(f"{mode} at scale {scale} failed:\n{res.stderr[-3000:]}")
    return dict(json.loads(res.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scales", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-prefect-runs", action="store_true")
    args = ap.parse_args()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
          f"profile crmarena, seed 0, offline writer")  # fmt: skip
    print(f"{'scale':>6} {'mode':<22} {'records':>9} {'seconds':>8} {'records/s':>11} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        if not args.no_prefect_runs:  # warm Prefect's home once so runs measure a warm start
            run_child("prefect", 0.05, base / "warm")
        for scale in args.scales:
            modes = ["generate", "local"] + ([] if args.no_prefect_runs else ["prefect"])
            for mode in modes:
                runs = [
                    run_child(mode, scale, base / f"{mode}-{scale}-{i}")
                    for i in range(args.repeat if mode == "generate" else 1)
                ]
                best = min(runs, key=lambda r: r["seconds"])
                label = {
                    "generate": "generation alone",
                    "local": "build in-process",
                    "prefect": "build with Prefect",
                }[mode]
                print(f"{scale:>6g} {label:<22} {int(best['records']):>9,} {best['seconds']:>8.2f} "
                      f"{best['records'] / best['seconds']:>11,.0f} {max(r['peak_mb'] for r in runs):>8.0f}")  # fmt: skip
    print(f"finished {time.strftime('%Y-%m-%d %H:%M')}")


if __name__ == "__main__":
    main()
