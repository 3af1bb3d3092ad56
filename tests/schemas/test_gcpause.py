"""schemas/gcpause: the frozen heap is frozen only inside the outermost block, and nothing frozen is leaked; a
raised collection threshold is restored once the last block ends."""

from __future__ import annotations

import gc
import threading
import weakref

from schemas.gcpause import fewer_collections, heap_frozen


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_frozen_only_inside_the_outermost_block() -> None:
    assert gc.get_freeze_count() == 0
    with heap_frozen():
        assert gc.get_freeze_count() > 0
        with heap_frozen():
            pass
        assert gc.get_freeze_count() > 0  # the inner block's end does not thaw the outer one's heap
    assert gc.get_freeze_count() == 0


def test_a_cycle_frozen_inside_is_collected_after_the_block() -> None:
    gc.collect()
    with heap_frozen():
        ref = _cycle()  # made inside, then frozen with everything by a nested block (as a later stage would)
        with heap_frozen():
            gc.collect()
            assert ref() is not None  # frozen: out of the collector's reach
    gc.collect()
    assert ref() is None  # handed back on the outermost exit: not leaked


def test_blocks_in_threads_thaw_once_the_last_one_ends() -> None:
    inside, leave = threading.Barrier(3), threading.Event()

    def hold() -> None:
        with heap_frozen():
            inside.wait()
            leave.wait()

    threads = [threading.Thread(target=hold) for _ in range(2)]
    for t in threads:
        t.start()
    inside.wait()
    assert gc.get_freeze_count() > 0
    leave.set()
    for t in threads:
        t.join()
    assert gc.get_freeze_count() == 0


def test_fewer_collections_raises_the_first_threshold_and_restores_it() -> None:
    before = gc.get_threshold()
    inside: list[tuple[int, int, int]] = []
    entered, leave = threading.Event(), threading.Event()

    def other() -> None:
        with fewer_collections(before[0] + 5000):
            entered.set()
            leave.wait(10)
            inside.append(gc.get_threshold())

    t = threading.Thread(target=other)
    with fewer_collections(before[0] + 1000):
        assert gc.get_threshold() == (before[0] + 1000, before[1], before[2])
        t.start()
        entered.wait(10)
    # the other thread's block is still open: the raised threshold stays until it ends
    assert gc.get_threshold()[0] > before[0]
    leave.set()
    t.join(10)
    assert inside and inside[0][0] > before[0]
    assert gc.get_threshold() == before
