"""Task-set quality and cost, per task.

    .venv/bin/python benchmarks/bench_tasks.py [--scale 1] [--seed 0] [--per-task 130]

Builds a bundle in-process (no Prefect), then prints for each task: instance count, the share of None answers,
the share of the most common answer (the score of the majority-answer baseline on exact-match tasks), the number
of distinct answers, and the median margin between the winner and the runner-up (minutes for handle time,
counts for counts, seconds for region closure times). Also the time to build and to independently re-check
all instances.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flows.build import BuildOptions, build_bundle
from generator.pipeline import LocalExecutor
from validators.tasks import check_tasks


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-task", type=int, default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "b"
        opts = BuildOptions(
            scale=args.scale, seed=args.seed, out=str(root), engine="local", per_task=args.per_task
        )
        report = asyncio.run(build_bundle(opts, LocalExecutor()))
        t = time.perf_counter()
        problems = check_tasks(root)
        check_s = time.perf_counter() - t
        stats = report.manifest["tasks"]["stats"]
        print(
            f"crmarena profile, scale {args.scale:g}, seed {args.seed}; {report.manifest['tasks']['instances']} instances"
        )
        print(f"{'task':<34}{'n':>5}{'None':>7}{'majority':>10}{'distinct':>10}{'median margin':>15}")
        for task, st in stats.items():
            m = st["median_margin"]
            print(f"{task:<34}{st['instances']:>5}{st['none_share']:>7.0%}{st['majority_share']:>10.1%}"
                  f"{st['distinct_answers']:>10}{'-' if m is None else f'{m:g}':>15}")  # fmt: skip
        print(f"build tasks: {report.steps['tasks']:.2f} s (includes the independent check); "
              f"re-check alone: {check_s:.2f} s; disagreements: {len(problems)}")  # fmt: skip
        print(json.dumps({"seconds_total": round(report.seconds, 2)}))


if __name__ == "__main__":
    main()
