"""Best Region Identification (BRI).

Reference solver (crmarena.md §7.9):
- BRI: Closed cases with CreatedDate in [start, end); region = the account's ShippingState (cases without one
  are ignored); average ClosedDate − CreatedDate per state; the state with the smallest average.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

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
    c = data.created_between("cases", w.start, w.end, end_included=False)
    sel = c[(c["Status"] == "Closed") & c["_state"].notna()]
    if sel.empty:
        return Solution(None, {})
    seconds = (sel["ClosedDate"] - sel["CreatedDate"]).dt.total_seconds()
    avg = seconds.groupby(sel["_state"]).mean().round(3)
    return pick_extreme({str(k): float(v) for k, v in avg.items()}, "min")


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
