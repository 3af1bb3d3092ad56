"""`orgseed build`: generate → persist → validate → (tasks) → manifest.

`build_bundle` is the orchestration as a plain async function; `build_flow` runs the same steps as a
Prefect flow whose tasks are object × shard jobs (never records). The executor decides where jobs run:
in-process (`--no-prefect`), Prefect's thread pool (default) or a Dask cluster (`--runner dask`).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import inspect
import json
import math
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import pandas as pd

from flows import writer as writers
from flows.answer_check import validate_written
from flows.options import ANSWER_FORMATS, ENGINES, RUNNERS, BuildOptions
from flows.writer import check_writer_options
from generator.pipeline import (
    WORK_DIR,
    Executor,
    GenerationResult,
    Progress,
    RunContext,
    RunSpec,
    generate,
    make_context,
)
from generator.spill import TextFill
from generator.text.base import TextWriter
from generator.world import World
from orgs.bundle import (
    MIN_PART_BYTES,
    PART_BYTES,
    Bundle,
    data_digest,
    logical_data,
    new_manifest,
    sha256_file,
)
from schemas.errors import DataFindings, UsageError
from schemas.gcpause import heap_frozen, release_freed_memory
from schemas.model import OrgModel, load_model
from schemas.profile import Profile, load_profile
from validators.fidelity_report import FIDELITY_JSON, fidelity_figures
from validators.fidelity_report import summary as fidelity_summary
from validators.findings import Report, ValidationFailed
from validators.run import REPORT_PATH, write_report

if TYPE_CHECKING:
    from flows.sidecar import Sidecar

T = TypeVar("T")


class StageRunner(Protocol):
    """Runs one named build stage (`fn(*args)`, sync or async) and returns its result.

    In-process (`run_inline`) it is a plain call; under Prefect each stage is a task run of its own, with its
    own state and retries (flows/prefect_flow.py), so a failed stage is retried alone. A `remote` stage is a
    module-level function of files in the bundle folder and picklable arguments, returning a picklable value
    and changing nothing in this process: a runner with worker processes (Dask) runs it on a worker. A runner
    may record where each stage ran in `where` (stage name → "local" or a worker's address)."""

    async def __call__(self, name: str, fn: Callable[..., Any], *args: Any, remote: bool = False) -> Any: ...


class Timed:
    """`stage`, recording each stage's start (epoch seconds, so a benchmark can line its memory samples up
    with it), duration and, when the runner says, where it ran, in `spans` (the manifest's /timings/stages).
    A stage split into parts that run apart (`tasks.check_api` on a cluster: `tasks.check_api/<part>`) is
    recorded whole as well, with `record`."""

    def __init__(self, stage: StageRunner, spans: dict[str, dict[str, Any]]) -> None:
        self.stage = stage
        self.spans = spans

    @property
    def on_workers(self) -> bool:
        """Whether a `remote` stage runs on a cluster's workers (`--runner dask`), not in this process."""
        return bool(getattr(self.stage, "on_workers", False))

    @property
    def concurrent(self) -> bool:
        """Whether a `remote` stage runs elsewhere while this process goes on (a cluster, the sidecar)."""
        return bool(getattr(self.stage, "concurrent", False))

    @property
    def measured(self) -> dict[str, dict[str, float]]:
        """The stages' own timings, measured where they ran (the sidecar's)."""
        measured: dict[str, dict[str, float]] = getattr(self.stage, "measured", {})
        return measured

    def where(self, name: str) -> str | None:
        where: str | None = getattr(self.stage, "where", {}).get(name)
        return where

    @property
    def sidecar(self) -> Sidecar | None:
        """The runner's sidecar (flows/sidecar.py), if its remote stages run in one."""
        side: Sidecar | None = getattr(self.stage, "sidecar", None)
        return side

    def retire(self) -> None:
        """No more `remote` stages will be run: a runner with a sidecar lets its process go (flows/sidecar.py)."""
        retire = getattr(self.stage, "retire", None)
        if retire is not None:
            retire()

    def record(self, name: str, start: float, seconds: float) -> None:
        self.spans[name] = {"start": round(start, 3), "seconds": round(seconds, 3)}

    async def __call__(self, name: str, fn: Callable[..., Any], *args: Any, remote: bool = False) -> Any:
        start, t = time.time(), time.perf_counter()
        try:
            return await self.stage(name, fn, *args, remote=remote)
        finally:
            self.record(name, start, time.perf_counter() - t)
            own = self.measured.get(name)
            if own is not None:  # measured where it ran (a concurrent stage is collected later)
                self.spans[name].update(own)
            where = self.where(name)
            if where is not None:
                self.spans[name]["where"] = where


def timed(stage: StageRunner, spans: dict[str, dict[str, Any]]) -> Timed:
    """`stage`, timed into `spans` (see `Timed`)."""
    return Timed(stage, spans)


async def run_inline(name: str, fn: Callable[..., Any], *args: Any, remote: bool = False) -> Any:
    """The stage runner without an orchestrator: call the stage here (remote or not)."""
    result = fn(*args)
    if inspect.isawaitable(result):
        return await result
    return result


class SidecarStages:
    """The in-process stage runner with a sidecar process (flows/sidecar.py): a `remote` stage runs there,
    concurrently with what the building process does meanwhile (`concurrent`); the others run here."""

    concurrent = True

    def __init__(self, sidecar: Sidecar) -> None:
        self.sidecar = sidecar
        self.where: dict[str, str] = {}
        self.measured = sidecar.measured

    async def __call__(self, name: str, fn: Callable[..., Any], *args: Any, remote: bool = False) -> Any:
        if not remote:
            return await run_inline(name, fn, *args)
        result = await self.sidecar.run(name, fn, *args)
        self.where[name] = self.sidecar.where_of(name)
        return result

    def retire(self) -> None:
        self.sidecar.retire()


async def started(coro: Awaitable[T]) -> asyncio.Future[T]:
    """`coro` as a task, run up to its first wait (a remote stage is then submitted), so the caller can go on
    with other work in this process while it runs elsewhere."""
    future = asyncio.ensure_future(coro)
    await asyncio.sleep(0)
    return future


async def settled(*futures: asyncio.Future[Any] | None) -> None:
    """Wait for every started stage to end, failed or not (its outcome is read by the caller)."""
    pending = [f for f in futures if f is not None]
    if pending:
        await asyncio.wait(pending)
    for f in pending:
        if not f.cancelled():
            f.exception()  # read, so a failure behind another one is not reported as never retrieved


@dataclass
class BuildReport:
    root: Path
    manifest: dict[str, Any]
    counts: dict[str, int]
    seconds: float
    generation_seconds: float
    steps: dict[str, float] = field(default_factory=dict)
    flow_run_id: str | None = None  # the Prefect flow run that recorded the build (None without Prefect)

    @property
    def records(self) -> int:
        return sum(self.counts.values())


MAX_SCALE = 1000.0


def run_key(opts: BuildOptions, profile_digest: str) -> str:
    """What identifies a build's data (profile, seed, scale, writer): a staged build is resumed only by a
    build with the same key."""
    from orgs.bundle import FORMAT_VERSION

    ident = {
        "profile": profile_digest,
        "seed": opts.seed,
        "scale": float(opts.scale),
        "writer": writers.manifest_entry(opts),
        "format_version": FORMAT_VERSION,
    }
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


MAX_SHARDS = 256
MIN_WORKER_MEMORY = 256 * 2**20  # a worker process with pandas and the generator needs about this much
MAX_PER_TASK = 10_000
# From this many planned records (the world's counts: ~3 M from scale ~210 of the crmarena profile), the
# building process holds each finished object as stored in the work folder, not whole (generator/pipeline.py
# `generate`'s `spill`): at scale 300 a generation's peak fell 1,681 -> 1,503 MB for ~8 s more (of ~140 s).
SPILL_RECORDS = 3_000_000


def check_options(opts: BuildOptions) -> None:
    """Refuse bad options (UsageError, exit 2) before anything is read or written."""
    if not isinstance(opts.scale, int | float) or not math.isfinite(opts.scale) or opts.scale <= 0:
        raise UsageError(
            f"--scale must be a positive number (got {opts.scale}); 1.0 builds the profile's counts."
        )
    if opts.scale > MAX_SCALE:
        raise UsageError(
            f"--scale must be at most {MAX_SCALE:g} (got {opts.scale:g}): {MAX_SCALE:g} times the profile's counts "
            "is already about 18 million records."
        )
    if not 1 <= opts.shards <= MAX_SHARDS:
        raise UsageError(f"--shards must be between 1 and {MAX_SHARDS} (got {opts.shards}).")
    if not 0 <= opts.seed < 2**63:
        raise UsageError(f"--seed must be between 0 and 2**63 - 1 (got {opts.seed}).")
    if opts.engine not in ENGINES:
        raise UsageError(f"--engine must be one of {', '.join(ENGINES)} (got {opts.engine}).")
    if opts.runner not in RUNNERS:
        raise UsageError(f"--runner must be one of {', '.join(RUNNERS)} (got {opts.runner}).")
    if opts.dask_memory_limit is not None:
        if opts.runner != "dask" or opts.dask_address:
            raise UsageError(
                "--dask-memory-limit sets the workers of the local Dask cluster: use it with --runner dask and "
                "without --dask-address (set a remote worker's limit with `dask worker --memory-limit`)."
            )
        try:
            from dask.utils import parse_bytes
        except ImportError:  # pragma: no cover - depends on the install
            raise UsageError(
                "--runner dask needs prefect-dask; install it with `pip install 'orgseed[dask]'`."
            ) from None
        try:
            too_small = parse_bytes(opts.dask_memory_limit) < MIN_WORKER_MEMORY
        except (ValueError, TypeError):
            too_small = True
        if too_small:
            raise UsageError(
                f"--dask-memory-limit must be a size of at least 256MiB, such as 2GiB or 500MB "
                f"(got {opts.dask_memory_limit!r})."
            )
    if opts.runner == "dask" and opts.engine != "prefect":
        raise UsageError("--runner dask needs the Prefect engine; drop --no-prefect.")
    if opts.per_task is not None and not 0 <= opts.per_task <= MAX_PER_TASK:
        raise UsageError(
            f"--per-task must be between 0 (no task instances) and {MAX_PER_TASK:,} (got {opts.per_task})."
        )
    if not isinstance(opts.part_bytes, int) or not MIN_PART_BYTES <= opts.part_bytes <= PART_BYTES:
        raise UsageError(
            f"--part-bytes must be between {MIN_PART_BYTES:,} and {PART_BYTES:,} (got {opts.part_bytes}): an "
            "object's CSV larger than this is written in parts, and a part must fit one Bulk API 2.0 upload."
        )
    if opts.answer_format not in ANSWER_FORMATS:
        raise UsageError(f"--answer-format must be scalar or list (got {opts.answer_format}).")
    check_writer_options(opts)
    if opts.per_task:
        from flows.tasks import require_complete_registry

        require_complete_registry()


def check_tasks_through_the_org(root: Path, workers: int | None = None) -> dict[str, Any]:
    """Re-derive every answer with CRMArena's tool queries (SOQL/SOSL) against the embedded org: all of them
    against its query engine in process (over `workers` processes; default: by the org's size), and a
    deterministic 5% sample (at least 10) once more through simple-salesforce over HTTPS
    (flows/answer_check.py). Raise TaskCheckFailed on any disagreement, or when the two paths differ."""
    from flows.answer_check import check_answers_through_the_org

    t = time.perf_counter()
    result = check_answers_through_the_org(root, workers)
    return api_check_summary(result, time.perf_counter() - t)


def api_check_summary(result: Any, seconds: float, **more: Any) -> dict[str, Any]:
    """The manifest's /tasks/api_check for a finished check (flows.answer_check.ApiCheckResult); raise
    TaskCheckFailed on any disagreement, or when the in-process and HTTP paths differ."""
    problems = [d.message for d in result.disagreements] + result.mismatches
    if problems:
        shown = "\n".join(f"  - {m}" for m in problems[:5])
        raise TaskCheckFailed(
            f"{len(problems)} task answer(s) differ when re-derived through the org "
            f"(validators/tasks_soql.py, flows/answer_check.py):\n{shown}",
            disagreements=len(problems),
        )
    return {
        "instances": result.instances,
        "queries": result.queries,
        "workers": result.workers,
        **more,
        "http_sample": {"instances": len(result.http_sample), "queries": result.http_queries},
        "seconds": round(seconds, 3),
        "steps": result.seconds,
    }


async def check_on_workers(root: Path, stage: Timed) -> dict[str, Any]:
    """`tasks.check_api` on a cluster (`--runner dask`): the store build and one chunk of instances per task
    (`check_in_process`, the unit of the in-process check) as remote stages `tasks.check_api/<part>`, each a
    task run of its own that runs on a worker and is retried alone; then, in this process, the outcomes merged
    as the in-process check merges them and the HTTP sample through the served org. Same verdicts and the same
    counts (instances, queries, HTTP sample) as `check_tasks_through_the_org`."""
    from flows.answer_check import build_store, check_in_process, merge_and_sample, task_chunks
    from validators.tasks_soql import ground_truth_lines

    start, t = time.time(), time.perf_counter()
    try:
        seconds = {"store": await stage("tasks.check_api/store", build_store, root, remote=True)}
        lines = ground_truth_lines(root)
        chunks = task_chunks(lines)
        tc = time.perf_counter()
        names = [f"tasks.check_api/{task}" for task, _ in chunks]
        results = await asyncio.gather(
            *(
                stage(name, check_in_process, root, part, remote=True)
                for name, (_, part) in zip(names, chunks, strict=True)
            )
        )
        seconds["in_process"] = round(time.perf_counter() - tc, 3)
        workers = sorted({w for w in map(stage.where, names) if w is not None})
        result = await stage(
            "tasks.check_api/http", merge_and_sample, root, lines, results, len(workers), seconds
        )
        return api_check_summary(result, time.perf_counter() - t, chunks=len(chunks))
    finally:
        stage.record("tasks.check_api", start, time.perf_counter() - t)


async def in_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` in a thread of this process: the event loop meanwhile hands the sidecar its next stage."""
    return await asyncio.to_thread(fn, *args)


async def shared_with_the_sidecar(
    root: Path, stage: Timed, sidecar_busy: asyncio.Future[Any]
) -> tuple[dict[str, Any], Any]:
    """With a sidecar: the check through the org and the fidelity figures, shared by the two processes.

    This process first re-derives the HTTP sample through the served org (only it serves the org); then both
    take the remaining units, the fidelity figures and one chunk of instances per task (`check_in_process`,
    as on a cluster: the same queries, counted the same), this process from the front of the list and the
    sidecar from its back once its own stages (`sidecar_busy`) are done, until none is left. Whichever process
    ends its other work first takes more of them, so both end about together at any scale. Same verdicts,
    counts and figures as the stages one after the other; where each unit ran is in its span only.
    Returns the manifest's /tasks/api_check and the fidelity figures."""
    from flows.answer_check import (
        build_store,
        check_in_process,
        check_over_http,
        http_sample,
        merged,
        task_chunks,
    )
    from validators.tasks_soql import ground_truth_lines

    start, t = time.time(), time.perf_counter()
    units: list[tuple[str, Callable[..., Any], tuple[Any, ...]]] = [("fidelity", fidelity_figures, (root,))]
    done: dict[str, Any] = {}

    async def take(remote: bool) -> None:
        try:
            while units:
                name, fn, args = units.pop() if remote else units.pop(0)
                if remote:
                    done[name] = await stage(name, fn, *args, remote=True)
                else:
                    done[name] = await stage(name, in_thread, fn, *args)
                    release_freed_memory()
        except BaseException:
            units.clear()  # the other process takes no more: the build fails with this error
            raise

    async def the_sidecar_takes() -> None:
        await asyncio.wait([sidecar_busy])
        try:
            await take(remote=True)
        finally:
            stage.retire()  # nothing more for it: its process ends while this one finishes

    try:
        seconds = {"store": build_store(root)}  # found built by the sidecar's store stage, else built here
        lines = ground_truth_lines(root)
        chunks = task_chunks(lines)
        units += [(f"tasks.check_api/{task}", check_in_process, (root, part)) for task, part in chunks]
        sidecar = asyncio.ensure_future(the_sidecar_takes())
        try:
            sample = http_sample([int(g["idx"]) for g in lines])
            http = await stage(
                "tasks.check_api/http", in_thread, check_over_http, root, sample, seconds, lines
            )
            release_freed_memory()
            await take(remote=False)
        finally:
            await settled(sidecar)
        sidecar.result()
        # the chunks' own seconds, wherever each ran
        in_process = sum(stage.spans[f"tasks.check_api/{task}"]["seconds"] for task, _ in chunks)
        seconds["in_process"] = round(in_process, 3)
        results = [done[f"tasks.check_api/{task}"] for task, _ in chunks]
        result = merged(len(lines), results, http, 2, seconds)
        return api_check_summary(result, time.perf_counter() - t, chunks=len(chunks)), done["fidelity"]
    finally:
        stage.record("tasks.check_api", start, time.perf_counter() - t)


class TaskCheckFailed(DataFindings):
    """The independent re-derivation disagrees with the task builders (the bundle's tasks are not trustworthy):
    exit 1, as the README has it (a finding about the data, not bad input)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("disagreements",)

    def __init__(self, message: str, *, disagreements: int) -> None:
        super().__init__(message)
        self.disagreements = disagreements


def check_task_answers(root: Path) -> None:
    """Re-derive every task answer from the data with independent code (validators/tasks.py); raise
    TaskCheckFailed on any disagreement."""
    from validators.tasks import check_tasks

    disagreements = check_tasks(root)
    if disagreements:
        shown = "\n".join(f"  - {d.message}" for d in disagreements[:5])
        raise TaskCheckFailed(
            f"{len(disagreements)} task answer(s) disagree with the independent re-derivation "
            f"(validators/tasks.py):\n{shown}\nThe task files were written to {root / 'tasks'} for inspection; "
            "do not use them.",
            disagreements=len(disagreements),
        )


@dataclass(frozen=True)
class TaskFiles:
    """What the `tasks` stage tells the flow about the task files it wrote (picklable: it may run on a worker)."""

    per_task: int  # instances per task built (below `requested` when the org could not yield more)
    requested: int
    instances: int
    text_requests: dict[str, int]
    stats: dict[str, dict[str, Any]]
    short: dict[str, int]


async def write_task_files(
    root: Path,
    seed: int,
    per_task: int,
    writer: TextWriter | RunSpec,
    answer_format: str,
    model: OrgModel,
    adapt: bool = False,
) -> TaskFiles:
    """The `tasks` stage: build the task files (generator/tasks) into the bundle. `writer` is the build's
    writer, or, on a worker (`--runner dask`), the run it makes its own for: the same writer class and
    settings, so the same texts; an LLM writer joins the run's cluster-wide --concurrency/--rpm/--tpm limits
    (generator/text/shared.py) and records its usage beside the other processes' (flows/writer.py)."""
    from generator.tasks import TaskSet, build_tasks
    from generator.text.writers import make_writer

    if isinstance(writer, RunSpec):
        own = make_writer(writer, load_profile(writer.profile, model))
        try:
            task_set: TaskSet = await build_tasks(root, seed, per_task, own, answer_format, model, adapt)
        finally:
            await own.aclose()
    else:
        task_set = await build_tasks(root, seed, per_task, writer, answer_format, model, adapt)
    return TaskFiles(
        per_task=task_set.per_task,
        requested=per_task,
        instances=len(task_set.instances),
        text_requests=dict(task_set.text_requests),
        stats=task_set.stats(),
        short=dict(task_set.short),
    )


async def make_tasks(
    root: Path,
    seed: int,
    per_task: int,
    writer: TextWriter | RunSpec,
    answer_format: str,
    model: OrgModel,
    stage: StageRunner = run_inline,
    adapt: bool = False,
    store_ready: Awaitable[Any] | None = None,
) -> dict[str, Any]:
    """Build the task files, re-derive every answer independently, and describe them for the manifest.

    Three stages: `tasks` (build the files), `tasks.check` (re-derive in code), `tasks.check_api` (re-derive
    through the embedded org's API). With `adapt`, `per_task` is the profile's default and lowers to what the
    org yields. `writer` is the build's writer, or the run (the build passes it on a cluster): then `tasks` is
    a remote stage whose worker makes its own writer for the run. On a cluster (`stage.on_workers`) the remote
    stages run on workers, and `tasks.check_api` in parts (`check_on_workers`); with a sidecar, the two processes
    share its parts and the fidelity figures (`shared_with_the_sidecar`). `store_ready`, when given, is the
    org's store being built elsewhere (`store_beside`): the check through the org waits for it first."""
    from flows.tasks import require_complete_registry

    require_complete_registry()
    made: TaskFiles = await stage(
        "tasks",
        write_task_files,
        root,
        seed,
        per_task,
        writer,
        answer_format,
        model,
        adapt,
        remote=isinstance(writer, RunSpec),  # a function of the bundle's files and the run
    )
    bundle = Bundle(root)
    # the task builders' tables are gone: the answer check through the org starts from what is live, not
    # from their high-water mark (what this process holds while it runs sets the build's peak)
    release_freed_memory()
    rels = ["tasks/tasks.json", "tasks/schema.json", "tasks/ground_truth.jsonl"]
    files = {rel: sha256_file(bundle.path(rel)) for rel in rels}
    # The code check and the fidelity figures (a function of the CSVs and task files) are remote: with a
    # concurrent runner they run elsewhere while this process re-derives the answers through the org.
    checked = measured = None
    figures: Any = None
    if isinstance(stage, Timed) and stage.sidecar is not None:
        # the sidecar has the store (built during generation), validation and the code check; then it shares
        # the check through the org and the fidelity figures with this process
        checked = await started(stage("tasks.check", check_task_answers, root, remote=True))
        try:
            if store_ready is not None:
                await store_ready
            api, figures = await shared_with_the_sidecar(root, stage, checked)
        finally:
            await settled(checked)
            checked.result()  # the code check's verdict first, as when the stages run one after the other
    else:
        if getattr(stage, "concurrent", False):
            checked = await started(stage("tasks.check", check_task_answers, root, remote=True))
            measured = await started(stage("fidelity", fidelity_figures, root, remote=True))
        else:
            await stage("tasks.check", check_task_answers, root, remote=True)
        try:
            if store_ready is not None:
                await store_ready
            if isinstance(stage, Timed) and stage.on_workers:
                api = await check_on_workers(root, stage)  # in parts on the cluster, the HTTP sample here
            else:
                api = await stage("tasks.check_api", check_tasks_through_the_org, root)
        finally:
            await settled(checked, measured)  # never leave a stage running behind a failure
            if checked is not None:
                checked.result()  # the code check's verdict first, as when the stages run one after the other
        if measured is not None:
            figures = measured.result()
        else:
            figures = await stage("fidelity", fidelity_figures, root, remote=True)
    files[FIDELITY_JSON] = bundle.write_json(FIDELITY_JSON, figures).sha256
    info: dict[str, Any] = {
        "fidelity": fidelity_summary(figures),
        "per_task": made.per_task,
        "answer_format": answer_format,
        "api_check": api,
        "instances": made.instances,
        "text_requests": made.text_requests,
        "verified": True,
        "stats": made.stats,
        "files": files,
    }
    if made.per_task < per_task:  # the profile's default count, lowered to what this org yields
        info["adapted"] = {"requested": per_task, "per_task": made.per_task, "limited_by": made.short}
    return info


def clear_work(root: Path) -> None:
    """Remove what generation left in the work folder (the frames it passed between processes), keeping the
    text writers' usage snapshots (flows/writer.py `USAGE_DIR`): those of a cluster's workers are written
    there during generation and merged into reports/llm_usage.json only at the end of the build."""
    work = root / WORK_DIR
    if not work.is_dir():
        return
    for entry in work.iterdir():
        if entry.name == writers.USAGE_DIR and entry.is_dir():
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
    if not any(work.iterdir()):
        work.rmdir()


def world_tables(world: World) -> dict[str, pd.DataFrame | Any]:
    """The latent world as files for latent/world/."""
    issues = pd.DataFrame(
        [
            {
                "issue": i.key,
                "index": i.index,
                "weight": i.weight,
                "delay_days": i.delay_days,
                "handle_hours": i.handle_hours,
                "priority": i.priority,
            }
            for i in world.issues
        ]
    )
    agents = world.agents.copy()
    for k, iss in enumerate(world.issues):
        agents[f"expertise_{iss.key}"] = world.expertise[:, k]
    customers = world.customers.copy()
    for m in range(12):
        customers[f"month_{m + 1:02d}"] = world.customer_months[:, m].round(4)
    for c in world.categories:
        customers[f"pref_{c.index:02d}"] = world.customer_categories[:, c.index].round(4)
    products = world.products.copy()
    for k, iss in enumerate(world.issues):
        products[f"issue_{iss.key}"] = world.product_issues[:, k].round(4)
    for m in range(12):
        products[f"season_{m + 1:02d}"] = world.product_season[:, m].round(4)
    regions = pd.DataFrame(world.region_speed.round(4), columns=[str(y) for y in world.years])
    regions.insert(0, "state", world.states)
    policies = {
        "issues": {i.key: {"remedies": i.remedies, "priority": i.priority} for i in world.issues},
        "remedies": {k: asdict(r) for k, r in world.remedies.items()},
        "knowledge": [asdict(t) for t in world.knowledge],
    }
    return {
        "world/agents.csv": _rounded(agents),
        "world/customers.csv": _rounded(customers),
        "world/products.csv": _rounded(products),
        "world/regions.csv": regions,
        "world/issues.csv": issues,
        "world/policies.json": policies,
    }


def write_world(bundle: Bundle, world: World) -> dict[str, str]:
    """Write the latent world (latent/world/); returns the files written with their sha256."""
    files: dict[str, str] = {}
    for rel, payload in world_tables(world).items():
        entry = (
            bundle.write_frame(f"latent/{rel}", payload)
            if isinstance(payload, pd.DataFrame)
            else bundle.write_json(f"latent/{rel}", payload)
        )
        files[entry.path] = entry.sha256
    return files


async def validate_step(
    root: Path, profile: Profile, model: OrgModel, manifest: dict[str, Any], stage: StageRunner = run_inline
) -> Report:
    """Validate the written bundle (the `validate` stage: on a Dask worker under `--runner dask`); write the
    report and record the outcome and its timing in the manifest (not yet written)."""
    t = time.perf_counter()
    report: Report = await stage("validate", validate_written, root, profile, model, remote=True)
    write_report(report, root)
    seconds = time.perf_counter() - t
    own = getattr(stage, "measured", {}).get("validate")
    if own is not None:  # ran concurrently: its own time, not when this process collected it
        seconds = own["seconds"]
    manifest["validated"] = report.ok
    manifest["validation"] = {
        "errors": report.errors + report.fatal,
        "warnings": report.warnings,
        "report": REPORT_PATH,
        "seconds": round(seconds, 3),
    }
    manifest["timings"]["validation_seconds"] = round(seconds, 3)
    return report


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = out[c].round(6)
    return out


async def store_beside(
    stage: Timed, spans: dict[str, dict[str, Any]], root: Path, profile: Profile, model: OrgModel
) -> None:
    """The `store` stage in the sidecar (`build_store_as_written`, which also begins validation there). It
    never fails the build: the data's faults are found by validation and by the check through the org, which
    builds the store itself when this stage did not; its error is recorded in the stage's span
    (/timings/stages/store/error)."""
    from flows.answer_check import build_store_as_written

    try:
        await stage("store", build_store_as_written, str(root), profile, model, remote=True)
    except Exception as exc:  # recorded; the check through the org builds the store itself
        spans.setdefault("store", {})["error"] = f"{type(exc).__name__}: {exc}"


async def build_bundle(
    opts: BuildOptions,
    executor: Executor,
    progress: Progress | None = None,
    shares_memory: bool = True,
    stage: StageRunner = run_inline,
) -> BuildReport:
    """Build a bundle. Checks every input before touching the output folder.

    `executor` runs the generation shards; `stage` runs every other stage (`world`, `validate`, `tasks`,
    `tasks.check`, `tasks.check_api`): in-process by default, as Prefect tasks under the Prefect engine."""
    t_start = time.perf_counter()
    check_options(opts)
    model = load_model()
    profile = load_profile(opts.profile, model)
    resume_key = run_key(opts, profile.digest)
    # staged beside --out; published when complete
    bundle = Bundle.prepare(opts.output(), opts.force, resume_key if opts.resume else None)
    root = bundle.root
    run = RunSpec(
        profile=str(profile.path.resolve()),
        seed=opts.seed,
        scale=float(opts.scale),
        writer=opts.writer,
        writer_options=writers.run_options(opts, root),
    )
    resumed = bundle.resumed
    stages: dict[str, str] = dict(resumed.get("stages", {})) if resumed else {}
    if resumed is not None and bundle.verify_hashes(resumed):
        stages = {}  # a staged file changed since it was recorded: its stage runs again
    manifest: dict[str, Any]
    if stages and resumed is not None:
        manifest = resumed
        manifest["status"] = "in_progress"
        manifest["build"].update(shards=opts.shards, resumed_from=sorted(stages))
    else:
        manifest = new_manifest(
            {
                "name": profile.name,
                "path": str(profile.path.resolve()),
                "sha256": profile.digest,
                "start": profile.span.start.isoformat(),
                "end": profile.span.end.isoformat(),
                "company": profile.company.name,
                "task_style": profile.task_style,
            },
            opts.seed,
            float(opts.scale),
            writers.manifest_entry(opts),
            model,
        )
        manifest["build"] = {
            "shards": opts.shards,
            "engine": opts.engine,
            "runner": opts.runner if opts.engine == "prefect" else "in-process",
            "resume_key": resume_key,
        }
        manifest["stages"] = {}
    bundle.write_manifest(manifest)
    files: dict[str, str] = dict(manifest.get("files", {})) if stages else {}
    objects: dict[str, dict[str, Any]] = {}

    def persist(name: str, frame: pd.DataFrame, fill: TextFill | None) -> None:
        data, latent = bundle.write_object(model.get(name), frame, opts.part_bytes, fill)
        objects[name] = {"file": data.path, "rows": data.rows, "sha256": data.sha256}
        if data.parts:  # written in parts: each part is a file of the bundle; the object's entry is logical
            objects[name]["bytes"] = data.bytes
            objects[name]["parts"] = [
                {"file": p.path, "rows": p.rows, "bytes": p.bytes, "sha256": p.sha256} for p in data.parts
            ]
            files.update({p.path: p.sha256 for p in data.parts})
        else:
            files[data.path] = data.sha256
        if latent is not None:
            files[latent.path] = latent.sha256
        if side is not None:
            side.written(name)  # the sidecar loads it into the org's store while generation goes on

    rc = RunContext(root, run, make_context(run, model, profile))
    spans: dict[str, dict[str, Any]] = {}
    stage = timed(stage, spans)
    steps: dict[str, float] = dict(manifest.get("timings", {}).get("steps", {})) if stages else {}
    task_info: dict[str, Any] | None = None
    generation_seconds = float(manifest.get("timings", {}).get("generation_seconds", 0.0)) if stages else 0.0
    held = contextlib.ExitStack()
    # With a sidecar, the org's store is built there while this process generates, an object at a time as
    # each is written (flows/answer_check.py build_store_as_written); the check through the org finds it
    # built. Otherwise (or when generation is resumed) that check builds it.
    side = stage.sidecar if "generate" not in stages else None
    storing: asyncio.Future[Any] | None = None
    try:
        if "generate" not in stages:
            # the latent world is made before generation (make_context): written first, so that validation
            # begun in the sidecar during generation reads its policies
            files.update(await stage("world", write_world, bundle, rc.build.world))
            if side is not None:
                storing = await started(store_beside(stage, spans, root, profile, model))
            t_gen, t_gen_epoch = time.perf_counter(), time.time()
            planned = sum(rc.build.world.counts.values())
            result: GenerationResult = await generate(
                rc, executor, opts.shards, persist, progress, shares_memory, spill=planned >= SPILL_RECORDS
            )
            generation_seconds = time.perf_counter() - t_gen
            spans["generate"] = {"start": round(t_gen_epoch, 3), "seconds": round(generation_seconds, 3)}
            clear_work(root)
            release_freed_memory()  # generation's tables are gone; the stages after it start from what is live
            # what is live now (modules, model, caches) stays out of the collector's walks from here on
            held.enter_context(heap_frozen())
            steps.update({f"generate.{k}": round(v, 4) for k, v in result.timings.items()})
            manifest.update(
                objects={name: objects[name] for name in model.names},
                files=dict(sorted(files.items())),
                data_sha256=data_digest(logical_data(objects)),
                data_parts={"max_bytes": opts.part_bytes},
                counts={name: objects[name]["rows"] for name in model.names},
                text={"requests": result.text_counts, "regenerated_near_duplicates": result.regenerated},
            )
            manifest["timings"] = {"generation_seconds": round(generation_seconds, 3), "steps": steps}
            manifest["stages"]["generate"] = "complete"
            bundle.write_manifest(manifest)
            if side is not None:
                side.all_written()

        def validated(validation: Report) -> None:
            if not validation.ok:
                manifest["status"] = "invalid"
                raise ValidationFailed(validation, str(root / REPORT_PATH))
            manifest["stages"]["validate"] = "complete"
            bundle.write_manifest(manifest)

        # Validation and the tasks read the written files and nothing of each other: with a concurrent stage
        # runner, validation runs elsewhere while this process builds and checks the tasks. Its verdict
        # comes first either way: an invalid org fails as invalid, whatever the tasks made of it.
        validating: asyncio.Future[Report] | None = None
        if "validate" not in stages:
            if getattr(stage, "concurrent", False):
                validating = await started(validate_step(root, profile, model, manifest, stage))
            else:
                validated(await validate_step(root, profile, model, manifest, stage))
        t_tasks = time.perf_counter()
        per_task = opts.per_task if opts.per_task is not None else profile.per_task
        try:
            if per_task > 0:
                task_info = await make_tasks(
                    root,
                    opts.seed,
                    per_task,
                    rc.run if stage.on_workers else rc.writer(),
                    opts.answer_format,
                    model,
                    stage,
                    adapt=opts.per_task is None,
                    store_ready=storing,
                )
                steps["tasks"] = round(time.perf_counter() - t_tasks, 4)
                files.update(task_info.pop("files"))
        finally:
            if validating is not None:
                validated(await validating)
    finally:
        if side is not None and storing is not None and not storing.done():
            side.withdraw()  # the build failed before the store was done: its stage stops waiting for objects
        await settled(storing)
        held.close()
        # The last text is written (generation, task drafts and paraphrases): stop the writer, flush its
        # cache and report usage, also when the build failed (the report lists why).
        await rc.aclose()
        usage = writers.write_usage_report(bundle, opts)
        if usage is not None:
            report, rel, digest = usage
            files[rel] = digest
            manifest["writer"].update(failed=report["failed_records"], filled=report["filled_by_offline"])
            manifest["llm_usage"] = {
                "report": rel,
                **{k: report["totals"].get(k) for k in writers.MANIFEST_TOTALS},
            }
        if manifest["status"] != "complete":
            manifest.setdefault("timings", {})["total_seconds"] = round(time.perf_counter() - t_start, 3)
            if manifest["status"] == "in_progress" and sys.exc_info()[0] is not None:
                manifest["status"] = "failed"
            bundle.write_manifest(manifest)
    manifest.update(status="complete", files=dict(sorted(files.items())), tasks=task_info)
    manifest["timings"]["stages"] = {**manifest["timings"].get("stages", {}), **spans}
    manifest["timings"]["total_seconds"] = round(time.perf_counter() - t_start, 3)
    bundle.write_manifest(manifest)
    root = bundle.publish()
    return BuildReport(
        root=root,
        manifest=manifest,
        counts=manifest["counts"],
        seconds=time.perf_counter() - t_start,
        generation_seconds=generation_seconds,
        steps=steps,
    )


def regenerate_tasks(
    root: Path, per_task: int | None, seed: int | None, answer_format: str
) -> dict[str, Any]:
    """`orgseed tasks`: rebuild the task files of an existing bundle and record them in its manifest."""
    from flows.tasks import require_complete_registry
    from generator.text.offline import OfflineWriter

    require_complete_registry()
    if per_task is not None and per_task < 1:
        raise UsageError(f"--per-task must be at least 1 (got {per_task}).")
    if answer_format not in ("scalar", "list"):
        raise UsageError(f"--answer-format must be scalar or list (got {answer_format}).")
    bundle = Bundle(root)
    manifest = bundle.read_manifest()
    per_task_default = int((manifest.get("tasks") or {}).get("per_task", 130))
    problems = bundle.verify_hashes(
        {**manifest, "files": {k: v for k, v in manifest.get("files", {}).items() if k.startswith("data/")}}
    )
    if problems:
        raise UsageError(problems[0] + " Task answers would not describe this data.")
    seed = manifest["seed"] if seed is None else seed
    writer = OfflineWriter(seed, manifest["profile"].get("company", "our company"))
    adapt = per_task is None
    if per_task is None:
        per_task = int((manifest.get("tasks") or {}).get("adapted", {}).get("requested") or per_task_default)
    info = asyncio.run(make_tasks(root, seed, per_task, writer, answer_format, load_model(), adapt=adapt))
    files = dict(manifest.get("files", {}))
    files.update(info.pop("files"))
    manifest["files"] = dict(sorted(files.items()))
    manifest["tasks"] = {**info, "seed": seed}
    bundle.write_manifest(manifest)
    return dict(manifest["tasks"])
