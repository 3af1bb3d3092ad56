"""The per-task fast path of `schema_errors` (validators/task_format.py) against the whole task schemas.

The fast path validates a document against the schema cut down to its own task's branch, and only a document
it rejects is validated again by the whole schema. So for any document, broken or not, `schema_errors` must
give exactly what the whole schema gives, and the fast path may accept only what the whole schema accepts.
The documents are the well-formed task files of the small bundle, broken at random (Hypothesis).
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.taskspec import CRMARENA_TASKS
from tests.task_files import write_task_files
from validators import task_format

TASKS = "tasks.schema.json"
TRUTH = "ground_truth.schema.json"


@pytest.fixture(scope="module")
def documents(small_bundle: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    root = tmp_path_factory.mktemp("task-schema-fast") / "bundle"
    shutil.copytree(small_bundle, root)
    write_task_files(root, 3, seed=5)
    tasks = json.loads((root / "tasks" / "tasks.json").read_text(encoding="utf-8"))
    truth = [json.loads(x) for x in (root / "tasks" / "ground_truth.jsonl").read_text().splitlines()]
    return {TASKS: tasks, TRUTH: truth}


def whole(name: str, doc: Any, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    with monkeypatch.context() as mp:
        mp.setattr(task_format, "_valid_by_task", lambda n, d: False)
        return task_format.schema_errors(name, doc)


def test_clean_documents_take_the_fast_path(documents: dict[str, list[Any]]) -> None:
    """Every well-formed document of every task is accepted by its task's cut-down schema (else the fast
    path would never be taken and save nothing)."""
    assert {d["task"] for d in documents[TRUTH]} == set(CRMARENA_TASKS)
    assert task_format._valid_by_task(TASKS, documents[TASKS])
    for row in documents[TRUTH]:
        assert task_format._valid_by_task(TRUTH, row), row


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3000) | st.floats(allow_nan=False) | st.text(max_size=20)
    | st.sampled_from([*CRMARENA_TASKS, "2024-01-01T00:00:00Z", "exact_match", "fuzzy_match", "Q1", "month"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip


@st.composite
def breaks(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """A few edits of a document: set, delete, or swap a key (at its top, in `params` or in `metadata`)."""
    out = []
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["", "params", "metadata"]))
        key = draw(
            st.sampled_from(["idx", "task", "query", "answer", "reward_metric", "metadata", "params", "candidates",
                             "margin", "end_date", "period", "interval_count", "period_name", "year", "case_id",
                             "today_date", "extra"])
        )  # fmt: skip
        out.append((f"{where}/{key}", draw(st.one_of(st.just(...), JSON))))
    return out


def _apply(doc: Any, edits: list[tuple[str, Any]]) -> Any:
    doc = copy.deepcopy(doc)
    for path, value in edits:
        where, key = path.split("/")
        target = doc.get(where) if where else doc
        if not isinstance(target, dict):
            continue
        if value is ...:
            target.pop(key, None)
        else:
            target[key] = value
    return doc


@given(st.integers(0, 10_000), breaks(), st.booleans())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_schema_errors_are_the_whole_schemas(
    documents: dict[str, list[Any]],
    monkeypatch: pytest.MonkeyPatch,
    at: int,
    edits: list[tuple[str, Any]],
    in_list: bool,
) -> None:
    truth, tasks = documents[TRUTH], documents[TASKS]
    row = _apply(truth[at % len(truth)], edits)
    want = whole(TRUTH, row, monkeypatch)
    assert task_format.schema_errors(TRUTH, row) == want
    if task_format._valid_by_task(TRUTH, row):
        assert want == []
    item = _apply(tasks[at % len(tasks)], edits)
    doc = [*tasks[:3], item] if in_list else [item]
    want = whole(TASKS, doc, monkeypatch)
    assert task_format.schema_errors(TASKS, doc) == want
    if task_format._valid_by_task(TASKS, doc):
        assert want == []
