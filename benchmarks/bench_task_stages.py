"""The three task stages of a build on an existing bundle, one after the other as `orgseed tasks` runs them:
wall and CPU seconds and peak memory per stage.

    nice -n 5 .venv/bin/python benchmarks/bench_task_stages.py BUNDLE [STAGE ...]

BUNDLE is modified (its task files and org.sqlite are rewritten): use a copy. The stages: `tasks` (build the
instances, generator/tasks), `tasks.check` (re-derive every answer in code, validators/tasks.py),
`tasks.check_api` (build org.sqlite when it is stale, re-derive every answer with CRMArena's tool queries
in process, and a 5% sample over HTTPS: flows/answer_check.py); default all three. Delete BUNDLE/org.sqlite
first to include the store build in `tasks.check_api`. `store` alone rebuilds org.sqlite.

CPU seconds (user + system of this process and its finished children) are printed beside the wall time: on
a shared machine the wall time mostly measures the other processes. Peak memory is the largest RSS of this
process and its children, sampled every 0.1 s. The load average is printed with every figure.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psutil

# this checkout's code first: run from another worktree, the script measures that worktree's code, not what the
# virtual environment's editable install points at
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

STAGES = ("tasks", "tasks.check", "tasks.check_api")


class PeakRss:
    """The largest RSS of this process and its descendants since the last `reset`, sampled on a thread."""

    def __init__(self, every: float = 0.1) -> None:
        self.me = psutil.Process()
        self.peak = 0
        self.every = every
        self._stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for p in [self.me, *self.me.children(recursive=True)]:
                try:
                    total += p.memory_info().rss
                except psutil.Error:
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(self.every)

    def reset(self) -> None:
        self.peak = 0

    def stop(self) -> None:
        self._stop.set()


def run_stage(root: Path, name: str) -> Any:
    from flows.build import check_task_answers, check_tasks_through_the_org
    from generator.tasks import build_tasks
    from generator.text.offline import OfflineWriter
    from orgs.bundle import Bundle
    from orgs.local.store import Store
    from schemas.model import load_model

    manifest = Bundle(root).read_manifest()
    if name == "tasks":
        writer = OfflineWriter(manifest["seed"], manifest["profile"].get("company", "our company"))
        return asyncio.run(build_tasks(root, manifest["seed"], 130, writer, "scalar", load_model(), True))
    if name == "tasks.check":
        return check_task_answers(root)
    if name == "tasks.check_api":
        return check_tasks_through_the_org(root)
    if name == "store":
        Store.open(root, rebuild=True).close()
        return None
    raise SystemExit(f"unknown stage {name!r}; choose from {', '.join((*STAGES, 'store'))}")


def cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    root = Path(sys.argv[1])
    stages = sys.argv[2:] or list(STAGES)
    sampler = PeakRss()
    for name in stages:
        sampler.reset()
        wall, cpu = time.perf_counter(), cpu_seconds()
        result = run_stage(root, name)
        wall, cpu = time.perf_counter() - wall, cpu_seconds() - cpu
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        extra = f" {result}" if name == "tasks.check_api" else ""
        print(
            f"{name}: {wall:.1f} s wall, {cpu:.1f} s CPU, peak {sampler.peak / 2**20:,.0f} MB, load {load}{extra}",
            flush=True,
        )
    sampler.stop()


if __name__ == "__main__":
    main()
