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

Monthly trend, top issue, best region, transfer count and handle time take their question from a bank of CRMArena-like
forms (yes/no and wh- questions, the window first or last), their window in one of its equivalent phrasings
("over the past 6 months", "in the last two quarters", "during the third quarter of 2021", "in the autumn of
2021") and the product by its name, with or without "the"; a query another instance of the task already has
is drawn again, so instances that differ read differently (CRMArena: 116-130 distinct queries per task).
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


def _dated(inst: Instance, rng: random.Random, used: set[str]) -> None:
    inst.tail = TAILS[inst.task].format(**inst.params)
    inst.required = today_required(str(inst.params["today_date"]))
    _reworded(inst, rng, used)


def _agent_policy(inst: Instance, rng: random.Random, used: set[str]) -> None:
    """Handle time and transfer count: CRMArena states their policies; orgseed's stays (today's date included).
    The question is reworded from the task's bank, different from the task's other queries (`used`)."""
    inst.tail = TAILS[inst.task]
    _reworded(inst, rng, used)


def _routing(inst: Instance, rng: random.Random) -> None:
    ctx = inst.context
    inst.query = rng.choice(ROUTING_INTROS)
    inst.tail = (
        f"{TAILS['case_routing']}\n## Given Case\n- Case Subject: {ctx['case_subject']}\n"
        f"- Case Description: {ctx['case_description']}"
    )


def _knowledge(inst: Instance) -> None:
    inst.required = KNOWLEDGE_REQUIRED


# -- Monthly trend, top issue, best region, transfer count, handle time: many phrasings (CRMArena's 116-130
# distinct) ---------------------------------------------------------------------------------------------------
# A question template takes {p} (the product, by name), {w} (the window, mid-sentence) or {W} (the window
# opening the sentence), for transfer count and handle time {most} and {elig}, for handle time {fast}. None of
# them hints at an answer.

MTA_QUESTIONS = (
    "Is there a month {w} when the {name} {cases} we received were {sig} higher than in other months?",
    "{W}, is there a particular month where we received {sig} more {cases} for {p} compared to other months?",
    "Are there any months {w} where the number of {cases} received for {p} is {sig} higher than in other months?",
    "{W}, is there a {sig_adj} spike in the number of {cases} for {p} in any particular month?",
    "Was there a month {w} when the number of {cases} we got about {p} was {sig} higher than the other months?",
    "Which month {w} saw {sig} more {name} {cases} than any other month?",
    "Did any single month {w} stand out with far more {cases} for {p} than the rest?",
    "Is there a specific month in which the number of {name} {cases} {sig} exceeds that of other months {w}?",
    "Looking at {cases} for {p} {w}, is there a month that clearly outnumbers every other month?",
    "When did {cases} about {p} peak {w}? I need the month with {sig} more than any other.",
    "{W}, was there a month where {cases} about {p} spiked well above the other months?",
    "For {p}, is there a month {w} with {sig} more {cases} than every other month?",
    "Has there been a month {w} where the count of {cases} for {p} was {sig} higher than in every other month?",
    "I'm looking into {p}: {w}, which month's volume of {cases} was {sig} above the others?",
    "Which month, {w}, had a count of {cases} for {p} that {sig} exceeded the other months?",
    "{W}, in which month did {p} get far more {cases} than in any other month?",
    "Was any month {w} {sig} busier than the others for {cases} about {p}?",
    "Can you find the month {w} in which {cases} for {p} were {sig} more numerous than in the other months?",
    "Our team wants to know if {p} had a standout month {w}. Which month drew {sig} more {cases} than the rest?",
    "Did {cases} about {p} cluster in one month {w}, {sig} above every other month?",
    "{W}, which month was the clear high point for {cases} about {p}?",
    "Is one month {w} responsible for {sig} more {p} {cases} than any of the others?",
    "We're reviewing demand on support for {p}. {W}, which month had {sig} more {cases} than the others?",
    "Which month {w} shows a {sig_adj} surge in {cases} for {p} compared with the other months?",
    "Our records for {p} {w}: did one month bring in {sig} more {cases} than all the others, and which?",
    "Thinking about seasonality, which month {w} generated {sig} more {cases} on {p} than its neighbours?",
    "Support volume check for {p}: {w}, in what month did {cases} run {sig} ahead of every other month?",
    "If I chart monthly {cases} for {p} {w}, which month towers above the rest?",
    "{W}, which calendar month drove {sig} more {cases} for {p} than any other?",
    "Was there a peak month for {cases} involving {p} {w}, one {sig} above all others?",
)
_SIG = ("significantly", "considerably", "noticeably", "markedly", "substantially")
_SIG_ADJ = ("significant", "considerable", "noticeable", "marked", "clear")
_CASES = ("cases", "support cases", "service cases", "customer cases", "support requests", "tickets")
TII_QUESTIONS = (
    "What is the most frequent problem with {p} {w}?",
    "What was the predominant issue with {p} {w}?",
    "{W}, which issue did customers report most often about {p}?",
    "What has been the most frequently reported problem with {p} {w}?",
    "Which problem came up most for {p} {w}?",
    "For {p}, what is the top reported issue {w}?",
    "What issue did customers raise most often about {p} {w}?",
    "{W}, what was the most common complaint about {p}?",
    "Which issue was reported the most for {p} {w}?",
    "I'd like to know the leading issue customers had with {p} {w}.",
    "What kind of problem was logged most often for {p} {w}?",
    "Across the cases about {p} {w}, which issue appears most often?",
    "What did customers most commonly report as wrong with {p} {w}?",
    "{W}, what was the number one issue behind cases about {p}?",
    "Which issue accounts for the most cases on {p} {w}?",
    "What was the most common reason customers opened a case about {p} {w}?",
)
BRI_QUESTIONS = (
    "Which state had the quickest case closures {w}?",
    "{W}, which state had the quickest case closures?",
    "Which state resolved cases most quickly {w}?",
    "Which state closed cases the fastest {w}?",
    "{W}, which state had the shortest case closure times?",
    "Where were cases resolved most quickly {w}, by customer state?",
    "Find the state with the shortest average case closure time {w}.",
    "{W}, customers in which state got their cases closed fastest on average?",
    "In which state did we close customer cases fastest on average {w}?",
    "Which region, by state, saw the fastest average time to close a case {w}?",
    "What state had the shortest average time from case creation to closure {w}?",
    "Which state's customers had their cases resolved the quickest {w}?",
    "Looking at closed cases {w}, which state had the lowest average closure time?",
    "{W}, where did cases get closed fastest, by the customer's state?",
    "Identify the state with the quickest average case resolution {w}.",
    "Which state led on closure speed {w}, going by the average time to close a case?",
)
TCU_QUESTIONS = (
    "Which agent transferred {most} cases {w}, {elig}?",
    "{W}, who had {most} case transfers {elig}?",
    "Identify the agent with {most} transfers {w} {elig}.",
    "Determine the agent with {most} transfers {w}, {elig}.",
    "Who moved {most} cases to other agents {w}, {elig}?",
    "{W}, which agent handed off {most} cases to colleagues, {elig}?",
    "Find the agent who passed {most} cases on to someone else {w}, {elig}.",
    "{Elig} {w}, which agent had {most} transfers?",
    "Which agent had {most} transfer counts {w} {elig}?",
    "Who transferred {most} cases away {w}, {elig}?",
    "{W}, {elig}, which agent reassigned {most} cases to another agent?",
    "I need the agent with {most} case transfers {w}, {elig}.",
)
HTU_QUESTIONS = (
    "Which agent had {most} average handle time {w}, {elig}?",
    "{W}, who was the {fast} agent at closing cases on average, {elig}?",
    "Find the agent with {most} average handle time {w} ({elig}).",
    "Looking at handle times {w}, which agent averaged {most} time to close a case, {elig}?",
    "I need the agent whose average case handling time was {most} {w}, {elig}.",
    "{Elig}, which agent had {most} average handle time {w}?",
    "Who was the {fast} to close cases on average {w}, {elig}?",
    "Identify the agent with {most} mean time from opening a case to closing it {w}, {elig}.",
    "Determine which agent had {most} average handling time {w}, {elig}.",
    "{W}, whose cases took {most} time to close on average, {elig}?",
    "Which support agent was the {fast} at resolving cases on average {w}, {elig}?",
    "Across the team {w}, who had {most} average handle time, {elig}?",
)
# handle time: the shortest time is the fastest agent ("min"), the longest the slowest ("max")
_HT_MOST = {"min": ("the shortest", "the lowest"), "max": ("the longest", "the highest")}
_HT_FAST = {"min": ("fastest", "quickest"), "max": ("slowest",)}
_MOST = {
    "max": ("the most", "the highest number of", "the largest number of"),
    "min": ("the fewest", "the lowest number of", "the smallest number of"),
}
_NUMBERS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
]
_ORDINALS = ("first", "second", "third", "fourth")
_LEADS = (
    "over the past",
    "in the past",
    "in the last",
    "over the last",
    "during the past",
    "within the past",
)


def _count(n: int, rng: random.Random) -> str:
    return _NUMBERS[n] if n < len(_NUMBERS) and rng.random() < 0.5 else str(n)


def _relative_phrases(unit: str, n: int, rng: random.Random) -> list[str]:
    """Ways to name the window ending today and starting n units earlier (`relative_window`'s arithmetic:
    a quarter is 3 months, a year 12 months, a week 7 days), each mid-sentence."""
    spans: list[tuple[str, int]] = [(unit, n)]
    if unit == "quarter":
        spans.append(("month", 3 * n))
    if unit == "month" and n % 12 == 0:
        spans.append(("year", n // 12))
    if unit == "month" and n % 3 == 0 and n < 12:
        spans.append(("quarter", n // 3))
    if unit == "week" and n == 2:
        spans.append(("fortnight", 1))
    out = []
    for u, k in spans:
        for lead in _LEADS:
            out.append(f"{lead} {u}" if k == 1 else f"{lead} {_count(k, rng)} {u}s")
    return out


def _named_phrases(name: str, year: int) -> list[str]:
    if name in ("Q1", "Q2", "Q3", "Q4"):
        ordinal = _ORDINALS[int(name[1]) - 1]
        return [
            f"in {name} {year}",
            f"in {name} of {year}",
            f"during {name} {year}",
            f"in the {ordinal} quarter of {year}",
            f"during the {ordinal} quarter of {year}",
        ]
    if name in ("Spring", "Summer", "Fall", "Autumn", "Winter"):
        words = [name.lower()] + (["autumn"] if name == "Fall" else [])
        out = [f"in {name} {year}", f"during {name} {year}"]
        for w in words:
            out += [f"in the {w} of {year}", f"during the {w} of {year}"]
        return out
    return [f"in {name} {year}", f"during {name} {year}", f"in {name} of {year}", f"for {name} {year}"]


def window_phrases(params: dict[str, Any], rng: random.Random) -> list[str]:
    """Every phrasing of an instance's window (named period or relative), mid-sentence."""
    if "period_name" in params:
        return _named_phrases(str(params["period_name"]), int(params["year"]))
    return _relative_phrases(str(params["period"]), int(params["interval_count"]), rng)


def _eligibility(n: int, rng: random.Random) -> str:
    if n == 0:
        return rng.choice(
            (
                "among agents who handled any cases",
                "among those who managed cases",
                "among agents handling at least one case",
                "counting every agent who handled a case",
            )
        )
    cases = f"{_count(n, rng)} case{'s' if n > 1 else ''}"
    return rng.choice(
        (
            f"among agents who handled more than {cases}",
            f"among those handling more than {cases}",
            f"considering only agents who handled more than {cases}",
            f"among agents who managed over {cases}",
        )
    )


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _phrase(template: str, inst: Instance, rng: random.Random) -> str:
    w = rng.choice(window_phrases(inst.params, rng))
    name = str(inst.context.get("product_name", ""))
    p = rng.choice((f"the {name}", name)) if name else ""
    fill: dict[str, str] = {"w": w, "W": _cap(w), "name": name, "p": p}
    fill.update(sig=rng.choice(_SIG), sig_adj=rng.choice(_SIG_ADJ), cases=rng.choice(_CASES))
    if inst.task == "transfer_count":
        elig = _eligibility(int(inst.params["n_cases"]), rng)
        fill.update(most=rng.choice(_MOST[str(inst.params["extrema"])]), elig=elig, Elig=_cap(elig))
    if inst.task == "handle_time":
        elig = _eligibility(int(inst.params["n_cases"]), rng)
        extrema = str(inst.params["extrema"])
        fill.update(
            most=rng.choice(_HT_MOST[extrema]), fast=rng.choice(_HT_FAST[extrema]), elig=elig, Elig=_cap(elig)
        )
    return template.format(**fill)


QUESTIONS = {
    "monthly_trend_analysis": MTA_QUESTIONS,
    "top_issue_identification": TII_QUESTIONS,
    "best_region_identification": BRI_QUESTIONS,
    "transfer_count": TCU_QUESTIONS,
    "handle_time": HTU_QUESTIONS,
}


def _reworded(inst: Instance, rng: random.Random, used: set[str], tries: int = 64) -> None:
    """A question from the task's bank with its window and product phrased at random, different from every
    query the task already holds when one can be (instances with the same parameters may repeat)."""
    templates = QUESTIONS[inst.task]
    query = _phrase(rng.choice(templates), inst, rng)
    for _ in range(tries):
        if f"{query}{inst.tail}" not in used:
            break
        query = _phrase(rng.choice(templates), inst, rng)
    inst.query = query
    used.add(f"{query}{inst.tail}")


def apply_voice(instances: list[Instance], seed: int) -> None:
    """Rewrite every instance's query, answer-format tail and `metadata.required` in CRMArena's voice."""
    combos = list(product(PVI_QUESTIONS, PVI_FOLLOWUPS))
    random.Random(derive_seed(seed, "voice", "policy_violation_identification", "combos")).shuffle(combos)
    counters: dict[str, int] = {}
    used: dict[str, set[str]] = {task: set() for task in QUESTIONS}
    handlers: dict[str, Callable[[Instance, random.Random, int], Any]] = {
        "policy_violation_identification": lambda i, r, k: _pvi(i, r, k, combos),
        "monthly_trend_analysis": lambda i, r, k: _dated(i, r, used[i.task]),
        "top_issue_identification": lambda i, r, k: _dated(i, r, used[i.task]),
        "best_region_identification": lambda i, r, k: _dated(i, r, used[i.task]),
        "handle_time": lambda i, r, k: _agent_policy(i, r, used[i.task]),
        "transfer_count": lambda i, r, k: _agent_policy(i, r, used[i.task]),
        "case_routing": lambda i, r, k: _routing(i, r),
        "knowledge_qa": lambda i, r, k: _knowledge(i),
    }
    for inst in instances:
        k = counters.get(inst.task, 0)
        counters[inst.task] = k + 1
        handler = handlers.get(inst.task)
        if handler is not None:
            handler(inst, random.Random(derive_seed(seed, "voice", inst.task, k)), k)
