"""The Dask engine: a small org built on a two-worker local Dask cluster with a memory limit per worker is
byte-identical to the threads runner's build and to a one-shard build, also when workers die mid-build and are
restarted; every stage but two (the latent world, the HTTP sample of the answer check) runs on the workers,
and the answer check's outcome is the in-process one."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from distributed import WorkerPlugin

from flows import sidecar
from flows.build import check_options
from flows.options import BuildOptions
from flows.run import run_build
from schemas.errors import UsageError
from tests.conftest import SMALL_PROFILE


def _build(out: Path, **options: Any) -> dict[str, Any]:
    opts = BuildOptions(profile=str(SMALL_PROFILE), out=str(out), force=True, **options)
    return run_build(opts).manifest


def test_two_memory_limited_dask_workers_build_the_same_bundle_as_threads_and_one_shard(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_shard = json.loads((small_bundle / "manifest.json").read_text())  # in-process, --shards 1
    threads = _build(tmp_path / "threads", shards=2)
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    dask = _build(tmp_path / "dask", shards=2, runner="dask", dask_memory_limit="1GiB")
    # the temporary API server's URL was exported to the workers for the build only, not left behind
    assert "PREFECT_API_URL" not in os.environ
    assert dask["build"]["runner"] == "dask"
    assert threads["build"]["runner"] == "threads"
    assert dask["data_sha256"] == threads["data_sha256"] == one_shard["data_sha256"]
    assert dask["files"] == threads["files"] == one_shard["files"]  # latent/ and tasks/ too
    # every stage ran on the cluster's workers but the latent world (written from the generated world, in
    # the flow's process) and the answer check's HTTP sample (through the org served by the flow's process)
    spans = dask["timings"]["stages"]
    on_workers = {"validate", "tasks", "tasks.check", "fidelity", "tasks.check_api/store"}
    chunks = {f"tasks.check_api/{t}" for t in dask["tasks"]["stats"]}  # one part per task
    assert len(chunks) == 9
    assert set(spans) == {
        "generate",
        "world",
        "tasks.check_api",
        "tasks.check_api/http",
        *on_workers,
        *chunks,
    }
    for name in on_workers | chunks:
        assert spans[name]["where"].startswith("tcp://127.0.0.1:"), name
    assert spans["world"]["where"] == spans["tasks.check_api/http"]["where"] == "local"
    # on threads: the tasks and the check through the org in the flow's process; the stages that read only
    # the bundle's files in the sidecar process when the machine has a second core (flows/sidecar.py), else
    # in the flow's process too
    # (there, the org's store is built during generation, and the two processes share the check through the
    # org, a chunk per task, and the fidelity figures)
    on_threads = {threads["timings"]["stages"][n]["where"] for n in ("store", "validate", "tasks.check")}
    shared = {threads["timings"]["stages"][n]["where"] for n in ("fidelity", *chunks)}
    if sidecar.wanted(None):
        assert len(on_threads) == 1 and on_threads.pop().startswith("sidecar (pid "), on_threads
        assert all(w == "local" or w.startswith("sidecar (pid ") for w in shared), shared
    else:
        assert on_threads == shared == {"local"}
    assert threads["timings"]["stages"]["tasks"]["where"] == "local"
    # the whole check spans its parts; its outcome is the in-process check's: same verdicts (it passed, as
    # the others did) and the same counts
    whole = spans["tasks.check_api"]
    assert all(whole["start"] <= spans[n]["start"] for n in chunks)
    same = ("instances", "queries", "http_sample")
    api = {
        name: m["tasks"]["api_check"]
        for name, m in (("dask", dask), ("threads", threads), ("one", one_shard))
    }
    assert (
        {k: api["dask"][k] for k in same}
        == {k: api["threads"][k] for k in same}
        == {k: api["one"][k] for k in same}
    )
    assert api["dask"]["chunks"] == 9 and 1 <= api["dask"]["workers"] <= 2
    assert dask["tasks"]["verified"] is threads["tasks"]["verified"] is one_shard["tasks"]["verified"] is True
    for key in ("instances", "per_task", "text_requests", "stats", "fidelity"):
        assert dask["tasks"][key] == one_shard["tasks"][key], key


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"runner": "dask", "dask_memory_limit": "lots"}, "at least 256MiB"),
        ({"runner": "dask", "dask_memory_limit": ""}, "at least 256MiB"),
        ({"runner": "dask", "dask_memory_limit": "10MB"}, "at least 256MiB"),
        ({"runner": "threads", "dask_memory_limit": "2GiB"}, "with --runner dask"),
        ({"runner": "dask", "dask_address": "tcp://127.0.0.1:1", "dask_memory_limit": "2GiB"}, "dask worker"),
    ],
)
def test_a_bad_memory_limit_is_refused_before_anything_runs(options: dict[str, Any], words: str) -> None:
    with pytest.raises(UsageError, match="--dask-memory-limit") as err:
        check_options(BuildOptions(**options))
    assert words in str(err.value)


class KillWorkers(WorkerPlugin):
    """A Dask worker plugin: the worker process dies (no clean-up, as when the OOM killer takes it) the first
    time any worker starts a task (`executing`) and the first time one finishes a task (`memory`: its files
    written, its result not yet sent). Marker files make each happen once across the restarted workers."""

    name = "orgseed-test-kill-workers"

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def setup(self, worker: Any) -> None:
        self.worker = worker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish not in ("executing", "memory"):
            return
        marker = Path(self.folder) / f"killed-{finish}"
        try:
            marker.touch(exist_ok=False)  # the first worker to get here, once
        except FileExistsError:
            return
        os._exit(1)


@pytest.fixture
def prefect_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A Prefect API server for the build and for the workers of a cluster started here (which inherit the
    environment, as `dask worker` processes on a user's machines would with PREFECT_API_URL set)."""
    from prefect.server.api.server import SubprocessASGIServer

    server = SubprocessASGIServer()  # one per process: the one an earlier Dask build started, if any
    ours = not server.running
    server.start()
    monkeypatch.setenv("PREFECT_API_URL", server.api_url)
    try:
        yield server.api_url
    finally:
        if ours:  # stopping the one an earlier build started would strand the PREFECT_API_URL it exported
            server.stop()


def test_workers_killed_mid_build_are_restarted_and_the_bundle_is_unchanged(
    tmp_path: Path, small_bundle: Path, prefect_api: str
) -> None:
    import distributed

    one_shard = json.loads((small_bundle / "manifest.json").read_text())
    markers = tmp_path / "markers"
    markers.mkdir()
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="1GiB"
    )
    with cluster, distributed.Client(cluster) as client:
        client.register_plugin(KillWorkers(str(markers)))
        dask = _build(tmp_path / "dask", shards=2, runner="dask", dask_address=cluster.scheduler_address)
        workers = client.scheduler_info()["workers"]
    # both deaths happened, the nannies restarted the workers, and the shards ran again
    assert sorted(p.name for p in markers.iterdir()) == ["killed-executing", "killed-memory"]
    assert len(workers) == 2
    assert dask["build"]["runner"] == "dask"
    assert dask["data_sha256"] == one_shard["data_sha256"]
    assert dask["files"] == one_shard["files"]
