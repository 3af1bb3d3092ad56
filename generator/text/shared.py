"""LLM limits shared by every process of a Dask cluster: `--concurrency` and `--rpm` for the whole build.

Each process's writer has its own limits (`limits.py`: the adaptive gate, the RPM/TPM limiters); on a Dask
cluster each worker process would then send up to `--concurrency` requests and `--rpm` a minute, so the
endpoint would see them times the number of workers. With `LLMSettings.shared_limits` set (the build sets
it for `--runner dask`, named after the run), every writer also takes leases from two `distributed`
semaphores held by the scheduler, by that name:

- `<name>-inflight` with `concurrency` leases: one held per request in flight, whichever worker sends it;
- `<name>-rpm` with `rpm` leases: one taken per request sent and given back `window` seconds later, so no
  more than `rpm` requests start in any window, over the whole cluster (a sliding window).

`distributed` is the engine's own library (a well-kept lock service with lease time-outs, so a worker that
dies does not hold a lease for ever); writing one here would need a server of our own. `--tpm` stays per
process: a semaphore cannot take a weighted count. A process that is not part of a Dask cluster (the build's
own process, which writes the task texts after generation, alone) keeps its own limits only.

The semaphores' calls block, so they run on a small thread pool beside the writer's event loop; a request
cancelled while it waits gives back the lease it gets.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any


class SharedLimits:
    """The cluster-wide leases of one run's writers (see the module's docstring)."""

    def __init__(self, name: str, concurrency: int, rpm: int | None, window: float) -> None:
        from distributed import Semaphore

        # made in the calling thread: a Dask task's thread, where the semaphore finds its worker
        self.inflight = Semaphore(max_leases=max(1, concurrency), name=f"{name}-inflight")
        self.started = Semaphore(max_leases=rpm, name=f"{name}-rpm") if rpm else None
        self.window = window
        self.pool = ThreadPoolExecutor(
            max_workers=2 * max(1, concurrency) + 2, thread_name_prefix="orgseed-lease"
        )
        self._timers: set[asyncio.TimerHandle] = set()

    @staticmethod
    def join(name: str | None, concurrency: int, rpm: int | None, window: float) -> SharedLimits | None:
        """The run's shared limits when this process is part of a Dask cluster; None otherwise."""
        if not name:
            return None
        try:
            import distributed
        except ImportError:
            return None
        try:
            distributed.get_worker()  # a Dask task's thread
        except ValueError:
            try:
                distributed.default_client()  # a process with a client of the cluster
            except ValueError:
                return None
        return SharedLimits(name, concurrency, rpm, window)

    async def _take(self, sem: Any) -> None:
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self.pool, sem.acquire)
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            # the lease is taken once the blocked call returns: give it back then
            fut.add_done_callback(lambda f: f.cancelled() or f.exception() or self.pool.submit(sem.release))
            raise

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """One request: a start from the window's budget, and a place in flight while it is sent."""
        loop = asyncio.get_running_loop()
        started = self.started
        if started is not None:
            await self._take(started)
            box: list[asyncio.TimerHandle] = []

            def give_back() -> None:
                self._timers.discard(box[0])
                self.pool.submit(started.release)

            box.append(loop.call_later(self.window, give_back))
            self._timers.add(box[0])
        await self._take(self.inflight)
        try:
            yield
        finally:
            await loop.run_in_executor(self.pool, self.inflight.release)

    def close(self) -> None:
        """On the writer's loop, when it stops: give back the window's leases now (nothing more is sent from
        here; left held, a live worker would refresh them for ever) and stop the pool."""
        pending, self._timers = self._timers, set()
        for handle in pending:
            handle.cancel()
            if self.started is not None:
                with contextlib.suppress(Exception):
                    self.started.release()
        self.pool.shutdown(wait=True)
