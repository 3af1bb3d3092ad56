"""Content checks: does a text say what its latent facts say, and nothing that contradicts them?

Two steps, kept apart so prompts, writers and validators share them:

- `rules_for(kind, facts, phrases)` turns a request's facts into *rules*: a small JSON-able dict of what the
  text must contain (names, policy windows, the offer's canonical phrase, speaker prefixes, ids that must
  survive a paraphrase ...). The LLM writer shows these rules to the model in its prompt.
- `check(kind, rules, result)` returns the problems of one result, as sentences addressed to a writer
  ("The description does not name the product `X`."). No problems means the text passes.

`phrases` maps every remedy key to its canonical phrase (profile `[latent.remedies]`). Offers are detected
by these phrases, so agents' words must contain the offered remedy's phrase exactly where the facts place
an offer, and no remedy phrase anywhere else. A phrase that is part of the case's issue name (for example
"loyalty points" in "Loyalty points not redeemed") may appear freely, since agents name the issue.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from generator.text.base import TextKind
from generator.text.offline import issue_name, product_name

AGENT_SUFFIX = " (Agent): "
FORBIDDEN_AGENT_WORDS = ("violat",)  # agents never say their own offer breaks policy

_ID_RE = re.compile(r"\b[A-Za-z0-9]{15}(?:[A-Za-z0-9]{3})?\b")
_DATE_RE = re.compile(
    r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?\b"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_SUFFIX_RE = re.compile(r"(?:(?<=[.?!])\s+|^)(Return only\b.*)$", re.DOTALL)
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_DROP_PREFIXES = ("no, ", "yes, ", "they run ", "about ", "orders over ")


def norm(text: str) -> str:
    """Lower-case with runs of whitespace collapsed (for containment tests)."""
    return re.sub(r"\s+", " ", str(text)).strip().lower()


def contains(text: str, snippet: str) -> bool:
    return norm(snippet) in norm(text)


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


def _exempt(phrases: Mapping[str, str], issue: str) -> list[str]:
    """Remedy phrases that must not appear where no offer is made (minus those in the issue's name)."""
    issue_low = norm(issue)
    return sorted({p for p in phrases.values() if norm(p) not in issue_low})


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
            "phrases": _exempt(phrases, iname),
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
        "phrases": _exempt(phrases, str(facts.get("issue_name", ""))),
    }


# -- checks ------------------------------------------------------------------------------------------------


def check(kind: TextKind, rules: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """The problems of one (schema-valid) result against its rules; empty when it passes."""
    kind = TextKind(kind)
    fn = _CHECKS[kind]
    return fn(rules, result)


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


def states_window(body: str, phrase: str, days: int) -> bool:
    """True when one sentence of `body` names `phrase` and the window `days` (as "30 days"/"30-day")."""
    pat = re.compile(rf"(?<![\d.]){days}(?:\s|-)*(?:calendar\s+|business\s+)?days?\b", re.IGNORECASE)
    return any(contains(s, phrase) and pat.search(s) for s in _SENTENCE_SPLIT.split(body) if s.strip())


def _check_knowledge(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    body = str(r["body"])
    out = _mentions(rules, body, "The body")
    for w in rules.get("windows", []):
        if not states_window(body, w["phrase"], int(w["days"])):
            out.append(
                f"The body does not state, in one sentence, that a {w['phrase']} may be offered within "
                f"{w['days']} days of purchase."
            )
    for s in rules.get("state", []):
        if not contains(body, s):
            out.append(f"The body does not state `{s}` verbatim.")
    return out


def _check_case(rules: Mapping[str, Any], r: Mapping[str, Any]) -> list[str]:
    return _mentions(rules, str(r["description"]), "The description")


def _agent_phrase_problems(
    text: str, where: str, offer: Mapping[str, Any] | None, phrases: Sequence[str]
) -> list[str]:
    out = []
    offered = offer.get("phrase") if offer else None
    if offered and not contains(text, str(offered)):
        out.append(f"{where} must make the offer using the exact words `{offered}`.")
    for p in phrases:
        if p != offered and contains(text, p):
            if offer and offer.get("decline"):
                out.append(f"{where} must decline without naming any resolution, but it says `{p}`.")
            else:
                out.append(f"{where} must not say `{p}` (no such offer is made there).")
    low = norm(text)
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
        out += _agent_phrase_problems(body, where, plan.get("offer"), rules["phrases"])
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
    spoken_by_agent = "\n".join([*header, *agent])
    out += _agent_phrase_problems(spoken_by_agent, "The agent's lines", rules.get("offer"), rules["phrases"])
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
