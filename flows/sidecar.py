"""The sidecar: one worker process beside the building one, so a build uses a second core.

After generation, a build has two independent lines of work: validating the written files (`validate`), and
building and checking the tasks (`tasks`, `tasks.check`, `tasks.check_api`, the fidelity figures). Every
`remote` stage (flows/build.py `StageRunner`) is a function of the bundle's files and picklable arguments, so
the sidecar runs them (`validate`, `tasks.check`, `fidelity`) while the building process runs the others.
The bundle is the same either way: a remote stage writes nothing but its own files (the validation report is
written by the flow) and returns a value.

The process is spawned (not forked: the build may hold threads) when the build starts and imports the stages'
modules while the building process generates, so its start-up is off the critical path. A stage's `start`
and `seconds` are measured in the sidecar (`measured`), not when the building process gets round to
collecting its result.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
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


def _timed(fn: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, float, float]:
    start, t = time.time(), time.perf_counter()
    result = fn(*args)
    seconds = time.perf_counter() - t
    # the sidecar idles beside the building process until its next stage: hand back what this one freed
    # (at scale 30 it otherwise kept ~300 MB after the code answer check, ~170 MB trimmed, while the
    # building process ran the SOQL check at its own peak)
    release_freed_memory()
    return result, start, seconds


class Sidecar:
    """A one-process pool for the build's remote stages. Use as a context manager (or call `close`)."""

    def __init__(self) -> None:
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
        self._warm: Future[int] = self._pool.submit(_warm)
        self.measured: dict[str, dict[str, float]] = {}

    @property
    def where(self) -> str:
        """Where its stages ran, for the manifest: the sidecar process's id."""
        return f"sidecar (pid {self._warm.result()})"

    async def run(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """Run `fn(*args)` in the sidecar; record the stage's own start and duration in `measured`."""
        result, start, seconds = await asyncio.wrap_future(self._pool.submit(_timed, fn, args))
        self.measured[name] = {"start": round(start, 3), "seconds": round(seconds, 3)}
        return result

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Sidecar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
