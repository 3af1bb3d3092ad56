"""The sidecar (flows/sidecar.py): validation, the code answer check and the fidelity figures run in a second
process while the building process makes the tasks and checks them through the org. The bundle is the same;
the stages really run at the same time; an invalid org still fails as invalid; a failed sidecar stage is
retried alone under Prefect."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from flows import build as build_module
from flows.options import BuildOptions, Engine
from flows.run import run_build
from tests.conftest import FIXTURES, SMALL_PROFILE
from validators.findings import ValidationFailed
from validators.run import validate_bundle

WAIT_SECONDS = 120.0
COUNTER = "ORGSEED_TEST_SIDECAR_COUNTER"


def validate_once_tasks_exist(root: Any, *args: Any) -> Any:
    """The `validate` stage, started only once the `tasks` stage has written the task files. Run in the
    sidecar (pickled by reference), it passes only if the tasks are built at the same time: a build running
    its stages one after the other would wait here for ever (the test fails after WAIT_SECONDS)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not (Path(root) / "tasks" / "tasks.json").exists():
        if time.monotonic() > deadline:
            raise AssertionError("validate waited alone: the tasks were not built while it ran")
        time.sleep(0.05)
    return validate_bundle(root, *args)


def validate_failing_once(root: Any, *args: Any) -> Any:
    """The `validate` stage failing for a passing reason on its first run (attempts counted in a file, since
    each run may be in another process)."""
    counter = Path(os.environ[COUNTER])
    attempts = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(attempts + 1))
    if attempts == 0:
        raise OSError("disk hiccup (planted by the test)")
    return validate_bundle(root, *args)


def check_once_the_sidecar_is_gone(root: Any, *args: Any) -> Any:
    """The check through the org (in the building process), started only once no child process is left:
    it passes only if the sidecar's process ended after its last stage, while this check still had to
    run; a sidecar kept to the end of the build makes it wait for ever (the test fails after WAIT_SECONDS)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while multiprocessing.active_children():
        if time.monotonic() > deadline:
            raise AssertionError("the sidecar outlived its last stage")
        time.sleep(0.05)
    return real_check_through_the_org(root, *args)


real_check_through_the_org = build_module.check_tasks_through_the_org


def _stages(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stages: dict[str, dict[str, Any]] = manifest["timings"]["stages"]
    return stages


def test_the_sidecar_validates_while_the_tasks_are_built_and_the_bundle_is_the_same(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build_module, "validate_bundle", validate_once_tasks_exist)
    opts = BuildOptions(
        profile=str(SMALL_PROFILE), out=str(tmp_path / "b"), force=True, engine="local", sidecar=True
    )
    report = run_build(opts)
    expected = json.loads((small_bundle / "manifest.json").read_text())  # built without a sidecar
    assert report.manifest["data_sha256"] == expected["data_sha256"]
    assert report.manifest["files"] == expected["files"]  # the task files and reports too
    stages = _stages(report.manifest)
    for name in ("validate", "tasks.check", "fidelity"):
        assert stages[name]["where"].startswith("sidecar (pid "), (name, stages[name])
        assert stages[name]["where"] != f"sidecar (pid {os.getpid()})"
    assert "where" not in stages["tasks"] and "where" not in stages["tasks.check_api"]
    # the validation report's own duration, not the time until the build collected it
    assert report.manifest["validation"]["seconds"] == stages["validate"]["seconds"]


def test_without_a_sidecar_the_stages_run_one_after_the_other(small_bundle: Path, tmp_path: Path) -> None:
    opts = BuildOptions(
        profile=str(SMALL_PROFILE), out=str(tmp_path / "b"), force=True, engine="local", sidecar=False
    )
    stages = _stages(run_build(opts).manifest)
    order = sorted(stages, key=lambda n: stages[n]["start"])
    assert order == ["generate", "world", "validate", "tasks", "tasks.check", "tasks.check_api", "fidelity"]
    for a, b in itertools.pairwise(order):
        assert stages[a]["start"] + stages[a]["seconds"] <= stages[b]["start"] + 0.01, (a, b)
    assert all("where" not in s for s in stages.values())


def test_an_invalid_org_fails_as_invalid_while_its_tasks_are_built_beside(tmp_path: Path) -> None:
    out = tmp_path / "strict"
    opts = BuildOptions(
        profile=str(FIXTURES / "profiles" / "strict_bounds.toml"),
        out=str(out),
        force=True,
        engine="local",
        sidecar=True,
    )
    with pytest.raises(ValidationFailed) as info:
        run_build(opts)
    assert {f.rule for f in info.value.report.findings if f.severity.value == "error"} == {
        "integrity.cardinality"
    }
    assert not out.exists()  # a failed build is never published


def test_a_failed_sidecar_stage_is_retried_alone_under_prefect(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = tmp_path / "attempts"
    monkeypatch.setenv(COUNTER, str(counter))  # the sidecar is spawned by the flow: it inherits it
    monkeypatch.setattr(build_module, "validate_bundle", validate_failing_once)
    opts = BuildOptions(
        profile=str(SMALL_PROFILE), out=str(tmp_path / "b"), shards=2, force=True, sidecar=True
    )
    report = run_build(opts)
    assert counter.read_text() == "2"
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["files"] == expected["files"]
    assert _stages(report.manifest)["validate"]["where"].startswith("sidecar (pid ")

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    assert report.flow_run_id is not None
    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(report.flow_run_id)]))
        )
    counts = {r.name: r.run_count for r in runs if not r.name.startswith(tuple(expected["counts"]))}
    assert counts.get("validate") == 2, counts
    assert {n: c for n, c in counts.items() if n != "validate"} == {
        n: 1 for n in ("world", "tasks", "tasks.check", "tasks.check_api", "fidelity")
    }, counts


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_the_sidecar_ends_after_its_last_stage_while_the_check_through_the_org_runs(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    monkeypatch.setattr(build_module, "check_tasks_through_the_org", check_once_the_sidecar_is_gone)
    opts = BuildOptions(
        profile=str(SMALL_PROFILE), out=str(tmp_path / "b"), force=True, engine=engine, sidecar=True
    )
    report = run_build(opts)
    stages = _stages(report.manifest)
    assert all(
        stages[n]["where"].startswith("sidecar (pid ") for n in ("validate", "tasks.check", "fidelity")
    )
    # the check through the org started after the sidecar's last stage had ended
    last = max(stages[n]["start"] + stages[n]["seconds"] for n in ("validate", "tasks.check", "fidelity"))
    assert stages["tasks.check_api"]["start"] + stages["tasks.check_api"]["seconds"] > last
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["files"] == expected["files"]
