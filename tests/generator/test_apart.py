"""generator/apart.py: a function run in a spawned child process, its result, its error, its death."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from generator.apart import ChildFailed, in_child
from generator.objects import BuildError


def _pid_and(x: int) -> tuple[int, int]:
    return os.getpid(), x * 2


def _fails(message: str) -> None:
    raise BuildError(message)


class _Unpicklable(Exception):
    def __init__(self, held: object) -> None:
        super().__init__("cannot travel")
        self.held = held


def _fails_unpicklably() -> None:
    raise _Unpicklable(lambda: None)


def _dies(code: int) -> None:
    os._exit(code)


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _sleeps(where: str) -> None:
    Path(where).write_text(str(os.getpid()))
    time.sleep(120)


def test_a_cancelled_caller_ends_the_child(tmp_path: Path) -> None:
    where = tmp_path / "pid"

    async def cancelled() -> int:
        waiting = asyncio.ensure_future(in_child(_sleeps, str(where)))
        for _ in range(600):  # the child writes its pid once started (a spawned interpreter: ~1 s)
            if where.exists() and where.read_text():
                break
            await asyncio.sleep(0.05)
        t = time.monotonic()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert time.monotonic() - t < 60  # ended, not waited for (it sleeps 120 s)
        return int(where.read_text())

    pid = asyncio.run(cancelled())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # ended and reaped, not left sleeping


def test_the_result_comes_back_from_another_process() -> None:
    pid, doubled = asyncio.run(in_child(_pid_and, 21))
    assert doubled == 42 and pid != os.getpid()


def test_the_child_error_is_raised_again_with_its_traceback() -> None:
    with pytest.raises(BuildError, match="Case: 3 texts are still near-duplicates") as got:
        asyncio.run(in_child(_fails, "Case: 3 texts are still near-duplicates"))
    notes = "\n".join(getattr(got.value, "__notes__", []))
    assert "raised in the child process running _fails" in notes and "_fails" in notes


def test_an_error_that_does_not_pickle_comes_back_as_its_text() -> None:
    with pytest.raises(ChildFailed, match="_Unpicklable: cannot travel"):
        asyncio.run(in_child(_fails_unpicklably))


def test_a_child_that_exits_without_a_result_is_reported_with_its_exit_code() -> None:
    with pytest.raises(ChildFailed, match="exit code 3"):
        asyncio.run(in_child(_dies, 3))


def test_a_killed_child_is_reported_as_probably_out_of_memory() -> None:
    with pytest.raises(ChildFailed, match=r"signal 9.*out-of-memory"):
        asyncio.run(in_child(_killed))


def test_which_objects_are_made_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only in a large build (spill) whose shards share this process, with the offline writer, an object planned
    # with APART_ROWS rows or more whose texts stay in its frame and are searched for near-duplicates.
    from generator import pipeline
    from generator.objects import GENERATORS
    from tests.conftest import SMALL_PROFILE

    spec = pipeline.RunSpec(str(SMALL_PROFILE), 0, 1.0)
    rc = pipeline.RunContext(tmp_path, spec, pipeline.make_context(spec))
    counts = rc.build.world.counts
    case = GENERATORS["Case"]
    monkeypatch.setattr(pipeline, "APART_ROWS", counts["Case"])
    assert pipeline.made_apart(rc, case, spill=True, shares_memory=True)
    assert not pipeline.made_apart(rc, case, spill=False, shares_memory=True)
    assert not pipeline.made_apart(rc, case, spill=True, shares_memory=False)  # Dask workers
    llm = pipeline.RunContext(rc.root, pipeline.RunSpec(spec.profile, 0, 1.0, writer="openai"), rc.build)
    assert not pipeline.made_apart(llm, case, spill=True, shares_memory=True)
    monkeypatch.setattr(pipeline, "APART_ROWS", counts["Case"] + 1)
    assert not pipeline.made_apart(rc, case, spill=True, shares_memory=True)
    monkeypatch.setattr(pipeline, "APART_ROWS", 0)
    made = {n for n in counts if pipeline.made_apart(rc, GENERATORS[n], spill=True, shares_memory=True)}
    assert made == {
        "Case",
        "Product2",
        "Knowledge__kav",
        "LiveChatTranscript",
    }  # EmailMessage spills its texts


def test_the_error_names_the_work_it_was_given() -> None:
    with pytest.raises(ChildFailed, match="running the making of Case ended with exit code 3"):
        asyncio.run(in_child(_dies, 3, what="the making of Case"))
