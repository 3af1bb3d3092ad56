"""One set of text rules (issue 15 item 3): a text the LLM writer accepts never fails validation.

Hypothesis generates results across the rule space, kind by kind: names, products and remedy phrases in
exact, re-cased, re-spaced, plural, glued and missing forms; policy windows as "30 days", "30-day",
"30 calendar days", "30 business days", "130 days"; offers inside and outside the issue's name, in agent
and customer lines, in headers and continuations; endings that look cut off; texts at and beyond their
field's length; control characters. Each result goes through the writer's acceptance path
(`generator.text.llm.verify`: parse, coerce, schema, checks). When the writer accepts it, the record is
built as a bundle holds it (the fields `LANDS_IN` names, written to CSV and read back with the validators'
reader, the latent labels consistent with the facts) and judged by the validators (`validators.text`
and the field's JSON Schema): there must be no finding. When a case is drawn without any mutation, the
writer must accept it, so the property is never vacuous.

The writer's own extra rules (exact names, signatures, speaker prefixes, verbatim answers) only make it
stricter, so they are not mirrored here; near-duplicates are judged over whole objects by the pipeline
(`schemas/textsim.py`), not per text.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from generator.text.base import LANDS_IN, TextKind
from generator.text.cache import CachedResponse
from generator.text.checks import rules_for
from generator.text.llm import coerce, verify
from generator.text.offline import product_name
from generator.text.vocab import ISSUE_NAMES, MODIFIERS
from orgs.bundle import Bundle, read_csv_lines
from schemas.model import load_model
from schemas.textrules import doublings, free_text, indefinite, norm
from validators.findings import Finding
from validators.load import BundleData
from validators.text import check_text

MODEL = load_model()
PHRASES = {
    "refund": "full refund",
    "replacement": "free replacement",
    "exchange": "free exchange",
    "store_credit": "store credit",
    "loyalty_points": "loyalty points",
    "free_shipping": "free shipping voucher",
    "discount_code": "discount code",
    "cancellation": "order cancellation",
    "repair": "free repair",
}
REMEDIES = sorted(PHRASES)
PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)

# -- pieces of text ------------------------------------------------------------------------------------------

_NAME = st.text(
    st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), min_size=2, max_size=8
)
PERSON = st.builds(lambda a, b: f"{a.title()} {b.title()}", _NAME, _NAME)
FIRST = _NAME.map(str.title)
_WORDS = "the order arrived late and the box was damaged so I need help today please check it soon we looked"
# Filler never doubles a determiner, even after "my" ("my the box" is a defect the writers reject).
FILLER = (
    st.lists(st.sampled_from(_WORDS.split()), min_size=2, max_size=12)
    .map(" ".join)
    .filter(lambda t: not doublings(f"my {t}"))
)


class Mutations:
    """The departures from a clean text that one drawn case carries, each logged, so a case with an empty log
    is clean (and the writer must accept it).

    A case is clean one time in four; otherwise it draws one or two kinds of site to mutate (`BASIC` and the
    kind's own), uniformly, so a site late in the text is as likely as an early one, and each site of those
    kinds then mutates (each in its own way, drawn from the site's options).
    """

    def __init__(self, draw: st.DrawFn, *sites: str) -> None:
        self.draw = draw
        clean = draw(st.integers(0, 3)) == 3  # (the simplest draw, 0, is the one Hypothesis favours)
        every = st.sampled_from((*BASIC, *sites))
        self.targets = set() if clean else set(draw(st.lists(every, min_size=1, max_size=2, unique=True)))
        self.log: list[str] = []

    def pick(self, site: str, options: list[str]) -> str | None:
        if site not in self.targets:
            return None
        choice = self.draw(st.sampled_from(options))
        self.log.append(f"{site}:{choice}")
        return choice


BASIC = (
    "form",  # a name or phrase re-cased, re-spaced, broken or missing
    "ending",  # how a text ends
    "extra",  # an unclosed bracket, a control character, a tab or CRLF, a text at its field's limit
)
AGENT = (
    "names the issue",  # an agent names the case's issue
    "another remedy",  # an agent names a remedy the facts do not offer there
    "confesses",
    "customer asks for",
)
# Issues whose names hold a remedy's phrase, where offers and mentions of the issue are told apart; they are
# drawn as often as all the others together.
ISSUES = {**ISSUE_NAMES, "credit_missing": "Store credit missing", "refund_late": "Full refund arrived late"}
PHRASE_ISSUES = ["credit_missing", "loyalty_redemption", "refund_late"]
ISSUE_KEYS = st.sampled_from(sorted(ISSUES) + PHRASE_ISSUES * 4)


FORMS = ["upper", "spaces", "newline", "plural", "glued", "missing", "typo"]


def variant(m: Mutations, phrase: str) -> str:
    """`phrase` as a writer might render it: exact unless a mutation re-cases, re-spaces or breaks it."""
    how = m.pick("form", FORMS)
    words = phrase.split(" ")
    return {
        None: phrase,
        "upper": phrase.upper(),
        "spaces": "  ".join(words),
        "newline": "\n".join(words),
        "plural": phrase + "s",
        "glued": "x" + phrase,
        "missing": "it",
        "typo": phrase[:-1],
    }[how]


ENDINGS = ["!", '."', ".)", "?", "...", "…", ",", ":", " -", " (", "", " and", ". ", ".\n"]
EXTRAS = ["bracket", "nul", "bell", "tab", "crlf", "limit"]


def with_article(m: Mutations, phrase: str) -> str:
    """`phrase` with "a"/"an" where English puts one, unless a mutation puts "a" before any phrase ("a loyalty
    points", which the validators report as text.article-before-plural)."""
    return f"a {phrase}" if m.pick("article", ["a"]) else indefinite(phrase)


def finish(m: Mutations, text: str, limit: int) -> str:
    """`text` ended with "." unless a mutation ends it otherwise, opens a bracket, adds a control character
    or pads it to within a few characters of its field's limit."""
    end = m.pick("ending", ENDINGS) or "."
    out = text + end
    extra = m.pick("extra", EXTRAS)
    if extra == "bracket":
        out = "(" + out
    elif extra in ("nul", "bell"):
        at = m.draw(st.integers(0, len(out)))
        out = out[:at] + ("\x00" if extra == "nul" else "\x07") + out[at:]
    elif extra in ("tab", "crlf"):
        out = out.replace(" ", "\t" if extra == "tab" else "\r\n", 1)
    elif extra == "limit":  # keeping the ending
        pad = max(0, limit + m.draw(st.integers(-2, 2)) - len(out))
        head = out[: len(out) - len(end)] if end else out
        out = head + (" word" * (pad // 5 + 1))[:pad] + end
    return out


# -- a case: facts, a result, and the bundle records it becomes ----------------------------------------------


@dataclass
class Drawn:
    kind: TextKind
    facts: dict[str, Any]
    result: Any
    mutations: list[str]
    issue: str = "shipping_delay"
    policy: dict[str, int] = field(default_factory=dict)
    days: int = 10
    channel: str = "none"  # where the case's offer is (latent _offer_channel)
    remedy: str = "none"


def limit_of(sobject: str, name: str) -> int:
    length = MODEL.get(sobject).field(name).length
    assert length is not None
    return int(length)


@st.composite
def policies(draw: st.DrawFn) -> dict[str, int]:
    chosen = draw(st.lists(st.sampled_from(REMEDIES), min_size=1, max_size=4, unique=True))
    return {r: draw(st.integers(1, 400)) for r in chosen}


@st.composite
def products(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw)
    noun = draw(st.sampled_from(["Running Shoes", "Swim Trunks", "Rain Jacket", "Yoga Mat"]))
    index = draw(st.integers(0, 3 * len(MODIFIERS)))
    facts: dict[str, Any] = {"noun": noun, "modifier_index": index}
    name = product_name(noun, index)
    text = f"The {variant(m, name)} is {draw(FILLER)}"
    result = {"name": name, "description": finish(m, text, limit_of("Product2", "Description"))}
    return Drawn(TextKind.PRODUCT, facts, result, m.log)


@st.composite
def issues(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw)
    key = draw(st.sampled_from(sorted(ISSUE_NAMES)))  # the vocabulary's: an issue's name is exact
    text = finish(m, f"Cases where {draw(FILLER)}", limit_of("Issue__c", "Description__c"))
    return Drawn(TextKind.ISSUE, {"key": key}, {"name": ISSUE_NAMES[key], "description": text}, m.log, key)


@st.composite
def categories(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw)
    name = draw(st.sampled_from(["Athletic Bottoms", "Trail Running", "Swimwear"]))
    text = finish(
        m, f"Our {variant(m, name)} range: {draw(FILLER)}", limit_of("ProductCategory", "Description")
    )
    return Drawn(TextKind.CATEGORY, {"name": name}, {"description": text}, m.log)


WINDOW_FORMS = ["{d}-day", "{d} calendar days", "{d} Days", "{d} day", "{d}days", "{d} - day"]
BAD_WINDOW_FORMS = ["{d} business days", "1{d} days", "{d}0 days", "1.{d} days", "a{d} days", "a month"]


@st.composite
def articles(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw, "window", "between phrase and window")
    key = draw(ISSUE_KEYS)
    policy = draw(policies())
    facts = {
        "kind": "issue_policy",
        "issue_name": ISSUES[key],
        "remedies": policy,
        "remedy_phrases": {r: PHRASES[r] for r in policy},
    }
    lines = [f"This article covers {variant(m, ISSUES[key])}."]
    for remedy, days in policy.items():
        form = m.pick("window", WINDOW_FORMS + BAD_WINDOW_FORMS) or "{d} days"
        split = m.pick("between phrase and window", [". ", "\n", "! ", ", "]) or " "
        lines.append(
            f"Agents may offer {with_article(m, variant(m, PHRASES[remedy]))}{split}within {form.format(d=days)} of purchase."
        )
    lines.append(draw(FILLER))
    body = finish(m, "\n".join(lines), limit_of("Knowledge__kav", "FAQ_Answer__c"))
    summary = finish(m, f"How {draw(FILLER)}", limit_of("Knowledge__kav", "Summary"))
    title = finish(m, f"{ISSUES[key]} policy", limit_of("Knowledge__kav", "Title"))
    result = {"title": title, "summary": summary, "body": body}
    return Drawn(TextKind.KNOWLEDGE, facts, result, m.log, issue=key, policy=policy)


@st.composite
def cases(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw)
    product = product_name(draw(st.sampled_from(["Rain Jacket", "Yoga Mat"])), draw(st.integers(0, 40)))
    subject = finish(m, f"Trouble with my {draw(FILLER)}", limit_of("Case", "Subject"))
    desc = finish(m, f"Hello, my {variant(m, product)} {draw(FILLER)}", limit_of("Case", "Description"))
    return Drawn(TextKind.CASE, {"product": product}, {"subject": subject, "description": desc}, m.log)


@st.composite
def offers(draw: st.DrawFn) -> tuple[dict[str, Any] | None, str, str]:
    """(the offer fact, the latent offer remedy, the phrase the agent must use or '')."""
    what = draw(st.sampled_from(["none", "decline", "offer", "offer"]))
    if what == "none":
        return None, "none", ""
    if what == "decline":
        return {"remedy": "none"}, "none", ""
    remedy = draw(st.sampled_from(REMEDIES))  # allowed or not: the label follows from the policy
    return {"remedy": remedy, "phrase": PHRASES[remedy]}, remedy, PHRASES[remedy]


def agent_sentences(m: Mutations, wanted: str, issue_name: str) -> list[str]:
    """What an agent says: the offer where the facts place one; maybe the issue's name, another remedy, a
    confession."""
    out = ["let me look at your order."]
    if wanted:
        out.append(f"I can offer you {with_article(m, variant(m, wanted))} for this.")
    if m.pick("names the issue", ["yes"]):
        out.append(f"this is about {variant(m, issue_name)}.")
    inside = [r for r in REMEDIES if norm(PHRASES[r]) in norm(issue_name)]  # the issue name's own phrase
    extra = m.pick("another remedy", inside * 4 + REMEDIES)
    if extra:
        out.append(f"we also have a {PHRASES[extra]}.")
    if m.pick("confesses", ["yes"]):
        out.append("this violates our policy.")
    return out


@st.composite
def chats(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw, *AGENT, "agent line", "header")
    key = draw(ISSUE_KEYS)
    policy = draw(policies())
    offer, remedy, wanted = draw(offers())
    first, agent = draw(FIRST), draw(PERSON)
    product = product_name("Yoga Mat", draw(st.integers(0, 40)))
    facts = {
        "customer_first": first,
        "agent": agent,
        "product": product,
        "issue": key,
        "issue_name": ISSUES[key],
        "offer": offer,
    }
    cp, ap = f"{first}: ", f"{agent} (Agent): "
    lines = [f"{cp}Hi, I have a problem with my {variant(m, product)}."]
    for sentence in agent_sentences(m, wanted, ISSUES[key]):
        style = m.pick("agent line", ["continuation", "customer", "unprefixed"])
        lines.append(
            {None: f"{ap}{sentence}", "continuation": sentence, "customer": f"{cp}{sentence}"}.get(
                style, f"{agent}: {sentence}"
            )
        )
    ask = m.pick("customer asks for", REMEDIES)
    if ask:
        lines.append(f"{cp}Could I get a {PHRASES[ask]}?")
    header = m.pick(
        "header", ["Chat started 2024-01-02 10:00 UTC", f"Chat with {ap}", f"Notes: {PHRASES['refund']}"]
    )
    if header:
        lines.insert(0, header)
    body = finish(
        m, "\n".join(lines) + f"\n{ap}Thanks for your patience", limit_of("LiveChatTranscript", "Body")
    )
    channel = "chat" if offer is not None else "none"
    days = draw(st.integers(0, 400))
    return Drawn(TextKind.CHAT, facts, {"body": body}, m.log, key, policy, days, channel, remedy)


PLANS = [
    ["customer_open", "agent_offer"],
    ["customer_open", "agent_ack", "customer_reply", "agent_offer"],
    ["customer_open", "agent_ack", "agent_transfer", "agent_offer", "customer_thanks"],
    ["customer_open", "agent_ack", "agent_close"],
]


@st.composite
def threads(draw: st.DrawFn) -> Drawn:
    m = Mutations(draw, *AGENT, "signature")
    key = draw(ISSUE_KEYS)
    policy = draw(policies())
    plan = draw(st.sampled_from(PLANS))
    offer, remedy, wanted = draw(offers()) if "agent_offer" in plan else (None, "none", "")
    agents = [draw(PERSON), draw(PERSON)]
    product = product_name("Rain Jacket", draw(st.integers(0, 40)))
    messages: list[dict[str, Any]] = []
    bodies: list[str] = []
    for i, kind in enumerate(plan):
        if kind.startswith("customer"):
            messages.append({"kind": kind})
            text = f"Hi, my {variant(m, product) if i == 0 else 'order'} {draw(FILLER)}"
            ask = m.pick("customer asks for", REMEDIES)
            if ask:
                text += f". Could I get a {PHRASES[ask]}?"
        else:
            agent = agents[min(i // 3, 1)]
            messages.append(
                {"kind": kind, "agent": agent, **({"offer": offer} if kind == "agent_offer" else {})}
            )
            said = agent_sentences(m, wanted if kind == "agent_offer" else "", ISSUES[key])
            signed = m.pick("signature", ["The team"]) or agent
            text = (
                f"Hello, about the order: {' '.join(s.capitalize() for s in said)}\nBest regards,\n{signed}"
            )
        bodies.append(finish(m, text, limit_of("EmailMessage", "TextBody")))
    subject = finish(m, "Your order", limit_of("EmailMessage", "Subject"))
    result = {"messages": [{"subject": subject, "body": b} for b in bodies]}
    facts = {
        "messages": messages,
        "product": product,
        "issue_name": ISSUES[key],
        "customer_first": "Ann",
    }
    channel = "email" if offer is not None else "none"
    days = draw(st.integers(0, 400))
    return Drawn(TextKind.EMAIL_THREAD, facts, result, m.log, key, policy, days, channel, remedy)


# -- the bundle a result becomes ------------------------------------------------------------------------------

CASE_ID, ITEM_ID, PRODUCT_ID, ISSUE_ID = (
    "500000000000001AAA",
    "802000000000001AAA",
    "01t000000000001AAA",
    "a1M000000000001AAA",
)


_SCRATCH = tempfile.TemporaryDirectory(prefix="orgseed-textrules-")  # removed when the module is collected


def roundtrip(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """`rows` written to CSV by the bundle's writer and read back with the validators' reader."""
    Bundle(_SCRATCH.name).write_frame("x.csv", pd.DataFrame(rows, dtype=object))
    return read_csv_lines(Path(_SCRATCH.name) / "x.csv", "x.csv")


def bundle_of(d: Drawn, value: dict[str, Any]) -> BundleData:
    """The records the accepted `value` lands in, with the latent world the facts describe."""
    data = BundleData(root=Path("."), model=MODEL)
    fields = {f"{o}.{n}": (o, n) for o, n in LANDS_IN[d.kind].values()}
    sobject = next(iter(fields.values()))[0]

    def frame(name: str, rows: list[dict[str, Any]], written: bool = True) -> None:
        """`written`: the rows hold the writer's texts, so they go through CSV as a bundle's would."""
        if written:
            data.raw[name] = roundtrip(rows)
        else:
            data.raw[name] = pd.DataFrame(rows, dtype=object).assign(_line=range(2, len(rows) + 2))

    texts = (
        {n: value[k] for k, (_, n) in LANDS_IN[d.kind].items()} if d.kind is not TextKind.EMAIL_THREAD else {}
    )
    empty = {spec.field: "x." for spec in _free_text_of(sobject)}
    if d.kind is TextKind.KNOWLEDGE:
        frame("Knowledge__kav", [{"Id": "ka0000000000001AAA", **empty, **texts}])
        data.latent["Knowledge__kav"] = pd.DataFrame(
            {"Id": ["ka0000000000001AAA"], "_kind": ["issue_policy"], "_subject": [d.issue]}
        )
        data.policies = _policies(d)
    elif d.kind in (TextKind.PRODUCT, TextKind.ISSUE, TextKind.CATEGORY):
        frame(sobject, [{"Id": "x00000000000001AAA", **empty, **texts}])
    else:  # a case, its product, its issue, and the conversation
        product = str(d.facts.get("product"))
        case = {
            "Id": CASE_ID,
            "OrderItemId__c": ITEM_ID,
            "IssueId__c": ISSUE_ID,
            "Subject": "Help.",
            "Description": f"My {product}.",
        }
        if d.kind is TextKind.CASE:
            case.update(texts)
        frame("Case", [case], written=d.kind is TextKind.CASE)
        frame("OrderItem", [{"Id": ITEM_ID, "Product2Id": PRODUCT_ID}], written=False)
        frame("Product2", [{"Id": PRODUCT_ID, "Name": product, "Description": "A product."}], written=False)
        issue = {"Id": ISSUE_ID, "Name": ISSUES[d.issue], "Description__c": "Cases."}
        frame("Issue__c", [issue], written=False)
        data.latent["Issue__c"] = pd.DataFrame({"Id": [ISSUE_ID], "_issue_key": [d.issue]})
        allowed = d.remedy in d.policy and d.days <= d.policy[d.remedy]
        data.latent["Case"] = pd.DataFrame(
            {
                "Id": [CASE_ID],
                "_line": [2],
                "_offer_channel": [d.channel],
                "_offer_remedy": [d.remedy],
                "_violation": ["true" if d.remedy != "none" and not allowed else "false"],
                "_days_since_purchase": [str(d.days)],
            }
        )
        data.policies = _policies(d)
        if d.kind is TextKind.CHAT:
            frame("LiveChatTranscript", [{"Id": "570000000000001AAA", "CaseId": CASE_ID, **texts}])
        if d.kind is TextKind.EMAIL_THREAD:
            rows, kinds = [], []
            for i, (plan, msg) in enumerate(zip(d.facts["messages"], value["messages"], strict=True)):
                rid = f"02s00000000000{i}AAA"
                incoming = "true" if plan["kind"].startswith("customer") else "false"
                rows.append(
                    {
                        "Id": rid,
                        "ParentId": CASE_ID,
                        "Incoming": incoming,
                        "Subject": msg["subject"],
                        "TextBody": msg["body"],
                    }
                )
                kinds.append(plan["kind"])
            frame("EmailMessage", rows)
            data.latent["EmailMessage"] = pd.DataFrame({"Id": [r["Id"] for r in rows], "_kind": kinds})
    return data


def _free_text_of(sobject: str) -> Iterator[Any]:
    from schemas.textrules import FREE_TEXT

    return (spec for spec in FREE_TEXT if spec.sobject == sobject)


def _policies(d: Drawn) -> dict[str, Any]:
    return {
        "remedies": {r: {"key": r, "phrase": p} for r, p in PHRASES.items()},
        "issues": {d.issue: {"remedies": dict(d.policy)}},
    }


def schema_findings(data: BundleData) -> list[str]:
    out = []
    for sobject, frame in data.raw.items():
        for spec in _free_text_of(sobject):
            if spec.field in frame:
                check = Draft202012Validator(MODEL.get(sobject).field(spec.field).json_schema)
                out += [
                    f"{sobject}.{spec.field}: {e.message[:80]}"
                    for v in frame[spec.field]
                    for e in check.iter_errors(v)
                ]
    return out


def judge(d: Drawn) -> None:
    rules = rules_for(d.kind, d.facts, PHRASES)
    value, problems = verify(d.kind, rules, CachedResponse(json.dumps(d.result), None, "stop", 1, 1))
    if not d.mutations:  # drawn without any mutation: the writer must take it (the property is not vacuous)
        assert value is not None, problems
    if value is None:
        event("rejected by the writer")
        return
    event("accepted: " + ("clean" if not d.mutations else "mutated"))
    data = bundle_of(d, value)
    findings: list[Finding] = check_text(data)
    assert [f.message for f in findings] == [], (d.mutations, d.result)
    assert schema_findings(data) == [], d.mutations


KINDS: dict[str, Callable[[], st.SearchStrategy[Drawn]]] = {
    "product": products,
    "issue": issues,
    "category": categories,
    "knowledge": articles,
    "case": cases,
    "chat": chats,
    "email_thread": threads,
}


# Examples per kind: more where the rules interact (offers, speakers, windows), fewer for single texts.
EXAMPLES = {
    "product": 40,
    "issue": 30,
    "category": 30,
    "case": 50,
    "knowledge": 80,
    "chat": 100,
    "email_thread": 80,
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_what_the_writer_accepts_the_validators_accept(kind: str) -> None:
    @settings(PROPERTY, max_examples=EXAMPLES[kind])
    @given(KINDS[kind]())
    def run(d: Drawn) -> None:
        judge(d)

    run()


# -- the drifts that were, and the forms both sides take, as fixed cases ---------------------------------------


def verdicts(d: Drawn) -> tuple[list[str], list[str]]:
    """(the writer's problems, the validators' findings) for one result: both judge it, accepted or not."""
    rules = rules_for(d.kind, d.facts, PHRASES)
    _, problems = verify(d.kind, rules, CachedResponse(json.dumps(d.result), None, "stop", 1, 1))
    data = bundle_of(d, coerce(d.kind, d.result))
    return problems, [f.message for f in check_text(data)] + schema_findings(data)


def article(sentence: str, days: int = 30) -> Drawn:
    facts = {
        "kind": "issue_policy",
        "issue_name": "Shipping delay",
        "remedies": {"refund": days},
        "remedy_phrases": {"refund": "full refund"},
    }
    body = f"This article covers Shipping delay.\n{sentence}\nAsk a lead when in doubt."
    result = {"title": "Shipping delay policy", "summary": "What agents may offer.", "body": body}
    return Drawn(TextKind.KNOWLEDGE, facts, result, [], "shipping_delay", {"refund": days})


def chat(
    agent_says: str, offer: dict[str, Any] | None, issue: str = "shipping_delay", end: str = "Bye."
) -> Drawn:
    facts = {
        "customer_first": "Ann",
        "agent": "Bo Li",
        "product": "Aero Yoga Mat",
        "issue": issue,
        "issue_name": ISSUES[issue],
        "offer": offer,
    }
    body = f"Ann: My Aero Yoga Mat is late.\nBo Li (Agent): {agent_says}\nAnn: {end}"
    remedy = str(offer.get("remedy", "none")) if offer else "none"
    policy = {"store_credit": 90, "loyalty_points": 180}
    days = 200 if offer and remedy == "none" else 10  # a decline comes after every window has passed
    channel = "chat" if offer else "none"
    return Drawn(TextKind.CHAT, facts, {"body": body}, [], issue, policy, days, channel, remedy)


def thread(agent_writes: str, offer: dict[str, Any], issue: str = "shipping_delay") -> Drawn:
    """The customer's opening email and one agent email carrying the case's offer (or decline)."""
    remedy = str(offer.get("remedy", "none"))
    facts = {
        "messages": [{"kind": "customer_open"}, {"kind": "agent_offer", "agent": "Bo Li", "offer": offer}],
        "product": "Aero Rain Jacket",
        "issue_name": ISSUES[issue],
        "customer_first": "Ann",
    }
    bodies = ["My Aero Rain Jacket is late.", f"Hello Ann,\n{agent_writes}\nBest regards,\nBo Li"]
    result = {"messages": [{"subject": "Late order", "body": b} for b in bodies]}
    days = 200 if remedy == "none" else 10
    policy = {"refund": 30, "loyalty_points": 180}
    return Drawn(TextKind.EMAIL_THREAD, facts, result, [], issue, policy, days, "email", remedy)


def case(subject: str, description: str = "My Aero Rain Jacket leaks.") -> Drawn:
    result = {"subject": subject, "description": description}
    return Drawn(TextKind.CASE, {"product": "Aero Rain Jacket"}, result, [])


STORE_CREDIT = {"remedy": "store_credit", "phrase": "store credit"}
KNOWN: dict[str, tuple[Drawn, bool]] = {  # name → (case, accepted by both sides)
    "a window in calendar days (rejected by the validators before)": (
        article("A full refund may be offered within 30 calendar days of purchase."),
        True,
    ),
    "a window as N-day, re-cased and re-spaced": (article("A Full  Refund fits a 30-day window."), True),
    "a window in business days (accepted by the writer before)": (
        article("A full refund may be offered within 30 business days of purchase."),
        False,
    ),
    "a longer window that contains the number": (article("A full refund within 130 days."), False),
    "the phrase and the window in two sentences": (
        article("A full refund is possible. Within 30 days."),
        False,
    ),
    "an offer phrase inside the issue's name": (
        chat(
            "I see: loyalty points not redeemed. Sadly the window has passed.",
            {"remedy": "none"},
            "loyalty_redemption",
        ),
        True,
    ),
    "the issue name's phrase outside it (exempt in the writer before)": (
        chat(
            "Your loyalty points case is noted; the window has passed.",
            {"remedy": "none"},
            "loyalty_redemption",
        ),
        False,
    ),
    "the offer in the plural (a substring in the writer before)": (
        chat("I can add store credits to your account.", STORE_CREDIT),
        False,
    ),
    "the offer, re-cased": (chat("I can offer you STORE CREDIT today.", STORE_CREDIT), True),
    "a chat that ends mid-sentence (unchecked by the writer before)": (
        chat("I can offer you store credit.", STORE_CREDIT, end="thanks so much and"),
        False,
    ),
    "the offer said by the customer, not the agent": (
        Drawn(
            TextKind.CHAT,
            chat("Let me check.", STORE_CREDIT).facts,
            {"body": "Ann: Store credit would do.\nBo Li (Agent): Let me check.\nAnn: Bye."},
            [],
            "shipping_delay",
            {"store_credit": 90},
            10,
            "chat",
            "store_credit",
        ),
        False,
    ),
    "an agent line without (Agent)": (
        Drawn(
            TextKind.CHAT,
            chat("Let me check.", STORE_CREDIT).facts,
            {"body": "Ann: My Aero Yoga Mat is late.\nBo Li: I can offer store credit.\nAnn: Bye."},
            [],
            "shipping_delay",
            {"store_credit": 90},
            10,
            "chat",
            "store_credit",
        ),
        False,
    ),
    "an emailed offer with a line break inside its phrase": (
        thread("I have issued a full\nrefund for the order.", {"remedy": "refund", "phrase": "full refund"}),
        True,
    ),
    "an email naming the issue's phrase outside the issue (exempt in the writer before)": (
        thread("Your loyalty points request is past its window.", {"remedy": "none"}, "loyalty_redemption"),
        False,
    ),
    "a subject exactly at its field's limit": (case("Trouble " + "x" * 247), False),
    "a subject beyond its field's limit": (case("Trouble " + "x" * 300), False),
    "an unclosed bracket": (case("Trouble (leaking"), False),
    "a product named with a line break between its words": (
        case("Help", "My Aero\nRain Jacket leaks."),
        True,
    ),
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_known_forms_are_judged_alike_by_the_writer_and_the_validators(name: str) -> None:
    drawn, accepted = KNOWN[name]
    problems, findings = verdicts(drawn)
    assert (problems == [], findings == []) == (accepted, accepted), (problems, findings)


def test_every_written_field_is_declared_free_text() -> None:
    """The writer judges a field by `FREE_TEXT`'s declaration; every field a result lands in has one."""
    for lands in LANDS_IN.values():
        for sobject, name in lands.values():
            assert free_text(sobject, name).field == name
