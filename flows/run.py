"""Running a build: with the chosen engine (in-process, or a Prefect flow on threads or Dask), or as a dry run.

The entry points the CLI and the benchmarks call; `flows.build` holds the steps, `flows.prefect_flow` the flow.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from flows import sidecar
from flows.build import BuildReport, SidecarStages, build_bundle, check_options
from flows.options import BuildOptions
from flows.writer import USAGE_REPORT
from generator.pipeline import LocalExecutor, Progress
from schemas.errors import UsageError
from schemas.gcpause import heap_frozen


def run_build(opts: BuildOptions, progress: Progress | None = None, verbose: bool = False) -> BuildReport:
    """Build with the chosen engine (Prefect by default)."""
    check_options(opts)
    if opts.engine == "local":
        # what the process holds before the build (modules, the org model) stays out of the collector's
        # walks until it ends, in the sidecar forked from it too: the full collections each asks for after
        # a large step (`release_freed_memory`) then walk what the build made (scale 10: ~50-70 ms each,
        # 7 of them, -> a few ms)
        with heap_frozen():
            if not sidecar.wanted(opts.sidecar):
                return asyncio.run(build_bundle(opts, LocalExecutor(), progress))
            with sidecar.Sidecar() as side:
                return asyncio.run(build_bundle(opts, LocalExecutor(), progress, stage=SidecarStages(side)))
    from flows import prefect_env

    prefect_env.configure(verbose)
    from flows import prefect_flow

    if opts.runner == "dask":
        with _api_server_for_workers():
            out = prefect_flow.run(opts, _dask_runner(opts), progress)
    else:
        from prefect.task_runners import ThreadPoolTaskRunner

        out = prefect_flow.run(opts, ThreadPoolTaskRunner(max_workers=max(1, opts.shards)), progress)
    return BuildReport(
        root=Path(out["root"]),
        manifest=out["manifest"],
        counts=out["manifest"]["counts"],
        seconds=out["seconds"],
        generation_seconds=out["generation_seconds"],
        steps=out["steps"],
        flow_run_id=out["flow_run_id"],
    )


@contextlib.contextmanager
def _api_server_for_workers() -> Iterator[None]:
    """For the duration of a Dask build, a Prefect API server for its workers: the user's (PREFECT_API_URL, left
    alone), else Prefect's temporary server, started here and its URL exported while the build runs, so the
    worker processes (which inherit the environment) report to it instead of each starting a server of their
    own (measured: ~10-30 s per worker). The URL is taken back out afterwards, so the rest of the process (a
    later build, a test) sees the environment it had; the server itself is Prefect's one per process, reused by
    the next Dask build and stopped at interpreter exit (Prefect registers it with atexit)."""
    if os.environ.get("PREFECT_API_URL"):
        yield
        return
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()
    server.start()  # a no-op when an earlier build of this process started it
    os.environ["PREFECT_API_URL"] = server.api_url
    try:
        yield
    finally:
        os.environ.pop("PREFECT_API_URL", None)


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
            # no dashboard, but the scheduler still serves HTTP (health, metrics): on a free port, not on 8787,
            # which another cluster (another build) may hold, and Dask would warn about it on stderr
            "scheduler_kwargs": {"dashboard_address": ":0"},
            "memory_limit": opts.dask_memory_limit or "auto",
        }
    )


def estimate_build(opts: BuildOptions) -> dict[str, Any]:
    """`--dry-run`: run the pipeline with stand-in texts in a scratch folder and return the usage estimate.

    Sends nothing: records whose answers are cached are replayed, the rest are counted (requests, prompt
    tokens from the rendered messages, output tokens estimated) and filled by the offline writer so later
    objects can be planned.
    """
    with tempfile.TemporaryDirectory(prefix="orgseed-dry-run-") as tmp:
        scratch = replace(
            opts,
            out=str(Path(tmp) / "bundle"),
            force=True,
            engine="local",
            llm=replace(opts.llm, dry_run=True),
        )
        asyncio.run(build_bundle(scratch, LocalExecutor()))
        path = Path(tmp) / "bundle" / USAGE_REPORT
        if not path.exists():
            raise UsageError("The dry run produced no estimate: the profile plans no text.")
        result: dict[str, Any] = json.loads(path.read_text())
        return result
