"""The sidecar (flows/sidecar.py): the org's store (built while generation writes the objects), validation and
the code answer check run in a second process while the building process makes the tasks, checks them through
the org and measures the fidelity figures. The bundle is the same; the stages really run at the same time; an
invalid org still fails as invalid; a failed sidecar stage is retried alone under Prefect, and a failed store
stage leaves the store to the check through the org."""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import shutil
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from flows import answer_check, sidecar
from flows import build as build_module
from flows.answer_check import validate_written
from flows.options import BuildOptions, Engine
from flows.run import run_build
from orgs.local.store import STORE_FILE, Store
from schemas.model import load_model
from tests.conftest import FIXTURES, SMALL_PROFILE, copy_bundle
from tests.orgs.local.test_store import _dump
from validators.findings import ValidationFailed
from validators.load import load_bundle
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
    return validate_written(root, *args)


def validate_failing_once(root: Any, *args: Any) -> Any:
    """The `validate` stage failing for a passing reason on its first run (attempts counted in a file, since
    each run may be in another process)."""
    counter = Path(os.environ[COUNTER])
    attempts = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(attempts + 1))
    if attempts == 0:
        raise OSError("disk hiccup (planted by the test)")
    return validate_written(root, *args)


BUILDER = (
    "ORGSEED_TEST_BUILDING_PID"  # the building process's id, for the stages below to know where they run
)
HTTP_DONE = "ORGSEED_TEST_HTTP_DONE"  # a file written once the building process has checked its HTTP sample


def _in_the_building_process() -> bool:
    return os.environ[BUILDER] == str(os.getpid())


def http_sample_then_mark(root: Any, *args: Any) -> Any:
    """The HTTP sample (only ever in the building process), then its mark for `code_check_after_the_http_sample`."""
    out = real_check_over_http(root, *args)
    Path(os.environ[HTTP_DONE]).write_text("done")
    return out


def code_check_after_the_http_sample(root: Any) -> None:
    """The sidecar's code check, started only once the building process has checked its HTTP sample: that
    process then takes the first units of the rest (the fidelity figures, the first chunk) while this runs."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not Path(os.environ[HTTP_DONE]).exists():
        if time.monotonic() > deadline:
            raise AssertionError("the building process never checked its HTTP sample")
        time.sleep(0.05)
    real_check_task_answers(root)


def chunk_once_the_sidecar_is_gone(root: Any, *args: Any) -> Any:
    """A chunk of the check through the org: in the building process, started only once no child process is
    left. It passes only if the sidecar took the other chunks meanwhile and its process ended once none was
    left, while this one still had to run; a sidecar kept to the end of the build makes it wait for ever (the
    test fails after WAIT_SECONDS)."""
    if _in_the_building_process():
        deadline = time.monotonic() + WAIT_SECONDS
        while multiprocessing.active_children():
            if time.monotonic() > deadline:
                raise AssertionError("the sidecar outlived its last stage")
            time.sleep(0.05)
    return real_check_in_process(root, *args)


real_check_over_http = answer_check.check_over_http
real_check_task_answers = build_module.check_task_answers
real_check_in_process = answer_check.check_in_process


def _small(tmp_path: Path, engine: Engine = "local", sidecar: bool = True, **more: Any) -> BuildOptions:
    """Options of a build of the small profile into tmp_path/b."""
    return BuildOptions(
        profile=str(SMALL_PROFILE),
        out=str(tmp_path / "b"),
        force=True,
        engine=engine,
        sidecar=sidecar,
        **more,
    )


def _stages(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    stages: dict[str, dict[str, Any]] = manifest["timings"]["stages"]
    return stages


def _tasks_in(root: Path) -> list[str]:
    """The tasks of the bundle's instances, sorted."""
    lines = (root / "tasks" / "ground_truth.jsonl").read_text().splitlines()
    return sorted({json.loads(line)["task"] for line in lines})


def test_the_sidecar_validates_while_the_tasks_are_built_and_the_bundle_is_the_same(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(build_module, "validate_written", validate_once_tasks_exist)
    report = run_build(_small(tmp_path))
    expected = json.loads((small_bundle / "manifest.json").read_text())  # built without a sidecar
    assert report.manifest["data_sha256"] == expected["data_sha256"]
    assert report.manifest["files"] == expected["files"]  # the task files and reports too
    stages = _stages(report.manifest)
    for name in ("store", "validate", "tasks.check"):
        assert stages[name]["where"].startswith("sidecar (pid "), (name, stages[name])
        assert stages[name]["where"] != f"sidecar (pid {os.getpid()})"
    # the tasks are built here while the sidecar validates; the check through the org is shared by both
    assert all("where" not in stages[n] for n in ("tasks", "tasks.check_api"))
    # the org's store was built in the sidecar (as generation wrote the objects: see the test below); the
    # check through the org waited for it and found it built, and it is the store a rebuild makes
    store = stages["store"]
    assert store["where"] == stages["validate"]["where"] and "error" not in store
    assert store["start"] + store["seconds"] <= stages["tasks.check_api"]["start"] + 0.01
    assert report.manifest["tasks"]["api_check"]["steps"]["store"] < store["seconds"]
    built = _dump(report.root / STORE_FILE)
    rebuilt = copy_bundle(report.root, tmp_path / "rebuilt")
    assert Store.open(rebuilt, rebuild=True).info.rebuilt
    assert _dump(rebuilt / STORE_FILE) == built
    # the validation report's own duration, not the time until the build collected it
    assert report.manifest["validation"]["seconds"] == stages["validate"]["seconds"]


def test_without_a_sidecar_the_stages_run_one_after_the_other(small_bundle: Path, tmp_path: Path) -> None:
    stages = _stages(run_build(_small(tmp_path, sidecar=False)).manifest)
    order = sorted(stages, key=lambda n: stages[n]["start"])
    assert order == ["world", "generate", "validate", "tasks", "tasks.check", "tasks.check_api", "fidelity"]
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
    monkeypatch.setattr(build_module, "validate_written", validate_failing_once)
    report = run_build(_small(tmp_path, engine="prefect", shards=2))
    assert counter.read_text() == "2"
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["files"] == expected["files"]
    assert _stages(report.manifest)["validate"]["where"].startswith("sidecar (pid ")

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    assert report.flow_run_id is not None
    chunks = [f"tasks.check_api/{t}" for t in _tasks_in(report.root)]  # the check through the org, by chunk
    want = {
        n: 1 for n in ("store", "world", "tasks", "tasks.check", "fidelity", "tasks.check_api/http", *chunks)
    }
    # The server records task runs from the events the processes send, and may apply the last ones a moment
    # after the flow returns (on a loaded machine a run was seen still pending, under a provisional name): read
    # until the record is complete, for at most a minute.
    deadline = time.monotonic() + 60
    while True:
        with get_client(sync_client=True) as client:
            runs = client.read_task_runs(
                flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[UUID(report.flow_run_id)]))
            )
        counts = {r.name: r.run_count for r in runs if not r.name.startswith(tuple(expected["counts"]))}
        others = {n: c for n, c in counts.items() if n != "validate"}
        if (counts.get("validate") == 2 and others == want) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert counts.get("validate") == 2, counts
    assert others == want, counts


@pytest.mark.parametrize("engine", ["local", "prefect"])
def test_the_sidecar_shares_the_check_through_the_org_and_ends_when_nothing_is_left(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    """Once its own stages are done, the sidecar takes chunks of the check through the org from the back of
    the list while the building process takes them from the front; its process ends when none is left. The
    outcome is the same as one process's."""
    monkeypatch.setenv(BUILDER, str(os.getpid()))
    monkeypatch.setenv(HTTP_DONE, str(tmp_path / "http-done"))
    monkeypatch.setattr(answer_check, "check_over_http", http_sample_then_mark)
    monkeypatch.setattr(build_module, "check_task_answers", code_check_after_the_http_sample)
    monkeypatch.setattr(answer_check, "check_in_process", chunk_once_the_sidecar_is_gone)
    report = run_build(_small(tmp_path, engine=engine))
    stages = _stages(report.manifest)
    assert all(stages[n]["where"].startswith("sidecar (pid ") for n in ("store", "validate", "tasks.check"))
    chunks = sorted(n for n in stages if n.startswith("tasks.check_api/") and n != "tasks.check_api/http")
    assert stages["tasks.check_api/http"].get("where", "local") == "local"  # the process serving the org
    assert [c.split("/", 1)[1] for c in chunks] == _tasks_in(report.root)  # one chunk per task
    # the building process took the fidelity figures and the first chunk, the sidecar every other chunk
    here = [n for n in ["fidelity", *chunks] if not stages[n].get("where", "local").startswith("sidecar")]
    assert here == ["fidelity", chunks[0]], here
    # and the building process's chunk (which waited for the sidecar's process to end) ended after them
    last = max(stages[n]["start"] + stages[n]["seconds"] for n in chunks[1:])
    assert stages[chunks[0]]["start"] + stages[chunks[0]]["seconds"] >= last
    expected = json.loads((small_bundle / "manifest.json").read_text())  # built without a sidecar
    assert report.manifest["files"] == expected["files"]
    api, alone = report.manifest["tasks"]["api_check"], expected["tasks"]["api_check"]
    assert (api["instances"], api["queries"], api["http_sample"]) == (
        alone["instances"],
        alone["queries"],
        alone["http_sample"],
    )


def _names_written(*_: Any) -> list[str]:
    """A sidecar stage: the names `notices` gives, in order."""
    return list(sidecar.notices())


def _notices_withdrawn(*_: Any) -> str:
    try:
        list(sidecar.notices())
    except sidecar.NoticesWithdrawn as exc:
        return str(exc)
    return "not withdrawn"


def test_the_sidecar_hears_of_each_object_written_until_all_are() -> None:
    """The building process's notices reach a stage running in the sidecar in order, and end when all are
    written; a stage run again after that (a retry) is not left waiting. Withdrawn notices stop a stage."""
    import asyncio

    async def run() -> None:
        with sidecar.Sidecar() as side:
            first = asyncio.ensure_future(side.run("names", _names_written))
            side.written("Account")
            side.written("Contact")
            side.all_written()
            assert await first == ["Account", "Contact"]
            assert await asyncio.wait_for(side.run("again", _names_written), WAIT_SECONDS) == []
        with sidecar.Sidecar() as side:
            waiting = asyncio.ensure_future(side.run("withdrawn", _notices_withdrawn))
            side.written("Account")
            side.withdraw()
            assert await asyncio.wait_for(waiting, WAIT_SECONDS) == "the building process stopped generating"

    asyncio.run(run())
    with pytest.raises(sidecar.NoticesWithdrawn, match="not in a sidecar"):
        _names_written()


def store_stage_telling(root: str, told: str) -> float:
    """The sidecar's store stage, appending to the file `told` the name of each object it loads."""
    from orgs.local.store import StoreBuilder

    load = StoreBuilder.load

    def loading(self: StoreBuilder, name: str, facts: Any, api_user_later: bool = False) -> None:
        load(self, name, facts, api_user_later)
        with open(told, "a", encoding="utf-8") as fh:
            fh.write(name + "\n")

    StoreBuilder.load = loading  # type: ignore[method-assign]
    try:
        return answer_check.build_store_as_written(root)
    finally:
        StoreBuilder.load = load  # type: ignore[method-assign]


def test_the_store_stage_loads_each_object_once_it_is_written(small_bundle: Path, tmp_path: Path) -> None:
    """In the sidecar, the store stage loads an object as soon as the building process says it is written
    (those written before the User too, and given the API user once it is), before all are; then it finishes
    the store the check through the org finds up to date, the same as a rebuild."""
    import asyncio

    root = copy_bundle(small_bundle, tmp_path / "b")
    (root / STORE_FILE).unlink(missing_ok=True)
    told = tmp_path / "told"

    async def loaded(names: list[str]) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while not told.exists() or told.read_text().split() != names:
            assert time.monotonic() < deadline, told.read_text() if told.exists() else "nothing loaded"
            await asyncio.sleep(0.05)

    async def run() -> None:
        with sidecar.Sidecar() as side:
            stage = asyncio.ensure_future(side.run("store", store_stage_telling, str(root), str(told)))
            side.written("Account")
            await loaded(["Account"])
            side.written("User")
            await loaded(["Account", "User"])
            side.written("Contact")
            await loaded(["Account", "User", "Contact"])
            assert not (root / STORE_FILE).exists()
            side.all_written()
            await asyncio.wait_for(stage, WAIT_SECONDS)

    asyncio.run(run())
    assert len(told.read_text().split()) == len(load_model().names)  # the rest loaded when all were written
    assert not Store.open(root).info.rebuilt
    rebuilt = copy_bundle(root, tmp_path / "rebuilt")
    Store.open(rebuilt, rebuild=True).close()
    assert _dump(root / STORE_FILE) == _dump(rebuilt / STORE_FILE)


def store_stage_stepping(root: str, profile: Any, told: str) -> float:
    """The sidecar's store stage beginning validation, appending to the file `told` the objects each
    validation step it runs early reads."""
    from validators.staged import StagedRun

    advance = StagedRun.advance

    def stepping(self: StagedRun, written: Any) -> bool:
        before = self.done
        ran = advance(self, written)
        if ran:  # one line per step run (an object's block steps run together)
            with open(told, "a", encoding="utf-8") as fh:
                fh.writelines(",".join(step.needs) + "\n" for step in self.steps[before : self.done])
        return ran

    StagedRun.advance = stepping  # type: ignore[method-assign]
    try:
        return answer_check.build_store_as_written(root, profile)
    finally:
        StagedRun.advance = advance  # type: ignore[method-assign]


def test_the_store_stage_begins_validation_and_the_validate_stage_goes_on(
    small_bundle: Path, tmp_path: Path
) -> None:
    """While it waits for objects, the store stage runs the validation steps that read only objects already
    written (none that read the latent tables); the validate stage, in the same process, goes on from there:
    the report is the whole-org validation's."""
    import asyncio

    root = copy_bundle(small_bundle, tmp_path / "b")
    profile = load_bundle(root, objects=False).profile
    told = tmp_path / "told"
    first = ["User", "Account", "Contact"]

    async def stepped(at_least: int) -> list[str]:
        deadline = time.monotonic() + WAIT_SECONDS
        while len(lines := told.read_text().splitlines() if told.exists() else []) < at_least:
            assert time.monotonic() < deadline, lines
            await asyncio.sleep(0.05)
        return lines

    async def run() -> tuple[list[str], Any]:
        with sidecar.Sidecar() as side:
            stage = asyncio.ensure_future(
                side.run("store", store_stage_stepping, str(root), profile, str(told))
            )
            for name in first:
                side.written(name)
            # the steps of User, Account and Contact alone, and Contact's lookups
            early = await stepped(16)
            for name in load_model().names:
                if name not in first:
                    side.written(name)
            side.all_written()
            await asyncio.wait_for(stage, WAIT_SECONDS)
            report = await side.run("validate", answer_check.validate_written, str(root), profile)
            return early, report

    early, report = asyncio.run(run())
    assert {name for line in early for name in line.split(",")} <= set(first)
    assert "Contact,Account,User" in early
    whole = validate_bundle(root, staged=False)
    assert [f.to_json() for f in report.findings] == [f.to_json() for f in whole.findings]
    assert (report.objects, report.records, report.skipped) == (whole.objects, whole.records, whole.skipped)


FROZEN = "ORGSEED_TEST_FROZEN"


def store_stage_noting_frozen(root: str, *more: Any) -> float:
    """The sidecar's store stage, noting first how many objects the collector leaves alone (`gc.freeze`)."""
    import gc

    Path(os.environ[FROZEN]).write_text(str(gc.get_freeze_count()))
    return answer_check.build_store_as_written(root, *more)


FROZEN_BUILD = """
import gc, sys
from pathlib import Path
from flows import answer_check, build as build_module, sidecar
from flows.run import run_build
from tests.flows.test_sidecar import _small, store_stage_noting_frozen

frozen = {}
write_world = build_module.write_world

def world_noting_frozen(*args):
    frozen["building"] = gc.get_freeze_count()
    return write_world(*args)

build_module.write_world = world_noting_frozen
answer_check.build_store_as_written = store_stage_noting_frozen
before = gc.get_freeze_count()
assert sidecar.start_method() == "fork"
run_build(_small(Path(sys.argv[1])))
print(before, frozen["building"], gc.get_freeze_count())
"""


def test_what_the_build_holds_before_it_starts_is_frozen_in_both_processes(tmp_path: Path) -> None:
    """The modules and the model, held before the build starts, stay out of the cycle collector's walks in the
    building process and in the sidecar forked from it, from the first stage on; and are handed back after.
    (In a process of its own: the sidecar is forked only from a process running one thread.)"""
    import subprocess
    import sys

    noted = tmp_path / "frozen-in-sidecar"
    out = subprocess.run(
        [sys.executable, "-c", FROZEN_BUILD, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        env={**os.environ, FROZEN: str(noted)},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    before, building, after = map(int, out.stdout.split()[-3:])
    # thousands: the modules alone hold that many objects the collector tracks
    assert building > before + 10_000
    assert int(noted.read_text()) > before + 10_000
    assert after == before


def _begun_in_this_process(root: Path) -> tuple[Any, Any]:
    """Validation of `root` begun as the store stage begins it, every object written; with the profile."""
    from orgs.bundle import Bundle
    from orgs.local.store import fingerprint_of
    from validators.run import start_validation

    profile = load_bundle(root, objects=False).profile
    assert profile is not None
    model = load_model()
    run = start_validation(root, profile)
    prints = {n: fingerprint_of(Bundle(root), model.get(n)) for n in model.names}
    while run.advance(set(model.names)):
        pass
    answer_check._begun[str(root)] = (run, prints)
    return run, profile


def test_the_validate_stage_goes_on_from_the_steps_begun_unless_an_object_read_changed(
    small_bundle: Path, tmp_path: Path
) -> None:
    from tests.validators.corpus import corrupt

    root = copy_bundle(small_bundle, tmp_path / "b")
    run, profile = _begun_in_this_process(root)
    report = answer_check.validate_written(root, profile)
    assert run.done == len(run.steps) and not answer_check._begun  # went on from the begun steps
    assert [f.to_json() for f in report.findings] == [
        f.to_json() for f in validate_bundle(root, staged=False).findings
    ]

    # the User file is replaced after the steps begun read it (and the manifest with it)
    spec = json.loads((FIXTURES / "corruptions" / "integrity-duplicate-username.json").read_text())
    corrupt(spec, small_bundle, tmp_path / "corrupted")
    root = copy_bundle(small_bundle, tmp_path / "c")
    run, profile = _begun_in_this_process(root)
    assert "User" in run.read
    for rel in ("data/User.csv", "manifest.json"):
        shutil.copy(tmp_path / "corrupted" / rel, root / rel)
    report = answer_check.validate_written(root, profile)
    assert run.done < len(run.steps)  # started again
    assert [f.rule for f in report.findings] == ["integrity.unique"]
    assert [f.to_json() for f in report.findings] == [
        f.to_json() for f in validate_bundle(root, staged=False).findings
    ]


def store_stage_failing(root: Any, *_: Any) -> float:
    """The sidecar's store stage failing (planted by the test)."""
    raise OSError(f"{root}: disk full (planted by the test)")


def test_a_failed_store_stage_leaves_the_store_to_the_check_through_the_org(
    tmp_path: Path, small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(answer_check, "build_store_as_written", store_stage_failing)
    report = run_build(_small(tmp_path))
    stages = _stages(report.manifest)
    assert (
        stages["store"]["error"].startswith("OSError: ") and "planted by the test" in stages["store"]["error"]
    )
    assert report.manifest["tasks"]["api_check"]["steps"]["store"] > 0  # built by the check instead
    expected = json.loads((small_bundle / "manifest.json").read_text())
    assert report.manifest["files"] == expected["files"]
    rebuilt = copy_bundle(report.root, tmp_path / "rebuilt")
    Store.open(rebuilt, rebuild=True).close()
    assert _dump(report.root / STORE_FILE) == _dump(rebuilt / STORE_FILE)


def test_the_sidecar_is_forked_only_from_a_single_thread() -> None:
    """A forked child inherits every lock as it was, held by threads it does not have: the sidecar is forked
    (its modules already imported) only while this process runs one thread, spawned otherwise."""
    import threading

    alone = threading.active_count() == 1
    assert sidecar.start_method() == ("fork" if alone else "spawn")
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert sidecar.start_method() == "spawn"
    finally:
        release.set()
        other.join()


FORKED_SIDECAR = """
import sys
from flows import sidecar
print("written once", end="")  # buffered (stdout is a pipe) when the sidecar is forked
assert sidecar.start_method() == "fork", sidecar.start_method()
with sidecar.Sidecar() as side:
    print(f" by {sidecar.start_method()}", file=sys.stderr, end="")
    side._warm.result()
"""


def test_a_forked_sidecar_writes_nothing_this_process_had_buffered() -> None:
    """The forked child inherits this process's unwritten output; its exit must not write it a second time
    (multiprocessing flushes the streams before it forks; a bare `os.fork` would not)."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", FORKED_SIDECAR],
        capture_output=True,
        text=True,
        timeout=WAIT_SECONDS,
        check=True,
    )
    assert out.stdout == "written once"


def code_check_disagreeing(root: Any) -> None:
    """The code check (in the sidecar) finding a disagreement (planted by the test)."""
    raise build_module.TaskCheckFailed("1 task answer(s) disagree (planted by the test)", disagreements=1)


def http_sample_failing(root: Any, *args: Any) -> Any:
    raise RuntimeError("the served org refused (planted by the test)")


def test_with_a_sidecar_the_code_checks_verdict_comes_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the code check disagrees and the check through the org fails too (here, earlier), the build fails
    with the code check's verdict, as when the stages run one after the other."""
    monkeypatch.setattr(build_module, "check_task_answers", code_check_disagreeing)
    monkeypatch.setattr(answer_check, "check_over_http", http_sample_failing)
    with pytest.raises(build_module.TaskCheckFailed, match="planted by the test"):
        run_build(_small(tmp_path))
