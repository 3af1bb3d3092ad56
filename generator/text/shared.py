"""LLM limits shared by every process of a Dask cluster: `--concurrency`, `--rpm` and `--tpm` for the whole build.

Each process's writer has its own limits (`limits.py`: the adaptive gate, the RPM/TPM limiters); on a Dask
cluster each worker process would then send up to `--concurrency` requests and `--rpm` a minute, so the
endpoint would see them times the number of workers. With `LLMSettings.shared_limits` set (the build sets
it for `--runner dask`, named after the run), every writer also takes leases from two `distributed`
semaphores held by the scheduler, by that name:

- `<name>-inflight` with `concurrency` leases: one held per request in flight, whichever worker sends it;
- `<name>-rpm` with `rpm` leases: one taken per request sent and given back `window` seconds later, so no
  more than `rpm` requests start in any window, over the whole cluster (a sliding window);
- `<name>-tpm` with `tpm` tokens in leases of `unit` tokens each (at most `MAX_TOKEN_LEASES` leases, so a
  request takes a handful of leases, not thousands): a request takes as many leases as its estimated tokens
  need (the estimate the process's own `--tpm` limiter uses) and gives them back `window` seconds later, so no
  more than `tpm` tokens start in any window over the whole cluster. A semaphore hands out one lease per call,
  so two requests each holding part of what they need could wait on each other for ever; a request therefore
  takes its leases while holding the `<name>-tpm-take` lock, one taker at a time, and the others queue behind
  it (the leases it waits for come back when their window ends, so it always gets them).

`distributed` is the engine's own library (a well-kept lock service with lease time-outs, so a worker that
dies does not hold a lease for ever); writing one here would need a server of our own. A process that is
not part of a Dask cluster (the build's own process, which writes the task texts after generation, alone)
keeps its own limits only.

The semaphores' calls block, so they run on a small thread pool beside the writer's event loop; a request
cancelled while it waits gives back the lease it gets.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

MAX_TOKEN_LEASES = 500  # the `--tpm` semaphore's leases: `unit` = ceil(tpm / this) tokens each


class SharedLimits:
    """The cluster-wide leases of one run's writers (see the module's docstring)."""

    def __init__(
        self, name: str, concurrency: int, rpm: int | None, window: float, tpm: int | None = None
    ) -> None:
        from distributed import Lock, Semaphore

        # made in the calling thread: a Dask task's thread, where the semaphore finds its worker
        self.inflight = Semaphore(max_leases=max(1, concurrency), name=f"{name}-inflight")
        self.started = Semaphore(max_leases=rpm, name=f"{name}-rpm") if rpm else None
        self.unit = math.ceil(tpm / MAX_TOKEN_LEASES) if tpm else 1
        self.tokens = Semaphore(max_leases=tpm // self.unit, name=f"{name}-tpm") if tpm else None
        self.taking = Lock(f"{name}-tpm-take") if tpm else None
        self.window = window
        self.pool = ThreadPoolExecutor(
            max_workers=2 * max(1, concurrency) + 2, thread_name_prefix="orgseed-lease"
        )
        # the window's leases still held: given back when their timer fires, or by close()
        self._timers: dict[asyncio.TimerHandle, tuple[Any, int]] = {}

    @staticmethod
    def join(
        name: str | None, concurrency: int, rpm: int | None, window: float, tpm: int | None = None
    ) -> SharedLimits | None:
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
        return SharedLimits(name, concurrency, rpm, window, tpm)

    async def _take(self, sem: Any) -> None:
        loop = asyncio.get_running_loop()
        fut = loop.run_in_executor(self.pool, sem.acquire)
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            # the lease is taken once the blocked call returns: give it back then
            fut.add_done_callback(lambda f: f.cancelled() or f.exception() or self.pool.submit(sem.release))
            raise

    def token_leases(self, tokens: float) -> int:
        """The `--tpm` leases a request of `tokens` estimated tokens takes (never more than there are)."""
        if self.tokens is None:
            return 0
        return max(1, min(self.tokens.max_leases, math.ceil(tokens / self.unit)))

    def _later(self, sem: Any, n: int) -> None:
        """Give `n` leases of `sem` back when the window ends (close() gives them back at once)."""
        loop = asyncio.get_running_loop()
        box: list[asyncio.TimerHandle] = []

        def give_back() -> None:
            self._timers.pop(box[0], None)
            for _ in range(n):
                self.pool.submit(sem.release)

        box.append(loop.call_later(self.window, give_back))
        self._timers[box[0]] = (sem, n)

    async def _take_tokens(self, n: int) -> None:
        tokens, taking = self.tokens, self.taking
        assert tokens is not None and taking is not None
        loop = asyncio.get_running_loop()

        def take() -> None:  # in the pool: one taker at a time collects its leases
            with taking:
                for _ in range(n):
                    tokens.acquire()

        def give_back(f: Any) -> None:  # the leases are taken once the blocked call returns
            if not f.cancelled() and f.exception() is None:
                for _ in range(n):
                    self.pool.submit(tokens.release)

        fut = loop.run_in_executor(self.pool, take)
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            fut.add_done_callback(give_back)
            raise

    @contextlib.asynccontextmanager
    async def slot(self, tokens: float = 0.0) -> AsyncIterator[None]:
        """One request of `tokens` estimated tokens: a start and its tokens from the window's budgets, and a
        place in flight while it is sent."""
        if self.started is not None:
            await self._take(self.started)
            self._later(self.started, 1)
        if self.tokens is not None:
            n = self.token_leases(tokens)
            await self._take_tokens(n)
            self._later(self.tokens, n)
        loop = asyncio.get_running_loop()
        await self._take(self.inflight)
        try:
            yield
        finally:
            await loop.run_in_executor(self.pool, self.inflight.release)

    def close(self) -> None:
        """On the writer's loop, when it stops: give back the window's leases now (nothing more is sent from
        here; left held, a live worker would refresh them for ever) and stop the pool."""
        pending, self._timers = self._timers, {}
        for handle, (sem, n) in pending.items():
            handle.cancel()
            for _ in range(n):
                with contextlib.suppress(Exception):
                    sem.release()
        self.pool.shutdown(wait=True)
