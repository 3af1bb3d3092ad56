"""`tasks.check_api` in parts (`--runner dask`): one chunk of instances per task, each checked alone by
`check_in_process`, merged in the flow's process, gives the verdicts and counts of the one-process check.

The parts run here through a stage runner that calls them in this process and says they ran on a worker;
tests/flows/test_dask_runner.py runs them on a real cluster."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from flows.answer_check import check_in_process, task_chunks
from flows.build import TaskCheckFailed, Timed, check_on_workers, check_tasks_through_the_org, run_inline
from tests.conftest import copy_bundle
from validators.tasks_soql import ground_truth_lines


class InlineWorkers:
    """A stage runner whose remote stages "run on a worker": called here, recorded as `worker-1`."""

    on_workers = True

    def __init__(self) -> None:
        self.where: dict[str, str] = {}
        self.calls: list[str] = []

    async def __call__(self, name: str, fn: Callable[..., Any], *args: Any, remote: bool = False) -> Any:
        self.calls.append(name)
        self.where[name] = "worker-1" if remote else "local"
        return await run_inline(name, fn, *args)


def _on_workers(root: Path) -> tuple[dict[str, Any], InlineWorkers, dict[str, dict[str, Any]]]:
    runner = InlineWorkers()
    spans: dict[str, dict[str, Any]] = {}
    api = asyncio.run(check_on_workers(root, Timed(runner, spans)))
    return api, runner, spans


def test_one_chunk_per_task_checks_every_instance_once_with_the_queries_of_one_process(
    small_bundle: Path,
) -> None:
    lines = ground_truth_lines(small_bundle)
    chunks = task_chunks(lines)
    task_of = {int(g["idx"]): str(g["task"]) for g in lines}
    assert sorted(int(g["idx"]) for _, part in chunks for g in part) == sorted(task_of)  # each instance once
    assert [t for t, _ in chunks] == sorted(set(task_of.values()))  # one chunk per task
    assert all({task_of[int(g["idx"])] for g in part} == {task} for task, part in chunks)
    whole = check_in_process(small_bundle)
    parts = [check_in_process(small_bundle, part) for _, part in chunks]
    # a chunk checks its own instances only
    assert [len(p.outcomes) for p in parts] == [len(part) for _, part in chunks]
    assert {i: o for p in parts for i, o in p.outcomes.items()} == whole.outcomes
    assert len(whole.outcomes) == len(lines)
    # a one-process check starts its query cache anew at each task: the chunks ask the same queries
    assert sum(p.queries for p in parts) == whole.queries > 0


def test_the_check_in_parts_gives_the_one_process_summary(small_bundle: Path) -> None:
    api, runner, spans = _on_workers(small_bundle)
    one = check_tasks_through_the_org(small_bundle, workers=1)
    same = ("instances", "queries", "http_sample")
    assert {k: api[k] for k in same} == {k: one[k] for k in same}
    tasks = sorted({str(g["task"]) for g in ground_truth_lines(small_bundle)})
    assert api["chunks"] == len(tasks) and api["workers"] == 1  # one (pretend) worker ran every chunk
    parts = [f"tasks.check_api/{t}" for t in tasks]
    assert runner.calls == ["tasks.check_api/store", *parts, "tasks.check_api/http"]
    assert {n: runner.where[n] for n in runner.calls} == {
        **{n: "worker-1" for n in ["tasks.check_api/store", *parts]},
        "tasks.check_api/http": "local",  # the HTTP sample needs the org served from the flow's process
    }
    # the parts and the whole check are timed; the whole spans its parts
    assert set(spans) == {*runner.calls, "tasks.check_api"}
    whole = spans["tasks.check_api"]
    for n in runner.calls:
        assert whole["start"] <= spans[n]["start"]
        assert spans[n]["start"] + spans[n]["seconds"] <= whole["start"] + whole["seconds"] + 0.002


def test_wrong_answers_fail_the_check_in_parts_as_they_fail_the_one_process_check(
    tmp_path: Path, small_bundle: Path
) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    path = root / "tasks" / "ground_truth.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    wrong = {}
    for task in ("handle_time", "top_issue_identification"):  # two chunks
        g = next(r for r in rows if r["task"] == task and r["answer"] is not None)
        g["answer"] = "not-an-answer"
        wrong[g["idx"]] = task
    path.write_text("".join(json.dumps(g) + "\n" for g in rows))
    with pytest.raises(TaskCheckFailed) as in_parts:
        _on_workers(root)
    with pytest.raises(TaskCheckFailed) as in_one:
        check_tasks_through_the_org(root, workers=1)
    assert str(in_parts.value) == str(in_one.value)
    assert in_parts.value.disagreements == in_one.value.disagreements >= 2
    assert all(f"idx {i} ({task})" in str(in_parts.value) for i, task in wrong.items())
