"""The offline writer: deterministic per record, varied, and faithful to the facts it is given."""

from __future__ import annotations

import re

from generator.text.base import TextKind, TextRequest
from generator.text.offline import OfflineWriter, product_name
from schemas.textsim import near_duplicates

CASE = {
    "product": "Aero Trail Running Shoes", "noun": "Trail Running Shoes", "category": "Hiking & Trail",
    "issue": "defective_product", "issue_name": "Defective product", "customer_first": "Ana",
    "customer_last": "Ruiz", "order_date": "2023-03-04", "tone": "polite", "want": "refund", "price": 129.99,
    "days_since": 12,
}  # fmt: skip


def _cases(n: int, writer: OfflineWriter) -> list[dict]:
    return writer.write_sync(TextKind.CASE, [TextRequest(TextKind.CASE, f"500-{i}", CASE) for i in range(n)])


def test_same_key_same_text_other_key_other_text() -> None:
    w = OfflineWriter(seed=3, company="Shoes & Clothings")
    a, b = _cases(2, w)
    assert _cases(1, OfflineWriter(seed=3, company="Shoes & Clothings"))[0] == a
    assert a != b
    assert _cases(1, OfflineWriter(seed=4, company="Shoes & Clothings"))[0] != a


def test_an_attempt_counter_gives_a_new_text() -> None:
    w = OfflineWriter(seed=3)
    first = w.write_sync(TextKind.CASE, [TextRequest(TextKind.CASE, "k", CASE)])[0]
    again = w.write_sync(TextKind.CASE, [TextRequest(TextKind.CASE, "k", {**CASE, "attempt": 1})])[0]
    assert first != again


def test_case_texts_name_the_product_and_vary() -> None:
    texts = [r["description"] for r in _cases(300, OfflineWriter(seed=0))]
    assert all(CASE["product"] in t for t in texts)
    # Even with identical facts (same customer, product, date and tone) fewer than 1% of the 44,850 pairs are
    # near-duplicates; real cases differ in their facts, and the build rewrites any pair that remains.
    pairs = len(texts) * (len(texts) - 1) // 2
    assert len(near_duplicates(texts)) / pairs < 0.01


def test_policy_article_states_every_window() -> None:
    facts = {
        "kind": "issue_policy", "subject": "defective_product", "issue_name": "Defective product",
        "issue_description": "The product arrived faulty.", "remedies": {"refund": 30, "replacement": 60},
        "remedy_phrases": {"refund": "full refund", "replacement": "free replacement"},
        "facts": [{"question": "Within how many days of purchase can an agent offer a full refund for {issue} cases?",
                   "answer": "30 days"}],
    }  # fmt: skip
    out = OfflineWriter(seed=0).write_sync(
        TextKind.KNOWLEDGE, [TextRequest(TextKind.KNOWLEDGE, "ka", facts)]
    )[0]
    body = out["body"]
    assert re.search(r"full refund[^\n]*30 days", body) and re.search(r"free replacement[^\n]*60 days", body)
    assert "30 days" in body and "policy violation" in body


def test_chat_offer_uses_the_canonical_phrase_only_when_offered() -> None:
    w = OfflineWriter(seed=0, company="Shoes & Clothings")
    base = {"customer_first": "Ana", "agent": "Bo Li", "product": "Aero Swim Cap", "noun": "Swim Cap",
            "issue": "size_mismatch", "problem": "x", "start": "2023-01-02T10:00:00"}  # fmt: skip
    offered = w.write_sync(
        TextKind.CHAT,
        [TextRequest(TextKind.CHAT, "c1", {**base, "offer": {"remedy": "store_credit", "valid_days": 90}})],
    )[0]["body"]
    none = w.write_sync(
        TextKind.CHAT, [TextRequest(TextKind.CHAT, "c2", {**base, "offer": {"remedy": "none"}})]
    )[0]["body"]
    agent_lines = [line for line in offered.splitlines() if line.startswith("Bo Li (Agent): ")]
    assert any("store credit" in line for line in agent_lines)
    phrases = ["full refund", "free replacement", "free exchange", "store credit", "loyalty points", "discount code",
               "free shipping voucher", "cancel the order", "price adjustment", "free repair"]  # fmt: skip
    assert not any(
        p in line for line in none.splitlines() if line.startswith("Bo Li (Agent): ") for p in phrases
    )


def test_product_names_compose_noun_and_modifier() -> None:
    assert product_name("Yoga Mat", 1) == "Flex Yoga Mat"
    assert (
        product_name("Yoga Mat", 61).endswith("Yoga Mat") and len(product_name("Yoga Mat", 61).split()) == 4
    )


def test_a_description_rewritten_again_and_again_says_more() -> None:
    # A terse customer's cases on one product and problem: the descriptions of the first attempts are drawn as
    # before (attempt 1 and 2 keep their length), and from the MORE_EVERY-th attempt on each adds a detail and
    # the order date, so fewer of them are near-duplicates of each other.
    from generator.text import offline

    w = OfflineWriter(seed=0)
    terse = [k for k in range(400) if w._persona({**CASE, "customer_first": f"C{k}"}).verbosity == 0][:150]
    assert len(terse) >= 100

    def texts(attempt: int) -> list[str]:
        reqs = [
            TextRequest(TextKind.CASE, f"500-{k}", {**CASE, "customer_first": f"C{k}", "attempt": attempt})
            for k in terse
        ]
        return [r["description"] for r in w.write_sync(TextKind.CASE, reqs)]

    words = {a: sum(len(t.split()) for t in texts(a)) / len(terse) for a in (0, 1, 2, 3, 6)}
    assert abs(words[1] - words[0]) < 4 and abs(words[2] - words[0]) < 4
    assert words[3] > words[0] + 6 and words[6] > words[3] + 4
    assert sum("March 4, 2023" in t for t in texts(offline.MORE_EVERY)) > 0.4 * len(terse)
    assert len(near_duplicates(texts(6))) < len(near_duplicates(texts(0)))


def test_forgetting_the_memos_changes_no_text() -> None:
    # The build lets the writer's memos go after generation (they pinned ~100 MB of freed heap at scale 300)
    # and the task builders then write with the same writer: every text after the forgetting must be the text
    # a writer that never memoised them gives. Customers vary so that the persona memo is what is exercised.
    reqs = [
        TextRequest(
            TextKind.CASE,
            f"500-{i}",
            {**CASE, "customer_first": f"C{i % 40}", "order_date": f"2023-03-{i % 28 + 1:02d}"},
        )
        for i in range(120)
    ]
    used = OfflineWriter(seed=5, company="Shoes & Clothings")
    before = used.write_sync(TextKind.CASE, reqs)
    assert used._persona_of  # the memo was filled
    used.forget_memos()
    assert not used._persona_of and not used._formal_of
    after = used.write_sync(TextKind.CASE, reqs[::-1])[::-1]  # in another order, from empty memos
    assert (
        after == before == OfflineWriter(seed=5, company="Shoes & Clothings").write_sync(TextKind.CASE, reqs)
    )
