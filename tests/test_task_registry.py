"""The task registry (issue 15 item 2): every registered task is built, solved twice and checked through the org;
adding a task is one spec, one builder, one independent solver and one API check; the published task-file
schemas are what the registry renders."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from flows.tasks import TaskRegistryIncomplete, registry_gaps, require_complete_registry
from generator.tasks import build_tasks
from generator.tasks import solve as builders_solve
from generator.tasks.common import Instance, OrgData
from generator.tasks.common import Solution as BuilderSolution
from generator.tasks.registry import TaskBuilder, registered_builder
from orgs.local import connect, disconnect
from schemas.taskspec import (
    CRMARENA_TASKS,
    TASK_SCHEMA_DIR,
    TaskRegistryError,
    TaskSpec,
    register,
    registered,
    render_task_schemas,
    render_text,
    task_names,
    unregister,
)
from tests.conftest import copy_bundle
from validators.task_format import schema_errors
from validators.task_solver import SOLVERS, IndependentSolver, Solution, TaskData
from validators.task_solver import solve as independent_solve
from validators.tasks import check_tasks
from validators.tasks_soql import API_CHECKS, BundleContext, OrgTools, check_tasks_via_api

# The small test profile's own count. Case routing is not what limits the small org: asked for 40 with the count
# adapting, the seed-0 org stops every task at 34 because of policy violation, routing never short (task seeds
# 0-11), and every bundle seed 0-11 fills 15 of every task. (The 4 this test asked before was set when the
# wider catalog was merged; neither that commit, 1c133d1, nor main since holds fewer than 8 for any seed 0-11.)
PER_TASK = 15


def _lines(root: Path) -> list[dict[str, Any]]:
    text = (root / "tasks" / "ground_truth.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def _solved_twice_and_through_the_org(root: Path) -> tuple[list[dict[str, Any]], int]:
    """Every instance re-derived by both solvers (each must give the recorded answer) and through the org."""
    rows = _lines(root)
    gen_data, val_data = OrgData(root), TaskData.load(root)
    for row in rows:
        task, params, answer = row["task"], row["params"], row["answer"]
        assert builders_solve(root, task, params, gen_data) == answer, (row["idx"], task)
        assert independent_solve(val_data, task, params).answer == answer, (row["idx"], task)
    assert check_tasks(root) == []
    try:
        api = check_tasks_via_api(root, connect(root))
    finally:
        disconnect(root)
    assert api.disagreements == [] and api.instances == len(rows) and api.queries >= len(rows)
    return rows, api.queries


def test_the_registry_holds_crmarenas_nine_tasks_whole() -> None:
    assert task_names() == CRMARENA_TASKS and len(CRMARENA_TASKS) == 9
    assert registry_gaps() == []
    require_complete_registry()


def test_every_registered_task_is_built_solved_twice_and_checked_through_the_org(
    small_bundle: Path, tmp_path: Path
) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    asyncio.run(build_tasks(root, seed=3, per_task=PER_TASK))
    rows, _ = _solved_twice_and_through_the_org(root)
    assert [r["task"] for r in rows] == [t for t in task_names() for _ in range(PER_TASK)]


def test_published_task_schemas_are_what_the_registry_renders() -> None:
    for name, doc in render_task_schemas().items():
        on_disk = (TASK_SCHEMA_DIR / name).read_text(encoding="utf-8")
        assert on_disk == render_text(doc), f"{name} is stale: run `python -m schemas.taskspec`"


# -- a toy task, added the documented way: one spec, one builder, one independent solver, one API check ------

TOY = TaskSpec(
    name="case_owner",
    abbreviation="OWN",
    description="The agent who owns a given case.",
    reward_metric="exact_match",
    answer="id",
    answer_id="user",
    params_schema={
        "required": ["case_id"],
        "properties": {"case_id": {"$ref": "tasks.schema.json#/$defs/caseId"}},
    },
    param_ids={"case_id": "case"},
    told_ids=("case_id",),
)


def _toy_solve(data: OrgData, params: dict[str, Any]) -> BuilderSolution:
    owner = data.cases.set_index("Id")["OwnerId"].get(params["case_id"])
    return BuilderSolution(None if pd.isna(owner) else str(owner), [])


def _toy_sampler(data: OrgData, _prepared: Any) -> Any:
    ids = sorted(data.cases["Id"])

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        case_id = rng.choice(ids)
        params = {"case_id": case_id}
        sol = _toy_solve(data, params)
        return Instance(
            "case_owner", f"Who owns case {case_id}?", sol.answer, "## Case ownership", params, sol
        )

    return sample


def _toy_independent(data: TaskData, params: Mapping[str, Any]) -> Solution:
    # Written apart from the builder: the owner read straight from the Case table by position.
    match = data.cases.loc[data.cases["Id"] == params["case_id"], "OwnerId"]
    return Solution(str(match.iloc[0]) if len(match) else None)


def _toy_api(
    tools: OrgTools, _ctx: BundleContext, params: dict[str, Any], _expected: Any
) -> tuple[str | None, bool]:
    rows = tools.soql(f"SELECT OwnerId FROM Case WHERE Id = '{params['case_id']}'")
    return (rows[0]["OwnerId"] if rows else None), False


@contextmanager
def toy_task(*, builder: bool = True, solver: bool = True, api: bool = True) -> Iterator[None]:
    with ExitStack() as stack:
        stack.enter_context(registered(TOY))
        if builder:
            stack.enter_context(registered_builder("case_owner", TaskBuilder(_toy_sampler, _toy_solve)))
        if solver:
            SOLVERS["case_owner"] = IndependentSolver(_toy_independent)
            stack.callback(SOLVERS.pop, "case_owner", None)
        if api:
            API_CHECKS["case_owner"] = _toy_api
            stack.callback(API_CHECKS.pop, "case_owner", None)
        yield


def test_a_toy_task_added_by_registry_entries_is_built_solved_twice_and_checked(
    small_bundle: Path, tmp_path: Path
) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    with toy_task():
        assert registry_gaps() == []
        asyncio.run(build_tasks(root, seed=5, per_task=PER_TASK))
        rows, _ = _solved_twice_and_through_the_org(root)
        toy = [r for r in rows if r["task"] == "case_owner"]
        assert len(toy) == PER_TASK and [r["task"] for r in rows][-PER_TASK:] == ["case_owner"] * PER_TASK
        cases = pd.read_csv(root / "data" / "Case.csv", dtype=str).set_index("Id")["OwnerId"]
        for r in toy:  # the expected owner, read here from the CSV
            assert r["answer"] == cases[r["params"]["case_id"]]
        tasks = json.loads((root / "tasks" / "tasks.json").read_text(encoding="utf-8"))
        assert schema_errors("tasks.schema.json", tasks) == []
        # the rendered schema knows the toy task: a wrong id kind in its answer is refused
        broken = [dict(t) for t in tasks]
        broken[-1]["answer"] = "001" + "x" * 15
        assert any("/answer" in ptr for ptr, _ in schema_errors("tasks.schema.json", broken))
    assert "case_owner" not in task_names() and registry_gaps() == []
    # once unregistered, the toy instances are no task of the registry: the check says so
    assert any(d.kind == "format" for d in check_tasks(root))


@pytest.mark.parametrize("missing", ["builder", "solver", "api"])
def test_a_task_missing_a_part_is_refused_before_building(missing: str) -> None:
    with toy_task(**{missing: False}):
        gaps = registry_gaps()
        assert len(gaps) == 1 and "'case_owner'" in gaps[0]
        with pytest.raises(TaskRegistryIncomplete) as err:
            require_complete_registry()
        assert err.value.exit_code == 2 and err.value.problems == gaps


def test_a_stray_part_without_a_spec_is_reported() -> None:
    SOLVERS["no_such_task"] = IndependentSolver(_toy_independent)
    try:
        gaps = registry_gaps()
        assert gaps == [
            "an independent solver is registered for 'no_such_task', which is not a task of schemas/taskspec.py; "
            "register its TaskSpec or remove the part."
        ]
    finally:
        SOLVERS.pop("no_such_task")


def test_registry_refuses_duplicates_and_protects_crmarenas_tasks() -> None:
    with pytest.raises(TaskRegistryError, match="registered already"):
        register(TOY.__class__(**{**TOY.__dict__, "name": "handle_time"}))
    with pytest.raises(TaskRegistryError, match="abbreviation"):
        register(TOY.__class__(**{**TOY.__dict__, "abbreviation": "htu"}))
    with pytest.raises(TaskRegistryError, match="cannot be removed"):
        unregister("knowledge_qa")
    with pytest.raises(ValueError, match="answer_id"):
        TaskSpec(
            name="x",
            abbreviation="X",
            description="",
            reward_metric="exact_match",
            answer="id",
            params_schema={},
        )
