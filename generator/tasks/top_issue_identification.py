"""Top Issue Identification (TII).

Reference solver (crmarena.md §7.7):
- TII: cases whose order item is of the product, CreatedDate in [start, end] (end inclusive); count per
  IssueId__c; the issue with most cases; no case → None.

The product's cases (their positions), name and case-weighted product list come from helpers shared
with monthly_trend_analysis (`generator/tasks/common.py`).
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from generator.tasks.common import (
    MONTHS,
    Instance,
    OrgData,
    Solution,
    case_products,
    iso,
    named_window,
    pick_extreme,
    product_name,
    product_positions,
    random_window,
    relative_window,
    sampled_created,
    today_line,
    window_from_params,
)

TII_POLICY = """## Top Issue Policy
- Consider the cases about the product (the case's order item is of that product) created within the period,
  start and end both included.
- The most reported issue is the issue with the most such cases.
- If the product has no case in the period, answer None."""


def solve_top_issue(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    found = _product_issues(data).get(params["product_id"])
    if found is None:
        return Solution(None, {})
    stamps, issue, issues = found
    inside = issue[(stamps >= np.datetime64(w.start, "ns")) & (stamps <= np.datetime64(w.end, "ns"))]
    inside = inside[inside >= 0]  # a case without an issue counts for none
    if not len(inside):
        return Solution(None, {})
    # cases per issue, ordered as value_counts orders them: most first, ties in order of first appearance
    codes, first, counts = np.unique(inside, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    return pick_extreme({issues[codes[k]]: float(counts[k]) for k in order}, "max")


def _product_issues(data: OrgData) -> dict[str, tuple[np.ndarray, np.ndarray, list[str]]]:
    """Product Id -> its cases' CreatedDate (datetime64[ns]) and IssueId__c as codes (-1: none), in frame
    order, and the issue Ids the codes number. Made once."""
    if "product_issues" not in data.cache:
        stamps = data.cases["CreatedDate"].to_numpy(dtype="datetime64[ns]")
        issue_ids = data.cases["IssueId__c"].to_numpy()
        out = {}
        for product, at in product_positions(data).items():
            codes, issues = pd.factorize(issue_ids[at])
            out[product] = (stamps[at], np.asarray(codes), [str(x) for x in issues])
        data.cache["product_issues"] = out
    return data.cache["product_issues"]


def sampler_top_issue(data: OrgData) -> Any:
    products, weights = case_products(data)
    all_products = list(data.products["Id"])

    draws = np.random.RandomState()

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if want_none:
            product = rng.choice(all_products)
            today, w = random_window(data, rng, named_share=0.5)
        else:
            product = rng.choices(products, weights=weights)[0]
            when = sampled_created(_product_issues(data)[product][0], rng.randrange(2**31), draws)
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
        name = product_name(data, product)
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
            context={"product_name": name},  # the voice names the product its own way
        )

    return sample
