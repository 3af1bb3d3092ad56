"""The text rules: one definition of what a written text must be, shared by the writer and the validators.

The LLM writer checks every text against these rules before it accepts (and pays for) it
(`generator/text/checks.py`); the validators judge a bundle's texts by the same functions
(`validators/text.py`). Both call the functions below, so a text the writer accepted cannot fail
validation (`tests/text/test_text_rules.py` proves it over generated texts). Like `textsim.py`, this
module sits on the bottom floor so that both floors above can import it.

- `FREE_TEXT`: the written fields, and which of them hold prose (they must end like a sentence).
- `field_problem` / `truncation`: a field's text is present, within the field's length, and not cut off
  (an ellipsis; a dangling comma, colon, dash or bracket; an unclosed bracket; exactly the field's limit;
  prose that does not end like a sentence).
- `doublings`: article/determiner doublings ("My the product", "The an XL"), which `field_problem` rejects.
- `indefinite` / `bare_plurals`: "a"/"an" before a noun phrase that takes one ("a full refund", "an order
  cancellation", but "store credit", "loyalty points"), and the phrases a text wrongly gives one ("a loyalty
  points", "a store credit"): a slot filled without looking at its noun.
- `contains`: a name or snippet appears, case-insensitive, with runs of whitespace counted as one space.
- `states_window`: one sentence names a remedy's phrase and its window: "30 days", "30-day",
  "30 calendar days" (the windows are calendar days); "30 business days" or "130 days" do not state it.
- `zero_price`: a purchase stated at no cost ("$0.00", "$0", "$ 0.0"): nothing orgseed sells is free, so
  such an amount is a template fed a missing price.
- `agent_lines` / `offered`: the agent's part of a chat transcript, and the remedies a text offers: a
  remedy's canonical phrase on word boundaries, case- and whitespace-insensitive, outside any mention of the
  case's own issue name (an agent naming the issue "Loyalty points not redeemed" offers nothing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

AGENT_SUFFIX = " (Agent)"  # a chat speaker who is an agent: "<Agent Full Name> (Agent): "


@dataclass(frozen=True)
class FreeText:
    sobject: str
    field: str
    prose: bool  # ends like a sentence (. ! ?), optionally followed by a closing quote or bracket


FREE_TEXT: tuple[FreeText, ...] = (
    FreeText("Case", "Subject", prose=False),
    FreeText("Case", "Description", prose=False),  # may end with a sign-off name
    FreeText("EmailMessage", "Subject", prose=False),
    FreeText("EmailMessage", "TextBody", prose=False),  # may end with a signature
    FreeText("LiveChatTranscript", "Body", prose=True),
    FreeText("Knowledge__kav", "Title", prose=False),
    FreeText("Knowledge__kav", "Summary", prose=True),
    FreeText("Knowledge__kav", "FAQ_Answer__c", prose=True),
    FreeText("Product2", "Name", prose=False),
    FreeText("Product2", "Description", prose=True),
    FreeText("ProductCategory", "Description", prose=True),
    FreeText("Issue__c", "Name", prose=False),
    FreeText("Issue__c", "Description__c", prose=True),
    FreeText("Pricebook2", "Description", prose=True),
)
_FREE_TEXT = {(f.sobject, f.field): f for f in FREE_TEXT}


def free_text(sobject: str, field: str) -> FreeText:
    """The declaration of a written field (KeyError for a field that is not free text)."""
    return _FREE_TEXT[(sobject, field)]


# -- present and whole ----------------------------------------------------------------------------------------

_DANGLING = (",", ";", ":", "-", "–", "—", "(", "[", "{", "/", "&", "\\")
_ELLIPSIS = ("...", "…")
_SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
# Unicode's control characters (category Cc: U+0000-U+001F, U+007F-U+009F) except tab, line feed, return.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
CONTROL_PATTERN = _CONTROL.pattern  # for vectorised scans (pandas `str.contains`)


def truncation(text: str, limit: int | None, prose: bool) -> str | None:
    """Why `text` looks cut off, or None."""
    body = text.rstrip()
    if limit is not None and len(text) == limit:
        return f"it is exactly {limit} characters long, the field's limit"
    if body.endswith(_ELLIPSIS):
        return "it ends with an ellipsis"
    if body.endswith(_DANGLING):
        return f"it ends with `{body[-1]}`"
    for opening, closing in (("(", ")"), ("[", "]")):
        if opening in body and body.count(opening) > body.count(closing):
            return f"a `{opening}` is never closed"
    if prose and not _SENTENCE_END.search(body):
        tail = body[-30:].replace("\n", "\\n")
        return f"it ends mid-sentence (`{tail}`)"
    return None


def control_characters(text: str) -> list[str]:
    """The control characters of `text` other than line breaks and tabs, as U+XXXX, in order of appearance."""
    found = dict.fromkeys(_CONTROL.findall(text))
    return [f"U+{ord(c):04X}" for c in found]


def field_problem(text: str, limit: int | None, prose: bool) -> str | None:
    """Why `text` cannot be the value of a written field of at most `limit` characters, or None.

    Everything the validators ask of a written field (present, within its length, not cut off), plus no
    control characters (line breaks and tabs aside), which no writer should produce.
    """
    if not text.strip():
        return "is empty"
    if limit is not None and len(text) > limit:
        return f"is {len(text)} characters long, more than the field's limit of {limit}; write it shorter"
    why = truncation(text, limit, prose)
    if why:
        return f"looks cut off: {why}"
    controls = control_characters(text)
    if controls:
        return f"contains control characters ({', '.join(controls[:5])})"
    doubled = doublings(text)
    if doubled:
        return f"doubles an article or determiner ({doubled[0]!r}); rewrite that phrase"
    return None


# A determiner directly followed by an article or determiner is a template bug ("My the", "The the",
# "a the", "The an XL"). "her" is left out on purpose: "I gave her the receipt" is English.
_FIRST = "a|an|the|my|your|our|their|his|its"
_SECOND = "a|an|the|my|your|our|their"
DOUBLING = re.compile(rf"\b(?:{_FIRST})\s+(?:{_SECOND})\b", re.IGNORECASE)
# The same pattern without IGNORECASE, for ASCII texts lower-cased first (about twice as fast): lower-casing
# ASCII keeps every character's position, and for ASCII text and an ASCII pattern ignoring case is exactly
# matching the lower-cased text. Texts with other characters keep the IGNORECASE pattern (Unicode case folding
# is more than `str.lower`, e.g. U+212A KELVIN SIGN matches "k").
_DOUBLING_LOWER = re.compile(rf"\b(?:{_FIRST})\s+(?:{_SECOND})\b")


def doublings(text: str | None) -> list[str]:
    """Every article/determiner doubling in the text ("My the", "the the", "a the"), as written."""
    text = text or ""
    if text.isascii():
        return [text[m.start() : m.end()] for m in _DOUBLING_LOWER.finditer(text.lower())]
    return [m.group(0) for m in DOUBLING.finditer(text)]


# Nouns that take no "a"/"an" (mass nouns); a phrase ending in a plural ("loyalty points") takes none either.
MASS_NOUNS = frozenset(
    [
        "advice",
        "apparel",
        "clothing",
        "credit",
        "equipment",
        "footwear",
        "gear",
        "information",
        "insurance",
        "luggage",
        "merchandise",
        "postage",
        "shipping",
        "support",
    ]
)


def takes_article(phrase: str) -> bool:
    """Whether "a"/"an" can stand before the noun phrase: not before a plural or a mass noun."""
    words = phrase.lower().split()
    if not words:
        return False
    last = words[-1]
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    return not plural and last not in MASS_NOUNS


def indefinite(phrase: str) -> str:
    """The phrase as an indefinite noun phrase: "a full refund", "an order cancellation", "store credit",
    "loyalty points" (no article before a plural or a mass noun)."""
    if not takes_article(phrase):
        return phrase
    return f"{'an' if phrase[:1].lower() in 'aeiou' else 'a'} {phrase}"


def bare_plurals(text: str | None, phrases: Mapping[str, str] | list[str] | tuple[str, ...]) -> list[str]:
    """Every "a"/"an" the text puts before one of `phrases` that takes none ("a loyalty points",
    "A store credit"), as written."""
    values = phrases.values() if isinstance(phrases, Mapping) else phrases
    if not text:
        return []
    ascii_pattern, pattern = _bare_patterns(tuple(values))
    if pattern is None:
        return []
    if ascii_pattern is not None and text.isascii():  # as in `doublings`: same matches, faster
        return [text[m.start() : m.end()] for m in ascii_pattern.finditer(text.lower())]
    return [m.group(0) for m in pattern.finditer(text)]


@cache
def _bare_patterns(values: tuple[str, ...]) -> tuple[re.Pattern[str] | None, re.Pattern[str] | None]:
    """For the phrases that take no article (longest first, so the pattern tries them first): the pattern for
    lower-cased ASCII texts (None unless every such phrase is ASCII) and the case-insensitive pattern (None
    when no phrase needs one)."""
    wrong = _no_article(values)
    if not wrong:
        return None, None
    lowered = _bare_pattern(tuple(p.lower() for p in wrong), 0) if all(p.isascii() for p in wrong) else None
    return lowered, _bare_pattern(wrong, re.IGNORECASE)


def _no_article(values: tuple[str, ...]) -> tuple[str, ...]:
    """The phrases that take no article, longest first."""
    return tuple(sorted({p for p in values if p.strip() and not takes_article(p)}, key=len, reverse=True))


@cache
def article_screen(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern that finds a match in a lower-cased ASCII text exactly when `doublings` or
    `bare_plurals(text, phrases)` finds one in the text (the alternation of their patterns for lower-cased
    ASCII texts: a screen scanning a text once for both); None when the phrases that take no article are not
    all ASCII (`bare_plurals` then matches them ignoring case) or there are none.

    The alternation is regrouped by the first letter of the determiner that starts a match: the pattern
    opens with the class of those letters (the regex engine skips every other character in C, instead of
    trying the pattern at each), checks the word boundary before the letter by a lookbehind, then goes on
    with the rest of the determiners starting with it (about 15% faster on a bundle's texts)."""
    lowered, _ = _bare_patterns(phrases)
    if lowered is None:
        return None
    names = _names(tuple(p.lower() for p in _no_article(phrases)))
    firsts = _FIRST.split("|")
    letters = sorted({w[0] for w in firsts})
    starting = []
    for letter in letters:
        rests = [rf"(?:{'|'.join(w[1:] for w in firsts if w[0] == letter)})\s+(?:{_SECOND})"]
        if any(w[0] == letter for w in _ARTICLES):
            rests.append(rf"(?:{'|'.join(w[1:] for w in _ARTICLES if w[0] == letter)})\s+(?:{names})")
        starting.append(rf"(?<={letter})(?:{'|'.join(rests)})")
    first = "".join(letters)
    return re.compile(rf"[{first}](?<=\b[{first}])(?:{'|'.join(starting)})\b")


_ARTICLES = ("a", "an")


def _names(wrong: tuple[str, ...]) -> str:
    return "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in wrong)


def _bare_pattern(wrong: tuple[str, ...], flags: int) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{'|'.join(_ARTICLES)})\s+(?:{_names(wrong)})\b", flags)


# -- names, snippets and policy windows -----------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def norm(text: str) -> str:
    r"""Lower-case with runs of whitespace collapsed to one space, trimmed (for containment tests).

    Whitespace is what `str.split()` splits on, which is exactly what `\s` matches in a `str` pattern (both
    are `str.isspace`; a test checks every code point), so this is `re.sub(r"\s+", " ", text).strip()`,
    lower-cased, at about a third of the cost."""
    return " ".join(str(text).split()).lower()


def contains(text: str, snippet: str) -> bool:
    """`snippet` appears in `text`, ignoring case and how much whitespace separates words."""
    return norm(snippet) in norm(text)


def sentences(text: str) -> list[str]:
    """The sentences of `text`: split at line breaks and after . ! ? followed by whitespace."""
    return [s for line in str(text).splitlines() for s in _SENTENCE.split(line) if s.strip()]


@cache
def _window(days: int) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w.]){days}(?:[\s\-‐–]*calendar)?[\s\-‐–]*days?\b", re.IGNORECASE)


def states_window(text: str, phrase: str, days: int) -> bool:
    """True when one sentence of `text` names `phrase` and the window `days` ("30 days", "30-day",
    "30 calendar days")."""
    pattern = _window(int(days))
    return any(contains(s, phrase) and pattern.search(s) for s in sentences(text))


# -- offers ---------------------------------------------------------------------------------------------------

_SPEAKER = re.compile(r"^([^:\n]{1,120}): ")


def agent_lines(body: str) -> str:
    """The agent's part of a chat transcript: lines spoken by `<Name> (Agent)` and their continuations.

    A line starting `<speaker>: ` changes the speaker; other lines continue the last speaker's turn (lines
    before the first speaker, such as a transcript header, belong to nobody)."""
    out: list[str] = []
    agent = False
    for line in str(body).splitlines():
        m = _SPEAKER.match(line)
        if m:
            agent = m.group(1).endswith(AGENT_SUFFIX)
            line = line[m.end() :]
        if agent:
            out.append(line)
    return "\n".join(out)


@cache
def _phrase(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(norm(phrase))}(?!\w)")


def offered(text: str, phrases: Mapping[str, str], issue_name: str | None) -> list[str]:
    """The remedies (keys of `phrases`, sorted) whose canonical phrase `text` uses, outside mentions of the
    case's issue name."""
    lowered = norm(text)
    if issue_name:
        name = _norm_name(issue_name)
        if name:
            lowered = lowered.replace(name, " ")
    return [
        remedy
        for remedy, normed, pattern in _offer_patterns(tuple(sorted(phrases.items())))
        if normed in lowered and pattern.search(lowered)
    ]


@cache
def _norm_name(name: str) -> str:
    """`norm` of an issue name (a few dozen distinct names, each seen by thousands of texts)."""
    return norm(name)


@cache
def _offer_patterns(phrases: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str, re.Pattern[str]], ...]:
    """(remedy, normalised phrase, its word-bounded pattern) for every remedy whose phrase is not blank."""
    return tuple((remedy, norm(phrase), _phrase(phrase)) for remedy, phrase in phrases if norm(phrase))


ZERO_PRICE_PATTERN = re.compile(r"\$\s?0+(?:\.0+)?(?![.,]?\d)")


def zero_price(text: str) -> str | None:
    """The first zero amount in `text` ("$0.00", "$0"), or None; "$0.99" and "$10" are not zero."""
    m = ZERO_PRICE_PATTERN.search(text)
    return m.group(0) if m else None
