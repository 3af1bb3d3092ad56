"""Best Region Identification (BRI).

Reference solver (crmarena.md §7.9):
- BRI: Closed cases with CreatedDate in [start, end); region = the account's ShippingState (cases without one
  are ignored); average ClosedDate − CreatedDate per state; the state with the smallest average.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from generator.tasks.common import (
    Instance,
    OrgData,
    Solution,
    iso,
    pick_extreme,
    random_window,
    today_line,
    window_from_params,
)

BRI_POLICY = """## Region Closure Policy
- Consider Closed cases created within the period (start included, end excluded).
- A case's region is the shipping state of its customer's account; cases without a state are ignored.
- Closure time = ClosedDate − CreatedDate; the quickest region has the smallest average closure time."""


def solve_best_region(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    seconds, state, closed, states = _closure_codes(data)
    c = data.created_positions("cases", w.start, w.end, end_included=False)
    sel = c[closed[c] & (state[c] >= 0)]
    if not len(sel):
        return Solution(None, {})
    # grouped by the states' codes (numbered in state order, so the groups come in state order): the same
    # rows, summed in the same order, as grouping the window's cases by _state
    avg = pd.Series(seconds[sel]).groupby(state[sel]).mean().round(3)
    return pick_extreme({states[k]: float(v) for k, v in avg.items()}, "min")


def _closure_codes(data: OrgData) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Per Case row: ClosedDate − CreatedDate in seconds, its state's code (-1: none) and Status == Closed;
    and the states, their codes numbering them in sorted order. Made once."""
    if "closure_codes" not in data.cache:
        c = data.cases
        state, states = pd.factorize(c["_state"], sort=True)
        data.cache["closure_codes"] = (
            (c["ClosedDate"] - c["CreatedDate"]).dt.total_seconds().to_numpy(dtype="float64"),
            np.asarray(state),
            (c["Status"] == "Closed").to_numpy(dtype=bool),
            [str(x) for x in states],
        )
    return data.cache["closure_codes"]


def sampler_best_region(data: OrgData) -> Any:
    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        today, w = random_window(
            data, rng, named_share=0.5, relative_units=(("week", 3, 12), ("month", 1, 8), ("quarter", 1, 3))
        )
        if w.end.date() > data.span_end.date() + timedelta(days=1) and rng.random() < 0.8:
            return None  # mostly ask about periods with data (this task has no None answers)
        params = {"today_date": iso(today), **w.params}
        sol = solve_best_region(data, params)
        templates = [
            f"Which state had the quickest case closures {w.phrase}?",
            f"{w.phrase[0].upper()}{w.phrase[1:]}, customers in which state got their cases closed fastest on average?",
            f"Where were cases resolved most quickly {w.phrase}, by customer state?",
            f"Find the region with the shortest average case closure time {w.phrase}.",
        ]
        suffix = "Return only the two-letter state code (e.g. CA)."
        query = rng.choice(templates)
        return Instance(
            "best_region_identification",
            query,
            sol.answer,
            f"{BRI_POLICY}\n{today_line(today)}",
            params,
            sol,
            tail=f" {suffix}",
        )

    return sample
