"""CPU seconds of the build's third answer check on an existing bundle: the in-process part
(`flows/answer_check.check_in_process`: every instance, CRMArena's tool queries against the org's engine in
this process) and the HTTP sample (`merge_and_sample`: 5% of the instances again through the served org
with the real simple-salesforce client).

    nice -n 5 .venv/bin/python benchmarks/bench_answer_check.py BUNDLE [--runs N] [--no-http]

BUNDLE is read, not changed (its org.sqlite is built first when missing or stale, outside the figures).
Each run of the in-process check is a fresh `LocalOrg` (cold plan cache), in this process; the modules
are imported before the first figure. Printed per run: CPU seconds (user + system of this process: on a
shared machine wall time mostly measures the other processes), wall seconds, the queries sent, a hash
of the outcomes and disagreements (equal runs, equal hash: compare it between two checkouts), and the
load average.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3]) if Path("/proc/loadavg").exists() else "?"


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def _digest(result: Any) -> str:
    data = [sorted(result.outcomes.items()), [d.__dict__ for d in result.disagreements], result.queries]
    return hashlib.sha256(json.dumps(data, default=str).encode()).hexdigest()[:16]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bundle", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-http", action="store_true", help="only the in-process part")
    args = ap.parse_args()

    from flows.answer_check import build_store, check_in_process, merge_and_sample
    from validators.tasks_soql import ground_truth_lines

    build_store(args.bundle)
    lines = ground_truth_lines(args.bundle)
    result = None
    figures = []
    for run in range(args.runs):
        c, w = _cpu(), time.perf_counter()
        result = check_in_process(args.bundle)
        cpu, wall = _cpu() - c, time.perf_counter() - w
        figures.append(cpu)
        print(
            f"in process, run {run + 1}: {cpu:.2f} CPU-s, {wall:.2f} s wall, {result.queries} queries, "
            f"{result.instances} instances, outcomes {_digest(result)}, load {_load()}"
        )
    print(f"in process: best {min(figures):.2f} CPU-s of {len(figures)} runs")
    if not args.no_http and result is not None:
        c, w = _cpu(), time.perf_counter()
        merged = merge_and_sample(args.bundle, lines, [result], 1, {})
        cpu, wall = _cpu() - c, time.perf_counter() - w
        print(
            f"HTTP sample: {cpu:.2f} CPU-s (client, server and their imports), {wall:.2f} s wall, "
            f"{len(merged.http_sample)} instances, {merged.http_queries} queries, "
            f"{len(merged.mismatches)} mismatches, load {_load()}"
        )


if __name__ == "__main__":
    main()
