"""Global LLM limits on a Dask cluster: two worker processes share --concurrency and --tpm through the
scheduler, so the endpoint (the local fake OpenAI server, counting requests in flight and the tokens each
arrives with) never sees more than the limit."""

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


def _settings(fake: FakeOpenAI, usage: Path, shared: str | None, **limits: Any) -> LLMSettings:
    return LLMSettings(
        model="fake-model",
        base_url=fake.base_url,
        use_cache=False,
        concurrency=LIMIT,
        max_stall_seconds=30.0,
        request_timeout=10.0,
        shared_limits=shared,
        usage_dir=str(usage),
        **limits,
    )


def _run_on_two_workers(
    client: Any,
    fake: FakeOpenAI,
    env: PromptEnv,
    requests: list[TextRequest],
    tmp: Path,
    shared: str | None,
    **limits: Any,
) -> list[tuple[int, bool]]:
    workers = sorted(client.scheduler_info()["workers"])
    assert len(workers) == 2
    futures = []
    half = len(requests) // 2
    for i, addr in enumerate(workers):
        settings = _settings(fake, tmp / f"usage-{i}", shared, **limits)
        part = requests[i * half : (i + 1) * half]
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


def _tokens(arrival: tuple[float, int, int]) -> float:
    """What --tpm counts for a request (README: the prompt at four characters a token, half the completion
    asked for), from what the endpoint received."""
    _, chars, max_tokens = arrival
    return chars / 4 + max_tokens / 2


def _busiest_window(arrivals: list[tuple[float, int, int]], seconds: float) -> float:
    """The most tokens that arrived at the endpoint within any `seconds` (a sliding window)."""
    arrivals = sorted(arrivals)
    most = 0.0
    for i, (start, _, _) in enumerate(arrivals):
        most = max(most, sum(_tokens(a) for a in arrivals[i:] if a[0] < start + seconds))
    return most


def test_two_workers_together_stay_within_the_token_limit(
    client: Any,
    fake: FakeOpenAI,
    env: PromptEnv,
    small_requests: dict[TextKind, list[TextRequest]],
    tmp_path: Path,
) -> None:
    requests = small_requests[TextKind.CASE][:16]
    # what each request costs, sent once from here with no limit (the prompts are the same in every run)
    fake.reset(latency=0.0)
    writer = LLMWriter(_settings(fake, tmp_path / "calibrate", None), seed=0, env=env, api_key=SENTINEL_KEY)
    try:
        asyncio.run(writer.write(TextKind.CASE, requests))
    finally:
        writer.close()
    assert len(fake.stats.arrivals) == 16
    tpm = int(4 * max(_tokens(a) for a in fake.stats.arrivals))  # about four requests a window
    window, slack = 1.5, 0.3  # arrivals lag their leases a little: measure over a slightly shorter window
    limits = {"tpm": tpm, "limit_window_seconds": window}
    # each worker alone keeps its own budget, so together the endpoint sees more (the test can fail)
    fake.reset(latency=0.05)
    alone = _run_on_two_workers(client, fake, env, requests, tmp_path / "a", None, **limits)
    assert alone == [(8, False), (8, False)]
    assert _busiest_window(fake.stats.arrivals, window - slack) > tpm
    # shared through the scheduler: never more than --tpm tokens in a window, whichever worker sends
    fake.reset(latency=0.05)
    name = f"orgseed-test-{uuid.uuid4().hex}"
    together = _run_on_two_workers(client, fake, env, requests, tmp_path / "b", name, **limits)
    assert together == [(8, True), (8, True)]
    assert len(fake.stats.arrivals) == 16
    assert 0 < _busiest_window(fake.stats.arrivals, window - slack) <= tpm


def test_outside_a_dask_cluster_a_writer_keeps_its_own_limits() -> None:
    # a fresh process: no Dask worker or client in it (this one has the module's client)
    code = (
        "from generator.text.shared import SharedLimits\n"
        "print(SharedLimits.join('orgseed-llm-x', 3, 60, 60.0), SharedLimits.join(None, 3, 60, 60.0))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert done.stdout.split() == ["None", "None"]
