"""The response cache: content-addressed, shared across threads and processes."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import pytest

from generator.text.cache import CachedResponse, CacheError, ResponseCache, default_cache_path, request_key

PAYLOAD: dict[str, Any] = {
    "endpoint": "http://127.0.0.1:1/v1",
    "template": "case.v1+system.v1+r1",
    "request": {"model": "m", "messages": [{"role": "user", "content": "hi"}], "seed": 7, "max_tokens": 50},
}


def reply(text: str) -> CachedResponse:
    return CachedResponse(text, None, "stop", 10, 5)


def test_key_depends_on_everything_that_decides_the_answer() -> None:
    base = request_key(PAYLOAD)
    assert base == request_key({**PAYLOAD})  # stable
    assert len(base) == 64
    changed = [
        {**PAYLOAD, "template": "case.v2+system.v1+r1"},
        {**PAYLOAD, "endpoint": "http://127.0.0.1:2/v1"},
        {**PAYLOAD, "request": {**PAYLOAD["request"], "seed": 8}},
        {**PAYLOAD, "request": {**PAYLOAD["request"], "model": "m2"}},
        {**PAYLOAD, "request": {**PAYLOAD["request"], "max_tokens": 51}},
        {**PAYLOAD, "request": {**PAYLOAD["request"], "messages": [{"role": "user", "content": "hi!"}]}},
        {**PAYLOAD, "request": {**PAYLOAD["request"], "response_format": {"type": "json_object"}}},
    ]
    assert len({base, *(request_key(p) for p in changed)}) == len(changed) + 1


def test_round_trip_and_wal(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    assert cache.get("k") is None
    cache.put("k", "m", "case", "t", reply("hello"))
    assert cache.get("k") == reply("hello")
    cache.put("k", "m", "case", "t", CachedResponse(None, "no", "stop", 1, 1))  # replace
    assert cache.get("k") == CachedResponse(None, "no", "stop", 1, 1)
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    cache.close()


def _writer(path: str, prefix: str, n: int) -> None:
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(f"{prefix}-{i}", "m", "case", "t", reply(f"{prefix}{i}"))
    cache.close()


def test_concurrent_threads_and_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite")
    ResponseCache(path).close()
    threads = [threading.Thread(target=_writer, args=(path, f"t{k}", 100)) for k in range(3)]
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"p{k}", 100)) for k in range(2)]
    workers: list[threading.Thread | BaseProcess] = [*threads, *procs]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert all(p.exitcode == 0 for p in procs)
    cache = ResponseCache(path)
    assert cache.count() == 500
    assert cache.get("p1-99") == reply("p199")


def test_default_location(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ORGSEED_CACHE_DIR", str(tmp_path / "x"))
    assert default_cache_path() == tmp_path / "x" / "llm.sqlite"
    monkeypatch.delenv("ORGSEED_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_path() == tmp_path / "xdg" / "orgseed" / "llm.sqlite"


def test_unusable_location_says_what_to_do(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(CacheError, match=r"--cache PATH .* --no-cache"):
        ResponseCache(blocker / "llm.sqlite")
