"""Pause Python's cyclic garbage collector around bulk, allocation-heavy steps.

Generating or reading an org means building hundreds of thousands of small lists, dicts and tuples. Each
allocation burst triggers collections, and every full collection walks all live objects, so the cost grows with
the org: at scale 10 the collector took ~15% of generation time and ~20% of validation time (measured with the
collector disabled: generation 3.2–3.7 s → 2.8–3.4 s, validation 4.3–5.3 s → 3.8–4.3 s). The wrapped steps
make no reference cycles worth reclaiming mid-step; reference counting still frees everything else at once,
and the collector resumes when the step ends.

Only CPU-bound steps are wrapped: a step that waits on the network for minutes (the LLM writer) keeps the
collector on. The pause is process-wide; nesting and concurrent use only ever restore the state found on entry.
"""

from __future__ import annotations

import ctypes
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def gc_paused() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def release_freed_memory() -> None:
    """Collect unreachable cycles now (also while paused) and hand the C heap's free pages back to the system
    (glibc `malloc_trim`; nothing elsewhere): called after a stage lets go of a large table, so the next one
    starts from what is live rather than from the last one's high-water mark."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


_TRIM: list[Any] = []


def _malloc_trim() -> Any:
    if not _TRIM:
        try:
            _TRIM.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):
            _TRIM.append(None)
    return _TRIM[0]


_FROZEN_DEPTH = [0]
_FROZEN_LOCK = threading.Lock()


@contextmanager
def heap_frozen() -> Iterator[None]:
    """What the process holds on entry is moved out of the cyclic collector's reach (`gc.freeze`) until the
    outermost block ends (`gc.unfreeze`): a stage that follows generation (the task builders, the answer
    checks) then sets off collections that walk only what it made, not the modules, the model and every
    cache made before it. Frozen objects are still freed by reference counting; one that ends up in a
    reference cycle is collected after the block (unfreeze hands everything back to the oldest generation),
    so nothing is leaked by a process that runs many builds. Call it after `release_freed_memory`, so the
    garbage of the step before is not frozen with the rest."""
    with _FROZEN_LOCK:
        _FROZEN_DEPTH[0] += 1
        gc.freeze()
    try:
        yield
    finally:
        with _FROZEN_LOCK:
            _FROZEN_DEPTH[0] -= 1
            if _FROZEN_DEPTH[0] == 0:
                gc.unfreeze()


GC_FIRST_THRESHOLD = 100_000  # allocations between two young collections in `fewer_collections` (default 700)

_gc_lock = threading.Lock()
_gc_users = 0
_gc_saved: tuple[int, int, int] | None = None


@contextmanager
def fewer_collections(first: int = GC_FIRST_THRESHOLD) -> Iterator[None]:
    """The cyclic garbage collector's first threshold raised to `first` allocations inside the block (the
    previous thresholds back after the last block of any thread ends). The build's answer check makes
    millions of short-lived tuples and dicts (tokens of long IN lists, rows, records) and keeps many a while:
    at the default threshold (700) the collector ran every few hundred of them and walked the survivors
    again and again (scale 10: ~0.4 of the check's ~2.7 CPU-s; tokenizing the check's long queries took
    0.55 s with it and 0.25 s without). Nothing is left uncollected: only collected less often."""
    global _gc_users, _gc_saved
    with _gc_lock:
        if _gc_users == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(first, _gc_saved[0]), _gc_saved[1], _gc_saved[2])
        _gc_users += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_users -= 1
            if _gc_users == 0 and _gc_saved is not None:
                gc.set_threshold(*_gc_saved)
                _gc_saved = None
