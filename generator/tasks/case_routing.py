"""New Case Routing (NCR).

Reference solver (crmarena.md §7.1), with orgseed's stated choices:
- NCR: agents' Closed cases with the new case's issue → the most; ties → among the tied, the most Closed cases
  about the new case's product (any issue); ties → the fewest cases whose Status is not Closed (orgseed's reading
  of the policy's "not Closed"; CRMArena's code literally counted Status = 'Open'). Agents without matching
  cases count 0 at each step. A tie after step 3 is never emitted.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from typing import Any

import pandas as pd

from generator.tasks.common import Instance, OrgData, Solution
from generator.text.base import TextKind, TextRequest, TextWriter

ROUTING_POLICY = """## Case Routing Policy
1. Issue expertise: route the case to the agent with the most Closed cases about the same issue.
2. If several agents are tied, pick among them the agent with the most Closed cases about the same product
   (any issue).
3. If still tied, pick among them the agent with the fewest cases whose Status is not Closed."""


def solve_case_routing(data: OrgData, params: dict[str, Any]) -> Solution:
    stage1 = _closed_per_owner(data, params["issue_id"])
    if not stage1:
        return Solution(None, {})
    top = max(stage1.values())
    tied = sorted(a for a, v in stage1.items() if v == top)
    second = sorted(stage1.values(), reverse=True)[1] if len(stage1) > 1 else 0
    candidates: dict[str, Any] = {"issue_closed": stage1}
    if len(tied) == 1:
        return Solution(tied[0], candidates, float(top - second))
    of_product = data.positions_with("closed_cases", "_product", params["product_id"])
    prod = Counter(data.closed_cases["OwnerId"].iloc[of_product].tolist())
    stage2 = {a: prod[a] for a in tied}
    candidates["product_closed"] = stage2
    top2 = max(stage2.values())
    tied2 = sorted(a for a, v in stage2.items() if v == top2)
    if len(tied2) == 1:
        rest = sorted(stage2.values(), reverse=True)
        return Solution(tied2[0], candidates, float(rest[0] - rest[1]))
    if "routing:open" not in data.cache:
        data.cache["routing:open"] = Counter(data.open_cases["OwnerId"].tolist())
    stage3 = {a: data.cache["routing:open"][a] for a in tied2}
    candidates["not_closed"] = stage3
    low = min(stage3.values())
    tied3 = sorted(a for a, v in stage3.items() if v == low)
    if len(tied3) > 1:
        return Solution(tied3[0], candidates, 0.0, tie=True, tied=tied3)
    rest = sorted(stage3.values())
    return Solution(tied3[0], candidates, float(rest[1] - rest[0]))


def _closed_per_owner(data: OrgData, issue_id: str) -> dict[str, int]:
    """Each owner's Closed cases of the issue, in `value_counts` order (counted once per issue: the drafts
    cycle through a dozen issues)."""
    key = f"routing:{issue_id}"
    if key not in data.cache:
        of_issue = data.positions_with("closed_cases", "IssueId__c", issue_id)
        counts = data.closed_cases["OwnerId"].iloc[of_issue].value_counts()
        data.cache[key] = {str(k): int(v) for k, v in counts.items()}
    return dict(data.cache[key])


def sampler_case_routing(data: OrgData, drafts: list[dict[str, Any]]) -> Any:
    """`drafts` are new cases (issue, product, subject, description) written beforehand by the writer."""
    queue = list(drafts)

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not queue:
            return None
        d = queue.pop(0)
        params = {"issue_id": d["issue_id"], "product_id": d["product_id"]}
        sol = solve_case_routing(data, params)
        if sol.answer is None:
            return None
        intro = rng.choice(
            [
                "A new case just came in. Following the routing policy, which agent should it be assigned to?",
                "Please route this incoming case to the best agent according to our routing policy.",
                "Who should handle the new case below? Use the case routing policy.",
                "Assign the following new case to the most suitable agent under the routing policy.",
            ]
        )
        query = intro
        tail = (
            " Return only the Id of the agent (a User Id).\n\n## Given Case\n"
            f"Subject: {d['subject']}\nDescription: {d['description']}"
        )
        ctx = {"case_subject": d["subject"], "case_description": d["description"]}
        return Instance("case_routing", query, sol.answer, ROUTING_POLICY, params, sol, ctx, tail=tail)

    return sample


async def draft_new_cases(
    data: OrgData, rng: random.Random, n: int, writer: TextWriter
) -> list[dict[str, Any]]:
    """New cases (not in the org) for routing: issues cycle evenly; the product is one that had that issue."""
    issues = sorted(data.issues["Id"])
    closed_products = data.closed_cases["_product"]
    names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    world_products = pd.read_csv(data.root / "latent" / "world" / "products.csv")
    noun_of = dict(zip(data.products["Id"], world_products["noun"], strict=True))
    cat_of = dict(zip(data.products["Id"], world_products["category"], strict=True))
    # What the new case's customer paid: the product's list price (never "$0.00").
    price_of = dict(zip(data.products["Id"], world_products["base_price"], strict=True))
    issue_names = dict(zip(data.issues["Id"], data.issues["Name"], strict=True))
    firsts = sorted(set(data.contacts["FirstName"]))
    requests, drafts = [], []
    order = list(issues)
    rng.shuffle(order)
    pools: dict[str, list[str]] = {}  # issue -> the products of its closed cases, sorted (issues recur)
    for k in range(n):
        issue = order[k % len(order)]
        if issue not in pools:
            of_issue = data.positions_with("closed_cases", "IssueId__c", issue)
            pools[issue] = sorted(set(closed_products.iloc[of_issue]))
        pool = pools[issue]
        product = rng.choice(pool) if pool else rng.choice(sorted(names))
        key = f"ncr-{k}"
        when = data.span_end.date() + timedelta(days=rng.randint(1, 60))
        facts = {
            "product": names[product],
            "noun": noun_of[product],
            "category": cat_of[product],
            "issue": data.issue_key(issue),
            "issue_name": issue_names[issue],
            "customer_first": rng.choice(firsts),
            "order_date": (when - timedelta(days=rng.randint(2, 20))).isoformat(),
            "tone": rng.choice(["polite", "frustrated", "brief", "detailed", "anxious"]),
            "want": "",
            "price": float(price_of[product]),
            "days_since": rng.randint(2, 20),
        }
        requests.append(TextRequest(TextKind.CASE, key, facts))
        drafts.append({"issue_id": issue, "product_id": product})
    texts = await writer.write(TextKind.CASE, requests)
    for d, t in zip(drafts, texts, strict=True):
        d["subject"], d["description"] = t["subject"], t["description"]
    return drafts
