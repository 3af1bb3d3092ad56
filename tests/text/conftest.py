"""Fixtures of the text-writer tests: the fake OpenAI server, real requests of a small build, writers."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from flows.build import build_bundle
from flows.options import BuildOptions
from generator import pipeline
from generator.pipeline import LocalExecutor
from generator.text.base import TextKind, TextRequest
from generator.text.llm import LLMSettings, LLMWriter
from generator.text.offline import OfflineWriter
from generator.text.render import PromptEnv
from schemas.profile import load_profile
from tests.conftest import SMALL_PROFILE
from tests.fakes.openai_server import FakeOpenAI

SENTINEL_KEY = "sk-orgseed-sentinel-7f3a9c1e5b2d4f60"


@pytest.fixture(autouse=True)
def _isolated_llm_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads a real key or writes the user's cache."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ORGSEED_PRICES", raising=False)
    monkeypatch.setenv("ORGSEED_CACHE_DIR", str(tmp_path / "default-cache"))
    monkeypatch.chdir(tmp_path)  # no stray .env is found


@pytest.fixture(scope="session")
def fake_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def fake(fake_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    """The session's fake server with default knobs and zeroed counters."""
    fake_server.reset()
    yield fake_server
    fake_server.reset()


@pytest.fixture(scope="session")
def env() -> PromptEnv:
    return PromptEnv.from_profile(load_profile(str(SMALL_PROFILE)))


@pytest.fixture(scope="session")
def small_requests(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[TextKind, list[TextRequest]]:
    """Every text request of the small profile (seed 0), as the offline build makes them."""
    seen: dict[TextKind, list[TextRequest]] = {}

    class Recording(OfflineWriter):
        async def write(self, kind: TextKind, requests: Sequence[TextRequest]) -> list[dict[str, Any]]:
            seen.setdefault(kind, []).extend(requests)
            return self.write_sync(kind, requests)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pipeline, "make_writer", lambda run, profile: Recording(run.seed, profile.company.name))
        out = tmp_path_factory.mktemp("recorded") / "bundle"
        opts = BuildOptions(profile=str(SMALL_PROFILE), out=str(out), force=True, engine="local")
        asyncio.run(build_bundle(opts, LocalExecutor()))
    return seen


WriterFactory = Callable[..., LLMWriter]


@pytest.fixture
def llm_writer(fake: FakeOpenAI, env: PromptEnv, tmp_path: Path) -> Iterator[WriterFactory]:
    """Makes LLM writers against the fake server (cache in tmp_path); closes them afterwards."""
    made: list[LLMWriter] = []

    def make(api_key: str = SENTINEL_KEY, **settings: Any) -> LLMWriter:
        base: dict[str, Any] = {
            "model": "fake-model",
            "base_url": fake.base_url,
            "cache": str(tmp_path / "llm.sqlite"),
            "concurrency": 8,
            "backoff_base": 0.02,
            "backoff_max": 0.2,
            "max_stall_seconds": 20.0,
            "request_timeout": 10.0,
        }
        base.update(settings)
        writer = LLMWriter(LLMSettings(**base), seed=0, env=env, api_key=api_key)
        made.append(writer)
        return writer

    yield make
    for w in made:
        w.close()


def run(coro: Any) -> Any:
    return asyncio.run(coro)
