"""Shared fixtures. Session bundles are read-only: copy one (`copy_bundle`) before changing it."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from flows.build import build_bundle
from flows.options import BuildOptions
from generator.pipeline import LocalExecutor

FIXTURES = Path(__file__).parent / "fixtures"
SMALL_PROFILE = FIXTURES / "profiles" / "small.toml"
REPO = Path(__file__).resolve().parent.parent


def build_local(
    out: Path,
    profile: str | Path = SMALL_PROFILE,
    scale: float = 1.0,
    seed: int = 0,
    shards: int = 1,
    writer: str = "offline",
) -> Path:
    """Build a bundle in-process (no Prefect) and return its folder."""
    opts = BuildOptions(
        profile=str(profile),
        scale=scale,
        seed=seed,
        out=str(out),
        shards=shards,
        force=True,
        engine="local",
        writer=writer,
    )
    asyncio.run(build_bundle(opts, LocalExecutor()))
    return out


def copy_bundle(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="session", autouse=True)
def _quiet_prefect(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Prefect runs in tests use a private home and print nothing."""
    os.environ.setdefault("PREFECT_HOME", str(tmp_path_factory.mktemp("prefect-home")))
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")


@pytest.fixture(scope="module", autouse=True)
def _prefect_events_closed() -> Iterator[None]:
    """After a module that ran a Prefect flow in this process, Prefect's events worker is stopped: its
    websocket's keepalive pings draw from the global `random` (websockets' `ping`) on Prefect's loop thread
    every 20 s, and a Hypothesis test drawing at that moment in a later module sees the global random state
    change under it (HypothesisDeprecationWarning: "Do not use the random module inside strategies")."""
    yield
    worker = sys.modules.get("prefect.events.worker")
    if worker is not None:
        worker.EventsWorker.drain_all(timeout=10)


@pytest.fixture(scope="session")
def small_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small test profile, seed 0 (read-only)."""
    return build_local(tmp_path_factory.mktemp("small") / "bundle")


@pytest.fixture(scope="session")
def default_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The crmarena profile at scale 1, seed 0: the org `make build` produces (read-only)."""
    return build_local(tmp_path_factory.mktemp("default") / "bundle", profile="crmarena")
