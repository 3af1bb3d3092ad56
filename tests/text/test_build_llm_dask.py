"""`orgseed build --writer openai --runner dask` against the fake server: the texts written on the cluster's
workers (generation shards, and the task drafts and paraphrases of the `tasks` stage, which runs on a worker
with a writer of its own) are those of an in-process build, and the usage report counts every one of them,
whichever process sent it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from flows.build import build_bundle
from flows.options import BuildOptions
from flows.run import run_build
from generator.pipeline import LocalExecutor
from generator.text.llm import LLMSettings
from tests.conftest import SMALL_PROFILE
from tests.fakes.openai_server import FakeOpenAI
from tests.text.conftest import SENTINEL_KEY
from tests.text.test_build_llm import planned_texts

pytest.importorskip("distributed")


def _options(out: Path, fake: FakeOpenAI, cache: Path, **build: Any) -> BuildOptions:
    llm = LLMSettings(model="fake-model", base_url=fake.base_url, cache=str(cache), concurrency=4)
    return BuildOptions(
        profile=str(SMALL_PROFILE), out=str(out), force=True, writer="openai", llm=llm, **build
    )


def test_an_llm_build_on_dask_writes_the_in_process_texts_and_counts_every_process(
    fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)  # the workers inherit it, as `dask worker`s would
    # the build starts (or restarts) Prefect's temporary API server for its workers (flows/run.py), whatever
    # an earlier test left in PREFECT_API_URL
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    local = asyncio.run(
        build_bundle(
            _options(tmp_path / "local", fake, tmp_path / "a.sqlite", engine="local"), LocalExecutor()
        )
    ).manifest
    fake.reset()
    # a cache of its own: every text is asked for again, on the workers and in the flow's process
    dask = run_build(
        _options(
            tmp_path / "dask", fake, tmp_path / "b.sqlite", runner="dask", shards=2, dask_memory_limit="1GiB"
        )
    ).manifest
    assert dask["timings"]["stages"]["tasks"]["where"].startswith("tcp://127.0.0.1:")
    assert dask["data_sha256"] == local["data_sha256"]
    assert {k: v for k, v in dask["files"].items() if k.startswith("tasks/")} == {
        k: v for k, v in local["files"].items() if k.startswith("tasks/")
    }
    assert dask["tasks"]["text_requests"] == local["tasks"]["text_requests"] != {}
    usage = json.loads((tmp_path / "dask" / "reports" / "llm_usage.json").read_text())
    # every text of the build, whichever process wrote it (the workers' snapshots outlive the work folder)
    assert usage["totals"]["records"] == planned_texts(dask) == planned_texts(local)
    assert usage["totals"]["requests"] == fake.stats.status[200] > 0
