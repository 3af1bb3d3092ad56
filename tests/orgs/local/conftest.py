"""One served org per test session: a copy of the default (crmarena, scale 1) bundle behind the real
HTTPS server, used through the real simple-salesforce client."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from orgs.local.computed import local_model
from orgs.local.serve import LocalServer, disconnect, server_for
from schemas.model import load_model
from schemas.profile import load_profile
from tests.conftest import copy_bundle
from tests.orgs.local.oracle import Frames, Oracle

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "soql"


@pytest.fixture(scope="session")
def served_bundle(default_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private copy of the default bundle (serving writes org.sqlite and tls/ into it)."""
    return copy_bundle(default_bundle, tmp_path_factory.mktemp("served") / "bundle")


@pytest.fixture(scope="session")
def server(served_bundle: Path) -> Iterator[LocalServer]:
    srv = server_for(served_bundle)
    yield srv
    disconnect(served_bundle)


@pytest.fixture(scope="session")
def sf(server: LocalServer) -> Any:
    return server.client()


@pytest.fixture(scope="session")
def today(served_bundle: Path) -> date:
    """The org's default today, derived here independently: the day after the profile's span."""
    return load_profile("crmarena").span.end + timedelta(days=1)


@pytest.fixture(scope="session")
def frames(served_bundle: Path) -> Frames:
    # the model as the local org serves it (with the fields a real org computes); the oracle derives their
    # values itself
    return Frames(served_bundle, local_model(load_model()))


@pytest.fixture(scope="session")
def oracle(frames: Frames, today: date) -> Oracle:
    return Oracle(frames, today)


_PLACEHOLDER = re.compile(r"\{\{(\w+)\.([\w.]+)#(-?\d+)(?::(\w+))?\}\}")


def fill(text: str, frames: Frames) -> str:
    """Replace `{{Object.path#row[:date|dt|id15|lower]}}` with the value of the path (`Field` or `Parent.Field`) in
    that CSV row, so the corpus stays meaningful when the generator's ids or dates change."""

    def value(m: re.Match[str]) -> str:
        v = frames.resolve(m.group(1), m.group(2))[int(m.group(3))]
        fmt = m.group(4)
        if fmt == "date":
            return str(v)[:10]
        if fmt == "dt":
            return str(v)[:19] + "Z"
        if fmt == "id15":
            return str(v)[:15]
        if fmt == "lower":
            return str(v).lower()
        return str(v)

    return _PLACEHOLDER.sub(value, text)


def fill_args(args: Any, frames: Frames) -> Any:
    if isinstance(args, str):
        return fill(args, frames)
    if isinstance(args, list):
        return [fill_args(a, frames) for a in args]
    if isinstance(args, dict):
        return {k: fill_args(v, frames) for k, v in args.items()}
    return args
