"""Every build stage is a Prefect task run of its own: a failed stage is retried alone, and the flow run's task
runs (read back through Prefect's client API) list the whole build."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from flows import build as build_module
from flows.build import TaskCheckFailed
from flows.options import BuildOptions
from flows.run import run_build
from tests.conftest import SMALL_PROFILE

STAGES = {"world", "validate", "tasks", "tasks.check", "tasks.check_api"}


def _opts(out: Path) -> BuildOptions:
    # The stage functions are replaced in this process, so every stage runs here (the sidecar's own retry
    # test is in test_sidecar.py).
    return BuildOptions(profile=str(SMALL_PROFILE), out=str(out), shards=2, force=True, sidecar=False)


def _task_runs(flow_run_id: str) -> list[Any]:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        return list(
            client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(flow_run_id)])))
        )


def test_a_failed_stage_is_retried_alone_and_every_stage_is_a_task_run(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"validate": 0}
    real = build_module.validate_written  # the `validate` stage's function

    def flaky_validate(*args: Any) -> Any:
        calls["validate"] += 1
        if calls["validate"] == 1:
            raise OSError("disk hiccup (planted by the test)")
        return real(*args)

    monkeypatch.setattr(build_module, "validate_written", flaky_validate)
    report = run_build(_opts(tmp_path / "out"))
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["data_sha256"] == expected["data_sha256"]
    assert report.manifest["files"] == expected["files"]  # tasks/ files too
    assert calls["validate"] == 2
    assert report.flow_run_id is not None

    runs = _task_runs(report.flow_run_id)
    by_name: dict[str, list[Any]] = {}
    for run in runs:
        by_name.setdefault(run.name, []).append(run)
    assert set(by_name) >= STAGES, sorted(by_name)
    # every object's generation ran as (at least) one shard task
    for obj in expected["counts"]:
        assert any(name.startswith(f"{obj}.structured[") for name in by_name), obj
    for name, named in by_name.items():
        assert len(named) == 1, name
        run = named[0]
        assert run.state is not None and run.state.is_completed(), (name, run.state)
        # The failed stage ran twice; nothing else (no shard, no other stage) ran again.
        assert run.run_count == (2 if name == "validate" else 1), (name, run.run_count)


def test_a_data_finding_is_not_retried(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task answer disagreement is a verdict on the data: the same inputs fail the same way, so it fails
    once, the build fails (exit 1 in the CLI), and the stage's task run says so."""
    calls = {"check": 0}

    def disagreeing(root: Path) -> None:
        calls["check"] += 1
        raise TaskCheckFailed("1 task answer(s) disagree (planted by the test)", disagreements=1)

    monkeypatch.setattr(build_module, "check_task_answers", disagreeing)
    with pytest.raises(TaskCheckFailed):
        run_build(_opts(tmp_path / "out"))
    assert calls["check"] == 1


def test_shard_results_are_linked_to_their_task_runs_once_not_per_record(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prefect links each task result, and each item of a returned collection, to the task run's state in the
    flow run's context until the flow ends (`FlowRunContext.run_results`). A text shard returns one item per
    record: linked item by item, that index (and the heap pinned around it) grew with the org. Each shard's
    result must add at most one entry, whatever it holds, and the data must not change."""
    from prefect.context import FlowRunContext

    from flows import prefect_flow
    from generator.spill import SpilledShard

    real_run = prefect_flow.PrefectExecutor.run
    seen: list[tuple[str, int, int, int]] = []  # (stage, jobs, items returned, entries added)

    async def spying(self: Any, rc: Any, jobs: Any) -> list[Any]:
        context = FlowRunContext.get()
        assert context is not None
        before = len(context.run_results)
        out = await real_run(self, rc, jobs)
        # a text shard returns its texts (one item per record), or, spilled, where they are (one per thread)
        items = sum(len(r.sizes) if isinstance(r, SpilledShard) else len(r) for r in out)
        seen.append((jobs[0].stage if jobs else "-", len(jobs), items, len(context.run_results) - before))
        return out

    monkeypatch.setattr(prefect_flow.PrefectExecutor, "run", spying)
    report = run_build(_opts(tmp_path / "out"))
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["data_sha256"] == expected["data_sha256"]
    texts = [s for s in seen if s[0] == "text"]
    # the test can fail: the text shards returned far more items than there were shards
    assert texts and sum(s[2] for s in texts) > 10 * sum(s[1] for s in texts), seen
    for stage, jobs, _items, added in seen:
        assert added <= jobs, (stage, jobs, added)


def test_an_object_made_in_a_child_process_is_a_task_run_of_its_own(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large build makes its large near-duplicate-searched objects in a child process (generator/pipeline.py
    made_apart): under Prefect each is one task run, `<Object>.made-apart`, in place of its shard tasks; the
    data are the same. Both thresholds at 0 make the small org do so."""
    from generator import pipeline

    monkeypatch.setattr(build_module, "SPILL_RECORDS", 0)
    monkeypatch.setattr(pipeline, "APART_ROWS", 0)
    report = run_build(_opts(tmp_path / "out"))
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["data_sha256"] == expected["data_sha256"]
    assert report.flow_run_id is not None
    names = {run.name: run for run in _task_runs(report.flow_run_id)}
    # named by hand: the objects whose texts are searched for near-duplicates and kept in their frames
    apart = {"Case", "Product2", "Knowledge__kav", "LiveChatTranscript"}
    assert apart < set(expected["counts"])
    for obj in expected["counts"]:
        made = names.get(f"{obj}.made-apart")
        shards = [n for n in names if n.startswith((f"{obj}.structured[", f"{obj}.text["))]
        if obj in apart:
            assert made is not None and made.state is not None and made.state.is_completed(), obj
            assert not shards, (obj, shards)
        else:
            assert made is None and shards, obj
