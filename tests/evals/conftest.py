"""Fixtures of the eval tests: a served copy of the small bundle and the fake OpenAI server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from orgs.local import disconnect
from tests.conftest import copy_bundle
from tests.fakes.openai_server import FakeOpenAI


@pytest.fixture(scope="session")
def eval_bundle(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A private copy of the small bundle (evaluations write reports/eval/ and org.sqlite into it)."""
    root = copy_bundle(small_bundle, tmp_path_factory.mktemp("eval") / "bundle")
    yield root
    disconnect(root)


@pytest.fixture(scope="session")
def fake_llm() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads a real key, a price override or the user's cache."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ORGSEED_PRICES", raising=False)
    monkeypatch.setenv("ORGSEED_CACHE_DIR", str(tmp_path / "cache"))
