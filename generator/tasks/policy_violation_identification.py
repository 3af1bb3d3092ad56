"""Policy Violation Identification (PVI).

Reference solver (crmarena.md §7.5), with orgseed's stated choices:
- PVI: the case's agent offers are read from its chat (agent lines) and its outgoing emails; an offer breaks the
  issue's policy when the remedy is not allowed for the issue or is offered more calendar days after the order
  than the remedy's window; the answer is the Id of the knowledge article with that issue's policy, else None.
"""

from __future__ import annotations

import random
from datetime import date
from typing import Any

import numpy as np
import pandas as pd

from generator.tasks.common import Instance, OrgData, Solution

PVI_POLICY = """## Policy Violation Check
- Read the agent's messages in the case's chat transcripts and emails.
- An agent violates a policy when they offer a resolution that the policy for the case's issue does not allow,
  or offer an allowed one more calendar days after the purchase date than the policy's window allows.
- The knowledge articles state each issue's policy."""


def solve_policy_violation(data: OrgData, params: dict[str, Any]) -> Solution:
    cases = data.by_id("cases")
    issue_key = data.issue_key(cases.at[params["case_id"], "IssueId__c"])
    policy = data.policies["issues"][issue_key]["remedies"]
    phrases = sorted(
        ((v["phrase"], k) for k, v in data.policies["remedies"].items()), key=lambda x: -len(x[0])
    )
    item = cases.at[params["case_id"], "OrderItemId__c"]
    ordered = data.by_id("orders").at[data.by_id("case_items").at[item, "OrderId"], "EffectiveDate"].date()
    users = data.by_id("users")
    turns: list[tuple[str, date]] = []
    chats = _columns(data, "chats", ("OwnerId", "Body"), "StartTime")
    at = data.positions_with("chats", "CaseId", params["case_id"])
    for owner, body, day in zip(*(col[at].tolist() for col in chats), strict=True):
        who = f"{users.at[owner, 'FirstName']} {users.at[owner, 'LastName']} (Agent): "
        turns += [(line[len(who) :], day) for line in str(body).splitlines() if line.startswith(who)]
    mail = _columns(data, "agent_emails", ("TextBody",), "MessageDate")  # outgoing only
    at = data.positions_with("agent_emails", "ParentId", params["case_id"])
    turns += [(str(t), day) for t, day in zip(*(col[at].tolist() for col in mail), strict=True)]
    broken: dict[str, Any] = {}
    for text, when in turns:
        lowered = text.lower()
        for phrase, key in phrases:
            if phrase.lower() in lowered:
                lowered = lowered.replace(phrase.lower(), " ")
                days = (when - ordered).days
                if key not in policy or days > policy[key]:
                    broken[key] = {"days": days, "window": policy.get(key)}
    if not broken:
        return Solution(None, {})
    return Solution(data.policy_article(issue_key), broken)


def _columns(data: OrgData, name: str, texts: tuple[str, ...], stamp: str) -> list[np.ndarray]:
    """Columns `texts` of frame `name` and the day of its `stamp` column (datetime64[D]: `tolist` gives
    `datetime.date`s, the dates of the timestamps), as arrays, made once: a case's rows are a few
    positions of each."""
    key = f"pvi:{name}"
    if key not in data.cache:
        frame: pd.DataFrame = getattr(data, name)
        days = frame[stamp].to_numpy().astype("datetime64[D]")
        data.cache[key] = [*(frame[c].to_numpy() for c in texts), days]
    return data.cache[key]


def sampler_policy_violation(data: OrgData) -> Any:
    lat = data.latent_cases
    violated = sorted(lat.index[lat["_violation"] == "true"])
    clean = sorted(lat.index[(lat["_violation"] == "false") & (lat["_offer_channel"] != "none")])

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        pool = clean if want_none else violated
        if not pool:
            return None
        case_id = rng.choice(pool)
        params = {"case_id": case_id}
        sol = solve_policy_violation(data, params)
        templates = [
            "Did the agent on this case break any company policy in their conversations with the customer?",
            "Review this case's chats and emails: was any policy violated by the agent?",
            "Check whether the agent handling this case offered something our policies do not allow.",
            "Has any of our policies been violated in how this case was handled?",
        ]
        suffix = "Return only the Id of the knowledge article whose policy was violated, or None if no policy was violated."
        query = rng.choice(templates)
        required = f"{PVI_POLICY}\n- Case Id to be considered is: {case_id}"
        return Instance(
            "policy_violation_identification", query, sol.answer, required, params, sol, tail=f" {suffix}"
        )

    return sample
