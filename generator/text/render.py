"""Prompts: the files in `prompts/` rendered from a request's latent facts.

A prompt file is a small header (`version: N`) and a body with `{{name}}` placeholders, filled from a
per-kind context built here (prose-friendly strings derived from the facts). Every user message then ends
with the same machine-readable block:

    FACTS (machine-readable; authoritative):
    ```json
    {"facts": {...}, "rules": {...}, "task": "<kind>"}
    ```

so a model (and the test server) sees the raw facts and the rules `checks.py` will verify. The template
version of a kind (its file's version, the system prompt's version and `RENDER_VERSION`) is part of every
cache key; bump a file's `version` when its meaning changes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, ClassVar

from generator.text import checks, vocab
from generator.text.base import OUTPUT_SCHEMAS, TextKind
from generator.text.offline import human_date, issue_name
from schemas.errors import Terminal
from schemas.textrules import indefinite

RENDER_VERSION = 2  # 2: knowledge prompts say what each kind of article covers
FACTS_MARKER = "FACTS (machine-readable; authoritative):"
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")

DIVERSITY_HINTS = (
    "open in a different way and use different sentence structures",
    "use other concrete details and a different order of points",
    "vary the length of the sentences and choose different words throughout",
    "write it from a slightly different angle, with fresh wording",
)


class PromptError(Terminal):
    """A prompt file is malformed or uses a placeholder its kind does not provide."""

    FIELDS: ClassVar[tuple[str, ...]] = ("prompt",)

    def __init__(self, message: str, *, prompt: str | None = None) -> None:
        super().__init__(message)
        self.prompt = prompt


@dataclass(frozen=True)
class Template:
    kind: str
    version: str
    body: str


@dataclass(frozen=True)
class PromptEnv:
    """What prompts need beyond a request's facts: the company and the remedy phrase table."""

    company: str = "our company"
    industry: str = "a retailer"
    description: str = ""
    phrases: Mapping[str, str] = field(default_factory=dict)

    @staticmethod
    def from_profile(profile: Any) -> PromptEnv:
        remedies = dict(profile.latent.get("remedies", {}))
        return PromptEnv(
            company=profile.company.name,
            industry=profile.company.industry,
            description=profile.company.description,
            phrases={k: str(v["phrase"]) for k, v in sorted(remedies.items())},
        )


@dataclass(frozen=True)
class Prompt:
    kind: TextKind
    messages: list[dict[str, str]]
    rules: dict[str, Any]
    template_version: str


@cache
def load_template(name: str) -> Template:
    """A prompt file from `generator/text/prompts/<name>.txt`."""
    path = resources.files("generator.text") / "prompts" / f"{name}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise PromptError(f"Missing prompt file generator/text/prompts/{name}.txt.", prompt=name) from exc
    head, sep, body = text.partition("\n---\n")
    if not sep:
        raise PromptError(
            f"generator/text/prompts/{name}.txt has no `---` line between its header and its body.",
            prompt=name,
        )
    version = None
    for lineno, line in enumerate(head.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition(":")
        if key.strip() == "version" and value.strip():
            version = value.strip()
        else:
            raise PromptError(
                f"generator/text/prompts/{name}.txt:{lineno}: unknown header line `{line}`; "
                "the header holds only `version: N` and # comments.",
                prompt=name,
            )
    if version is None:
        raise PromptError(f"generator/text/prompts/{name}.txt lacks a `version: N` header line.", prompt=name)
    return Template(name, version, body.strip("\n"))


def fill(template: Template, context: Mapping[str, Any]) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key not in context:
            raise PromptError(
                f"generator/text/prompts/{template.kind}.txt uses `{{{{{key}}}}}`, which the "
                f"{template.kind} prompt does not provide; available: {', '.join(sorted(context))}.",
                prompt=template.kind,
            )
        return str(context[key])

    return _PLACEHOLDER.sub(sub, template.body)


def template_version(kind: TextKind) -> str:
    return f"{kind.value}.v{load_template(kind.value).version}+system.v{load_template('system').version}+r{RENDER_VERSION}"


def output_shape(kind: TextKind, facts: Mapping[str, Any]) -> str:
    def example(schema: Mapping[str, Any]) -> Any:
        t = schema.get("type")
        if t == "object":
            return {k: example(v) for k, v in schema.get("properties", {}).items()}
        if t == "array":
            return [example(schema.get("items", {}))]
        return "..."

    shape = json.dumps(example(OUTPUT_SCHEMAS[kind]))
    if kind is TextKind.EMAIL_THREAD:
        return f"{shape}\nwith exactly {len(facts['messages'])} items in `messages`, in the planned order."
    return shape


def facts_block(kind: TextKind, facts: Mapping[str, Any], rules: Mapping[str, Any]) -> str:
    payload = {"task": kind.value, "facts": facts, "rules": rules}
    return json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def render(kind: TextKind, facts: Mapping[str, Any], env: PromptEnv, variant: int = 0) -> Prompt:
    """The messages of the first attempt at one request (`variant` > 0 asks for a different wording)."""
    kind = TextKind(kind)
    rules = checks.rules_for(kind, facts, env.phrases)
    system = fill(
        load_template("system"),
        {"company": env.company, "industry": env.industry, "company_description": env.description},
    )
    context = {"company": env.company, **_CONTEXTS[kind](facts, rules, env)}
    user = fill(load_template(kind.value), context)
    if variant > 0:
        hint = DIVERSITY_HINTS[(variant - 1) % len(DIVERSITY_HINTS)]
        user += (
            f"\n\nVariation {variant}: an earlier draft was too similar to another record's text. "
            f"Keep every fact, but {hint}."
        )
    user += (
        f"\n\n{FACTS_MARKER}\n```json\n{facts_block(kind, facts, rules)}\n```\n\n"
        f"Reply with only a JSON object of this shape:\n{output_shape(kind, facts)}"
    )
    return Prompt(
        kind=kind,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        rules=rules,
        template_version=template_version(kind),
    )


def parse_facts_block(text: str) -> dict[str, Any]:
    """The machine-readable block of a rendered user message (used by the test server and audits)."""
    at = text.find(FACTS_MARKER)
    if at < 0:
        raise ValueError("no FACTS block in the message")
    rest = text[at + len(FACTS_MARKER) :]
    start = rest.index("```json\n") + len("```json\n")
    end = rest.index("\n```", start)
    return dict(json.loads(rest[start:end]))


# -- per-kind contexts -----------------------------------------------------------------------------------


def _quoted(items: list[str]) -> str:
    return ", ".join(f'"{i}"' for i in items) if items else "(none)"


def _product(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    return {"name": rules["name"], "category": f["category"], "noun": f["noun"]}


def _issue(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    key = str(f["key"])
    return {"name": rules["name"], "summary": vocab.ISSUE_DESCRIPTIONS.get(key, key.replace("_", " "))}


def _category(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    return {"name": f["name"]}


def _knowledge(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    kind = str(f["kind"])
    if kind == "issue_policy":
        iname = str(f["issue_name"])
        windows = "\n".join(
            f'- "{w["phrase"]}": within {w["days"]} days of purchase' for w in rules["windows"]
        )
        questions = "\n".join(
            f"- {q['question'].replace('{issue}', iname.lower())} ({q['answer']})" for q in f["facts"]
        )
        article = (
            f"This is the resolution policy for cases about: {iname}. For each allowed resolution, state in one "
            "sentence that agents may offer it within its window, counted in days from the purchase date, "
            "naming the resolution with the exact words in quotes and the number of days:\n"
            f"{windows}\n"
            f"Say that no other resolution may be offered for {iname.lower()} cases, and none after its window.\n"
            f"Questions the article answers:\n{questions}"
        )
    else:
        subject = str(f["subject"]).replace("_", " ")
        what = {
            "general": f"the {subject} of {env.company}",
            "category_guide": f"{subject}: a {dict(f.get('data', {})).get('guide', 'buying')} guide",
            "product_guide": f"{subject}: a buying and care guide",
        }.get(kind, subject)
        qa = "\n".join(
            f'- {q["question"]} Answer, stating these exact words: "{s}"'
            for q, s in zip(f["facts"], rules["state"], strict=True)
        )
        article = f"Topic: {what}.\nThe article must answer these questions:\n{qa}"
    return {"article": f"{article}\n{ARTICLE_KINDS.get(kind, '')}".rstrip()}


# What each kind of article covers besides its facts (as the offline writer's articles do, issue 16), so LLM
# articles are of CRMArena's length and kind rather than a list of answers.
ARTICLE_KINDS = {
    "issue_policy": "Also cover: how customers describe the problem (two or three short quoted examples), the "
    "checks agents make, case notes, tone, exceptions and escalation, and when to close the case.",
    "general": "Also cover: how the rule works in practice, common misunderstandings, special cases (gifts, "
    "several items, store or app orders) and how to get help.",
    "category_guide": "Also cover: the materials and features of the range, storage between uses, common care "
    "mistakes, fit advice and what the warranty does and does not cover.",
    "product_guide": "Also cover: choosing the right model, breaking it in, everyday care, storage and "
    "travel, quick troubleshooting and when to contact support.",
}


def _want(f: Mapping[str, Any], env: PromptEnv) -> str:
    want = str(f.get("want") or "")
    phrase = env.phrases.get(want)
    return indefinite(phrase) if phrase else "a fix for the problem"


def _case(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    issue = str(f["issue"])
    return {
        "customer_first": f["customer_first"],
        "tone": f.get("tone", "polite"),
        "product": f["product"],
        "category": f.get("category", ""),
        "noun": f["noun"],
        "issue_name": f.get("issue_name") or issue_name(issue),
        "issue_summary": vocab.ISSUE_DESCRIPTIONS.get(issue, ""),
        "order_date": human_date(str(f["order_date"])),
        "want": _want(f, env),
    }


def _offer_detail(offer: Mapping[str, Any]) -> str:
    bits = []
    if offer.get("amount"):
        bits.append(f"{offer['amount']} points")
    if offer.get("percent"):
        bits.append(f"{offer['percent']}% off")
    if offer.get("valid_days"):
        bits.append(f"valid for {offer['valid_days']} days")
    return f" ({', '.join(bits)})" if bits else ""


def _offer_instruction(offer: Mapping[str, Any] | None, violation: bool) -> str:
    if not offer:
        return "the agent makes no offer of any resolution and says the case will be followed up by email."
    if str(offer.get("remedy", "none")) == "none":
        return (
            "the agent explains that the window for resolving this kind of issue has passed for this order, "
            "so nothing more can be offered, without naming any resolution."
        )
    text = f'the agent offers a resolution using the exact words "{offer["phrase"]}"{_offer_detail(offer)}.'
    if violation:
        text += (
            " (Hidden label: this offer is outside the company policy. Write it as the agent would, confidently, "
            "without any hint that it breaks a rule.)"
        )
    return text


_PLAN = {
    "customer_open": "from the customer: the opening message above, unchanged",
    "customer_reply": "from the customer: answers the agent's last question or asks for an update",
    "customer_thanks": "from the customer: a short thank-you",
    "agent_ack": "from {agent}: acknowledges the case, introduces themself and asks for one detail",
    "agent_transfer": "from {agent}: tells the customer the case is being handed to {next_agent}",
    "agent_takeover": "from {agent}: introduces themself as taking over the case from {prev_agent}",
    "agent_update": "from {agent}: a short status update, no resolution yet",
    "agent_close": "from {agent}: closes the case politely, no resolution named",
}


def _email(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    lines = []
    for i, m in enumerate(f["messages"], start=1):
        kind = str(m["kind"])
        if kind == "agent_offer":
            desc = f"from {m.get('agent', '')}: " + _offer_instruction(
                m.get("offer"), bool(f.get("violation"))
            ).replace("the agent ", "", 1)
            if m.get("close"):
                desc = desc.rstrip(".") + "; then closes the case."
        else:
            desc = _PLAN.get(kind, "from {agent}: a short message").format(
                agent=m.get("agent", ""),
                next_agent=m.get("next_agent", "a colleague"),
                prev_agent=m.get("prev_agent", "a colleague"),
            )
        lines.append(f"{i}. {kind}: {desc}")
    return {
        "customer_first": f["customer_first"],
        "product": f["product"],
        "noun": f["noun"],
        "issue_name": f.get("issue_name", ""),
        "case_subject": f["case_subject"],
        "case_description": f["case_description"],
        "count": len(lines),
        "plan": "\n".join(lines),
        "phrases": _quoted(list(rules["phrases"])),
    }


def _chat(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    issue = str(f.get("issue", ""))
    return {
        "customer_first": f["customer_first"],
        "customer_prefix": rules["customer_prefix"],
        "agent": f["agent"],
        "agent_prefix": rules["agent_prefix"],
        "product": f["product"],
        "noun": f["noun"],
        "issue_name": f.get("issue_name") or issue_name(issue),
        "problem": f.get("problem", ""),
        "offer_rule": _offer_instruction(f.get("offer"), bool(f.get("violation"))),
        "phrases": _quoted(list(rules["phrases"])),
    }


def _paraphrase(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    suffix = rules.get("suffix")
    return {
        "text": f["text"],
        "keep": _quoted(list(rules["keep"])),
        "suffix_rule": (
            f"End with this sentence, unchanged, exactly as in the original: {suffix}"
            if suffix
            else "Keep any answer-format instruction of the original unchanged."
        ),
    }


def _mention(f: Mapping[str, Any], rules: Mapping[str, Any], env: PromptEnv) -> dict[str, Any]:
    return {
        "product": rules["target"],
        "category": f.get("category", ""),
        "noun": f.get("noun", ""),
        "others": _quoted(list(rules["others"])),
    }


_CONTEXTS = {
    TextKind.PRODUCT: _product,
    TextKind.ISSUE: _issue,
    TextKind.CATEGORY: _category,
    TextKind.KNOWLEDGE: _knowledge,
    TextKind.CASE: _case,
    TextKind.EMAIL_THREAD: _email,
    TextKind.CHAT: _chat,
    TextKind.PARAPHRASE: _paraphrase,
    TextKind.PRODUCT_MENTION: _mention,
}
