"""generator/apart.py: a function run in a spawned child process, its result, its error, its death."""

from __future__ import annotations

import asyncio
import os
import signal

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
    with pytest.raises(ChildFailed, match="signal 9.*out-of-memory"):
        asyncio.run(in_child(_killed))
