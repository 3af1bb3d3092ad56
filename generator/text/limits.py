"""Throughput controls of the LLM writer: adaptive concurrency, Retry-After, back-off, the stall breaker.

All of these live on the writer's own event loop (see `llm.py`), so one set serves every shard and thread
of a process:

- `AdaptiveGate` bounds requests in flight. It starts at `--concurrency`, cuts the limit by a quarter on a
  rate-limit response (at most once a second), and adds one slot back after `limit` successes (AIMD).
- `retry_after_seconds` reads `Retry-After-Ms` / `Retry-After` (seconds or an HTTP date).
- `backoff` is exponential with equal jitter, capped (the ceiling).
- `StallBreaker` fails the run when no request has succeeded for `max_stall_seconds` while requests are
  waiting, instead of retrying silently for minutes (the failure mode of NeMo Data Designer #575).
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections import Counter
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from schemas.errors import OrgseedError


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds, or None when it names none."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - (time.time() if now is None else now))


def backoff(attempt: int, base: float, ceiling: float, rng: random.Random | None = None) -> float:
    """Exponential back-off with equal jitter: d/2 + U(0, d/2), d = min(ceiling, base·2^(attempt-1))."""
    r = rng or random
    d = min(ceiling, base * (2 ** max(0, attempt - 1)))
    return d / 2 + r.uniform(0, d / 2)


class AdaptiveGate:
    """An async semaphore whose size adapts to rate limiting (multiplicative decrease, additive increase)."""

    def __init__(self, limit: int, cut_interval: float = 1.0) -> None:
        self.maximum = max(1, int(limit))
        self.limit = self.maximum
        self.lowest = self.maximum
        self.active = 0
        self._ok = 0
        self._last_cut = float("-inf")
        self._cut_interval = cut_interval
        self._cond = asyncio.Condition()

    async def acquire(self) -> None:
        async with self._cond:
            try:
                await self._cond.wait_for(lambda: self.active < self.limit)
            except asyncio.CancelledError:
                self._cond.notify(1)  # pass on a wake-up this waiter may have consumed
                raise
            self.active += 1

    async def release(self, outcome: str) -> None:
        """`outcome`: "ok" (a response), "throttled" (429) or "error" (anything else)."""
        async with self._cond:
            self.active -= 1
            if outcome == "throttled":
                now = time.monotonic()
                if now - self._last_cut >= self._cut_interval:
                    self.limit = max(1, (self.limit * 3) // 4)
                    self.lowest = min(self.lowest, self.limit)
                    self._last_cut = now
                    self._ok = 0
            elif outcome == "ok":
                self._ok += 1
                if self.limit < self.maximum and self._ok >= self.limit:
                    self.limit += 1
                    self._ok = 0
            free = self.limit - self.active
            if free > 0:
                self._cond.notify(free)

    def slot(self) -> _Slot:
        return _Slot(self)


class _Slot:
    """`async with gate.slot() as s:` … `s.outcome = "ok"`; released with its outcome on exit."""

    def __init__(self, gate: AdaptiveGate) -> None:
        self.gate = gate
        self.outcome = "error"

    async def __aenter__(self) -> _Slot:
        await self.gate.acquire()
        return self

    async def __aexit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.gate.release(self.outcome)


class StallBreaker:
    """Trips when requests are pending and none has succeeded for `max_stall` seconds, or on demand.

    `pending` counts requests between their first attempt and their final outcome (back-off sleeps
    included), so the stall clock runs through retries; it restarts when work begins after an idle spell.
    """

    def __init__(
        self, max_stall: float, describe: Callable[[float, Mapping[str, int]], OrgseedError]
    ) -> None:
        self.max_stall = float(max_stall)
        self.describe = describe
        self.pending = 0
        self.last_progress = time.monotonic()
        self.since: Counter[str] = Counter()
        self.error: BaseException | None = None
        self.tripped = asyncio.Event()

    def begin(self) -> None:
        if self.pending == 0:
            self.last_progress = time.monotonic()
            self.since.clear()
        self.pending += 1

    def end(self) -> None:
        self.pending -= 1

    def progress(self) -> None:
        self.last_progress = time.monotonic()
        self.since.clear()

    def note(self, what: str) -> None:
        self.since[what] += 1

    def stalled_for(self) -> float:
        return time.monotonic() - self.last_progress

    def check(self) -> None:
        if self.pending > 0 and self.error is None:
            stalled = self.stalled_for()
            if stalled > self.max_stall:
                self.trip(self.describe(stalled, dict(self.since)))

    def trip(self, error: BaseException) -> None:
        if self.error is None:
            self.error = error
            self.tripped.set()

    def raise_if_tripped(self) -> None:
        if self.error is not None:
            raise self.error

    async def watch(self) -> None:
        """Run forever on the writer's loop, checking for a stall several times a second."""
        interval = max(0.05, min(0.25, self.max_stall / 10))
        while True:
            await asyncio.sleep(interval)
            self.check()


async def first_of(tasks: set[asyncio.Task[Any]], breaker: StallBreaker) -> None:
    """Wait for every task; stop early (cancelling the rest) when one fails or the breaker trips.

    Done-callbacks count the tasks, so waiting on thousands of them costs O(n), not O(n) per completion.
    """
    if not tasks:
        return
    settled = asyncio.Event()
    remaining = len(tasks)
    failures: list[BaseException] = []

    def on_done(t: asyncio.Task[Any]) -> None:
        nonlocal remaining
        remaining -= 1
        if not t.cancelled() and t.exception() is not None:  # retrieving it marks it handled
            failures.append(t.exception())  # type: ignore[arg-type]
            settled.set()
        elif remaining == 0:
            settled.set()

    for t in tasks:
        t.add_done_callback(on_done)
    watchers = {asyncio.ensure_future(settled.wait()), asyncio.ensure_future(breaker.tripped.wait())}
    try:
        await asyncio.wait(watchers, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        failures.append(asyncio.CancelledError())
        raise
    finally:
        for w in watchers:
            w.cancel()
        if failures or breaker.error is not None:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    breaker.raise_if_tripped()
    if failures:
        raise failures[0]
