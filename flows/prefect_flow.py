"""The Prefect flow of `orgseed build`: the same steps as `flows.build.build_bundle`, with one Prefect task per
object × shard job (never per record). The task and the flow are defined at module level so process-based task
runners (Dask) can pickle them. Imported only when the Prefect engine runs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote

from flows.build import build_bundle
from flows.options import BuildOptions
from flows.progress import current_progress, showing
from generator.pipeline import Progress, RunContext, ShardJob, run_shard_sync


@task(name="shard", cache_policy=NO_CACHE, persist_result=False, log_prints=False)
def shard_task(job: ShardJob, rc: RunContext | None = None) -> Any:
    return run_shard_sync(job, rc)


class PrefectExecutor:
    """Submits one Prefect task per shard job to the flow's task runner and waits for all of them.

    Threads share the run's context (passed under `quote`, so Prefect neither inspects nor records it);
    worker processes (Dask) get the job alone and rebuild the context from the work folder."""

    def __init__(self, shares_memory: bool) -> None:
        self.shares_memory = shares_memory

    async def run(self, rc: RunContext, jobs: Sequence[ShardJob]) -> list[Any]:
        shared: Any = quote(rc) if self.shares_memory else None  # the task receives rc itself
        futures = [
            shard_task.with_options(task_run_name=f"{j.sobject}.{j.stage}[{j.shard}/{j.shards}]").submit(
                j, shared
            )
            for j in jobs
        ]
        return await asyncio.to_thread(lambda: [f.result() for f in futures])


@flow(name="orgseed-build", log_prints=False, persist_result=False, validate_parameters=False)
async def build_flow(options: dict[str, Any]) -> dict[str, Any]:
    opts = BuildOptions.from_dict(options)
    threads = opts.runner == "threads"
    report = await build_bundle(opts, PrefectExecutor(threads), current_progress(), shares_memory=threads)
    return {
        "root": str(report.root),
        "manifest": report.manifest,
        "seconds": report.seconds,
        "generation_seconds": report.generation_seconds,
        "steps": report.steps,
    }


def run(opts: BuildOptions, task_runner: Any, progress: Progress | None) -> dict[str, Any]:
    """Run the build as a Prefect flow on `task_runner`; the flow's parameters are the options (recorded)."""
    with showing(progress):  # the flow reads it (flows/progress.py); parameters are recorded by Prefect
        result: dict[str, Any] = asyncio.run(build_flow.with_options(task_runner=task_runner)(asdict(opts)))
    return result
