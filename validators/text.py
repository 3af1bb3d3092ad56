"""Free text: present, whole, not near-duplicated, and saying what the latent world says it says.

The rules themselves (what counts as cut off, as naming a product, as stating a policy window, as an
offer) are `schemas/textrules.py`, the functions the LLM writer checks its texts with before accepting them,
so a text the writer accepted cannot fail here.

- `FREE_TEXT` declares the written fields: each must be non-blank and not look cut off (an ellipsis or a
  dangling comma, colon, dash or bracket at the end; an unclosed bracket; exactly the field's length limit;
  fields that hold prose must end like a sentence).
- `NEAR_DUPLICATE_SCOPE` declares the fields checked for near-duplicates: a pair is reported when the exact
  Jaccard similarity of their word-3-shingle sets is at least 0.5 (`schemas.textsim`, shared with the
  generator). EmailMessage bodies are out of scope on purpose:
  agents legitimately reuse macros.
- Content tied to the latent world (`latent/`):
  - a case's subject or description names its product (Case.OrderItemId__c → OrderItem.Product2Id →
    Product2.Name);
  - a policy article (latent `_kind` = issue_policy) states, for every remedy its issue's policy allows
    (`latent/world/policies.json`), the remedy's canonical phrase with its window in (calendar) days;
  - a case's latent violation label agrees with the policy (a violation offers a remedy the issue's policy
    does not allow, or one past its window; a clean offer is an allowed remedy within its window);
  - the labelled offer is written in the labelled channel (chat agent lines start with
    `<Agent Full Name> (Agent): `; agent emails have Incoming = false) with the remedy's canonical phrase;
  - a case labelled clean makes no offer its policy forbids (a mention of the case's own issue name, as in
    "who handles loyalty points not redeemed cases", is not an offer).
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from schemas import textsim
from schemas.model import OrgModel
from schemas.textrules import (
    CONTROL_PATTERN,
    FREE_TEXT,
    FreeText,
    agent_lines,
    article_screen,
    bare_plurals,
    contains,
    control_characters,
    offered,
    states_window,
    takes_article,
    truncation,
    zero_price,
)
from validators import fidelity
from validators.findings import Finding, finding, show
from validators.load import POLICIES, BundleData
from validators.rules import by_id

__all__ = [
    "FREE_TEXT",
    "NEAR_DUPLICATE_SCOPE",
    "NEAR_DUPLICATE_THRESHOLD",
    "FreeText",
    "agent_lines",
    "check_text",
    "near_duplicate_pairs",
    "near_duplicates",
    "offered",
    "truncation",
    "zero_prices",
]

NEAR_DUPLICATE_SCOPE: tuple[tuple[str, str], ...] = (
    ("Case", "Description"),
    ("LiveChatTranscript", "Body"),
    ("Knowledge__kav", "FAQ_Answer__c"),
    ("Product2", "Description"),
)
NEAR_DUPLICATE_THRESHOLD = textsim.DEFAULT_THRESHOLD


def _file(sobject: str) -> str:
    return f"data/{sobject}.csv"


def check_text(data: BundleData) -> list[Finding]:
    out: list[Finding] = []
    out.extend(_presence(data.raw, data.model))
    out.extend(_controls(data.raw))
    screened = screens(data)
    out.extend(_doublings(data.raw, screened))
    out.extend(_bare_articles(data, screened))
    out.extend(zero_prices(data.raw, screened))
    out.extend(near_duplicates(data.raw))
    out.extend(_products(data.raw))
    out.extend(_policies(data))
    out.extend(_offers(data))
    return out


# -- present and whole --------------------------------------------------------------------------------------


def _presence(raw: dict[str, pd.DataFrame], model: OrgModel) -> list[Finding]:
    out = []
    for spec in FREE_TEXT:
        frame = raw.get(spec.sobject)
        if frame is None:
            continue
        limit = model.get(spec.sobject).field(spec.field).length
        columns = (frame["Id"].tolist(), frame["_line"].tolist(), frame[spec.field].tolist())
        for rid, line, text in zip(*columns, strict=True):
            if text is None or not str(text).strip():
                name = f"{spec.sobject} {rid}: `{spec.field}`"
                out.append(
                    finding(
                        "text.empty",
                        f"{name} is empty; every {spec.sobject} needs this text (rerun the writer for it).",
                        object=spec.sobject,
                        record=rid,
                        field=spec.field,
                        file=_file(spec.sobject),
                        line=line,
                    )
                )
                continue
            why = truncation(str(text), limit, spec.prose)
            if why:
                name = f"{spec.sobject} {rid}: `{spec.field}`"
                out.append(
                    finding(
                        "text.truncated",
                        f"{name} looks cut off: {why}. Regenerate the text whole.",
                        object=spec.sobject,
                        record=rid,
                        field=spec.field,
                        file=_file(spec.sobject),
                        line=line,
                    )
                )
    return out


_CONTROL_SCAN = re.compile(CONTROL_PATTERN)
# The bytes of an ASCII text that CONTROL_PATTERN does not match (all but U+0000-U+0008, U+000B, U+000C,
# U+000E-U+001F and U+007F; its U+0080-U+009F are not ASCII): deleting them leaves the control characters.
_NOT_CONTROL_ASCII = bytes(c for c in range(256) if not _CONTROL_SCAN.match(chr(c)) or c > 127)


def _has_control(text: str) -> bool:
    """Whether `text` holds a character CONTROL_PATTERN matches: for ASCII text by deleting every other byte
    (one C pass, about three times faster than the pattern's scan), else by the scan."""
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _NOT_CONTROL_ASCII))
    return _CONTROL_SCAN.search(text) is not None


CONTROL_LIMIT = 20  # rows of one column reported by `_controls`


def _controls(raw: dict[str, pd.DataFrame]) -> list[Finding]:
    """Every cell of every object holding a NUL or another control character (tabs and line breaks aside):
    no field of a Salesforce record should, and many clients cut the text at a NUL."""
    out = []
    for sobject, frame in raw.items():
        for column in frame.columns:
            if column == "_line":
                continue
            cells = frame[column]
            # One scan of the whole column first: the pattern matches single characters and the separator is
            # not one of them, so the joined text holds a control character exactly when some cell does (the
            # cells are strings or None; empty ones hold none and are left out).
            if not _has_control("\n".join(filter(None, cells.tolist()))):
                continue
            hits = cells.astype("string").str.contains(CONTROL_PATTERN, regex=True, na=False)
            for pos in hits.to_numpy().nonzero()[0][:CONTROL_LIMIT]:  # the first of a column
                rid = frame["Id"].iat[pos] if "Id" in frame.columns else None
                chars = ", ".join(control_characters(str(cells.iat[pos]))[:5])
                out.append(
                    finding(
                        "text.control-character",
                        f"{sobject} {rid}: `{column}` holds control characters ({chars}); remove them (a NUL "
                        "cuts the text in many clients) or rebuild the bundle.",
                        object=sobject,
                        record=rid,
                        field=column,
                        file=_file(sobject),
                        line=int(frame["_line"].iat[pos]),
                    )
                )
    return out


# Joins a column's texts for a screening scan: a NUL is neither a word character nor white space, so the
# patterns screened with it (`_screened`) see it as they see a text's start or end, and never match across it.
_JOIN = "\x00"


def _free_texts(
    raw: dict[str, pd.DataFrame],
    screen: Callable[[str], object] | None = None,
    screened: Callable[[FreeText], bool] | None = None,
) -> Iterator[tuple[FreeText, str, Any, str]]:
    """(field spec, record id, line, text) for every written free text (`FREE_TEXT`) of the records in `raw`.

    With `screen`, a column is first tested whole: its texts joined by a NUL, one C scan instead of one call
    per record. `screen(joined)` must be truthy whenever the rule finds something in any one of the texts (a
    pattern that cannot match a NUL and treats it as a text boundary); a column it passes is skipped.
    `screened(spec)`, when given, is that verdict already reached for the column (`screens`)."""
    for spec in FREE_TEXT:
        frame = raw.get(spec.sobject)
        if frame is None or spec.field not in frame.columns:
            continue
        if screened is not None:
            if not screened(spec):
                continue
        elif screen is not None and not screen(_joined(frame, spec.field)):
            continue
        for rid, line, text in zip(frame["Id"], frame["_line"], frame[spec.field], strict=True):
            if isinstance(text, str):
                yield spec, rid, line, text


def _joined(frame: pd.DataFrame, field: str) -> str:
    return _JOIN.join(t for t in frame[field].tolist() if isinstance(t, str))


Screens = dict[tuple[str, str], tuple[bool, bool, bool]]


def screens(data: BundleData) -> Screens:
    """Per free-text column of `data.raw`: whether `_doublings`, `_bare_articles` and `zero_prices` may
    find something in it (their screens' verdicts), each column joined once. Where every phrase of the bare
    article rule is ASCII and the joined column is ASCII, the doubling and bare article patterns (both for
    lower-cased ASCII text) are searched as one alternation, one scan: it matches somewhere exactly when one
    of them does; only a column it matches in is screened by each rule alone."""
    phrases = _bare_phrases(data)
    bare_screen = _bare_screen(phrases)
    combined = article_screen(tuple(phrases.values())) if phrases and bare_screen is not None else None
    out: Screens = {}
    for spec in FREE_TEXT:
        frame = data.raw.get(spec.sobject)
        if frame is None or spec.field not in frame.columns:
            continue
        joined = _joined(frame, spec.field)
        zero = bool(zero_price(joined))
        if combined is not None and joined.isascii() and not combined.search(joined.lower()):
            out[(spec.sobject, spec.field)] = (False, False, zero)
            continue
        doubled = bool(fidelity.doublings(joined))
        bare = bool(phrases) and (bare_screen is None or bool(bare_screen(joined)))
        out[(spec.sobject, spec.field)] = (doubled, bare, zero)
    return out


def _verdict(found: Screens | None, k: int) -> Callable[[FreeText], bool] | None:
    if found is None:
        return None
    return lambda spec: found.get((spec.sobject, spec.field), (True, True, True))[k]


def _text_finding(rule: str, spec: FreeText, rid: str, line: Any, message: str) -> Finding:
    return finding(
        rule,
        message,
        object=spec.sobject,
        record=rid,
        field=spec.field,
        file=_file(spec.sobject),
        line=line,
    )


def _doublings(raw: dict[str, pd.DataFrame], screened: Screens | None = None) -> list[Finding]:
    """Every free-text field (`FREE_TEXT`) of every record that doubles an article or determiner ("My the
    product", "The an XL", "a the"): one finding per record and field, quoting the first doubling. `screened`:
    `screens` of `raw`, when the caller has them."""
    out = []
    for spec, rid, line, text in _free_texts(raw, fidelity.doublings, _verdict(screened, 0)):
        found = fidelity.doublings(text)
        if not found:
            continue
        at = fidelity.DOUBLING.search(text)
        where = text[max(0, at.start() - 30) : at.end() + 30] if at else found[0]
        message = (
            f"{spec.sobject} {rid}: `{spec.field}` reads {found[0]!r} (in {where!r}"
            + (f", and {len(found) - 1} more" if len(found) > 1 else "")
            + "); fix the writer's template that produced it and rebuild."
        )
        out.append(_text_finding("text.doubled-determiner", spec, rid, line, message))
    return out


def _bare_phrases(data: BundleData) -> dict[str, str]:
    return {k: v for k, v in _phrases(data)[0].items() if not takes_article(v)}


def _bare_screen(phrases: dict[str, str]) -> Callable[[str], object] | None:
    # a phrase holding a NUL could match across the join: then no screening
    return None if any(_JOIN in p for p in phrases.values()) else partial(bare_plurals, phrases=phrases)


def _bare_articles(data: BundleData, screened: Screens | None = None) -> list[Finding]:
    """Every free-text field that puts "a"/"an" before a remedy phrase that takes none ("a loyalty points",
    "A store credit"): a slot filled without looking at its noun. One finding per record and field.
    `screened`: `screens` of `data.raw`, when the caller has them."""
    phrases = _bare_phrases(data)
    if not phrases:
        return []
    out = []
    for spec, rid, line, text in _free_texts(data.raw, _bare_screen(phrases), _verdict(screened, 1)):
        found = bare_plurals(text, phrases)
        if found:
            message = (
                f"{spec.sobject} {rid}: `{spec.field}` reads {found[0]!r}, an article before a plural or "
                "mass noun; fix the writer's template that produced it (schemas.textrules.indefinite) and "
                "rebuild."
            )
            out.append(_text_finding("text.article-before-plural", spec, rid, line, message))
    return out


def zero_prices(raw: dict[str, pd.DataFrame], screened: Screens | None = None) -> list[Finding]:
    """Every written text that states a purchase at no cost ("$0.00"): a template fed a missing price.
    `screened`: `screens` of `raw`, when the caller has them."""
    out = []
    for spec, rid, line, text in _free_texts(raw, zero_price, _verdict(screened, 2)):
        amount = zero_price(text)
        if amount:
            message = (
                f"{spec.sobject} {rid}: `{spec.field}` says the item cost {amount}; nothing is sold for nothing, "
                "so the writer was given no price. Pass the order item's UnitPrice and rebuild."
            )
            out.append(_text_finding("text.zero-price", spec, rid, line, message))
    return out


# -- near-duplicates ------------------------------------------------------------------------------------------


def near_duplicate_pairs(texts: Sequence[str | None]) -> list[tuple[int, int, float]]:
    """(i, j, similarity) for i < j whose word-3-shingle Jaccard similarity is at least the threshold.

    The definition (and the search) is `schemas.textsim`, the same one the generator uses when it rewrites
    near-duplicates, so a bundle orgseed generated never fails this check and any other near-duplicate does.
    """
    return textsim.near_duplicates(texts, NEAR_DUPLICATE_THRESHOLD)


def near_duplicates(
    raw: dict[str, pd.DataFrame], pairs: dict[tuple[str, str], list[tuple[int, int, float]]] | None = None
) -> list[Finding]:
    """A finding per near-duplicate pair of each field of NEAR_DUPLICATE_SCOPE in `raw`; `pairs`, when given,
    holds a field's pairs already searched (`near_duplicate_pairs` of its texts, in the frame's order)."""
    out = []
    for sobject, field in NEAR_DUPLICATE_SCOPE:
        frame = raw.get(sobject)
        if frame is None:
            continue
        texts = frame[field].tolist()
        ids = frame["Id"].tolist()
        lines = frame["_line"].tolist()
        found = pairs.get((sobject, field)) if pairs is not None else None
        for i, j, sim in near_duplicate_pairs(texts) if found is None else found:
            out.append(
                finding(
                    "text.near-duplicate",
                    f"{sobject} {ids[j]}: `{field}` is a near-duplicate of {sobject} {ids[i]}'s (line {lines[i]}): "
                    f"Jaccard similarity {sim:.2f} of word 3-shingles, threshold {NEAR_DUPLICATE_THRESHOLD}. "
                    f"It reads {show(texts[j], 60)}. Rewrite one of them.",
                    object=sobject,
                    record=ids[j],
                    field=field,
                    file=_file(sobject),
                    line=lines[j],
                    related=[ids[i]],
                )
            )
    return out


# -- cases name their products ------------------------------------------------------------------------------


def _products(raw: dict[str, pd.DataFrame]) -> list[Finding]:
    if not all(o in raw for o in ("Case", "OrderItem", "Product2")):
        return []
    return case_products(raw["Case"], by_id(raw["OrderItem"], "Product2Id"), by_id(raw["Product2"], "Name"))


def case_products(cases: pd.DataFrame, item_product: pd.Series, names: pd.Series) -> list[Finding]:
    """`_products` of some cases (Id, _line, Subject, Description, OrderItemId__c), given each order item's
    product and each product's name (by id): a case at a time, so the cases may come a block at a time."""
    product = cases["OrderItemId__c"].map(item_product)
    name = product.map(names)
    out = []
    for rid, line, subject, desc, pid, pname in zip(
        cases["Id"], cases["_line"], cases["Subject"], cases["Description"], product, name, strict=True
    ):
        if not isinstance(pname, str) or not (subject or desc):
            continue  # unresolved references and empty texts are reported by their own rules
        if not (contains(subject or "", pname) or contains(desc or "", pname)):
            out.append(
                finding(
                    "text.product-missing",
                    f"Case {rid} is about Product2 {pid} ({pname!r}), but neither its Subject nor its Description names "
                    "it; a case's text must name its product so the task answers can be found.",
                    object="Case",
                    record=rid,
                    field="Description",
                    file=_file("Case"),
                    line=line,
                )
            )
    return out


# -- policies -----------------------------------------------------------------------------------------------


def _phrases(data: BundleData) -> tuple[dict[str, str], list[Finding]]:
    """remedy → canonical phrase, and findings for policies naming remedies without one."""
    policies = data.policies or {}
    remedies = policies.get("remedies", {}) if isinstance(policies.get("remedies"), dict) else {}
    phrases = {
        k: str(v["phrase"])
        for k, v in remedies.items()
        if isinstance(v, dict) and isinstance(v.get("phrase"), str)
    }
    out = []
    issues = policies.get("issues", {}) if isinstance(policies.get("issues"), dict) else {}
    for key, issue in sorted(issues.items()):
        for remedy in (issue or {}).get("remedies", {}):
            if remedy not in phrases:
                out.append(
                    finding(
                        "text.policy-unknown-remedy",
                        f"The `{key}` policy allows remedy `{remedy}`, which has no canonical phrase under /remedies; "
                        "add it there (or fix the remedy's name), so texts can state and offer it.",
                        file=POLICIES,
                        pointer=f"/issues/{key}/remedies/{remedy}",
                    )
                )
    return phrases, out


def _policy_of(data: BundleData, issue: str) -> dict[str, int] | None:
    issues = (data.policies or {}).get("issues", {})
    policy = issues.get(issue) if isinstance(issues, dict) else None
    if not isinstance(policy, dict) or not isinstance(policy.get("remedies"), dict):
        return None
    return {str(k): int(v) for k, v in policy["remedies"].items()}


def _policies(data: BundleData) -> list[Finding]:
    if data.policies is None:
        return []
    phrases, out = _phrases(data)
    latent = data.latent.get("Knowledge__kav")
    articles = data.raw.get("Knowledge__kav")
    if latent is None or articles is None:
        return out
    body = articles.drop_duplicates("Id").set_index("Id")
    for rid, kind, issue in zip(latent["Id"], latent["_kind"], latent["_subject"], strict=True):
        if kind != "issue_policy" or rid not in body.index:
            continue
        row = body.loc[rid]
        text = row["FAQ_Answer__c"]
        if not isinstance(text, str):
            continue  # text.empty
        policy = _policy_of(data, str(issue))
        if policy is None:
            out.append(
                finding(
                    "text.policy-window",
                    f"Knowledge__kav {rid} is a policy article for issue `{issue}`, but {POLICIES} has no policy "
                    f"for it (/issues/{issue}); the article's windows cannot be checked.",
                    object="Knowledge__kav",
                    record=rid,
                    field="FAQ_Answer__c",
                    file=_file("Knowledge__kav"),
                    line=row["_line"],
                )
            )
            continue
        for remedy, window in policy.items():
            phrase = phrases.get(remedy)
            if phrase is None:
                continue  # text.policy-unknown-remedy
            if not states_window(text, phrase, window):
                out.append(
                    finding(
                        "text.policy-window",
                        f"Knowledge__kav {rid} (the `{issue}` policy) does not state that a {phrase!r} can be offered "
                        f"within {window} days of purchase; expected a sentence naming {phrase!r} and '{window} days'.",
                        object="Knowledge__kav",
                        record=rid,
                        field="FAQ_Answer__c",
                        file=_file("Knowledge__kav"),
                        line=row["_line"],
                    )
                )
    return out


# -- offers and violations ------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Message:
    sobject: str
    id: str | None
    line: int
    channel: str  # chat | email
    offer: bool  # latent: the message meant to carry the offer (emails), or the chat
    offers: list[str]  # the remedies its text offers (worked out as its object was read: `MessageOffers`)


def _allowed(remedy: str, days: int, policy: dict[str, int]) -> bool:
    return remedy in policy and days <= policy[remedy]


def _policy_text(policy: dict[str, int], phrases: dict[str, str]) -> str:
    return ", ".join(f"{phrases.get(r, r)} ({w} days)" for r, w in policy.items()) or "nothing"


# the agent-written messages of a case: object → (the column naming the case, the text's column, the
# channel); an email is the agent's when it is not incoming
MESSAGES = {
    "LiveChatTranscript": ("CaseId", "Body", "chat"),
    "EmailMessage": ("ParentId", "TextBody", "email"),
}


_NO_OFFER: list[str] = []  # what a message offering nothing offers (one list for all; never changed)


@dataclass
class CaseIssues:
    """Each case id's number (in the order the ids first come among the cases) and, by number, the name of the
    case's issue (as `_offers` takes it: a repeated id's last row), for `MessageOffers`."""

    code: dict[str, int]
    names: list[str | None]

    @classmethod
    def of(cls, cases: pd.DataFrame, issues: pd.DataFrame) -> CaseIssues:
        issue_name = dict(zip(issues["Id"].tolist(), issues["Name"].tolist(), strict=True))
        code: dict[str, int] = {}
        names: list[str | None] = []
        for cid, issue in zip(cases["Id"].tolist(), cases["IssueId__c"].tolist(), strict=True):
            if not isinstance(cid, str):
                continue  # no message names a case without an id
            k = code.setdefault(cid, len(names))
            if k == len(names):
                names.append(issue_name.get(issue))
            else:
                names[k] = issue_name.get(issue)
        return cls(code, names)


@dataclass
class MessageOffers:
    """The agent-written messages of one message object (the chats, or the outgoing emails) that name a case
    among `cases` and have a text, as `_offers` reads them, worked out a block of rows at a time as the object is
    read (`feed`), so neither their texts nor their frame need be held: per message, in record order, its case's
    number, its line, its id and the remedies its text offers (`offered` of the agent's words, for its case's
    issue name). Held in arrays, not as objects (a few objects kept from every block, among the many let go,
    would pin the memory of those let go; at scale 300 the frames and per-message arrays these replace were
    ~200 MB of the offers step): an id is its UTF-8 bytes in `ids`, ending at `ends` (no bytes: no id)."""

    sobject: str
    phrases: dict[str, str]
    cases: CaseIssues
    case: array[int] = dc_field(default_factory=lambda: array("i"))  # its case's number
    line: array[int] = dc_field(default_factory=lambda: array("q"))
    ends: array[int] = dc_field(default_factory=lambda: array("q"))  # where its id ends in `ids`
    ids: bytearray = dc_field(default_factory=bytearray)
    codes: array[int] = dc_field(default_factory=lambda: array("i"))  # index into `kinds`
    kinds: list[list[str]] = dc_field(default_factory=lambda: [_NO_OFFER])  # the distinct lists of remedies
    codes_of: dict[tuple[str, ...], int] = dc_field(default_factory=lambda: {(): 0})  # a list → its index

    @classmethod
    def start(cls, sobject: str, data: BundleData, cases: CaseIssues) -> MessageOffers:
        phrases, _ = _phrases(data)
        return cls(sobject, phrases, cases)

    def feed(self, block: pd.DataFrame) -> None:
        case_column, text_column, channel = MESSAGES[self.sobject]
        rows = (
            np.flatnonzero((block["Incoming"] == "false").to_numpy()).tolist()
            if channel == "email"
            else range(len(block))
        )
        code, names = self.cases.code, self.cases.names
        cases, texts = block[case_column].to_numpy(), block[text_column].to_numpy()
        ids, lines = block["Id"].to_numpy(), block["_line"].to_numpy()
        for pos in rows:
            case, body = cases[pos], texts[pos]
            k = code.get(case, -1) if isinstance(case, str) else -1
            if k < 0 or not isinstance(body, str):
                continue  # not a message of any case `_offers` looks at, or no message (no text)
            got = offered(agent_lines(body) if channel == "chat" else body, self.phrases, names[k])
            kind = self.codes_of.setdefault(tuple(got), len(self.kinds))
            if kind == len(self.kinds):
                self.kinds.append(got)
            rid = ids[pos]
            if isinstance(rid, str):
                self.ids += rid.encode("utf-8", "surrogatepass")
            self.case.append(k)
            self.line.append(int(lines[pos]))
            self.ends.append(len(self.ids))
            self.codes.append(kind)

    def __len__(self) -> int:
        return len(self.case)

    def id(self, i: int) -> str | None:
        """Message `i`'s id."""
        start = self.ends[i - 1] if i else 0
        end = self.ends[i]
        return self.ids[start:end].decode("utf-8", "surrogatepass") if end > start else None


def _offers(data: BundleData, read: dict[str, MessageOffers] | None = None) -> list[Finding]:
    """The latent offers and violations against the texts. `read`: the messages of these objects, worked out
    as they were read (`MessageOffers`); their frames are not read (a staged run does not hold them)."""
    latent = data.latent.get("Case")
    if latent is None or data.policies is None or not data.has("Case", "Issue__c"):
        return []
    phrases, _ = _phrases(data)
    issue_key: dict[str, str] = {}
    if "Issue__c" in data.latent:
        issue_key = dict(
            zip(data.latent["Issue__c"]["Id"], data.latent["Issue__c"]["_issue_key"], strict=True)
        )
    case_frame = data.raw["Case"]
    # case id → (its issue id, its line): a tuple per case, not a dict (~40 MB less at scale 300)
    cases = dict(
        zip(
            case_frame["Id"].tolist(),
            zip(case_frame["IssueId__c"].tolist(), case_frame["_line"].tolist(), strict=True),
            strict=True,
        )
    )
    messages = _messages(data, read or {})
    policy_of: dict[str | None, dict[str, int] | None] = {}
    wanted = ["Id", "_line", "_offer_channel", "_offer_remedy", "_violation", "_days_since_purchase"]
    out: list[Finding] = []
    columns = [latent[c].tolist() if c in latent.columns else [None] * len(latent) for c in wanted]
    for values, at in zip(zip(*columns, strict=True), messages.codes(columns[0]), strict=True):
        row = dict(zip(wanted, values, strict=True))
        cid = row["Id"]
        case = cases.get(cid)
        if case is None:
            continue
        case_issue, case_line = case
        issue = issue_key.get(case_issue)
        if issue not in policy_of:  # one per issue, not per case
            policy_of[issue] = _policy_of(data, issue) if issue else None
        policy = policy_of[issue]
        if policy is None:
            continue
        channel = row.get("_offer_channel") or "none"
        remedy = row.get("_offer_remedy") or "none"
        violation = row.get("_violation") == "true"
        try:
            days = int(row.get("_days_since_purchase") or 0)
        except ValueError:
            continue
        where = dict(object="Case", record=cid, file="latent/Case.csv", line=row["_line"])
        # The label against the policy.
        if violation and (remedy == "none" or channel == "none" or _allowed(remedy, days, policy)):
            out.append(
                finding(
                    "text.violation-label",
                    f"Case {cid} is labelled a violation (`_violation` = true), but offering "
                    f"{phrases.get(remedy, remedy)!r} by {channel} {days} days after purchase is allowed by the `{issue}` "
                    f"policy ({_policy_text(policy, phrases)}).",
                    field="_violation",
                    **where,
                )
            )
        if not violation and remedy != "none" and not _allowed(remedy, days, policy):
            out.append(
                finding(
                    "text.violation-label",
                    f"Case {cid} is labelled clean (`_violation` = false), but it offers {phrases.get(remedy, remedy)!r} "
                    f"{days} days after purchase, which the `{issue}` policy does not allow ({_policy_text(policy, phrases)}).",
                    field="_violation",
                    **where,
                )
            )
        case_messages = messages.of(at)
        # The labelled offer is written in its channel.
        if remedy != "none" and channel in ("chat", "email") and remedy in phrases:
            carriers = [m for m in case_messages if m.channel == channel]
            if not any(remedy in m.offers for m in carriers):
                target = next((m for m in carriers if m.offer), None)
                loc: dict[str, Any] = (
                    dict(
                        object=target.sobject,
                        record=target.id,
                        field=_text_field(target),
                        file=_file(target.sobject),
                        line=target.line,
                    )
                    if target
                    else dict(object="Case", record=cid, file=_file("Case"), line=case_line)
                )
                label = "violating" if violation else "clean"
                out.append(
                    finding(
                        "text.offer-missing",
                        f"Case {cid} is labelled with a {label} offer of {phrases[remedy]!r} in its {channel}, but no "
                        f"agent {'line' if channel == 'chat' else 'email'} of the case uses that phrase"
                        f"{' (searched ' + ', '.join(m.id or '(no id)' for m in carriers) + ')' if carriers else ' (the case has no ' + channel + ')'}.",
                        **loc,
                    )
                )
        # A case labelled clean makes no forbidden offer.
        if not violation:
            for m in case_messages:
                bad = [r for r in m.offers if not _allowed(r, days, policy)]
                for r in bad:
                    out.append(
                        finding(
                            "text.unlabelled-violation",
                            f"Case {cid} is labelled clean, but the agent offers {phrases[r]!r} in {m.sobject} {m.id}, "
                            f"{days} days after purchase; the `{issue}` policy allows {_policy_text(policy, phrases)}. "
                            "Either the text or the label is wrong.",
                            object=m.sobject,
                            record=m.id,
                            field=_text_field(m),
                            file=_file(m.sobject),
                            line=m.line,
                        )
                    )
    return out


def _text_field(m: _Message) -> str:
    return MESSAGES[m.sobject][1]


class _CaseMessages:
    """Every agent-written message of every case (`_messages`): the objects' `MessageOffers` and, by case, the
    messages' places among them; `of(k)` makes case `k`'s messages when `_offers` checks it (at scale 1,000,
    ~2 M messages held as objects were most of the step's ~960 MB over what it started from)."""

    def __init__(self, read: list[MessageOffers], carriers: set[str]) -> None:
        self.read, self.carriers = read, carriers
        self.code: dict[str, int] = read[0].cases.code if read else {}
        if any(done.cases is not read[0].cases for done in read):
            raise ValueError("the message objects were read against different cases")
        cases = np.concatenate(
            [np.frombuffer(done.case, dtype=np.int32) for done in read] or [np.empty(0, dtype=np.int32)]
        )
        # by case, each case's messages in the order they were read (the chats, then the emails; each in
        # record order), as appending them to a list per case orders them
        self.order = np.argsort(cases, kind="stable")
        self.bounds = np.searchsorted(cases[self.order], np.arange(len(self.code) + 1))
        self.starts = np.cumsum([0, *(len(done) for done in read)])

    def codes(self, case_ids: list[Any]) -> list[int]:
        """Each case id's number for `of` (-1: no message names the case)."""
        code = self.code
        return [code.get(c, -1) if isinstance(c, str) else -1 for c in case_ids]

    def of(self, k: int) -> list[_Message]:
        """Case `k`'s messages (none for -1)."""
        if k < 0:
            return []
        out = []
        for g in self.order[int(self.bounds[k]) : int(self.bounds[k + 1])].tolist():
            s = int(np.searchsorted(self.starts, g, side="right")) - 1
            done, i = self.read[s], g - int(self.starts[s])
            channel = MESSAGES[done.sobject][2]
            rid = done.id(i)
            out.append(
                _Message(
                    done.sobject,
                    rid,
                    done.line[i],
                    channel,
                    channel == "chat" or rid in self.carriers,
                    done.kinds[done.codes[i]],
                )
            )
        return out


def _messages(data: BundleData, read: dict[str, MessageOffers]) -> _CaseMessages:
    """Every agent-written message of every case: chat transcripts (their agent lines) and outgoing emails.
    The objects in `read` were worked out as they were read (their frames are not read); the others are
    worked out here from their frames."""
    # the emails meant to carry their case's offer (an id's last latent row says): a set of those, not a
    # kind per email (~100 MB less at scale 300)
    carriers: set[str] = set()
    latent = data.latent.get("EmailMessage")
    if latent is not None and "_kind" in latent.columns and "EmailMessage" in (*data.raw, *read):
        last = latent.drop_duplicates("Id", keep="last")
        carriers = set(last["Id"][(last["_kind"] == "agent_offer").to_numpy()].tolist())
    cases = next((done.cases for done in read.values()), None)
    sources = []
    for sobject in MESSAGES:
        done = read.get(sobject)
        if done is None and sobject in data.raw and data.has("Case", "Issue__c"):
            if cases is None:
                cases = CaseIssues.of(data.raw["Case"], data.raw["Issue__c"])
            done = MessageOffers.start(sobject, data, cases)
            done.feed(data.raw[sobject])
        if done is not None:
            sources.append(done)
    return _CaseMessages(sources, carriers)
