"""Retry-After parsing, back-off, the adaptive gate and the stall breaker."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Mapping

import pytest

from generator.text.limits import AdaptiveGate, StallBreaker, backoff, first_of, retry_after_seconds
from schemas.errors import Terminal


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "0.25"}) == 0.25
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert 28 <= (retry_after_seconds({"retry-after": date}, now=now) or 0) <= 31
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None
    assert retry_after_seconds(None) is None


def test_backoff_grows_to_its_ceiling_with_jitter() -> None:
    rng = random.Random(1)
    waits = [backoff(n, 1.0, 8.0, rng) for n in range(1, 8)]
    for n, w in enumerate(waits, start=1):
        d = min(8.0, 2 ** (n - 1))
        assert d / 2 <= w <= d
    assert max(waits) <= 8.0


def test_gate_cuts_on_throttle_and_grows_back() -> None:
    async def go() -> None:
        gate = AdaptiveGate(8, cut_interval=0.0)
        await gate.acquire()
        await gate.release("throttled")
        assert gate.limit == 6
        await gate.acquire()
        await gate.release("throttled")
        assert gate.limit == 4 and gate.lowest == 4
        for _ in range(4):
            await gate.acquire()
            await gate.release("ok")
        assert gate.limit == 5

    asyncio.run(go())


def test_gate_bounds_work_in_flight() -> None:
    async def go() -> int:
        gate = AdaptiveGate(3)
        peak = 0
        active = 0

        async def job() -> None:
            nonlocal peak, active
            async with gate.slot() as slot:
                active += 1
                peak = max(peak, active)
                await asyncio.sleep(0.01)
                active -= 1
                slot.outcome = "ok"

        await asyncio.gather(*(job() for _ in range(30)))
        return peak

    assert asyncio.run(go()) == 3


def _stalled(stalled: float, since: Mapping[str, int]) -> Terminal:
    return Terminal(f"stalled {stalled:.1f} s: {since}")


def test_breaker_trips_only_while_work_is_pending() -> None:
    async def go() -> None:
        breaker = StallBreaker(0.2, _stalled)
        watch = asyncio.ensure_future(breaker.watch())
        await asyncio.sleep(0.4)
        assert breaker.error is None  # idle: no stall
        breaker.begin()
        breaker.note("429")
        t0 = time.monotonic()

        async def forever() -> None:
            await asyncio.sleep(60)

        with pytest.raises(Terminal, match=r"stalled .* \{'429': 1\}"):
            await first_of({asyncio.ensure_future(forever())}, breaker)
        assert time.monotonic() - t0 < 1.0
        watch.cancel()

    asyncio.run(go())


def test_progress_keeps_the_breaker_closed() -> None:
    async def go() -> None:
        breaker = StallBreaker(0.2, _stalled)
        breaker.begin()
        for _ in range(6):
            await asyncio.sleep(0.1)
            breaker.progress()
            breaker.check()
        assert breaker.error is None

    asyncio.run(go())


def test_first_of_cancels_the_rest_when_one_fails() -> None:
    async def go() -> None:
        breaker = StallBreaker(60, _stalled)
        cancelled = asyncio.Event()

        async def slow() -> None:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        async def bad() -> None:
            raise ValueError("boom")

        with pytest.raises(ValueError, match="boom"):
            await first_of({asyncio.ensure_future(slow()), asyncio.ensure_future(bad())}, breaker)
        assert cancelled.is_set()

    asyncio.run(go())
