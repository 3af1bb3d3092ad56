"""New Case Routing (NCR), Named Entity Disambiguation (NED), Policy Violation Identification (PVI) and
Knowledge QA (KQA).

Reference solvers (crmarena.md §7.1, 7.4–7.6), with orgseed's stated choices:
- NCR: agents' Closed cases with the new case's issue → the most; ties → among the tied, the most Closed cases
  about the new case's product (any issue); ties → the fewest cases whose Status is not Closed (orgseed's reading
  of the policy's "not Closed"; CRMArena's code literally counted Status = 'Open'). Agents without matching
  cases count 0 at each step. A tie after step 3 is never emitted.
- NED: purchase date = today − the period; the product must match the search term (every word of the term, as a
  whole word, in the product's Name, Description, ProductCode or Family — SOSL's ALL FIELDS over Product2 text);
  the answer is the product of the contact's Activated orders placed exactly on that date; none → None.
- PVI: the case's agent offers are read from its chat (agent lines) and its outgoing emails; an offer breaks the
  issue's policy when the remedy is not allowed for the issue or is offered more calendar days after the order
  than the remedy's window; the answer is the Id of the knowledge article with that issue's policy, else None.
- KQA: a question planted in one article; the answer is the planted fact, which the article states.
"""

from __future__ import annotations

import json
import random
import re
from datetime import date, datetime, timedelta
from typing import Any

import pandas as pd
from dateutil.relativedelta import relativedelta

from generator.tasks.common import Instance, OrgData, Solution, iso, today_line
from generator.text.base import TextKind, TextRequest, TextWriter

TOKEN = re.compile(r"[A-Za-z0-9]+")

ROUTING_POLICY = """## Case Routing Policy
1. Issue expertise: route the case to the agent with the most Closed cases about the same issue.
2. If several agents are tied, pick among them the agent with the most Closed cases about the same product
   (any issue).
3. If still tied, pick among them the agent with the fewest cases whose Status is not Closed."""

NED_POLICY = """## Order Lookup Policy
- "N days/weeks/months ago" counts back from today's date by calendar days, weeks (7 days) or months; a
  fortnight is 2 weeks.
- Only the contact's Activated orders placed exactly on that date count.
- If no product of such an order matches what the customer describes, answer None."""

PVI_POLICY = """## Policy Violation Check
- Read the agent's messages in the case's chat transcripts and emails.
- An agent violates a policy when they offer a resolution that the policy for the case's issue does not allow,
  or offer an allowed one more calendar days after the purchase date than the policy's window allows.
- The knowledge articles state each issue's policy."""

KQA_REQUIRED = """## Knowledge Answering
- Answer from the company's knowledge articles only, as briefly as possible (a few words)."""


def _tokens(text: object) -> set[str]:
    return {t.lower() for t in TOKEN.findall(str(text or ""))}


# -- NCR ------------------------------------------------------------------------------------------------


def solve_case_routing(data: OrgData, params: dict[str, Any]) -> Solution:
    c = data.cases
    closed = c[c["Status"] == "Closed"]
    by_issue = closed[closed["IssueId__c"] == params["issue_id"]]["OwnerId"].value_counts()
    if by_issue.empty:
        return Solution(None, {})
    stage1 = {str(k): int(v) for k, v in by_issue.items()}
    top = max(stage1.values())
    tied = sorted(a for a, v in stage1.items() if v == top)
    second = sorted(stage1.values(), reverse=True)[1] if len(stage1) > 1 else 0
    candidates: dict[str, Any] = {"issue_closed": stage1}
    if len(tied) == 1:
        return Solution(tied[0], candidates, float(top - second))
    prod = closed[(closed["_product"] == params["product_id"]) & closed["OwnerId"].isin(tied)][
        "OwnerId"
    ].value_counts()
    stage2 = {a: int(prod.get(a, 0)) for a in tied}
    candidates["product_closed"] = stage2
    top2 = max(stage2.values())
    tied2 = sorted(a for a, v in stage2.items() if v == top2)
    if len(tied2) == 1:
        rest = sorted(stage2.values(), reverse=True)
        return Solution(tied2[0], candidates, float(rest[0] - rest[1]))
    open_counts = c[(c["Status"] != "Closed") & c["OwnerId"].isin(tied2)]["OwnerId"].value_counts()
    stage3 = {a: int(open_counts.get(a, 0)) for a in tied2}
    candidates["not_closed"] = stage3
    low = min(stage3.values())
    tied3 = sorted(a for a, v in stage3.items() if v == low)
    if len(tied3) > 1:
        return Solution(tied3[0], candidates, 0.0, tie=True, tied=tied3)
    rest = sorted(stage3.values())
    return Solution(tied3[0], candidates, float(rest[1] - rest[0]))


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
    closed = data.cases[data.cases["Status"] == "Closed"]
    names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    world_products = pd.read_csv(data.root / "latent" / "world" / "products.csv")
    noun_of = dict(zip(data.products["Id"], world_products["noun"], strict=True))
    cat_of = dict(zip(data.products["Id"], world_products["category"], strict=True))
    issue_names = dict(zip(data.issues["Id"], data.issues["Name"], strict=True))
    firsts = sorted(set(data.contacts["FirstName"]))
    requests, drafts = [], []
    order = list(issues)
    rng.shuffle(order)
    for k in range(n):
        issue = order[k % len(order)]
        pool = sorted(set(closed.loc[closed["IssueId__c"] == issue, "_product"]))
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
            "price": 0,
            "days_since": rng.randint(2, 20),
        }
        requests.append(TextRequest(TextKind.CASE, key, facts))
        drafts.append({"issue_id": issue, "product_id": product})
    texts = await writer.write(TextKind.CASE, requests)
    for d, t in zip(drafts, texts, strict=True):
        d["subject"], d["description"] = t["subject"], t["description"]
    return drafts


# -- NED ------------------------------------------------------------------------------------------------


def _ned_index(data: OrgData) -> dict[str, Any]:
    if "ned" in data.cache:
        return data.cache["ned"]
    p = data.products
    text_tokens = {
        pid: _tokens(f"{n} {d} {c} {f}")
        for pid, n, d, c, f in zip(
            p["Id"], p["Name"], p["Description"], p["ProductCode"], p["Family"], strict=True
        )
    }
    name_tokens = {pid: _tokens(n) for pid, n in zip(p["Id"], p["Name"], strict=True)}
    orders = data.orders[data.orders["Status"] == "Activated"].set_index("Id")
    items = data.items[data.items["OrderId"].isin(orders.index)]
    bought = pd.DataFrame(
        {
            "account": items["OrderId"].map(orders["AccountId"]).to_numpy(),
            "date": items["OrderId"].map(orders["EffectiveDate"]).dt.date.to_numpy(),
            "product": items["Product2Id"].to_numpy(),
        }
    )
    by_account = {k: v for k, v in bought.groupby("account")}
    every = data.orders.set_index("Id")
    ever = pd.DataFrame(
        {
            "account": data.items["OrderId"].map(every["AccountId"]).to_numpy(),
            "product": data.items["Product2Id"].to_numpy(),
        }
    )
    ever_by_account = {k: sorted(set(v["product"])) for k, v in ever.groupby("account")}
    contact_account = dict(zip(data.contacts["Id"], data.contacts["AccountId"], strict=True))
    data.cache["ned"] = {
        "text": text_tokens,
        "name": name_tokens,
        "bought": bought,
        "by_account": by_account,
        "ever_by_account": ever_by_account,
        "contact_account": contact_account,
    }
    return data.cache["ned"]


def _back(today: date, period: str, count: int) -> date:
    delta = {
        "day": relativedelta(days=count),
        "week": relativedelta(weeks=count),
        "month": relativedelta(months=count),
    }
    return today - delta[period]


def solve_named_entity(data: OrgData, params: dict[str, Any]) -> Solution:
    ix = _ned_index(data)
    today = datetime.strptime(params["today_date"], "%Y-%m-%dT%H:%M:%SZ").date()
    day = _back(today, params["period"], int(params["interval_count"]))
    term = _tokens(params["ambiguous_product_name"])
    matches = {pid for pid, toks in ix["text"].items() if term and term <= toks}
    account = ix["contact_account"].get(params["contact_id"])
    rows = ix["by_account"].get(account)
    if rows is None:
        return Solution(None, [])
    hit = sorted(set(rows.loc[(rows["date"] == day) & rows["product"].isin(matches), "product"]))
    if not hit:
        return Solution(None, [])
    return Solution(hit[0], hit, None, tie=len(hit) > 1, tied=hit if len(hit) > 1 else [])


def _period_phrase(rng: random.Random, period: str, count: int) -> str:
    words = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight"}
    if period == "week" and count == 2 and rng.random() < 0.5:
        return "a fortnight ago"
    if count == 1:
        return rng.choice([f"a {period} ago", f"one {period} ago"]) if period != "day" else "yesterday"
    number = words.get(count, str(count)) if rng.random() < 0.5 else str(count)
    return rng.choice([f"{number} {period}s ago", f"{number} {period}s back"])


async def ned_drafts(data: OrgData, rng: random.Random, n: int, writer: TextWriter) -> list[dict[str, Any]]:
    """Mentions (paraphrased product names with a search term) for purchases and for false presuppositions."""
    ix = _ned_index(data)
    bought = ix["bought"]
    world_products = pd.read_csv(data.root / "latent" / "world" / "products.csv")
    noun_of = dict(zip(data.products["Id"], world_products["noun"], strict=True))
    cat_of = dict(zip(data.products["Id"], world_products["category"], strict=True))
    names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    account_contact = {a: c for c, a in ix["contact_account"].items()}
    all_products = sorted(names)
    drafts, requests = [], []
    for k in range(n):
        real = k % 10 < 7
        row = bought.iloc[rng.randrange(len(bought))]
        account = row["account"]
        mine = set(ix["ever_by_account"][account])  # everything the contact ever ordered, any status
        if real:
            product = row["product"]
            day = row["date"]
        else:
            others = [p for p in all_products if p not in mine]
            product = rng.choice(others)
            day = row["date"] + timedelta(days=rng.choice([-3, -1, 1, 2, 5]))
        period = rng.choice(["day", "day", "week", "month"])
        count = {"day": rng.randint(1, 30), "week": rng.randint(1, 8), "month": rng.randint(1, 6)}[period]
        if period == "month":
            today = day + relativedelta(months=count)
        elif period == "week":
            today = day + timedelta(weeks=count)
        else:
            today = day + timedelta(days=count)
        others_names = sorted(names[p] for p in mine if p != product)
        facts = {
            "name": names[product],
            "noun": noun_of[product],
            "category": cat_of[product],
            "others": others_names,
        }
        requests.append(TextRequest(TextKind.PRODUCT_MENTION, f"ned-{k}", facts))
        drafts.append(
            {
                "contact_id": account_contact[account],
                "product_id": product,
                "today": today,
                "period": period,
                "count": count,
                "mine": sorted(mine),
                "real": real,
            }
        )
    mentions = await writer.write(TextKind.PRODUCT_MENTION, requests)
    for d, m in zip(drafts, mentions, strict=True):
        d["mention"], d["term"] = m["mention"], m["search_term"]
    return drafts


def _unique_term(ix: dict[str, Any], product: str, mine: list[str], terms: list[str]) -> str | None:
    """The first term that matches the product by name and none of the contact's other purchases at all."""
    for term in terms:
        toks = _tokens(term)
        if not toks or not toks <= ix["name"][product]:
            continue
        if any(toks <= ix["text"][p] for p in mine if p != product):
            continue
        return term
    return None


def sampler_named_entity(data: OrgData, drafts: list[dict[str, Any]]) -> Any:
    ix = _ned_index(data)
    names = dict(zip(data.products["Id"], data.products["Name"], strict=True))
    queue = list(drafts)

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not queue:
            return None
        pos = next((i for i, d in enumerate(queue) if (not d["real"]) == want_none), None)
        if pos is None:
            return None
        d = queue.pop(pos)
        name = names[d["product_id"]]
        noun_words = name.split()[1:]
        term = _unique_term(ix, d["product_id"], d["mine"], [d["term"], " ".join(noun_words), name])
        if term is None:
            return None
        mention = d["mention"] if term == d["term"] else f"{name.lower()}"
        params = {
            "contact_id": d["contact_id"],
            "today_date": iso(d["today"]),
            "period": d["period"],
            "interval_count": d["count"],
            "ambiguous_product_name": term,
        }
        sol = solve_named_entity(data, params)
        when = _period_phrase(rng, d["period"], d["count"])
        today_words = f"{d['today'].strftime('%B')} {d['today'].day}, {d['today'].year}"
        templates = [
            f"Today is {today_words}. Show me the {mention} I ordered {when}.",
            f"Hi, it's {today_words}. Can you find the {mention} I bought {when}?",
            f"I ordered the {mention} {when} (today is {today_words}). Which product was it?",
            f"Could you pull up the {mention} from my order {when}? Today's {today_words}.",
        ]
        suffix = "Return only the Id of the product from the contact's past order, or None if there is no such order."
        query = rng.choice(templates)
        required = f"{NED_POLICY}\n- Contact Id interacting: {d['contact_id']}\n{today_line(d['today'])}"
        return Instance(
            "named_entity_disambiguation",
            query,
            sol.answer,
            required,
            params,
            sol,
            {"mention": mention},
            tail=f" {suffix}",
        )

    return sample


# -- PVI ------------------------------------------------------------------------------------------------


def solve_policy_violation(data: OrgData, params: dict[str, Any]) -> Solution:
    case = data.cases.set_index("Id").loc[params["case_id"]]
    issue_key = data.issue_key(case["IssueId__c"])
    policy = data.policies["issues"][issue_key]["remedies"]
    phrases = sorted(
        ((v["phrase"], k) for k, v in data.policies["remedies"].items()), key=lambda x: -len(x[0])
    )
    items = data.items.set_index("Id")
    orders = data.orders.set_index("Id")
    ordered = orders.loc[items.loc[case["OrderItemId__c"], "OrderId"], "EffectiveDate"].date()
    users = data.users.set_index("Id")
    turns: list[tuple[str, date]] = []
    for chat in data.chats[data.chats["CaseId"] == params["case_id"]].itertuples():
        who = f"{users.loc[chat.OwnerId, 'FirstName']} {users.loc[chat.OwnerId, 'LastName']} (Agent): "
        turns += [
            (line[len(who) :], chat.StartTime.date())
            for line in str(chat.Body).splitlines()
            if line.startswith(who)
        ]
    mail = data.emails[
        (data.emails["ParentId"] == params["case_id"]) & (~data.emails["Incoming"].astype(bool))
    ]
    turns += [(str(t), m.date()) for t, m in zip(mail["TextBody"], mail["MessageDate"], strict=True)]
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


# -- KQA ------------------------------------------------------------------------------------------------

_REPHRASE = [
    "Quick question: {q}",
    "A customer asks: {q}",
    "According to our knowledge base, {ql}",
    "{q} Please check the articles.",
]


def knowledge_facts(data: OrgData) -> list[dict[str, str]]:
    issue_names = {
        data.issue_key(i): str(n).lower() for i, n in zip(data.issues["Id"], data.issues["Name"], strict=True)
    }
    out = []
    for article_id, row in data.latent_knowledge.iterrows():
        body = str(data.knowledge.set_index("Id").loc[article_id, "FAQ_Answer__c"])
        for fact in json.loads(row["_facts"]):
            q = fact["question"].replace("{issue}", issue_names.get(str(row["_subject"]), "these"))
            if fact["answer"].lower() in body.lower():
                out.append({"article_id": str(article_id), "question": q, "answer": fact["answer"]})
    return out


def solve_knowledge_qa(data: OrgData, params: dict[str, Any]) -> Solution:
    """The planted fact of the article whose question is asked (`{issue}` stands for the issue's name)."""
    article_id, question = params["article_id"], params["question"]
    if article_id not in data.latent_knowledge.index:
        return Solution(None, {})
    for fact in json.loads(data.latent_knowledge.loc[article_id, "_facts"]):
        template = re.escape(fact["question"]).replace(re.escape("{issue}"), ".+")
        if re.fullmatch(template, question, flags=re.IGNORECASE):
            return Solution(fact["answer"], {article_id: fact["answer"]})
    return Solution(None, {})


def sampler_knowledge_qa(data: OrgData) -> Any:
    facts = knowledge_facts(data)
    used: dict[int, int] = {}

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not facts:
            return None
        fresh = [i for i in range(len(facts)) if i not in used]
        i = rng.choice(fresh) if fresh else rng.randrange(len(facts))
        f = facts[i]
        q = f["question"]
        if i in used:
            template = _REPHRASE[used[i] % len(_REPHRASE)]
            q = template.format(q=q, ql=q[:1].lower() + q[1:])
        used[i] = used.get(i, 0) + 1
        params = {"article_id": f["article_id"], "question": q}
        sol = Solution(f["answer"], {f["article_id"]: f["answer"]})
        return Instance("knowledge_qa", q, f["answer"], KQA_REQUIRED, params, sol)

    return sample
