"""The sidecar: one worker process beside the building one, so a build uses a second core.

After generation, a build has two independent lines of work: validating the written files (`validate`), and
building and checking the tasks (`tasks`, `tasks.check`, `tasks.check_api`, the fidelity figures). Every
`remote` stage (flows/build.py `StageRunner`) is a function of the bundle's files and picklable arguments, so
the sidecar runs them (`store`, `validate`, `tasks.check`) while the building process runs the others (the
tasks, the HTTP sample of the check through the org); then both take what is left, a chunk of the check
through the org at a time and the fidelity figures, as each is free (flows/build.py
`shared_with_the_sidecar`), so both processes end about together.
The bundle is the same either way: a remote stage writes nothing but its own files (the validation report is
written by the flow) and returns a value.

The process is started when the build starts, before generation, and imports the stages' modules while the
building process generates, so its start-up is off the critical path. It is forked when the building process
runs a single thread then (the in-process build: the child starts with every module the building process has
imported, ~0.6 CPU-s less at start-up), else spawned (under Prefect: a forked child would inherit other
threads' locks, held mid-use). While generation runs it builds the org's store (`org.sqlite`) an object at
a time, as the building process writes them, and begins validation while it waits for the next object (the
steps that read only objects already written; the validate stage goes on from there): the building process tells it which object it has written
(`written`) and when all are (`all_written`), through a queue the process is given when it starts (`notices`,
read by the store stage, flows/answer_check.py). A stage's `start` and `seconds` are measured in the sidecar
(`measured`), not when the building process gets round to collecting its result.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing.context import BaseContext
from multiprocessing.synchronize import Event
from typing import Any

from schemas.gcpause import release_freed_memory

MIN_CPUS = 2  # on one core a second process only takes turns with the first


def wanted(requested: bool | None) -> bool:
    """Whether a build runs a sidecar: as asked, else when the machine has a second core."""
    if requested is not None:
        return requested
    return (os.cpu_count() or 1) >= MIN_CPUS


def _warm() -> int:
    """Import what the remote stages need (in the sidecar, while the building process generates)."""
    import validators.fidelity_report
    import validators.run
    import validators.tasks  # noqa: F401

    return os.getpid()


def _timed(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float, float, int]:
    start, t = time.time(), time.perf_counter()
    result = fn(*args)
    seconds = time.perf_counter() - t
    # the sidecar idles beside the building process until its next stage: hand back what this one freed
    # (at scale 30 it otherwise kept ~300 MB after the code answer check, ~170 MB trimmed, while the
    # building process ran the SOQL check at its own peak)
    release_freed_memory()
    return result, start, seconds, os.getpid()


class NoticesWithdrawn(Exception):
    """The building process will not write the rest of the objects (its generation failed or stopped)."""


# in the sidecar's process: the queue of objects written, and the events "all written" and "withdrawn"
_inbox: tuple[Any, Event, Event] | None = None
NOTICE_POLL_SECONDS = 0.5


ORPHAN_POLL_SECONDS = 0.5


def _receive(inbox: Any, done: Event, withdrawn: Event) -> None:
    """The pool's initializer: keep the notices' queue and events (passed when the process is started), and
    watch the building process (`_end_with`)."""
    global _inbox
    _inbox = (inbox, done, withdrawn)
    threading.Thread(
        target=_end_with, args=(os.getppid(),), name="orgseed-sidecar-watch", daemon=True
    ).start()


def _end_with(parent: int) -> None:
    """End this process once the building process is gone. A building process that is killed cannot stop
    its pool, and a forked worker holds both ends of the pool's call queue, so it would wait for its next
    stage for ever (found: a build killed with SIGKILL left its sidecar behind)."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_POLL_SECONDS)
    os._exit(1)


def notices(idle: Callable[[], bool] | None = None) -> Iterator[str]:
    """In the sidecar: the names of the objects the building process has written, as it writes them, until
    it has written all (then the iterator ends; a stage retried after that gets no more names, and loads what
    it lacks from the files). NoticesWithdrawn when the building process stops generating, or is gone.

    `idle`, while no name is waiting, is called for a piece of other work; it says whether it did one (then
    the queue is looked at again before the next), else the iterator waits for the next name."""
    if _inbox is None:
        raise NoticesWithdrawn("not in a sidecar: no building process tells this process what it wrote")
    inbox, done, withdrawn = _inbox
    parent = os.getppid()
    while True:
        if withdrawn.is_set():
            raise NoticesWithdrawn("the building process stopped generating")
        name: Any = ""
        if idle is not None:
            try:
                name = inbox.get_nowait()
            except queue.Empty:
                if idle():
                    continue
        if name == "":
            with contextlib.suppress(queue.Empty):
                name = inbox.get(timeout=NOTICE_POLL_SECONDS)
        if name is None:  # "all written", after the last name
            return
        if name:
            yield str(name)
            continue
        if done.is_set():  # and its mark was taken by an earlier run of the stage: what is queued, then end
            try:
                while (name := inbox.get_nowait()) is not None:
                    yield str(name)
            except queue.Empty:
                pass
            return
        if os.getppid() != parent:
            raise NoticesWithdrawn("the building process is gone")


def start_method() -> str:
    """How the sidecar's process is started now: "fork" when this process runs one thread (and the platform
    forks), else "spawn"."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def _pool(inbox: tuple[Any, Event, Event]) -> ProcessPoolExecutor:
    # (multiprocessing flushes the standard streams before it forks: the child does not write them again)
    ctx: BaseContext = multiprocessing.get_context(start_method())
    return ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_receive, initargs=inbox)


class Sidecar:
    """A one-process pool for the build's remote stages. Use as a context manager (or call `close`).

    `retire` says the build has no more stages for it: its process ends as soon as nothing is pending (a
    stage submitted after that, e.g. a retry, starts a new process, which ends in turn when idle)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        spawn = multiprocessing.get_context("spawn")
        self._inbox: tuple[Any, Event, Event] = (spawn.Queue(), spawn.Event(), spawn.Event())
        self._pool: ProcessPoolExecutor | None = _pool(self._inbox)
        self._warm: Future[int] = self._pool.submit(_warm)
        self._pending = 0
        self._retiring = False
        self.measured: dict[str, dict[str, float]] = {}
        self.pids: dict[str, int] = {}  # stage name -> the process it ran in

    @property
    def where(self) -> str:
        """Where its stages ran, for the manifest: the (first) sidecar process's id."""
        return f"sidecar (pid {self._warm.result()})"

    def where_of(self, name: str) -> str:
        """Where stage `name` ran: the id of the sidecar process that ran it."""
        pid = self.pids.get(name)
        return self.where if pid is None else f"sidecar (pid {pid})"

    async def run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` in the sidecar; record the stage's own start and duration in `measured`."""
        with self._lock:
            if self._pool is None:  # retired, then asked again: a new process
                self._pool = _pool(self._inbox)
            self._pending += 1
            future = self._pool.submit(_timed, fn, args)
        future.add_done_callback(self._settled)
        result, start, seconds, pid = await asyncio.wrap_future(future)
        self.measured[name] = {"start": round(start, 3), "seconds": round(seconds, 3)}
        self.pids[name] = pid
        return result

    def written(self, name: str) -> None:
        """Tell the sidecar object `name` is written (its files are complete)."""
        self._inbox[0].put(name)

    def all_written(self) -> None:
        """Tell the sidecar every object is written (and the manifest records them)."""
        self._inbox[0].put(None)  # after the names, in the queue's order
        self._inbox[1].set()

    def withdraw(self) -> None:
        """Tell the sidecar no more objects will be written (generation failed): a stage reading `notices`
        stops."""
        self._inbox[2].set()

    def _settled(self, _: Future[Any]) -> None:
        with self._lock:
            self._pending -= 1
            if self._retiring and self._pending == 0:
                self._let_go()

    def _let_go(self) -> None:
        """End the pool's process without waiting (nothing is pending: it exits at once)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=False)
            self._pool = None

    def retire(self) -> None:
        """The build has no more stages for the sidecar: let its process end once the stages submitted are
        done (from whichever thread sees the last one finish), rather than idle to the end of the build
        holding what they left behind (at scale 30, ~185 MB beside the building process's own peak, the
        check through the org, which runs in the event loop's thread and keeps it busy)."""
        with self._lock:
            self._retiring = True
            if self._pending == 0:
                self._let_go()

    def close(self) -> None:
        if not self._inbox[1].is_set():
            self.withdraw()  # a stage still waiting for notices stops, so the pool can shut down
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Sidecar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
