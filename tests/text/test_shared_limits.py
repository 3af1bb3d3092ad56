"""Global LLM limits on a Dask cluster: two worker processes share --concurrency through the scheduler, so the
endpoint (the local fake OpenAI server, counting requests in flight) never sees more than the limit."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from generator.text.base import TextKind, TextRequest
from generator.text.llm import LLMSettings, LLMWriter
from generator.text.render import PromptEnv
from tests.conftest import REPO
from tests.fakes.openai_server import FakeOpenAI
from tests.text.conftest import SENTINEL_KEY

distributed = pytest.importorskip("distributed")

LIMIT = 3


def _write(settings: LLMSettings, env: PromptEnv, requests: list[TextRequest]) -> tuple[int, bool]:
    """A Dask task: one writer in this worker process writes `requests` (as a text shard does)."""
    writer = LLMWriter(settings, seed=0, env=env, api_key=SENTINEL_KEY)
    try:
        texts = asyncio.run(writer.write(TextKind.CASE, requests))
        shared = writer._e.shared is not None
    finally:
        writer.close()
    return len(texts), shared


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="1GiB"
    )
    with cluster, distributed.Client(cluster) as c:
        yield c


def _run_on_two_workers(
    client: Any, fake: FakeOpenAI, env: PromptEnv, requests: list[TextRequest], tmp: Path, shared: str | None
) -> list[tuple[int, bool]]:
    workers = sorted(client.scheduler_info()["workers"])
    assert len(workers) == 2
    futures = []
    for i, addr in enumerate(workers):
        settings = LLMSettings(
            model="fake-model",
            base_url=fake.base_url,
            use_cache=False,
            concurrency=LIMIT,
            max_stall_seconds=30.0,
            request_timeout=10.0,
            shared_limits=shared,
            usage_dir=str(tmp / f"usage-{i}"),
        )
        part = requests[i * 12 : (i + 1) * 12]
        futures.append(client.submit(_write, settings, env, part, workers=[addr], pure=False))
    return list(client.gather(futures))


def test_two_workers_together_stay_within_the_concurrency_limit(
    client: Any,
    fake: FakeOpenAI,
    env: PromptEnv,
    small_requests: dict[TextKind, list[TextRequest]],
    tmp_path: Path,
) -> None:
    requests = small_requests[TextKind.CASE][:24]
    # without shared limits each worker sends up to LIMIT at once: the endpoint sees more (the test can fail)
    fake.reset(latency=0.3)
    alone = _run_on_two_workers(client, fake, env, requests, tmp_path / "a", None)
    assert alone == [(12, False), (12, False)]
    assert fake.stats.max_in_flight > LIMIT
    # shared through the scheduler: never more than LIMIT in flight, whichever worker sends
    fake.reset(latency=0.3)
    together = _run_on_two_workers(
        client, fake, env, requests, tmp_path / "b", f"orgseed-test-{uuid.uuid4().hex}"
    )
    assert together == [(12, True), (12, True)]
    assert fake.stats.requests == 24
    assert 1 <= fake.stats.max_in_flight <= LIMIT


def test_outside_a_dask_cluster_a_writer_keeps_its_own_limits() -> None:
    # a fresh process: no Dask worker or client in it (this one has the module's client)
    code = (
        "from generator.text.shared import SharedLimits\n"
        "print(SharedLimits.join('orgseed-llm-x', 3, 60, 60.0), SharedLimits.join(None, 3, 60, 60.0))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.split() == ["None", "None"]
