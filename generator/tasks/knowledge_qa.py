"""Knowledge QA (KQA).

Reference solver (crmarena.md §7.6), with orgseed's stated choices:
- KQA: a question planted in one article; the answer is the planted fact, which the article states.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from generator.tasks.common import Instance, OrgData, Solution

KQA_REQUIRED = """## Knowledge Answering
- Answer from the company's knowledge articles only, as briefly as possible (a few words)."""

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
