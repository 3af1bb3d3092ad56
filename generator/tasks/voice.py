"""Task queries in CRMArena's voice (profile `[tasks] style = "crmarena"`, the default).

CRMArena's released task set (SalesforceAIResearch/CRMArena, first commit, `crm_sandbox/data/tasks_natural.json`)
phrases a query as a question plus the answer format ("Return only the Id of the agent."), never hints at the
answer ("(e.g. January)" was the answer in 11 of our monthly-trend instances), and puts in `metadata.required`
only what the agent cannot know otherwise: today's date, the contact or case Id. It states a policy only for
case routing, handle time and transfer count; there orgseed's policy text stays, with its tie-breaking
decisions, since those are the rules the answers follow.

The builders sample and solve instances exactly as in the explicit style; `apply_voice` then rewrites each
instance's wording from a random stream of its own (seed, "voice", task), so the explicit style's task files
stay byte-identical and the answers are the same either way. Named-entity disambiguation is phrased by its
sampler (the customer's description decides which instances are unambiguous).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import product
from typing import Any

from generator.rng import derive_seed
from generator.tasks.common import Instance

STYLES = ("crmarena", "explicit")


def today_required(today: str) -> str:
    """CRMArena's `metadata.required` for a dated task: `- Today's date: YYYY-MM-DD`."""
    return f"- Today's date: {today[:10]}"


# Policy violation: CRMArena has 67 distinct queries over 130 instances; a question, then what to name.
PVI_QUESTIONS = (
    "Did the agent breach the policy in this situation?",
    "Did the agent on this case go against any of our policies?",
    "Was any company policy violated in how this case was handled?",
    "Looking at this case's chats and emails, did the agent break a policy?",
    "Did the agent offer the customer something our policies don't allow here?",
    "Has the agent handling this case stayed within our policies?",
    "Is there a policy breach in the agent's handling of this case?",
    "Did the support agent overstep any policy when resolving this case?",
    "Review the agent's replies on this case: was a policy broken?",
    "Was the resolution the agent offered on this case allowed by our policies?",
    "Check this case for a policy violation by the agent.",
    "Did the agent's offer on this case break the rules we publish?",
)
PVI_FOLLOWUPS = (
    "If yes, which knowledge article was breached?",
    "If so, which knowledge article was violated?",
    "If they did, which knowledge article covers the rule they broke?",
    "If there was a breach, which article's policy was it?",
    "If one was broken, point me to the knowledge article.",
    "Which knowledge article was not followed, if any?",
)
PVI_TAIL = " Return only the Id of the knowledge article."

ROUTING_INTROS = (
    "Use the case routing policy to determine the most suitable agent for the given case.",
    "Following the case routing policy, which agent should take the new case below?",
    "A new case just came in. Who should it be assigned to under the routing policy?",
    "Route the given case to the best agent according to the case routing policy.",
    "Which agent is the best fit for this incoming case, per our routing policy?",
    "Apply the routing policy to pick the agent for the case below.",
)

TAILS = {
    "monthly_trend_analysis": " The associated product Id is {product_id}. Return only the month name.",
    "top_issue_identification": (
        " The associated product Id is {product_id}. Return only the issue Id of the most reported issue for "
        "this product."
    ),
    "best_region_identification": " Return only the two-letter abbreviation of the state.",
    "handle_time": " Return only the Id of the agent.",
    "transfer_count": " Return only the Id of the agent.",
    "case_routing": " Return only the Id of the agent.",
}

KNOWLEDGE_REQUIRED = (
    "- Use the information retrieved from the knowledge articles to answer the question in a concise manner"
)


def _pvi(inst: Instance, rng: random.Random, k: int, combos: list[tuple[str, str]]) -> None:
    q, f = combos[k % len(combos)]
    inst.query = f"{q} {f}"
    inst.tail = PVI_TAIL
    inst.required = f"- Case Id to be considered is: {inst.params['case_id']}"


def _dated(inst: Instance) -> None:
    inst.tail = TAILS[inst.task].format(**inst.params)
    inst.required = today_required(str(inst.params["today_date"]))


def _agent_policy(inst: Instance) -> None:
    """Handle time and transfer count: CRMArena states their policies; orgseed's stays (today's date included)."""
    inst.tail = TAILS[inst.task]


def _routing(inst: Instance, rng: random.Random) -> None:
    ctx = inst.context
    inst.query = rng.choice(ROUTING_INTROS)
    inst.tail = (
        f"{TAILS['case_routing']}\n## Given Case\n- Case Subject: {ctx['case_subject']}\n"
        f"- Case Description: {ctx['case_description']}"
    )


def _knowledge(inst: Instance) -> None:
    inst.required = KNOWLEDGE_REQUIRED


def apply_voice(instances: list[Instance], seed: int) -> None:
    """Rewrite every instance's query, answer-format tail and `metadata.required` in CRMArena's voice."""
    combos = list(product(PVI_QUESTIONS, PVI_FOLLOWUPS))
    random.Random(derive_seed(seed, "voice", "policy_violation_identification", "combos")).shuffle(combos)
    counters: dict[str, int] = {}
    handlers: dict[str, Callable[[Instance, random.Random, int], Any]] = {
        "policy_violation_identification": lambda i, r, k: _pvi(i, r, k, combos),
        "monthly_trend_analysis": lambda i, r, k: _dated(i),
        "top_issue_identification": lambda i, r, k: _dated(i),
        "best_region_identification": lambda i, r, k: _dated(i),
        "handle_time": lambda i, r, k: _agent_policy(i),
        "transfer_count": lambda i, r, k: _agent_policy(i),
        "case_routing": lambda i, r, k: _routing(i, r),
        "knowledge_qa": lambda i, r, k: _knowledge(i),
    }
    for inst in instances:
        k = counters.get(inst.task, 0)
        counters[inst.task] = k + 1
        handler = handlers.get(inst.task)
        if handler is not None:
            handler(inst, random.Random(derive_seed(seed, "voice", inst.task, k)), k)
