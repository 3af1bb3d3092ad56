"""Monthly Trend Analysis (MTA).

Reference solver (crmarena.md §7.8):
- MTA: the product's cases (any status) with CreatedDate in [start, end) (end exclusive); count per calendar
  month name (months of different years with the same name merge); the month whose count is strictly greater
  than every other month's (a tie at the top is rejected, never emitted).

The product's cases (their positions), name and case-weighted product list come from helpers shared
with top_issue_identification (`generator/tasks/common.py`).
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import numpy as np

from generator.tasks.common import (
    MONTHS,
    Instance,
    OrgData,
    Solution,
    case_products,
    iso,
    pick_extreme,
    product_name,
    product_positions,
    relative_window,
    sampled_created,
    today_line,
    window_from_params,
)

MTA_POLICY = """## Monthly Trend Policy
- Consider all cases about the product (any status) created within the period (start included, end excluded).
- Count them per calendar month name; the same month name in different years counts together.
- A month significantly exceeds the others when its count is strictly greater than every other month's."""


def solve_monthly_trend(data: OrgData, params: dict[str, Any]) -> Solution:
    w = window_from_params(params)
    created = product_created(data).get(params["product_id"])
    if created is None:
        return Solution(None, {})
    stamps, months = created
    inside = months[(stamps >= np.datetime64(w.start, "ns")) & (stamps < np.datetime64(w.end, "ns"))]
    if not len(inside):
        return Solution(None, {})
    # cases per month name, ordered as value_counts orders them: most first, ties in order of first appearance
    month, first, counts = np.unique(inside, return_index=True, return_counts=True)
    order = np.lexsort((first, -counts))
    return pick_extreme({MONTHS[month[k] - 1]: float(counts[k]) for k in order}, "max")


def product_created(data: OrgData) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Product Id -> its cases' CreatedDate (datetime64[ns]) and month number (1-12), in frame order."""
    if "product_created" not in data.cache:
        stamps = data.cases["CreatedDate"].to_numpy(dtype="datetime64[ns]")
        months = stamps.astype("datetime64[M]").astype(np.int64) % 12 + 1
        data.cache["product_created"] = {
            product: (stamps[at], months[at]) for product, at in product_positions(data).items()
        }
    return data.cache["product_created"]


# A product is asked about when it has at least 4 cases and the winning month at least 2 of them. An org with
# fewer than MIN_RICH such products (scale 0.1 of the crmarena profile has 1: 98 cases over 500 products) asks
# about any product with a case and accepts a month that wins with one case (still strictly more than every
# other month, the policy's rule), so small orgs build with default flags (issue 16 item 6).
MIN_RICH = 5


def sampler_monthly_trend(data: OrgData) -> Any:
    products, weights = case_products(data)
    rich = [p for p, w in zip(products, weights, strict=True) if w >= 4]
    rich_w = [w for w in weights if w >= 4]
    least = 2
    if len(rich) < MIN_RICH:
        rich, rich_w, least = list(products), list(weights), 1

    draws = np.random.RandomState()

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not rich:
            return None
        product = rng.choices(rich, weights=rich_w)[0]
        when = sampled_created(product_created(data)[product][0], rng.randrange(2**31), draws)
        unit, count = ("month", rng.randint(7, 11)) if rng.random() < 0.5 else ("quarter", rng.randint(3, 6))
        today = (when + timedelta(days=rng.randint(20, 150))).date()
        w = relative_window(today, unit, count)
        params = {"product_id": product, "today_date": iso(today), **w.params}
        sol = solve_monthly_trend(data, params)
        counts = sol.candidates if isinstance(sol.candidates, dict) else {}
        if sol.answer is None or counts.get(sol.answer, 0) < least:
            return None
        name = product_name(data, product)
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
            context={"product_name": name},  # the voice names the product its own way
        )

    return sample
