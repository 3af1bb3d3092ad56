"""The error root: typed fields, the exit codes the README promises, and errors that survive pickling."""

from __future__ import annotations

import pickle

import pytest

from flows.build import TaskCheckFailed
from generator.text.llm import LLMStalled, LLMUnavailable
from orgs.bundle import BundleError
from orgs.local.errors import NotFound, QueryError
from schemas.errors import ModelError, OrgseedError, ProfileError, Terminal, Transient, UsageError
from tests.conftest import REPO
from validators.findings import Report, ValidationFailed


def test_fields_are_attributes_and_listed_when_set() -> None:
    exc = ModelError("bad", file="schemas/objects/Case.json", pointer="/properties/Status")
    assert (exc.file, exc.pointer, exc.line) == ("schemas/objects/Case.json", "/properties/Status", None)
    assert exc.fields == {"file": "schemas/objects/Case.json", "pointer": "/properties/Status"}
    profile = ProfileError("bad", profile="crmarena", key="counts", file="p.toml", line=3)
    assert profile.fields == {"file": "p.toml", "line": 3, "profile": "crmarena", "key": "counts"}
    stalled = LLMStalled("stalled", host="localhost", stalled_seconds=2.5)
    assert stalled.fields == {"host": "localhost", "stalled_seconds": 2.5}


def test_a_query_error_is_located() -> None:
    exc = QueryError("Unknown field", "SELECT Nme FROM Account", 7)
    assert (exc.line, exc.col, exc.offset, exc.error_code, exc.status) == (1, 8, 7, "MALFORMED_QUERY", 400)
    assert exc.snippet == "SELECT Nme FROM Account\n       ^"


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (UsageError("bad flag"), 2),
        (BundleError("bad bundle", file="manifest.json"), 2),
        (ModelError("bad model"), 2),
        (LLMStalled("rate limited"), 2),  # README: sustained rate limiting exits 2
        (LLMUnavailable("endpoint down"), 1),  # README: the endpoint failed, not the input
        (TaskCheckFailed("answers differ", disagreements=3), 1),  # README: answers that disagree exit 1
        (ValidationFailed(Report(bundle="b")), 1),
        (Transient("flaky"), 1),
    ],
)
def test_exit_codes_follow_the_readme(exc: OrgseedError, code: int) -> None:
    assert exc.exit_code == code


def test_the_readme_states_the_exit_codes_tested_here() -> None:
    readme = " ".join((REPO / "README.md").read_text().split())
    assert (
        "Exit codes: 0 success, 1 problems found (validation errors, answers that disagree), 2 bad input"
        in readme
    )


@pytest.mark.parametrize(
    "exc",
    [
        QueryError("Unknown field", "SELECT Nme FROM Account", 7, error_code="INVALID_FIELD"),
        NotFound(),
        TaskCheckFailed("answers differ", disagreements=3),
        LLMUnavailable("down", host="h", seen={"500": 2}, fault="an HTML page"),
        BundleError("bad", file="data/Case.csv", line=4, sobject="Case"),
    ],
)
def test_errors_survive_pickling_with_their_fields(exc: OrgseedError) -> None:
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc)
    assert str(back) == str(exc) and back.fields == exc.fields and vars(back) == vars(exc)
    assert isinstance(back, Terminal) == isinstance(exc, Terminal)
