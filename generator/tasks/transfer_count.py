"""Transfer Count Understanding (TCU).

Reference solver (crmarena.md §7.3), with orgseed's stated choices:
- handled(agent) = Owner Assignment rows with CreatedDate in [start, end] (end inclusive) and NewValue__c = agent:
  first assignments and transfers-in both count (the code's semantics; the policy text says so).
- qualified = handled > n_cases.
- TCU: transfers(agent) = Owner Assignment rows in [start, end] with OldValue__c = agent, for qualified agents;
  only agents with at least one transfer are considered → argmin/argmax; none → None.

`handled` and `qualified` are computed by helpers shared with handle_time (`generator/tasks/common.py`).
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from generator.tasks.common import (
    SUFFIX_AGENT,
    Instance,
    OrgData,
    Solution,
    Window,
    agent_task_params,
    cases_clause,
    pick_extreme,
    random_window,
    today_line,
    transfer_counts,
    transfer_tally,
    window_from_params,
)

TCU_POLICY = """## Transfer Count Policy
- A transfer is an Owner Assignment entry in the case history whose previous owner (OldValue__c) is set; it
  counts for the agent the case was transferred away from (the previous owner).
- Count transfers whose Owner Assignment entry falls within the period (start and end both included).
- An agent is eligible when they received more than the stated number of Owner Assignment entries within the
  period (first assignments and transfers to them both count).
- Only eligible agents with at least one transfer are compared, so "fewest transfers" means the fewest among
  agents who transferred at least once.
- If no eligible agent transferred a case, answer None."""


def solve_transfer_count(data: OrgData, params: dict[str, Any]) -> Solution:
    counts = transfer_counts(data, window_from_params(params), int(params["n_cases"]))
    return pick_extreme(counts, str(params["extrema"]))


def _may_qualify(data: OrgData, params: dict[str, Any], want_none: bool) -> bool:
    """Whether the instance can be one `fill` accepts, told from the counts alone (most draws cannot): its
    answer is None exactly when no agent transferred, and it is a tie when the best count is shared (counts
    are whole numbers, so `pick_extreme`'s closeness is equality)."""
    counts = transfer_tally(data, window_from_params(params), int(params["n_cases"]))
    if not len(counts):
        return want_none
    best = counts.max() if params["extrema"] == "max" else counts.min()
    return not want_none and np.count_nonzero(counts == best) == 1


def _tcu_query(rng: random.Random, w: Window, n: int, extrema: str) -> str:
    most = "most" if extrema == "max" else "fewest"
    templates = [
        f"Which agent transferred the {most} cases {w.phrase}, {cases_clause(n)}?",
        f"{w.phrase[0].upper()}{w.phrase[1:]}, who had the {most} case transfers {cases_clause(n)}?",
        f"Identify the agent with the {most} transfers {w.phrase} ({cases_clause(n)}).",
        f"Among the team {w.phrase}, which agent passed the {most} cases on to colleagues, {cases_clause(n)}?",
        f"Who moved the {most} cases to other agents {w.phrase}, {cases_clause(n)}?",
    ]
    return rng.choice(templates)


def sampler_transfer_count(data: OrgData) -> Any:
    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        today, w = random_window(
            data, rng, relative_units=(("week", 2, 16), ("month", 2, 14), ("quarter", 1, 5)), named_share=0.45
        )
        n = rng.choice([0, 0, 1, 2, 3])
        extrema = "max" if rng.random() < 0.55 else "min"
        params = agent_task_params(today, w, n, extrema)
        query = _tcu_query(rng, w, n, extrema)
        if not _may_qualify(data, params, want_none):
            return None
        sol = solve_transfer_count(data, params)
        required = f"{TCU_POLICY}\n{today_line(today)}"
        return Instance("transfer_count", query, sol.answer, required, params, sol, tail=f" {SUFFIX_AGENT}")

    return sample
