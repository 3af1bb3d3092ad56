"""Knowledge QA (KQA).

Reference solver (crmarena.md §7.6), with orgseed's stated choices:
- KQA: a fact planted in one article, asked in other words than the article's (`asks`); the answer is the fact,
  which the article states word for word.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from typing import Any

from generator.tasks.common import Instance, OrgData, Solution

KQA_REQUIRED = """## Knowledge Answering
- Answer from the company's knowledge articles only, as briefly as possible (a few words)."""


def knowledge_facts(data: OrgData) -> list[dict[str, Any]]:
    """Every planted fact its article states, with the questions that ask it in other words (`asks`, written
    by `generator/text/articles.py`; a fact without them is asked by its canonical question)."""
    issue_names = {
        data.issue_key(i): str(n).lower() for i, n in zip(data.issues["Id"], data.issues["Name"], strict=True)
    }
    bodies = data.knowledge.set_index("Id")["FAQ_Answer__c"]
    out = []
    for article_id, row in data.latent_knowledge.iterrows():
        body = str(bodies.loc[article_id])
        for fact in json.loads(row["_facts"]):
            canonical = fact["question"].replace("{issue}", issue_names.get(str(row["_subject"]), "these"))
            asks = [str(q) for q in fact.get("asks") or []] or [canonical]
            if fact["answer"].lower() in body.lower():
                out.append({"article_id": str(article_id), "asks": asks, "answer": fact["answer"]})
    return out


def _matches(fact: dict[str, Any], question: str) -> bool:
    if question.strip() in {str(q).strip() for q in fact.get("asks") or []}:
        return True
    template = re.escape(fact["question"]).replace(re.escape("{issue}"), ".+")
    return re.fullmatch(template, question, flags=re.IGNORECASE) is not None


def solve_knowledge_qa(data: OrgData, params: dict[str, Any]) -> Solution:
    """The planted fact of the article that the question asks (one of its `asks`, or its canonical question
    with `{issue}` standing for the issue's name)."""
    article_id, question = params["article_id"], params["question"]
    if article_id not in data.latent_knowledge.index:
        return Solution(None, {})
    for fact in json.loads(data.latent_knowledge.loc[article_id, "_facts"]):
        if _matches(fact, question):
            return Solution(fact["answer"], {article_id: fact["answer"]})
    return Solution(None, {})


def _pairs(text: str) -> set[tuple[str, str]]:
    words = re.findall(r"[a-z0-9]+(?:'[a-z]+)?", text.lower())
    return set(itertools.pairwise(words))


def sampler_knowledge_qa(data: OrgData) -> Any:
    """Each instance asks a fact not asked yet while there are any, in the paraphrase that brings the most
    word pairs the questions so far have not used (so the set reads like many people asking, not one
    template); a question is never asked twice while another paraphrase is left."""
    facts = knowledge_facts(data)
    used: dict[int, int] = {}
    asked: set[str] = set()
    seen: set[tuple[str, str]] = set()

    def novelty(q: str) -> float:
        pairs = _pairs(q)
        return len(pairs - seen) / len(pairs) if pairs else 0.0

    def sample(rng: random.Random, want_none: bool) -> Instance | None:
        if not facts:
            return None
        fresh = [i for i in range(len(facts)) if i not in used]
        i = rng.choice(fresh) if fresh else rng.randrange(len(facts))
        f = facts[i]
        asks = [q for q in f["asks"] if q not in asked] or list(f["asks"])
        q = max(asks, key=novelty)  # the first of equals: asks are in a seeded order
        used[i] = used.get(i, 0) + 1
        asked.add(q)
        seen.update(_pairs(q))
        params = {"article_id": f["article_id"], "question": q}
        sol = Solution(f["answer"], {f["article_id"]: f["answer"]})
        return Instance("knowledge_qa", q, f["answer"], KQA_REQUIRED, params, sol)

    return sample
