"""The independent task solver against hand-made orgs whose answers were worked out by hand."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from generator.ids import is_valid_id
from schemas.model import load_model
from schemas.taskspec import CRMARENA_TASKS
from tests.task_fixtures import FIXTURE_ROOT, FixtureCase, check_case, load_cases, materialize, run_fixtures
from validators import task_solver
from validators.task_solver import Solution, TaskData, solve, solve_instance
from validators.tasks import check_answer

CASES = load_cases()


@pytest.fixture(scope="session")
def fixture_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("task-fixtures")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_solver_matches_hand_derivation(case: FixtureCase, fixture_dir: Path) -> None:
    assert check_case(solve_instance, case, materialize(case.task, fixture_dir)) is None


def test_every_task_has_fixtures_with_edges() -> None:
    by_task: dict[str, list[FixtureCase]] = {}
    for case in CASES:
        by_task.setdefault(case.task, []).append(case)
    assert sorted(by_task) == sorted(CRMARENA_TASKS)
    outcomes = {c.outcome for c in CASES}
    assert outcomes == {"answer", "tie", "ambiguous"}
    for task, cases in by_task.items():
        assert len(cases) >= 4, task
        if task not in ("knowledge_qa",):
            assert any(c.expected is None for c in cases), f"{task} needs a None case"
    windows = [c.params for c in CASES if "period_name" in c.params]
    assert any(p["period_name"] == "Winter" for p in windows)
    assert any(re.fullmatch(r"Q[1-4]", p["period_name"]) for p in windows)


def _fixture_csvs() -> Iterator[tuple[Path, str]]:
    for path in sorted(FIXTURE_ROOT.glob("*/data/*.csv")):
        yield path, path.stem


@pytest.mark.parametrize("path,sobject", list(_fixture_csvs()), ids=lambda v: str(v)[-40:])
def test_fixture_files_use_bundle_formats(path: Path, sobject: str) -> None:
    """Fixture CSVs hold real fields, valid 18-character ids with the right prefixes, SF datetimes."""
    spec = load_model().get(sobject)
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows, path
    for row in rows:
        for name, value in row.items():
            field = spec.field(name)
            if not value:
                continue
            if field.type == "id":
                assert is_valid_id(value, spec.key_prefix), (path, value)
            elif field.is_lookup:
                prefix = load_model().get(field.reference_to[0]).key_prefix
                assert is_valid_id(value, prefix), (path, name, value)
            elif field.type == "datetime":
                datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.000+0000")


def _adapt(sol: Solution) -> str | list[str] | None:
    if sol.tied:
        return list(sol.tied)
    if sol.ambiguous:
        return list(sol.ambiguous)
    return sol.answer


def _fresh_solver() -> Any:
    """A solver that loads each fixture once (after any monkeypatching of the loader)."""
    loaded: dict[Path, TaskData] = {}

    def solver(root: Path, task: str, params: dict[str, Any]) -> str | list[str] | None:
        if root not in loaded:
            loaded[root] = TaskData.load(root)
        return _adapt(solve(loaded[root], task, params))

    return solver


# Each mutant is a plausible misreading of the specification; the fixtures must catch every one.
def _cases_always(inclusive: bool) -> Any:
    original = TaskData.cases_created

    def patched(self: TaskData, start: datetime, end: datetime, *, end_inclusive: bool) -> Any:
        return original(self, start, end, end_inclusive=inclusive)

    return patched


def _history_end_exclusive(self: TaskData, start: datetime, end: datetime) -> Any:
    rows = self.assignments
    return rows[(rows["CreatedDate"] >= start) & (rows["CreatedDate"] < end)]


def _history_start_exclusive(self: TaskData, start: datetime, end: datetime) -> Any:
    rows = self.assignments
    return rows[(rows["CreatedDate"] > start) & (rows["CreatedDate"] <= end)]


def _winter_of_previous_december(name: str, year: int) -> tuple[datetime, datetime]:
    if name.lower() == "winter":
        return datetime(year - 1, 12, 1), datetime(year, 3, 1)
    return ORIGINAL_NAMED(name, year)


ORIGINAL_NAMED = task_solver.named_window


ORIGINAL_WORDS = task_solver._words


def _substring_words(text: Any) -> set[str]:
    words = ORIGINAL_WORDS(text)
    return words | {w[:n] for w in words for n in range(1, len(w))}


def _all_turns(data: TaskData, case_id: str) -> list[Any]:
    turns = []
    for chat in data.chats_of(case_id).itertuples(index=False):
        turns += [(chat.StartTime.date(), "chat", line) for line in str(chat.Body).splitlines()]
    for email in data.emails_of(case_id).itertuples(index=False):
        turns.append((email.MessageDate.date(), "email", email.TextBody))
    return turns


MUTANTS: dict[str, tuple[str, tuple[tuple[Any, str, Any], ...]]] = {
    "case windows include the end": (
        "best_region_identification",
        ((TaskData, "cases_created", _cases_always(True)),),
    ),
    "handle-time cases include the end": ("handle_time", ((TaskData, "cases_created", _cases_always(True)),)),
    "month counts include the end": (
        "monthly_trend_analysis",
        ((TaskData, "cases_created", _cases_always(True)),),
    ),
    "top-issue window excludes the end": (
        "top_issue_identification",
        ((TaskData, "cases_created", _cases_always(False)),),
    ),
    "history window excludes the end (handle time)": (
        "handle_time",
        ((TaskData, "assignments_between", _history_end_exclusive),),
    ),
    "history window excludes the end (transfers)": (
        "transfer_count",
        ((TaskData, "assignments_between", _history_end_exclusive),),
    ),
    "history window excludes the start": (
        "transfer_count",
        ((TaskData, "assignments_between", _history_start_exclusive),),
    ),
    "Winter starts in the previous December (BRI)": (
        "best_region_identification",
        ((task_solver, "named_window", _winter_of_previous_december),),
    ),
    "Winter starts in the previous December (TII)": (
        "top_issue_identification",
        ((task_solver, "named_window", _winter_of_previous_december),),
    ),
    "product search matches word prefixes": (
        "named_entity_disambiguation",
        ((task_solver, "_words", _substring_words),),
    ),
    "customer turns count as offers": (
        "policy_violation_identification",
        ((task_solver, "agent_turns", _all_turns),),
    ),
    "every status counts as Closed": ("case_routing", ((task_solver, "CLOSED", "Escalated"),)),
}


@pytest.mark.parametrize("name", list(MUTANTS))
def test_fixtures_catch_misreadings(name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    task, patches = MUTANTS[name]
    assert run_fixtures(_fresh_solver(), tmp_path, task) == []  # the unmutated solver passes
    for target, attr, value in patches:
        monkeypatch.setattr(target, attr, value)
    assert run_fixtures(_fresh_solver(), tmp_path, task), f"no fixture of {task} catches: {name}"


@cache
def _loaded(root: Path) -> TaskData:
    return TaskData.load(root)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_check_answer_on_fixtures(case: FixtureCase, fixture_dir: Path) -> None:
    """The checker accepts the hand-worked answer, flags a wrong one, and reports ties/ambiguity."""
    data = _loaded(materialize(case.task, fixture_dir))
    if case.outcome == "answer":
        row = {"answer": case.expected}
        assert check_answer(case.task, 7, case.params, row, case.expected, data) == []
        wrong = "005Ws00000000000AAA" if case.expected is not None else "Somewhere"
        found = check_answer(case.task, 7, case.params, {"answer": wrong}, [wrong], data)
        assert [(d.idx, d.kind, d.expected, d.found, d.file) for d in found] == [
            (7, "answer_mismatch", case.expected, wrong, "ground_truth.jsonl"),
            (7, "answer_mismatch", case.expected, wrong, "tasks.json"),
        ]
    else:
        assert isinstance(case.expected, list)
        found = check_answer(case.task, 7, case.params, {"answer": case.expected[0]}, case.expected[0], data)
        assert [(d.kind, d.expected) for d in found] == [(case.outcome, case.expected)]
