"""The fast paths of `schemas.textrules` (ASCII texts matched lower-cased, cached phrase patterns) find exactly
what the plain definitions find: each rule is restated here as the straightforward case-insensitive regex
and compared on generated texts that mix cases, spacing, non-ASCII look-alikes and the rules' own words."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from schemas.textrules import article_screen, bare_plurals, doublings, norm, offered

_DETERMINERS = ["a", "an", "the", "my", "your", "our", "their", "his", "its", "her", "The", "AN", "Its"]
_PHRASES = {
    "points": "loyalty points",
    "credit": "store credit",
    "refund": "full refund",
    "exchange": "Exchange",
    "shipping": "free  Shipping",
}
_WORDS = [
    *_DETERMINERS,
    *[
        "loyalty",
        "points",
        "store",
        "credit",
        "full",
        "refund",
        "exchange",
        "shipping",
        "free",
        "item",
        "order",
    ],
    "Loyalty",
    "POINTS",
    "\u212a",  # KELVIN SIGN: folds to "k" only under Unicode case folding
    "hiſ",  # LONG S: folds to "s"
    "İts",
    "théir",
    "a_the",
    "3the",
]
_GAPS = [" ", "  ", "\n", "\t", "\u00a0", ", ", "-", "", ". "]

texts = st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_GAPS)), max_size=30).map(
    lambda parts: "".join(w + g for w, g in parts)
)

# The rules as written in the module's docstring, without any fast path.
_REF_DOUBLING = re.compile(
    r"\b(?:a|an|the|my|your|our|their|his|its)\s+(?:a|an|the|my|your|our|their)\b", re.IGNORECASE
)


def _ref_bare(text: str, phrases: dict[str, str]) -> list[str]:
    def plural_or_mass(p: str) -> bool:
        last = p.lower().split()[-1]
        # the mass nouns among _PHRASES' last words ("store credit", "free shipping") take no article either
        return (last.endswith("s") and not last.endswith(("ss", "us", "is"))) or last in {
            "shipping",
            "credit",
        }

    wrong = sorted({p for p in phrases.values() if p.strip() and plural_or_mass(p)}, key=len, reverse=True)
    if not wrong:
        return []
    names = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in wrong)
    return [m.group(0) for m in re.finditer(rf"\b(?:a|an)\s+(?:{names})\b", text, re.IGNORECASE)]


def _ref_offered(text: str, phrases: dict[str, str], issue: str | None) -> list[str]:
    lowered = re.sub(r"\s+", " ", text).strip().lower()
    name = re.sub(r"\s+", " ", issue or "").strip().lower()
    if name:
        lowered = lowered.replace(name, " ")
    out = []
    for remedy in sorted(phrases):
        p = re.sub(r"\s+", " ", phrases[remedy]).strip().lower()
        if p and re.search(rf"(?<!\w){re.escape(p)}(?!\w)", lowered):
            out.append(remedy)
    return out


@settings(max_examples=400, deadline=None)
@given(texts)
def test_doublings_match_the_case_insensitive_rule(text: str) -> None:
    assert doublings(text) == [m.group(0) for m in _REF_DOUBLING.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(texts)
def test_bare_plurals_match_the_case_insensitive_rule(text: str) -> None:
    assert bare_plurals(text, _PHRASES) == _ref_bare(text, _PHRASES)


@settings(max_examples=400, deadline=None)
@given(texts)
def test_article_screen_matches_exactly_when_either_rule_does(text: str) -> None:
    """The screen (one pattern regrouped by the determiners' first letters) is for lower-cased ASCII texts."""
    screen = article_screen(tuple(_PHRASES.values()))
    assert screen is not None
    ascii_text = text.encode("ascii", "ignore").decode()
    want = _REF_DOUBLING.search(ascii_text) is not None or bool(_ref_bare(ascii_text, _PHRASES))
    assert (screen.search(ascii_text.lower()) is not None) == want


@settings(max_examples=400, deadline=None)
@given(texts, st.sampled_from([None, "", "Loyalty points", "store  CREDIT", "full refund not issued"]))
def test_offered_matches_the_phrase_rule(text: str, issue: str | None) -> None:
    assert offered(text, _PHRASES, issue) == _ref_offered(text, _PHRASES, issue)


def test_the_fast_paths_keep_what_was_written() -> None:
    assert doublings("My the item and THE an XL") == ["My the", "THE an"]
    assert doublings("Kelvin: hiſ the \u212a") == ["hiſ the"]  # non-ASCII: Unicode case folding still applies
    assert bare_plurals("I offered A Loyalty  Points top-up", _PHRASES) == ["A Loyalty  Points"]
    assert norm("  Free \n Shipping ") == "free shipping"
    assert offered("We can offer free shipping.", _PHRASES, None) == ["shipping"]


def test_norm_splits_on_exactly_what_the_whitespace_pattern_matches() -> None:
    # `norm` collapses whitespace with str.split(); the rule is written as `\s+`. They agree on every code
    # point, so they agree on every text.
    space = re.compile(r"\s")
    assert all(bool(space.fullmatch(chr(c))) == chr(c).isspace() for c in range(0x110000))
    samples = ["  A\u00a0b\u2028c\x1cd\te\n", "", " ", "x", "Loyalty\u3000Points"]
    for text in samples:
        assert norm(text) == re.sub(r"\s+", " ", text).strip().lower()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_norm_is_the_whitespace_rule(text: str) -> None:
    assert norm(text) == re.sub(r"\s+", " ", text).strip().lower()
