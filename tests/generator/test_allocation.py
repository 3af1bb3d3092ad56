"""Splitting a count over parents: exact totals, and no parent above the profile's bound."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from generator.objects.base import capped_allocation
from orgs.bundle import Bundle
from tests.conftest import SMALL_PROFILE, build_local


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=40),
    st.lists(st.floats(0.01, 100.0), min_size=40, max_size=40),
    st.integers(1, 30),
    st.integers(0, 2**32 - 1),
)
def test_capped_allocation_keeps_the_total_and_the_cap(
    counts: list[int], w: list[float], cap: int, seed: int
) -> None:
    c = np.array(counts)
    assume(c.sum() <= cap * len(c))  # the caller refuses a total the slots cannot hold
    weights = np.array(w[: len(c)])
    out = capped_allocation(np.random.default_rng(seed), c, weights, cap)
    assert out.sum() == c.sum() and out.max() <= cap
    # a slot at or below the cap keeps what it had and may only gain; one above it ends at the cap
    assert (out[c <= cap] >= c[c <= cap]).all() and (out[c > cap] == cap).all()
    if (c <= cap).all():
        assert out is c  # nothing drawn: the allocations of orgs that never pass the cap are unchanged


def test_no_order_has_more_items_than_the_profile_bound(tmp_path: Path) -> None:
    # 900 items over 300 orders with lognormal baskets: many orders would get more than 4
    profile = tmp_path / "bounded.toml"
    profile.write_text(SMALL_PROFILE.read_text() + "\n[bounds.OrderItem]\nOrderId = [1, 4]\n")
    root = build_local(tmp_path / "bundle", profile=profile)  # the build validates the bound too
    items = Bundle(root).read_raw("OrderItem")
    per = items["OrderId"].value_counts()
    assert len(items) == 900 and per.max() == 4 and per.min() >= 1
    assert len(per) == len(Bundle(root).read_raw("Order"))
