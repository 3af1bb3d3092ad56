"""text.py's building blocks: near-duplicate pairs against brute force, truncation, offers in chats."""

from __future__ import annotations

import itertools
import random
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from schemas.model import load_model
from schemas.textrules import CONTROL_PATTERN, bare_plurals, indefinite
from schemas.textsim import jaccard, shingles
from validators.load import BundleData, load_bundle
from validators.task_format import check_tasks_format
from validators.text import (
    NEAR_DUPLICATE_SCOPE,
    NEAR_DUPLICATE_THRESHOLD,
    _bare_articles,
    _doublings,
    _has_control,
    agent_lines,
    near_duplicate_pairs,
    offered,
    screens,
    truncation,
    zero_prices,
)


def brute_force(texts: list[str | None]) -> list[tuple[int, int]]:
    sets = [shingles(t) if t else set() for t in texts]
    return [
        (i, j)
        for i, j in itertools.combinations(range(len(sets)), 2)
        if sets[i] and sets[j] and jaccard(sets[i], sets[j]) >= NEAR_DUPLICATE_THRESHOLD
    ]


def test_lsh_finds_every_pair_brute_force_finds_on_the_default_bundle(default_bundle: Path) -> None:
    """The generated texts have no near-duplicates (the generator rewrites them); with planted near-copies of
    some of them (6 of ~40 words changed), the fast search finds exactly the pairs brute force finds."""
    data = load_bundle(default_bundle)
    planted = 0
    for sobject, field in NEAR_DUPLICATE_SCOPE:
        texts = data.raw[sobject][field].tolist()
        assert brute_force(texts) == [], (sobject, field)
        rnd = random.Random(7)
        copies = []
        for text in texts[:: max(1, len(texts) // 12)][:12]:
            words = str(text).split()
            for _ in range(max(1, len(words) // 15)):
                words[rnd.randrange(len(words))] = f"zz{rnd.randrange(10**6)}"
            copies.append(" ".join(words))
        mixed = texts + copies
        exact = brute_force(mixed)
        assert [(i, j) for i, j, _ in near_duplicate_pairs(mixed)] == exact, (sobject, field)
        planted += len(exact)
    assert planted >= 30


def test_near_duplicate_pairs_on_handmade_texts() -> None:
    texts = [
        "The Swift Jump Rope was delivered soaking wet with the packaging ripped open. Please send a new one.",
        "My order arrived two weeks late and the box was empty when I opened it at home.",
        "The Aero Arm Warmers was delivered soaking wet with the packaging ripped open. Please send a new one.",
        None,
        "short",
        "short",
    ]
    pairs = near_duplicate_pairs(texts)
    assert [(i, j) for i, j, _ in pairs] == [(0, 2), (4, 5)]
    assert pairs[1][2] == 1.0
    assert 0.5 <= pairs[0][2] < 1.0


def test_shingles_are_lower_cased_word_triples() -> None:
    assert shingles("Hello, big World!  Again") == {"hello big world", "big world again"}
    assert shingles("Two words") == {"two words"}
    assert shingles("  ") == set()


@pytest.mark.parametrize(
    ("text", "limit", "prose", "cut"),
    [
        ("A whole sentence.", 100, True, False),
        ('He said "fine."', 100, True, False),
        ("Ends with a question?", 100, True, False),
        ("(A remark in brackets.)", 100, True, False),
        ("A sentence that stops in the", 100, True, True),
        ("Best regards,\nJane", 100, False, False),
        ("Cut mid-sentence and then…", 100, False, True),
        ("Cut with three dots...", 100, False, True),
        ("Stops at a comma,", 100, False, True),
        ("An aside (never closed.", 100, True, True),
        ("x" * 40, 40, False, True),
        ("x" * 39, 40, False, False),
    ],
)
def test_truncation(text: str, limit: int, prose: bool, cut: bool) -> None:
    assert (truncation(text, limit, prose) is not None) is cut


def test_agent_lines_keep_only_the_agent_and_continuations() -> None:
    body = "\n".join(
        [
            "Sherry: Hi, I want a full refund.",
            "Robert Gillespie (Agent): Hello Sherry! Let me check.",
            "I can offer store credit.",
            "Sherry: Thanks: that works.",
        ]
    )
    assert agent_lines(body) == "Hello Sherry! Let me check.\nI can offer store credit."


PHRASES = {"loyalty_points": "loyalty points", "refund": "full refund", "store_credit": "store credit"}


def test_offers_use_canonical_phrases_on_word_boundaries() -> None:
    assert offered("I've arranged a Full Refund for you.", PHRASES, None) == ["refund"]
    assert offered("No refund is possible.", PHRASES, None) == []
    assert offered("some store credits", PHRASES, None) == []


def test_a_mention_of_the_case_issue_is_not_an_offer() -> None:
    transfer = "I'm passing your case to Ana, who handles loyalty points not redeemed cases."
    assert offered(transfer, PHRASES, "Loyalty points not redeemed") == []
    offer = transfer + " Meanwhile I've added 500 loyalty points to your account."
    assert offered(offer, PHRASES, "Loyalty points not redeemed") == ["loyalty_points"]


@pytest.mark.parametrize(
    ("phrase", "written"),
    [("full refund", "a full refund"), ("order cancellation", "an order cancellation"),
     ("store credit", "store credit"), ("loyalty points", "loyalty points"),
     ("free shipping voucher", "a free shipping voucher"), ("address", "an address")],
)  # fmt: skip
def test_indefinite_leaves_plural_and_mass_nouns_bare(phrase: str, written: str) -> None:
    assert indefinite(phrase) == written


def test_bare_plurals_finds_an_article_before_a_plural_or_mass_phrase() -> None:
    phrases = {"p": "loyalty points", "c": "store credit", "r": "full refund"}
    text = "Agents may offer a loyalty points. A  store credit can be offered. A full refund is fine; extra loyalty points too."
    assert bare_plurals(text, phrases) == ["a loyalty points", "A  store credit"]
    assert bare_plurals("Agents may offer loyalty points or store credit.", phrases) == []


def test_task_queries_that_double_a_determiner_are_format_disagreements() -> None:
    doc = {"idx": 0, "task": "knowledge_qa", "query": "How long after buying can I return my the jacket?"}
    found = [d for d in check_tasks_format([doc]) if "doubled" in d.message]
    assert [d.found for d in found] == ["my the"]
    clean = {**doc, "query": "How long after buying can I return my jacket?"}
    assert [d for d in check_tasks_format([clean]) if "doubled" in d.message] == []


_EDGE_TEXTS = [
    "The the box",  # at a text's start
    "it came in my the",  # at its end
    "It cost $0",
    "5 stars",  # a text starting with a digit after one ending in "$0"
    "It cost $0.",
    "99 problems",
    "paid $0.99 for it",
    "A loyalty points top-up",
    "ordered an\x00the item",  # a NUL inside a text
    "his\x00 the",
    "fine text",
    "an",
    "the",  # "an" + join + "the" must not read as a doubling
    "a",
    "loyalty points",
    "",
]


@pytest.mark.parametrize("seed", range(6))
def test_column_screening_finds_what_the_per_record_rules_find(seed: int) -> None:
    # The per-column screen (texts joined by a NUL, one scan) must neither hide nor invent a finding: the
    # findings are exactly the records whose own text breaks the rule, judged one by one.
    from schemas.textrules import doublings, zero_price
    from validators.text import _doublings, zero_prices

    rnd = random.Random(seed)
    clean = [
        "fine text",
        "an",
        "the",
        "a",
        "loyalty points",
        "",
        "5 stars",
        "99 problems",
        "paid $0.99 for it",
    ]
    pool = _EDGE_TEXTS if seed % 2 else clean  # odd seeds plant findings, even ones have none
    texts: list[str | None] = [rnd.choice(pool) for _ in range(40)] + [None]
    rnd.shuffle(texts)
    ids = [f"500{i:015d}" for i in range(len(texts))]
    frame = pd.DataFrame({"Id": ids, "_line": range(2, len(texts) + 2), "Description": texts})
    raw = {"Case": frame}
    want_doubled = {i for i, t in zip(ids, texts, strict=True) if isinstance(t, str) and doublings(t)}
    want_zero = {i for i, t in zip(ids, texts, strict=True) if isinstance(t, str) and zero_price(t)}
    assert {f.record for f in _doublings(raw)} == want_doubled
    assert {f.record for f in zero_prices(raw)} == want_zero
    if seed % 2:
        assert want_doubled and want_zero
    else:
        assert not want_doubled and not want_zero


_WORDS = [
    "a",
    "an",
    "the",
    "The",
    "my",
    "his",
    "its",
    "loyalty",
    "points",
    "store",
    "credit",
    "Loyalty",
    "box",
]
_GAPS = [" ", "  ", "\n", ", ", ".", "\x00", "$0", "$0.99 ", "é", "\u212a"]  # KELVIN SIGN: lower-cases to k


@given(
    st.lists(
        st.one_of(
            st.none(), st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_GAPS)), max_size=8)
        ),
        max_size=6,  # few texts to a column: many columns hold one rule's finding and not the other's
    ),
    st.sampled_from(
        [["loyalty points", "store credit"], ["store credit"], ["crédit points"], ["a\x00b points"], []]
    ),
)
@example([[("offer", " "), ("a", " "), ("loyalty", " "), ("points", ".")], None], ["loyalty points"])
@example([[("my", " "), ("the", " "), ("box", ".")]], ["loyalty points"])
@settings(max_examples=300, deadline=None)
def test_screens_shared_by_the_three_rules_change_no_finding(
    parts: list[list[tuple[str, str]] | None], phrases: list[str]
) -> None:
    """`screens` (each column joined once; doubling and bare article patterns searched as one alternation on
    ASCII columns) lets the three rules find exactly what each finds with its own screen, on texts with
    doublings, bare articles before plurals and mass nouns, zero prices, NULs and non-ASCII characters."""
    texts = [None if p is None else "".join(w + g for w, g in p) for p in parts]
    ids = [f"500{i:015d}" for i in range(len(texts))]
    frame = pd.DataFrame(
        {"Id": ids, "_line": range(2, len(texts) + 2), "Description": texts, "Subject": texts[::-1]}
    )
    remedies = {f"r{k}": {"phrase": p} for k, p in enumerate(phrases)}
    data = BundleData(
        root=Path("."), model=load_model(), raw={"Case": frame}, policies={"remedies": remedies}
    )
    screened = screens(data)
    assert _doublings(data.raw, screened) == _doublings(data.raw)
    assert _bare_articles(data, screened) == _bare_articles(data)
    assert zero_prices(data.raw, screened) == zero_prices(data.raw)


@given(st.text(alphabet=st.characters(max_codepoint=0x2FF), max_size=40))
@settings(max_examples=500, deadline=None)
def test_control_screen_is_the_pattern(text: str) -> None:
    """The ASCII fast path of the control-character screen answers as CONTROL_PATTERN's scan does (code
    points up to U+02FF: the ASCII controls, tab, line breaks, DEL, the C1 controls, Latin letters)."""
    assert _has_control(text) == (re.search(CONTROL_PATTERN, text) is not None)


def test_control_screen_on_each_of_the_first_256_code_points() -> None:
    found = [c for c in map(chr, range(256)) if _has_control(c)]
    assert found == [chr(c) for c in [*range(0, 9), 11, 12, *range(14, 32), *range(127, 160)]]
