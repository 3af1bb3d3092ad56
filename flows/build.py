"""`orgseed build`: generate → persist → (validate → tasks) → manifest.

`build_bundle` is the orchestration as a plain async function; `build_flow` runs the same steps as a
Prefect flow whose tasks are object × shard jobs (never records). The executor decides where jobs run:
in-process (`--no-prefect`), Prefect's thread pool (default) or a Dask cluster (`--runner dask`).
"""

from __future__ import annotations

import asyncio
import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from flows import writer as writers
from flows.writer import check_writer_options
from generator.pipeline import (
    WORK_DIR,
    Executor,
    GenerationResult,
    LocalExecutor,
    Progress,
    RunSpec,
    ShardJob,
    close_writer,
    generate,
    make_context,
    run_shard_sync,
    set_writer_factory,
)
from generator.text.writers import make_writer
from generator.world import World
from orgs.bundle import Bundle, data_digest, new_manifest
from schemas.errors import UsageError
from schemas.model import load_model
from schemas.profile import load_profile

ENGINES = ("prefect", "local")
RUNNERS = ("threads", "dask")
# Worker processes import this module to run shard tasks, so they build the same writer as the parent.
set_writer_factory(make_writer)


@dataclass
class BuildOptions:
    profile: str = "crmarena"
    scale: float = 1.0
    seed: int = 0
    out: str | None = None
    shards: int = 1
    force: bool = False
    writer: str = "offline"
    engine: str = "prefect"
    runner: str = "threads"
    dask_address: str | None = None
    # The LLM writer (--writer openai); see flows/writer.py and generator/text/llm.py.
    model: str | None = None
    base_url: str | None = None
    cache: str | None = None
    no_cache: bool = False
    concurrency: int = 8
    rpm: int | None = None
    tpm: int | None = None
    dry_run: bool = False
    fallback: str | None = None
    max_stall_seconds: float = 120.0

    def output(self) -> Path:
        if self.out:
            return Path(self.out)
        name = Path(self.profile).stem if self.profile.endswith(".toml") else self.profile
        return Path("output") / name


@dataclass
class BuildReport:
    root: Path
    manifest: dict[str, Any]
    counts: dict[str, int]
    seconds: float
    generation_seconds: float
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(self.counts.values())


def check_options(opts: BuildOptions) -> None:
    if not isinstance(opts.scale, int | float) or not math.isfinite(opts.scale) or opts.scale <= 0:
        raise UsageError(
            f"--scale must be a positive number (got {opts.scale}); 1.0 builds the profile's counts."
        )
    if opts.shards < 1:
        raise UsageError(f"--shards must be at least 1 (got {opts.shards}).")
    if opts.seed < 0:
        raise UsageError(f"--seed must be zero or positive (got {opts.seed}).")
    if opts.engine not in ENGINES:
        raise UsageError(f"--engine must be one of {', '.join(ENGINES)} (got {opts.engine}).")
    if opts.runner not in RUNNERS:
        raise UsageError(f"--runner must be one of {', '.join(RUNNERS)} (got {opts.runner}).")
    if opts.runner == "dask" and opts.engine != "prefect":
        raise UsageError("--runner dask needs the Prefect engine; drop --no-prefect.")
    check_writer_options(opts)


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


def _rounded(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = out[c].round(6)
    return out


async def build_bundle(
    opts: BuildOptions,
    executor: Executor,
    progress: Progress | None = None,
    shares_memory: bool = True,
) -> BuildReport:
    """Build a bundle. Checks every input before touching the output folder."""
    t_start = time.perf_counter()
    check_options(opts)
    model = load_model()
    profile = load_profile(opts.profile, model)
    root = opts.output()
    bundle = Bundle.prepare(root, opts.force)
    run = RunSpec(
        profile=str(profile.path.resolve()),
        seed=opts.seed,
        scale=float(opts.scale),
        writer=opts.writer,
        writer_options=writers.run_options(opts, root),
    )
    manifest = new_manifest(
        {"name": profile.name, "path": str(profile.path), "sha256": profile.digest},
        opts.seed,
        float(opts.scale),
        writers.manifest_entry(opts),
        model,
    )
    manifest["build"] = {
        "shards": opts.shards,
        "engine": opts.engine,
        "runner": opts.runner if opts.engine == "prefect" else "in-process",
    }
    bundle.write_manifest(manifest)
    files: dict[str, str] = {}
    objects: dict[str, dict[str, Any]] = {}

    def persist(name: str, frame: pd.DataFrame) -> None:
        data, latent = bundle.write_object(model.get(name), frame)
        files[data.path] = data.sha256
        objects[name] = {"file": data.path, "rows": data.rows, "sha256": data.sha256}
        if latent is not None:
            files[latent.path] = latent.sha256

    ctx = make_context(run, model)
    t_gen = time.perf_counter()
    try:
        result: GenerationResult = await generate(
            root, run, executor, opts.shards, persist, progress, ctx=ctx, shares_memory=shares_memory
        )
    finally:
        await close_writer(ctx, run)  # the last text is written: flush the cache, stop the writer's thread
        usage = writers.write_usage_report(bundle, opts)  # also when a writer failed: it lists why
    generation_seconds = time.perf_counter() - t_gen
    if usage is not None:
        report, rel, digest = usage
        files[rel] = digest
        manifest["writer"].update(failed=report["failed_records"], filled=report["filled_by_offline"])
        manifest["llm_usage"] = {
            "report": rel,
            **{k: report["totals"].get(k) for k in writers.MANIFEST_TOTALS},
        }
    for rel, payload in world_tables(result.ctx.world).items():
        entry = (
            bundle.write_frame(f"latent/{rel}", payload)
            if isinstance(payload, pd.DataFrame)
            else bundle.write_json(f"latent/{rel}", payload)
        )
        files[entry.path] = entry.sha256
    shutil.rmtree(root / WORK_DIR, ignore_errors=True)
    steps = {f"generate.{k}": round(v, 4) for k, v in result.timings.items()}
    manifest.update(
        status="complete",
        objects={name: objects[name] for name in model.names},
        files=dict(sorted(files.items())),
        data_sha256=data_digest(files),
        counts={name: objects[name]["rows"] for name in model.names},
        text={"requests": result.text_counts},
        timings={"generation_seconds": round(generation_seconds, 3), "steps": steps},
    )
    manifest["timings"]["total_seconds"] = round(time.perf_counter() - t_start, 3)
    bundle.write_manifest(manifest)
    return BuildReport(
        root=root,
        manifest=manifest,
        counts=manifest["counts"],
        seconds=time.perf_counter() - t_start,
        generation_seconds=generation_seconds,
        steps=steps,
    )


# -- Prefect ------------------------------------------------------------------------------------------------

_PROGRESS: Progress | None = None


def _prefect_objects() -> tuple[Any, Any]:
    """The Prefect task and flow, created on first use so `import flows.build` stays light."""
    global _FLOW, _TASK
    if _FLOW is not None:
        return _FLOW, _TASK
    from prefect import flow, task
    from prefect.cache_policies import NO_CACHE

    @task(name="shard", cache_policy=NO_CACHE, persist_result=False, log_prints=False)
    def shard_task(job: ShardJob) -> Any:
        return run_shard_sync(job)

    @flow(name="orgseed-build", log_prints=False, persist_result=False, validate_parameters=False)
    async def build_flow(options: dict[str, Any]) -> dict[str, Any]:
        opts = BuildOptions(**options)
        executor = PrefectExecutor(shard_task)
        report = await build_bundle(opts, executor, _PROGRESS, shares_memory=opts.runner == "threads")
        return {
            "root": str(report.root),
            "manifest": report.manifest,
            "seconds": report.seconds,
            "generation_seconds": report.generation_seconds,
            "steps": report.steps,
        }

    _FLOW, _TASK = build_flow, shard_task
    return _FLOW, _TASK


_FLOW: Any = None
_TASK: Any = None


class PrefectExecutor:
    """Submits one Prefect task per shard job to the flow's task runner and waits for all of them."""

    def __init__(self, shard_task: Any) -> None:
        self.shard_task = shard_task

    async def run(self, label: str, jobs: Sequence[ShardJob]) -> list[Any]:
        futures = [
            self.shard_task.with_options(task_run_name=f"{j.sobject}.{j.stage}[{j.shard}/{j.shards}]").submit(
                j
            )
            for j in jobs
        ]
        return await asyncio.to_thread(lambda: [f.result() for f in futures])


def run_build(opts: BuildOptions, progress: Progress | None = None, verbose: bool = False) -> BuildReport:
    """Build with the chosen engine (Prefect by default)."""
    check_options(opts)
    if opts.engine == "local":
        return asyncio.run(build_bundle(opts, LocalExecutor(), progress))
    from flows import prefect_env

    prefect_env.configure(verbose)
    global _PROGRESS
    _PROGRESS = progress
    build_flow, _ = _prefect_objects()
    if opts.runner == "dask":
        runner = _dask_runner(opts)
        build_flow = build_flow.with_options(task_runner=runner)
    else:
        from prefect.task_runners import ThreadPoolTaskRunner

        build_flow = build_flow.with_options(
            task_runner=ThreadPoolTaskRunner(max_workers=max(1, opts.shards))
        )
    try:
        out = asyncio.run(build_flow(asdict(opts)))
    finally:
        _PROGRESS = None
    return BuildReport(
        root=Path(out["root"]),
        manifest=out["manifest"],
        counts=out["manifest"]["counts"],
        seconds=out["seconds"],
        generation_seconds=out["generation_seconds"],
        steps=out["steps"],
    )


def _dask_runner(opts: BuildOptions) -> Any:
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise UsageError(
            "--runner dask needs prefect-dask; install it with `pip install 'orgseed[dask]'`."
        ) from exc
    if opts.dask_address:
        return DaskTaskRunner(address=opts.dask_address)
    return DaskTaskRunner(
        cluster_kwargs={
            "n_workers": max(1, opts.shards),
            "threads_per_worker": 1,
            "processes": True,
            "dashboard_address": None,
        }
    )


def load_report(root: Path) -> dict[str, Any]:
    return dict(json.loads((root / "manifest.json").read_text()))


ProgressFactory = Callable[[], Progress]
