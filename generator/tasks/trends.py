"""Top Issue Identification (TII), Monthly Trend Analysis (MTA) and Best Region Identification (BRI).

Reference solvers (crmarena.md §7.7–7.9):
- TII: cases whose order item is of the product, CreatedDate in [start, end] (end inclusive); count per
  IssueId__c; the issue with most cases; no case → None.
- MTA: the product's cases (any status) with CreatedDate in [start, end) (end exclusive); count per calendar
  month name (months of different years with the same name merge); the month whose count is strictly greater
  than every other month's (a tie at the top is rejected, never emitted).
- BRI: Closed cases with CreatedDate in [start, end); region = the account's ShippingState (cases without one
  are ignored); average ClosedDate − CreatedDate per state; the state with the smallest average.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from generator.tasks.common import (
    MONTHS,
    Instance,
    OrgData,
    Solution,
    iso,
    named_window,
    pick_extreme,
    random_window,
    relative_window,
    today_line,
    window_from_params,
)

TII_POLICY = """## Top Issue Policy
- Consider the cases about the product (the case's order item is of that product) created within the period,
  start and end both included.
- The most reported issue is the issue with the most such cases.
- If the product has no case in the period, answer None."""

MTA_POLICY = """## Monthly Trend Policy
- Consider all cases about the product (any status) created within the period (start included, end excluded).
- Count them per calendar month name; the same month name in different years counts together.
- A month significantly exceeds the others when its count is strictly greater than every other month's."""

BRI_POLICY = """## Region Closure Policy
- Consider Closed cases created within the period (start included, end excluded).
- A case's region is the shipping state of its customer's account; cases without a state are ignored.
- Closure time = ClosedDate − CreatedDate; the quickest region has the smallest average closure time."""


def _product_cases(data: OrgData) -> dict[str, Any]:
    if "product_cases" not in data.cache:
        data.cache["product_cases"] = {k: v for k, v in data.cases.groupby("_product")}
    return data.cache["product_cases"]


def solve_top_issue(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    cases = _product_cases(data).get(params["product_id"])
    if cases is None:
        return Solution(None, {})
    sel = cases[(cases["CreatedDate"] >= w.start) & (cases["CreatedDate"] <= w.end)]
    counts = sel["IssueId__c"].value_counts()
    return pick_extreme({str(k): float(v) for k, v in counts.items()}, "max")


def solve_monthly_trend(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    cases = _product_cases(data).get(params["product_id"])
    if cases is None:
        return Solution(None, {})
    sel = cases[(cases["CreatedDate"] >= w.start) & (cases["CreatedDate"] < w.end)]
    counts = sel["CreatedDate"].dt.month.map(lambda m: MONTHS[m - 1]).value_counts()
    return pick_extreme({str(k): float(v) for k, v in counts.items()}, "max")


def solve_best_region(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    c = data.cases
    sel = c[
        (c["Status"] == "Closed")
        & (c["CreatedDate"] >= w.start)
        & (c["CreatedDate"] < w.end)
        & c["_state"].notna()
    ]
    if sel.empty:
        return Solution(None, {})
    seconds = (sel["ClosedDate"] - sel["CreatedDate"]).dt.total_seconds()
    avg = seconds.groupby(sel["_state"]).mean().round(3)
    return pick_extreme({str(k): float(v) for k, v in avg.items()}, "min")


def _product_name(data: OrgData, product_id: str) -> str:
    if "product_names" not in data.cache:
        data.cache["product_names"] = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    return str(data.cache["product_names"][product_id])


def _case_products(data: OrgData) -> tuple[list[str], list[float]]:
    if "case_products" not in data.cache:
        counts = data.cases["_product"].value_counts()
        data.cache["case_products"] = (list(counts.index), [float(x) for x in counts.to_numpy()])
    return data.cache["case_products"]


def sampler_top_issue(data: OrgData) -> Any:
    products, weights = _case_products(data)
    all_products = list(data.products["Id"])

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if want_none:
            product = rng.choice(all_products)
            today, w = random_window(data, rng, named_share=0.5)
        else:
            product = rng.choices(products, weights=weights)[0]
            case = _product_cases(data)[product].sample(1, random_state=rng.randrange(2**31)).iloc[0]
            when = case["CreatedDate"].to_pydatetime()
            if rng.random() < 0.5:
                kind = rng.choice(["month", "quarter", "season", "season"])
                if kind == "month":
                    name = MONTHS[when.month - 1]
                elif kind == "quarter":
                    name = f"Q{(when.month - 1) // 3 + 1}"
                else:
                    name = (
                        "Winter"
                        if when.month in (12, 1, 2)
                        else ["Spring", "Summer", "Fall"][(when.month - 3) // 3]
                    )
                year = when.year - 1 if name == "Winter" and when.month <= 2 else when.year
                w = named_window(name, year)
                today = w.end.date() + timedelta(days=rng.randint(0, 300))
            else:
                unit, lo, hi = rng.choice(
                    [("month", 2, 12), ("quarter", 1, 4), ("year", 1, 1), ("week", 4, 12)]
                )
                count = rng.randint(lo, hi)
                today = (
                    when + timedelta(days=rng.randint(1, 40 * count if unit != "week" else 6 * count))
                ).date()
                w = relative_window(today, unit, count)
        params = {"product_id": product, "today_date": iso(today), **w.params}
        sol = solve_top_issue(data, params)
        name = _product_name(data, product)
        templates = [
            f"What was the most common issue with the {name} {w.phrase}?",
            f"{w.phrase[0].upper()}{w.phrase[1:]}, which issue did customers report most often about the {name}?",
            f"Which problem came up most for the {name} {w.phrase}?",
            f"For the {name}, what is the top reported issue {w.phrase}?",
        ]
        suffix = (
            f"The associated product Id is {product}. Return only the Id of the most reported issue "
            "(an Issue__c Id), or None if there were no cases."
        )
        query = rng.choice(templates)
        return Instance(
            "top_issue_identification",
            query,
            sol.answer,
            f"{TII_POLICY}\n{today_line(today)}",
            params,
            sol,
            tail=f" {suffix}",
        )

    return sample


def sampler_monthly_trend(data: OrgData) -> Any:
    products, weights = _case_products(data)
    rich = [p for p, w in zip(products, weights, strict=True) if w >= 4]
    rich_w = [w for w in weights if w >= 4]

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not rich:
            return None
        product = rng.choices(rich, weights=rich_w)[0]
        case = _product_cases(data)[product].sample(1, random_state=rng.randrange(2**31)).iloc[0]
        when = case["CreatedDate"].to_pydatetime()
        unit, count = ("month", rng.randint(7, 11)) if rng.random() < 0.5 else ("quarter", rng.randint(3, 6))
        today = (when + timedelta(days=rng.randint(20, 150))).date()
        w = relative_window(today, unit, count)
        params = {"product_id": product, "today_date": iso(today), **w.params}
        sol = solve_monthly_trend(data, params)
        counts = sol.candidates if isinstance(sol.candidates, dict) else {}
        if sol.answer is None or counts.get(sol.answer, 0) < 2:
            return None
        name = _product_name(data, product)
        templates = [
            f"Is there a month where cases about the {name} greatly exceeded the other months {w.phrase}?",
            f"{w.phrase[0].upper()}{w.phrase[1:]}, in which month did the {name} get far more cases than in any other month?",
            f"Which month stands out for {name} cases {w.phrase}?",
            f"Looking at {name} cases {w.phrase}, which month had significantly more than the rest?",
        ]
        suffix = f"The associated product Id is {product}. Return only the month name (e.g. January)."
        query = rng.choice(templates)
        return Instance(
            "monthly_trend_analysis",
            query,
            sol.answer,
            f"{MTA_POLICY}\n{today_line(today)}",
            params,
            sol,
            tail=f" {suffix}",
        )

    return sample


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
