"""Content checks: does a text say what its latent facts say, and nothing that contradicts them?

Two steps, kept apart so prompts, writers and validators share them:

- `rules_for(kind, facts, phrases)` turns a request's facts into *rules*: a small JSON-able dict of what the
  text must contain (names, policy windows, the offer's canonical phrase, speaker prefixes, ids that must
  survive a paraphrase ...). The LLM writer shows these rules to the model in its prompt.
- `check(kind, rules, result)` returns the problems of one result, as sentences addressed to a writer
  ("The description does not name the product `X`."). No problems means the text passes.

The rules a bundle is validated by are `schemas/textrules.py`, and `check` judges each text with those same
functions, on the field the text lands in (`LANDS_IN`): present, within the field's length, not cut off,
naming its product, stating its policy windows, offering exactly what the facts say. So a text this module
accepts cannot fail validation (`tests/text/test_text_rules.py`). A few rules are the writer's alone and only
make it stricter: exact product and issue names, every answer of an article stated verbatim, agents signing
their emails, chat lines prefixed by their speaker, paraphrases keeping ids, dates and the answer suffix.

`phrases` maps every remedy key to its canonical phrase (profile `[latent.remedies]`). Offers are detected
by these phrases (`textrules.offered`), so agents' words must contain the offered remedy's phrase exactly
where the facts place an offer, and no remedy phrase anywhere else, except inside the case's issue name
(agents may name the issue "Loyalty points not redeemed" without offering loyalty points).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from generator.text.base import LANDS_IN, TextKind
from generator.text.offline import issue_name, product_name
from schemas import textrules
from schemas.model import load_model
from schemas.textrules import (
    agent_lines,
    contains,
    field_problem,
    free_text,
    indefinite,
    norm,
    offered,
    states_window,
)

__all__ = [
    "check",
    "check_text",
    "contains",
    "field_problems",
    "norm",
    "rules_for",
    "states_window",
    "zero_price_problems",
]

AGENT_SUFFIX = f"{textrules.AGENT_SUFFIX}: "  # how an agent's chat line starts, after the agent's name
FORBIDDEN_AGENT_WORDS = ("violat",)  # agents never say their own offer breaks policy

_ID_RE = re.compile(r"\b[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?\b")
_DATE_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_SUFFIX_RE = re.compile(r"(?:(?<=[.?!])\s+|^)(Return only\b.*)$", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_DROP_PREFIXES = ("no, ", "yes, ", "they run ", "about ", "orders over ")


def preserved_tokens(text: str) -> list[str]:
    """Ids (15/18 alphanumerics with a digit and a letter) and ISO dates that a paraphrase must keep."""
    out: list[str] = []
    for m in _ID_RE.finditer(text):
        tok = m.group(0)
        if any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok):
            out.append(tok)
    out.extend(m.group(0) for m in _DATE_RE.finditer(text))
    return list(dict.fromkeys(out))


def answer_suffix(text: str) -> str | None:
    """The fixed answer-format instruction that ends a task query ("Return only the Id of ..."), if any."""
    m = _SUFFIX_RE.search(text.strip())
    return m.group(1) if m else None


def tokens(text: str) -> set[str]:
    """Lower-cased alphanumeric words, as a catalog search matches them."""
    return {t.lower() for t in _TOKEN.findall(str(text))}


def answer_snippet(answer: str) -> str:
    """The part of a planted answer a text must state verbatim ("No, gift cards never expire" →
    "gift cards never expire"; "They run true to size" → "true to size")."""
    text = str(answer).strip().rstrip(".")
    low = text.lower()
    for prefix in _DROP_PREFIXES:
        if low.startswith(prefix):
            return text[len(prefix) :]
    return text


def _offer(offer: Any) -> dict[str, Any] | None:
    """Offer facts → {"phrase": p} (an offer), {"decline": True} (remedy none), or None (no offer)."""
    if not offer:
        return None
    remedy = str(offer.get("remedy", "none"))
    if remedy == "none":
        return {"decline": True}
    return {"phrase": str(offer["phrase"]), "remedy": remedy}


# -- rules -------------------------------------------------------------------------------------------------


def rules_for(kind: TextKind, facts: Mapping[str, Any], phrases: Mapping[str, str]) -> dict[str, Any]:
    """What a text for these facts must satisfy (JSON-able; shown to the model and used by `check`)."""
    kind = TextKind(kind)
    if kind is TextKind.PRODUCT:
        name = product_name(str(facts["noun"]), int(facts["modifier_index"]))
        return {"name": name, "mention": [name]}
    if kind is TextKind.ISSUE:
        return {"name": issue_name(str(facts["key"]))}
    if kind is TextKind.CATEGORY:
        return {"mention": [str(facts["name"])]}
    if kind is TextKind.KNOWLEDGE:
        return _knowledge_rules(facts)
    if kind is TextKind.CASE:
        return {"mention": [str(facts["product"])]}
    if kind is TextKind.EMAIL_THREAD:
        return _email_rules(facts, phrases)
    if kind is TextKind.CHAT:
        iname = str(facts.get("issue_name") or issue_name(str(facts.get("issue", ""))))
        return {
            "customer_prefix": f"{facts['customer_first']}: ",
            "agent_prefix": f"{facts['agent']}{AGENT_SUFFIX}",
            "mention": [str(facts["product"])],
            "offer": _offer(facts.get("offer")),
            "phrases": _all_phrases(phrases),
            "issue_name": iname,
        }
    if kind is TextKind.PARAPHRASE:
        text = str(facts["text"])
        keep = [str(k) for k in facts.get("keep", [])]
        suffix = facts.get("suffix") or answer_suffix(text)
        return {
            "original": text,
            "keep": list(dict.fromkeys([*keep, *preserved_tokens(text)])),
            "suffix": str(suffix) if suffix else None,
        }
    if kind is TextKind.PRODUCT_MENTION:
        target = facts.get("product") or facts["name"]
        return {"target": str(target), "others": [str(o) for o in facts.get("others", [])]}
    raise ValueError(f"no rules for text kind {kind!r}")


def _knowledge_rules(facts: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(facts["kind"])
    if kind == "issue_policy":
        phrases = dict(facts["remedy_phrases"])
        return {
            "mention": [str(facts["issue_name"])],
            "windows": [
                {"phrase": str(phrases[r]), "days": int(days)} for r, days in dict(facts["remedies"]).items()
            ],
            "state": [],
        }
    state = [answer_snippet(str(q["answer"])) for q in facts.get("facts", [])]
    return {"mention": [], "windows": [], "state": state}


def _email_rules(facts: Mapping[str, Any], phrases: Mapping[str, str]) -> dict[str, Any]:
    messages = []
    for m in facts["messages"]:
        kind = str(m["kind"])
        if kind.startswith("customer"):
            messages.append({"kind": kind, "from": "customer"})
            continue
        entry: dict[str, Any] = {"kind": kind, "from": "agent", "agent": str(m.get("agent", ""))}
        if kind == "agent_offer":
            entry["offer"] = _offer(m.get("offer"))
        messages.append(entry)
    return {
        "count": len(messages),
        "messages": messages,
        "mention": [str(facts["product"])],
        "phrases": _all_phrases(phrases),
        "issue_name": str(facts.get("issue_name", "")),
    }


def _all_phrases(phrases: Mapping[str, str]) -> list[str]:
    """Every remedy's canonical phrase, sorted: the words no agent may use where the facts place no offer."""
    return sorted({str(p) for p in phrases.values()})


# -- checks ------------------------------------------------------------------------------------------------


def check(kind: TextKind, rules: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """The problems of one (schema-valid) result against its rules; empty when it passes."""
    kind = TextKind(kind)
    return [
        *field_problems(kind, result),
        *zero_price_problems(result),
        *bare_article_problems(rules, result),
        *_CHECKS[kind](rules, result),
    ]


def _strings(value: Any, where: str) -> list[tuple[str, str]]:
    """(where, text) of every string in a result, e.g. ("messages[1].body", "...")."""
    if isinstance(value, str):
        return [(where, value)]
    if isinstance(value, Mapping):
        return [s for k, v in value.items() for s in _strings(v, f"{where}.{k}" if where else str(k))]
    if isinstance(value, list | tuple):
        return [s for i, v in enumerate(value) for s in _strings(v, f"{where}[{i}]")]
    return []


def bare_article_problems(rules: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """Every text of a result that puts "a"/"an" before a remedy phrase that takes none ("a loyalty points"),
    which the validators report (`validators.text`, rule text.article-before-plural)."""
    phrases = [str(p) for p in rules.get("phrases") or []]
    phrases += [str(w["phrase"]) for w in rules.get("windows") or []]
    if not phrases:
        return []
    out = []
    for where, text in _strings(result, ""):
        found = textrules.bare_plurals(text, phrases)
        if found:
            out.append(
                f"The {where} reads `{found[0]}`: no article before a plural or mass noun; write "
                f"`{found[0].split(None, 1)[1]}`."
            )
    return out


def zero_price_problems(result: Mapping[str, Any]) -> list[str]:
    """Every text of a result that states a purchase at no cost ("$0.00"): the issue's "no $0.00 purchase
    anywhere", which the validators also hold a bundle to (`validators.text.zero_prices`)."""
    out = []
    for where, text in _strings(result, ""):
        amount = textrules.zero_price(text)
        if amount:
            out.append(
                f"The {where} says something cost {amount}; nothing is sold for nothing: state the price "
                "given in the facts, or leave the price out."
            )
    return out


@cache
def _field_rules(sobject: str, field: str) -> tuple[int | None, bool]:
    """(length limit, prose) of a written field: the org model's length, `textrules.FREE_TEXT`'s prose."""
    return load_model().get(sobject).field(field).length, free_text(sobject, field).prose


def field_problems(kind: TextKind, result: Mapping[str, Any]) -> list[str]:
    """What the validators would find wrong with the fields this result fills (`LANDS_IN`): an empty text,
    one longer than its field, one that looks cut off (`textrules.field_problem`)."""
    lands = LANDS_IN.get(TextKind(kind))
    if lands is None:
        return []
    if kind is TextKind.EMAIL_THREAD:
        parts = [(f"Message {i}'s", m) for i, m in enumerate(result["messages"], start=1)]
    else:
        parts = [("The", result)]
    out = []
    for owner, part in parts:
        for key, (sobject, field) in lands.items():
            limit, prose = _field_rules(sobject, field)
            problem = field_problem(str(part[key]), limit, prose)
            if problem:
                out.append(f"{owner} {key} {problem}.")
    return out


def check_text(
    kind: TextKind, facts: Mapping[str, Any], result: Mapping[str, Any], phrases: Mapping[str, str]
) -> list[str]:
    """`check` on the rules of `facts` (for validators that hold facts rather than rules)."""
    return check(kind, rules_for(kind, facts, phrases), result)


def _mentions(rules: Mapping[str, Any], text: str, where: str) -> list[str]:
    return [f"{where} does not name `{m}`." for m in rules.get("mention", []) if not contains(text, m)]


def _check_product(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    out = []
    if str(r["name"]).strip() != rules["name"]:
        out.append(f"The name must be exactly `{rules['name']}` (got `{r['name']}`).")
    return out + _mentions(rules, str(r["description"]), "The description")


def _check_issue(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    if str(r["name"]).strip() != rules["name"]:
        return [f"The name must be exactly `{rules['name']}` (got `{r['name']}`)."]
    return []


def _check_category(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    return _mentions(rules, str(r["description"]), "The description")


def _check_knowledge(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    body = str(r["body"])
    out = _mentions(rules, body, "The body")
    for w in rules.get("windows", []):
        if not states_window(body, w["phrase"], int(w["days"])):
            out.append(
                f"The body does not state, in one sentence, that {indefinite(w['phrase'])} may be offered within "
                f"{w['days']} days of purchase."
            )
    for s in rules.get("state", []):
        if not contains(body, s):
            out.append(f"The body does not state `{s}` verbatim.")
    return out


def _check_case(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    return _mentions(rules, str(r["description"]), "The description")


def _agent_phrase_problems(
    text: str,
    where: str,
    offer: Mapping[str, Any] | None,
    phrases: Sequence[str],
    issue: str | None,
    forbidden_too: str = "",
) -> list[str]:
    """The offer the facts place (or none), and no other remedy: `text` is what the agent says there,
    `forbidden_too` more of the agent's text where no remedy may be named (a chat's header)."""
    out = []
    wanted = str(offer["phrase"]) if offer and offer.get("phrase") else None
    every = {p: p for p in [*phrases, wanted] if p}
    said = offered(text, every, issue)
    if wanted and wanted not in said:
        out.append(f"{where} must make the offer using the exact words `{wanted}`.")
    extra = offered(forbidden_too, every, issue) if forbidden_too else []
    for p in sorted({*said, *extra}):
        if p != wanted:
            if offer and offer.get("decline"):
                out.append(f"{where} must decline without naming any resolution, but it says `{p}`.")
            else:
                out.append(f"{where} must not say `{p}` (no such offer is made there).")
    low = norm(f"{text}\n{forbidden_too}")
    for word in FORBIDDEN_AGENT_WORDS:
        if word in low:
            out.append(f"{where} must not mention a policy violation.")
    return out


def _check_email(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    msgs = list(r["messages"])
    planned = list(rules["messages"])
    if len(msgs) != len(planned):
        return [
            f"The thread must have exactly {len(planned)} messages, one per planned message (got {len(msgs)})."
        ]
    out = []
    everything = "\n".join(str(m["body"]) for m in msgs)
    out += _mentions(rules, everything, "The thread")
    for i, (plan, msg) in enumerate(zip(planned, msgs, strict=True), start=1):
        if plan["from"] != "agent":
            continue
        body = str(msg["body"])
        where = f"Message {i} ({plan['kind']})"
        if plan.get("agent") and not contains(body, plan["agent"]):
            out.append(f"{where} must be signed by the agent `{plan['agent']}`.")
        out += _agent_phrase_problems(
            body, where, plan.get("offer"), rules["phrases"], rules.get("issue_name")
        )
    return out


def chat_lines(body: str) -> list[str]:
    return [line for line in str(body).splitlines() if line.strip()]


def _check_chat(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    """Speaker lines only (a transcript header before the first one is allowed), offers as the facts say."""
    cp, ap = str(rules["customer_prefix"]), str(rules["agent_prefix"])
    lines = chat_lines(r["body"])
    first = next((i for i, line in enumerate(lines) if line.startswith((cp, ap))), len(lines))
    header, talk = lines[:first], lines[first:]
    out = []
    bad = [line for line in talk if not line.startswith((cp, ap))]
    if bad:
        out.append(
            f"Every line must start with `{cp}` or `{ap}`; {len(bad)} line(s) do not, e.g. `{bad[0][:60]}`."
        )
    agent = [line[len(ap) :] for line in talk if line.startswith(ap)]
    if not agent:
        out.append(f"The chat has no agent line (lines starting with `{ap}`).")
    if not any(line.startswith(cp) for line in talk):
        out.append(f"The chat has no customer line (lines starting with `{cp}`).")
    out += _mentions(rules, str(r["body"]), "The chat")
    out += _agent_phrase_problems(
        agent_lines(str(r["body"])),  # the agent's words as the validators read them
        "The agent's lines",
        rules.get("offer"),
        rules["phrases"],
        rules.get("issue_name"),
        forbidden_too="\n".join(header),
    )
    return out


def _check_paraphrase(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    text = str(r["text"])
    out = [
        f"The paraphrase must keep `{k}` exactly as written." for k in rules.get("keep", []) if k not in text
    ]
    suffix = rules.get("suffix")
    if suffix and not text.rstrip().endswith(str(suffix).rstrip()):
        out.append(f"The paraphrase must end with this text, unchanged: `{suffix}`.")
    return out


def _check_mention(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    """The search term's words must all be in the target's name and not all in any other purchase's name."""
    term = str(r["search_term"]).strip()
    words = tokens(term)
    out = []
    if not str(r["mention"]).strip():
        out.append("The mention is empty.")
    if not words or not words <= tokens(rules["target"]):
        out.append(f"The search term `{term}` must use only words of the product name `{rules['target']}`.")
    clash = [o for o in rules.get("others", []) if words and words <= tokens(o)]
    if clash:
        out.append(
            f"The search term `{term}` also matches the customer's other purchase `{clash[0]}`; "
            "choose words only the target's name has."
        )
    return out


_CHECKS = {
    TextKind.PRODUCT: _check_product,
    TextKind.ISSUE: _check_issue,
    TextKind.CATEGORY: _check_category,
    TextKind.KNOWLEDGE: _check_knowledge,
    TextKind.CASE: _check_case,
    TextKind.EMAIL_THREAD: _check_email,
    TextKind.CHAT: _check_chat,
    TextKind.PARAPHRASE: _check_paraphrase,
    TextKind.PRODUCT_MENTION: _check_mention,
}
