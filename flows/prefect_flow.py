"""The Prefect flow of `orgseed build`: the same steps as `flows.build.build_bundle`, every one a Prefect task:
one per object × shard generation job (never per record), and one per later stage (`world`, `validate`,
`tasks`, `tasks.check`, `tasks.check_api`, `fidelity`), each with its own state and retries, so a failed stage is retried
alone and a Prefect server's UI shows the whole build. On Dask, the shards and the stages that are functions
of the bundle's files (`validate`, `tasks`, `tasks.check`, `fidelity`, and the parts of `tasks.check_api`
but its HTTP sample: flows/build.py `check_on_workers`) run on the cluster's workers; on threads, the remote
ones but `tasks` (which then shares the build's writer) in the sidecar process (flows/sidecar.py) while the
flow builds the tasks. The tasks and the flow are defined at module level so
process-based task runners (Dask) can pickle them. Imported only when the Prefect engine runs.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import asdict
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.client.schemas.objects import State, TaskRun
from prefect.runtime import flow_run
from prefect.utilities.annotations import quote

from flows.build import build_bundle
from flows.options import BuildOptions
from flows.progress import current_progress, showing
from flows.sidecar import Sidecar
from flows.sidecar import wanted as sidecar_wanted
from generator.apart import run_in_child
from generator.pipeline import Progress, RunContext, ShardJob, run_shard_sync
from schemas.errors import OrgseedError

RETRIES = 2  # a stage or shard that fails for a passing reason (a lost worker, a full disk) runs again


def worth_retrying(task: Any, task_run: TaskRun, state: State[Any]) -> bool:
    """Retry a failed task unless it failed on orgseed's own verdict (bad input, a data finding): those are
    deterministic, and the same inputs would fail the same way."""
    return not isinstance(state.data, OrgseedError)


# every task of the build: no result cache or persistence (the bundle is the result), retried as above
TASK_OPTIONS: dict[str, Any] = {
    "cache_policy": NO_CACHE,
    "persist_result": False,
    "log_prints": False,
    "retries": RETRIES,
    "retry_condition_fn": worth_retrying,
}


class Sealed:
    """A task's result in a holder Prefect does not look into. Prefect links every result it returns, and each
    item of a returned list, tuple, set or dict, to the task run's state, by `id()`, in the flow run's
    context (`FlowRunContext.run_results`), for as long as the flow runs: a text shard returns one item per
    record, so that index grew with the org (65,106 entries at scale 30) and pinned the heap around them. A
    sealed result is one entry. Defined at module level: Dask pickles it back from its workers."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def take(self) -> Any:
        """The value, no longer held here."""
        value, self.value = self.value, None
        return value


@task(name="shard", **TASK_OPTIONS)
def shard_task(job: ShardJob, rc: RunContext | None = None) -> Sealed:
    return Sealed(run_shard_sync(job, rc))


@task(name="object in a child process", **TASK_OPTIONS)
def apart_task(fn: Callable[..., Any], args: tuple[Any, ...], what: str) -> Sealed:
    return Sealed(run_in_child(fn, *args, what=what))


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
        # the values are taken out of their holders here: the future `to_thread` returns the holders through
        # stays referenced until the flow next yields to the event loop (generator/pipeline.py LocalExecutor)
        sealed = await asyncio.to_thread(lambda: [f.result() for f in futures])
        return [s.take() for s in sealed]

    async def run_apart(self, name: str, fn: Callable[..., Any], *args: Any, what: str) -> Any:
        """`fn(*args)` in a child process (generator/pipeline.py `made_apart`), as one task of its own; `what`
        names the work in its errors."""
        future = apart_task.with_options(task_run_name=f"{name}.made-apart").submit(fn, args, what)
        sealed = await asyncio.to_thread(future.result)
        return sealed.take()


@task(name="stage", **TASK_OPTIONS)
async def stage_task(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        return await result
    return result


@task(name="remote stage", **TASK_OPTIONS)
def remote_stage_task(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, str]:
    """A remote stage on whichever process the task runner chose: its result, and where it ran (the Dask
    worker's address, or "local" in the flow's process)."""
    try:
        from distributed import get_worker

        where = str(get_worker().address)
    except (ImportError, ValueError):
        where = "local"
    result = fn(*args)
    if inspect.isawaitable(result):  # an async stage: run to completion on this worker thread's own loop
        result = asyncio.run(_completed(result))
    return result, where


async def _completed(awaitable: Any) -> Any:
    return await awaitable


class StageTasks:
    """The flow's stage runner (flows.build.StageRunner): every stage is a task run named after it. A stage runs
    in the flow's process (stages share the build's writer and manifest), its arguments under `quote`, so
    Prefect neither inspects nor records them; except a `remote` stage when the flow runs on Dask
    (`on_workers`): it is submitted to the cluster like a shard and runs on a worker. `where` records where
    each stage ran."""

    def __init__(self, on_workers: bool = False, sidecar: Sidecar | None = None) -> None:
        self.on_workers = on_workers
        self.sidecar = sidecar  # runs the remote stages when not on workers (flows/sidecar.py)
        self.where: dict[str, str] = {}
        self.concurrent = on_workers or sidecar is not None
        self.measured: dict[str, dict[str, float]] = sidecar.measured if sidecar is not None else {}

    def retire(self) -> None:
        """No more remote stages: the sidecar's process may end (flows/sidecar.py `retire`)."""
        if self.sidecar is not None:
            self.sidecar.retire()

    async def __call__(self, name: str, fn: Callable[..., Any], *args: Any, remote: bool = False) -> Any:
        if remote and self.sidecar is not None and not self.on_workers:
            # a task run in the flow's process that waits for the stage to run in the sidecar
            side = self.sidecar
            run_there: Any = quote(side.run)
            run_args: Any = quote((name, fn, *args))
            result = await stage_task.with_options(name=name, task_run_name=name)(run_there, run_args)
            self.where[name] = side.where_of(name)
            return result
        if remote and self.on_workers:
            # not under `quote`: an annotation is a tuple, which Dask takes apart on its way to the worker
            future = remote_stage_task.with_options(name=name, task_run_name=name).submit(fn, args)
            result, self.where[name] = await asyncio.to_thread(future.result)
            return result
        self.where[name] = "local"
        quoted_fn: Any = quote(fn)
        quoted_args: Any = quote(args)
        return await stage_task.with_options(name=name, task_run_name=name)(quoted_fn, quoted_args)


run_stage = StageTasks()  # every stage in the flow's process (the upload flow's runner)


@flow(name="orgseed-build", log_prints=False, persist_result=False, validate_parameters=False)
async def build_flow(options: dict[str, Any]) -> dict[str, Any]:
    opts = BuildOptions.from_dict(options)
    threads = opts.runner == "threads"
    with ExitStack() as stack:
        side = stack.enter_context(Sidecar()) if threads and sidecar_wanted(opts.sidecar) else None
        report = await build_bundle(
            opts,
            PrefectExecutor(threads),
            current_progress(),
            shares_memory=threads,
            stage=StageTasks(on_workers=opts.runner == "dask", sidecar=side),
        )
    return {
        "flow_run_id": flow_run.get_id(),
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


def run_upload_flow(opts: Any, progress: Callable[[str, int, int], None] | None) -> Any:
    """`orgseed upload` as a Prefect flow: preflight, deploy, one task per object (in dependency order), finish,
    reconcile, rekey and verify, each a task run of its own. The flow's recorded parameters are the non-secret
    options only; the org options (with their secrets) reach the flow by closure, never as parameters."""
    from dataclasses import fields as dc_fields

    from flows.upload import UploadOptions, upload_bundle

    params = {f.name: getattr(opts, f.name) for f in dc_fields(opts) if f.name != "org"}
    org = opts.org

    @flow(name="orgseed-upload", log_prints=False, persist_result=False, validate_parameters=False)
    async def upload(options: dict[str, Any]) -> Any:
        return await upload_bundle(UploadOptions(org=org, **options), stage=run_stage, progress=progress)

    return asyncio.run(upload(params))
