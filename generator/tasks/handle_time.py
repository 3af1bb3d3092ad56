"""Handle Time Understanding (HTU).

Reference solver (crmarena.md §7.2), with orgseed's stated choices:
- handled(agent) = Owner Assignment rows with CreatedDate in [start, end] (end inclusive) and NewValue__c = agent:
  first assignments and transfers-in both count (the code's semantics; the policy text says so).
- qualified = handled > n_cases.
- HTU: non-transferred cases = cases with exactly one Owner Assignment row in [start, end]; counted cases have
  CreatedDate in [start, end) (end exclusive), a qualified owner, are non-transferred and Closed; handle time =
  ClosedDate − CreatedDate in minutes, averaged per owner → argmin/argmax. No such case → None (orgseed does not
  reproduce the reference's quirk of dropping the Id filter when the non-transferred list is empty).

`handled` and `qualified` are computed by helpers shared with transfer_count (`generator/tasks/common.py`).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pandas as pd

from generator.tasks.common import (
    SUFFIX_AGENT,
    Instance,
    OrgData,
    Solution,
    Window,
    agent_task_params,
    assignment_codes,
    cases_clause,
    handle_time_positions,
    pick_extreme,
    random_window,
    today_line,
    window_from_params,
)

HTU_POLICY = """## Handle Time Policy
- Handle time of a case = ClosedDate − CreatedDate, in minutes; an agent's handle time is the average over the
  cases they own.
- Only Closed cases that were created in the period and never transferred count. A case was never transferred
  when it has exactly one Owner Assignment entry in its case history within the period.
- An agent is eligible when they received more than the stated number of Owner Assignment entries within the
  period (first assignments and transfers to them both count).
- Periods include their start. Case creation must be before the period's end; owner assignments may fall on
  the end instant itself.
- If no agent is eligible or no case counts, answer None."""


def solve_handle_time(data: OrgData, params: dict[str, Any]) -> Solution:
    return _fastest(data, _counted(data, params), str(params["extrema"]))


def _counted(data: OrgData, params: dict[str, Any]) -> np.ndarray:
    """The positions of the cases the instance averages (none: its answer is None)."""
    return handle_time_positions(data, window_from_params(params), int(params["n_cases"]))


def _fastest(data: OrgData, sel: np.ndarray, extrema: str) -> Solution:
    codes = assignment_codes(data)
    if not len(sel):
        return Solution(None, {})
    # The mean handle time per owner, grouped by the owners' codes (numbered in Id order, so the groups come
    # in OwnerId order): the same sums, in the same row order, as grouping the cases by OwnerId.
    avg = pd.Series(codes.minutes[sel]).groupby(codes.owner_of_case[sel]).mean().round(6)
    ids = codes.agent_ids
    return pick_extreme({ids[k]: float(v) for k, v in avg.items()}, extrema)


_MIN = ["shortest", "lowest", "quickest"]

_MAX = ["longest", "highest", "slowest"]


def _htu_query(rng: random.Random, w: Window, n: int, extrema: str) -> str:
    word = rng.choice(_MIN if extrema == "min" else _MAX)
    speed = "fastest" if extrema == "min" else "slowest"
    templates = [
        f"Which agent had the {word} average handle time {w.phrase}, {cases_clause(n)}?",
        f"{w.phrase[0].upper()}{w.phrase[1:]}, who was the {speed} agent at closing cases on average, {cases_clause(n)}?",
        f"Find the agent with the {word} average handle time {w.phrase} ({cases_clause(n)}).",
        f"Looking at handle times {w.phrase}, which agent {cases_clause(n)} averaged the {word} time to close a case?",
        f"I need the agent whose average case handling time was the {word} {w.phrase}, {cases_clause(n)}.",
    ]
    return rng.choice(templates)


def sampler_handle_time(data: OrgData) -> Any:
    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        today, w = random_window(data, rng)
        n = rng.choice([0, 1, 1, 2, 2, 3])
        extrema = "min" if rng.random() < 0.6 else "max"
        params = agent_task_params(today, w, n, extrema)
        query = _htu_query(rng, w, n, extrema)
        sel = _counted(data, params)
        if bool(len(sel)) == want_none:
            return None  # the answer is None exactly when no case counts: not the kind `fill` wants
        sol = _fastest(data, sel, extrema)
        required = f"{HTU_POLICY}\n{today_line(today)}"
        return Instance("handle_time", query, sol.answer, required, params, sol, tail=f" {SUFFIX_AGENT}")

    return sample
