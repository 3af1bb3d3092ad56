"""Handle Time Understanding (HTU) and Transfer Count Understanding (TCU).

Reference solvers (crmarena.md §7.2–7.3), with orgseed's stated choices:
- handled(agent) = Owner Assignment rows with CreatedDate in [start, end] (end inclusive) and NewValue__c = agent:
  first assignments and transfers-in both count (the code's semantics; the policy text says so).
- qualified = handled > n_cases.
- HTU: non-transferred cases = cases with exactly one Owner Assignment row in [start, end]; counted cases have
  CreatedDate in [start, end) (end exclusive), a qualified owner, are non-transferred and Closed; handle time =
  ClosedDate − CreatedDate in minutes, averaged per owner → argmin/argmax. No such case → None (orgseed does not
  reproduce the reference's quirk of dropping the Id filter when the non-transferred list is empty).
- TCU: transfers(agent) = Owner Assignment rows in [start, end] with OldValue__c = agent, for qualified agents;
  only agents with at least one transfer are considered → argmin/argmax; none → None.
"""

from __future__ import annotations

import random
from datetime import date
from typing import Any

import pandas as pd

from generator.tasks.common import (
    Instance,
    OrgData,
    Solution,
    Window,
    iso,
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

TCU_POLICY = """## Transfer Count Policy
- A transfer is an Owner Assignment entry in the case history whose previous owner (OldValue__c) is set; it
  counts for the agent the case was transferred away from (the previous owner).
- Count transfers whose Owner Assignment entry falls within the period (start and end both included).
- An agent is eligible when they received more than the stated number of Owner Assignment entries within the
  period (first assignments and transfers to them both count).
- Only eligible agents with at least one transfer are compared, so "fewest transfers" means the fewest among
  agents who transferred at least once.
- If no eligible agent transferred a case, answer None."""

SUFFIX_AGENT = "Return only the Id of the agent (a User Id), or None if no agent qualifies."


def _window_assignments(data: OrgData, w: Window) -> pd.DataFrame:
    a = data.assignments
    return a[(a["CreatedDate"] >= w.start) & (a["CreatedDate"] <= w.end)]


def _qualified(rows: pd.DataFrame, n_cases: int) -> set[str]:
    handled = rows["NewValue__c"].value_counts()
    return set(handled[handled > n_cases].index)


def solve_handle_time(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    rows = _window_assignments(data, w)
    qualified = _qualified(rows, int(params["n_cases"]))
    per_case = rows.groupby("CaseId__c").size()
    single = set(per_case[per_case == 1].index)
    c = data.cases
    sel = c[
        (c["CreatedDate"] >= w.start)
        & (c["CreatedDate"] < w.end)
        & c["OwnerId"].isin(qualified)
        & c["Id"].isin(single)
        & (c["Status"] == "Closed")
    ]
    if sel.empty:
        return Solution(None, {})
    minutes = (sel["ClosedDate"] - sel["CreatedDate"]).dt.total_seconds() / 60.0
    avg = minutes.groupby(sel["OwnerId"]).mean().round(6)
    return pick_extreme({str(k): float(v) for k, v in avg.items()}, str(params["extrema"]))


def solve_transfer_count(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    rows = _window_assignments(data, w)
    qualified = _qualified(rows, int(params["n_cases"]))
    moves = rows[rows["OldValue__c"].notna() & rows["OldValue__c"].isin(qualified)]
    counts = moves["OldValue__c"].value_counts()
    return pick_extreme({str(k): float(v) for k, v in counts.items()}, str(params["extrema"]))


_MIN = ["shortest", "lowest", "quickest"]
_MAX = ["longest", "highest", "slowest"]


def _cases_clause(n: int) -> str:
    if n == 0:
        return "among agents who handled any cases"
    return f"among agents who handled more than {n} case{'s' if n > 1 else ''}"


def _htu_query(rng: random.Random, w: Window, n: int, extrema: str) -> str:
    word = rng.choice(_MIN if extrema == "min" else _MAX)
    speed = "fastest" if extrema == "min" else "slowest"
    templates = [
        f"Which agent had the {word} average handle time {w.phrase}, {_cases_clause(n)}?",
        f"{w.phrase[0].upper()}{w.phrase[1:]}, who was the {speed} agent at closing cases on average, {_cases_clause(n)}?",
        f"Find the agent with the {word} average handle time {w.phrase} ({_cases_clause(n)}).",
        f"Looking at handle times {w.phrase}, which agent {_cases_clause(n)} averaged the {word} time to close a case?",
        f"I need the agent whose average case handling time was the {word} {w.phrase}, {_cases_clause(n)}.",
    ]
    return rng.choice(templates)


def _tcu_query(rng: random.Random, w: Window, n: int, extrema: str) -> str:
    most = "most" if extrema == "max" else "fewest"
    templates = [
        f"Which agent transferred the {most} cases {w.phrase}, {_cases_clause(n)}?",
        f"{w.phrase[0].upper()}{w.phrase[1:]}, who had the {most} case transfers {_cases_clause(n)}?",
        f"Identify the agent with the {most} transfers {w.phrase} ({_cases_clause(n)}).",
        f"Among the team {w.phrase}, which agent passed the {most} cases on to colleagues, {_cases_clause(n)}?",
        f"Who moved the {most} cases to other agents {w.phrase}, {_cases_clause(n)}?",
    ]
    return rng.choice(templates)


def _params(today: date, w: Window, n: int, extrema: str) -> dict[str, Any]:
    return {"extrema": extrema, "n_cases": n, "today_date": iso(today), **w.params}


def sampler_handle_time(data: OrgData) -> Any:
    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        today, w = random_window(data, rng)
        n = rng.choice([0, 1, 1, 2, 2, 3])
        extrema = "min" if rng.random() < 0.6 else "max"
        params = _params(today, w, n, extrema)
        sol = solve_handle_time(data, params)
        query = _htu_query(rng, w, n, extrema)
        required = f"{HTU_POLICY}\n{today_line(today)}"
        return Instance("handle_time", query, sol.answer, required, params, sol, tail=f" {SUFFIX_AGENT}")

    return sample


def sampler_transfer_count(data: OrgData) -> Any:
    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        today, w = random_window(
            data, rng, relative_units=(("week", 2, 16), ("month", 2, 14), ("quarter", 1, 5)), named_share=0.45
        )
        n = rng.choice([0, 0, 1, 2, 3])
        extrema = "max" if rng.random() < 0.55 else "min"
        params = _params(today, w, n, extrema)
        sol = solve_transfer_count(data, params)
        query = _tcu_query(rng, w, n, extrema)
        required = f"{TCU_POLICY}\n{today_line(today)}"
        return Instance("transfer_count", query, sol.answer, required, params, sol, tail=f" {SUFFIX_AGENT}")

    return sample
