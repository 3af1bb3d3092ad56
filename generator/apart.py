"""Running a function in a child process of its own, for a phase whose memory should go back when it ends.

Python's small-object allocator gives an arena (1 MiB) back to the system only when every object in it is
freed. A long phase that allocates gigabytes of small objects and frees them leaves a few long-lived objects
scattered among them (caches, interned names, pandas' bookkeeping), each keeping its arena: the memory is
free for Python but not for the machine. Run in a child process, the phase gives back all of it when the
child ends (generator/pipeline.py `made_apart`).

The child is spawned, not forked: the building process may run threads (Prefect's, the sidecar's feeder),
whose locks a forked child would inherit held.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from generator.objects import BuildError

T = TypeVar("T")


class ChildFailed(BuildError):
    """The child process failed: it raised an error that could not be sent back (the message holds its
    traceback's text), or it died (the message gives its exit code)."""


def _main(send: Connection, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
    try:
        outcome: tuple[Any, ...] = ("ok", fn(*args))
    except BaseException as exc:  # reported to the parent, whatever it is
        outcome = ("error", exc, traceback.format_exc())
    try:
        send.send(outcome)
    except Exception:  # the result or the error does not pickle: its text does
        send.send(("error", None, outcome[2] if outcome[0] == "error" else traceback.format_exc()))
    send.close()


def _wait(recv: Connection, proc: Any) -> tuple[Any, ...]:
    try:
        got: tuple[Any, ...] = recv.recv()
    except EOFError:  # the child ended without a word: killed, or crashed in C
        proc.join()
        return ("died", proc.exitcode)
    proc.join()
    return got


def _start(fn: Callable[..., Any], args: tuple[Any, ...], what: str | None) -> tuple[Any, Connection, str]:
    ctx = multiprocessing.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    name: str = what or str(getattr(fn, "__name__", "a function"))
    proc = ctx.Process(target=_main, args=(send, fn, args), name=f"orgseed {name}")
    proc.start()
    send.close()  # the child holds the writing end: when it ends, reading sees the end of the pipe
    return proc, recv, name


def _end(proc: Any, recv: Connection) -> None:
    if proc.is_alive():
        proc.terminate()
        proc.join()
    recv.close()


def _result(name: str, outcome: tuple[Any, ...]) -> Any:
    if outcome[0] == "ok":
        return outcome[1]
    if outcome[0] == "died":
        code = outcome[1]
        if code == -9:
            why = (
                " (signal 9: usually the kernel's out-of-memory killer; give the build more memory or lower"
                " --scale)"
            )
        else:
            why = " (its own messages, if it wrote any, are above)"
        raise ChildFailed(f"The child process running {name} ended with exit code {code}{why}.")
    _, exc, text = outcome
    if isinstance(exc, Exception):
        exc.add_note(f"(raised in the child process running {name}; its traceback there:\n{text})")
        raise exc
    raise ChildFailed(f"The child process running {name} failed:\n{text}")


async def in_child(fn: Callable[..., T], *args: Any, what: str | None = None) -> T:
    """`fn(*args)` run in a spawned child process (fn and args picklable), awaited without blocking the event
    loop; `what` names the work in the errors (the function's name by default). Its exception is raised here
    again when it pickles (a `ChildFailed` with its traceback's text when it does not); a child that dies
    (the kernel's out-of-memory killer, a crash) raises `ChildFailed` with its exit code. The child is ended
    if the caller is cancelled."""
    proc, recv, name = _start(fn, args, what)
    try:
        outcome = await asyncio.get_running_loop().run_in_executor(None, _wait, recv, proc)
    finally:
        _end(proc, recv)
    result: T = _result(name, outcome)
    return result


def run_in_child(fn: Callable[..., T], *args: Any, what: str | None = None) -> T:
    """`in_child`, blocking: for a caller on a thread of its own (a Prefect task)."""
    proc, recv, name = _start(fn, args, what)
    try:
        outcome = _wait(recv, proc)
    finally:
        _end(proc, recv)
    result: T = _result(name, outcome)
    return result
