"""Policy Violation Identification (PVI).

Reference solver (crmarena.md §7.5), with orgseed's stated choices:
- PVI: the case's agent offers are read from its chat (agent lines) and its outgoing emails; an offer breaks the
  issue's policy when the remedy is not allowed for the issue or is offered more calendar days after the order
  than the remedy's window; the answer is the Id of the knowledge article with that issue's policy, else None.
"""

from __future__ import annotations

import random
from array import array
from dataclasses import dataclass
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
    item = cases.at[params["case_id"], "OrderItemId__c"]
    ordered = data.by_id("orders").at[data.by_id("case_items").at[item, "OrderId"], "EffectiveDate"].date()
    broken: dict[str, Any] = {}
    for key, when in _offers(data).of(data, params["case_id"]):
        days = (when - ordered).days
        if key not in policy or days > policy[key]:
            broken[key] = {"days": days, "window": policy.get(key)}
    if not broken:
        return Solution(None, {})
    return Solution(data.policy_article(issue_key), broken)


def remedy_phrases(data: OrgData) -> list[tuple[str, str]]:
    """(phrase in lower case, remedy) for every remedy of the policies, the longest phrase first: the order
    offers are read in."""
    phrases = sorted(
        ((v["phrase"], k) for k, v in data.policies["remedies"].items()), key=lambda x: -len(x[0])
    )
    return [(phrase.lower(), key) for phrase, key in phrases]


def remedies_in_turn(text: str, phrases: list[tuple[str, str]]) -> list[str]:
    """The remedies an agent's turn offers by the reference solver's reading (not schemas/textrules.py's
    `offered`, the writers' and validators' stricter one), in `phrases`' order (`remedy_phrases`): each phrase
    found in the lower-cased text counts once and is blanked out, so a shorter phrase inside a longer one
    found first is not counted again."""
    lowered = text.lower()
    found = []
    for phrase, key in phrases:
        if phrase in lowered:
            lowered = lowered.replace(phrase, " ")
            found.append(key)
    return found


@dataclass(frozen=True)
class Offers:
    """Every remedy offered in an agent's turn (a line of theirs in a chat, an outgoing email), found once
    for the whole org as its chats and emails are read a block at a time: the turns that offer nothing, and
    the texts, are never held (at scale 1,000 the chats' bodies and the agents' emails were ~1 GB of the task
    builders' memory). One entry per offer, by the case's position in `cases` (stably: a case's offers in
    the order of its turns, chats before emails, each in record order, as the solver reads them)."""

    cases: np.ndarray  # sorted positions in data.by_id("cases")
    days: np.ndarray  # datetime64[D]: the day of the turn's chat start or email
    remedies: np.ndarray  # numbers of `keys`
    keys: tuple[str, ...]
    unknown_owner: dict[int, str]  # case position -> the first OwnerId of its chats that is not a user

    def of(self, data: OrgData, case_id: str) -> list[tuple[str, date]]:
        """The (remedy, day) of case `case_id`'s offers, in the order of its turns."""
        at = int(data.by_id("cases").index.get_loc(case_id))
        if at in self.unknown_owner:
            raise KeyError(self.unknown_owner[at])  # a chat whose agent is no user: its turns cannot be told
        lo, hi = np.searchsorted(self.cases, [at, at + 1])
        days = self.days[lo:hi].tolist()
        return [(self.keys[r], d) for r, d in zip(self.remedies[lo:hi].tolist(), days, strict=True)]


def _offers(data: OrgData) -> Offers:
    if "pvi:offers" not in data.cache:
        data.cache["pvi:offers"] = read_offers(data)
    offers: Offers = data.cache["pvi:offers"]
    return offers


def read_offers(data: OrgData) -> Offers:
    """The org's `Offers`: the agents' lines of every chat (those that begin with the owner's name and
    "(Agent): "), then every outgoing email's text, read a block at a time."""
    phrases = remedy_phrases(data)
    keys = tuple(sorted({k for _, k in phrases}))
    number = {k: i for i, k in enumerate(keys)}
    cases = data.by_id("cases").index
    users = data.by_id("users")
    who = {
        owner: f"{first} {last} (Agent): "
        for owner, first, last in zip(users.index, users["FirstName"], users["LastName"], strict=True)
    }
    # a text none of whose phrases it holds anywhere has no turn that offers one: passed over unsplit (exact for
    # ASCII phrases, whose matches lower-casing a part of the text cannot change)
    wanted = [phrase for phrase, _ in phrases]  # in lower case (`remedy_phrases`)
    screen = all(phrase.isascii() for phrase in wanted)
    # one entry per offer found, held as machine integers (a day as its number, NaT included)
    found_cases, found_days, found_keys = array("q"), array("q"), array("h")
    unknown: dict[int, str] = {}

    def turns(part: pd.DataFrame, case: str, texts: Any, stamp: str, lines: bool) -> None:
        at = cases.get_indexer(part[case])
        days = part[stamp].to_numpy().astype("datetime64[D]").view(np.int64).tolist()
        owners = part["OwnerId"].tolist() if lines else [None] * len(part)
        for k, (pos, text, owner) in enumerate(zip(at.tolist(), texts, owners, strict=True)):
            if pos < 0:
                continue  # no case of the org: no question names it
            prefix = who.get(owner) if lines else None
            if lines and prefix is None:
                unknown.setdefault(pos, owner)
                continue
            if screen:
                whole = str(text).lower()
                if not any(phrase in whole for phrase in wanted):
                    continue
            if prefix is not None:
                said = [line[len(prefix) :] for line in str(text).splitlines() if line.startswith(prefix)]
            else:
                said = [str(text)]
            for turn in said:
                for key in remedies_in_turn(turn, phrases):
                    found_cases.append(pos)
                    found_days.append(days[k])
                    found_keys.append(number[key])

    def nothing(part: pd.DataFrame) -> np.ndarray:
        return np.zeros(len(part), dtype=bool)

    if data.bundle.has_data("LiveChatTranscript"):
        data.read_typed(
            "LiveChatTranscript",
            ("CaseId", "OwnerId", "Body", "StartTime"),
            keep=nothing,
            each=lambda part: turns(part, "CaseId", part["Body"].tolist(), "StartTime", True),
            share=False,
        )
    if data.bundle.has_data("EmailMessage"):

        def outgoing(part: pd.DataFrame) -> None:
            mine = part[~part["Incoming"].astype(bool)]
            turns(mine, "ParentId", mine["TextBody"].tolist(), "MessageDate", False)

        data.read_typed(
            "EmailMessage",
            ("ParentId", "TextBody", "Incoming", "MessageDate"),
            keep=nothing,
            each=outgoing,
            share=False,
        )
    at = np.frombuffer(found_cases, dtype=np.int64)
    order = np.argsort(at, kind="stable")
    return Offers(
        cases=at[order],
        days=np.frombuffer(found_days, dtype=np.int64).view("datetime64[D]")[order],
        remedies=np.frombuffer(found_keys, dtype=np.int16)[order],
        keys=keys,
        unknown_owner=unknown,
    )


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
