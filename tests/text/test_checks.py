"""Content checks: the offline writer's texts pass them (differential), and each broken text fails."""

from __future__ import annotations

import copy
from typing import Any

from generator.text.base import TextKind, TextRequest
from generator.text.checks import (
    check,
    check_text,
    preserved_tokens,
    rules_for,
    states_window,
)
from generator.text.offline import OfflineWriter
from generator.text.render import PromptEnv
from schemas.textrules import indefinite


def first(requests: dict[TextKind, list[TextRequest]], kind: TextKind, pred: Any = None) -> TextRequest:
    return next(r for r in requests[kind] if pred is None or pred(r.facts))


def offline(kind: TextKind, req: TextRequest) -> dict[str, Any]:
    return OfflineWriter(0, "Shoes & Clothings").write_sync(kind, [req])[0]


def test_every_offline_text_of_the_small_build_passes(
    small_requests: dict[TextKind, list[TextRequest]], env: PromptEnv
) -> None:
    writer = OfflineWriter(0, env.company)
    checked = 0
    for kind, reqs in small_requests.items():
        for req, result in zip(reqs, writer.write_sync(kind, reqs), strict=True):
            assert check_text(kind, req.facts, result, env.phrases) == [], (kind, req.key)
            checked += 1
    assert set(small_requests) >= {
        TextKind.PRODUCT,
        TextKind.ISSUE,
        TextKind.CATEGORY,
        TextKind.KNOWLEDGE,
        TextKind.CASE,
        TextKind.EMAIL_THREAD,
        TextKind.CHAT,
    }
    assert checked > 400


def test_product_name_must_be_exact_and_named(small_requests: dict, env: PromptEnv) -> None:
    req = first(small_requests, TextKind.PRODUCT)
    good = offline(TextKind.PRODUCT, req)
    rules = rules_for(TextKind.PRODUCT, req.facts, env.phrases)
    assert check(TextKind.PRODUCT, rules, {**good, "name": good["name"] + " Pro"})[0].startswith(
        "The name must be"
    )
    problems = check(TextKind.PRODUCT, rules, {**good, "description": "A fine item for runners."})
    assert problems == [f"The description does not name `{rules['name']}`."]


def test_knowledge_policy_must_state_every_window_in_one_sentence(
    small_requests: dict, env: PromptEnv
) -> None:
    req = first(small_requests, TextKind.KNOWLEDGE, lambda f: f["kind"] == "issue_policy")
    rules = rules_for(TextKind.KNOWLEDGE, req.facts, env.phrases)
    assert rules["windows"], "a policy article has windows"
    w = rules["windows"][0]
    body = "\n".join(
        [f"About {rules['mention'][0]}."]
        + [
            f"Agents may offer {indefinite(x['phrase'])} within {x['days']}-day windows."
            for x in rules["windows"]
        ]
    )
    assert check(TextKind.KNOWLEDGE, rules, {"title": "t", "summary": "The policy.", "body": body}) == []
    # The phrase and the days in different sentences do not state the window.
    split = body.replace(f"{w['phrase']} within {w['days']}", f"{w['phrase']}. Within {w['days']}")
    problems = check(TextKind.KNOWLEDGE, rules, {"title": "t", "summary": "The policy.", "body": split})
    assert any(w["phrase"] in p and str(w["days"]) in p for p in problems)
    wrong = body.replace(f"{w['days']}-day", f"{w['days'] + 1}-day", 1)
    assert check(TextKind.KNOWLEDGE, rules, {"title": "t", "summary": "The policy.", "body": wrong})


def test_states_window_forms() -> None:
    assert states_window("A full refund may be offered within 30 days of purchase.", "full refund", 30)
    assert states_window("Refunds: a Full Refund is allowed for a 30-day period.", "full refund", 30)
    assert states_window(
        "A full  refund within 30 calendar days.", "full refund", 30
    )  # windows are calendar days
    assert not states_window("A full refund within 30 business days.", "full refund", 30)
    assert not states_window("A full refund may be offered within 130 days.", "full refund", 30)
    assert not states_window("A full refund may be offered within 1.30 days.", "full refund", 30)
    assert not states_window("A full refund may be offered. It lasts 30 days.", "full refund", 30)


def test_general_article_must_state_its_answers(small_requests: dict, env: PromptEnv) -> None:
    req = first(small_requests, TextKind.KNOWLEDGE, lambda f: f["kind"] == "general")
    rules = rules_for(TextKind.KNOWLEDGE, req.facts, env.phrases)
    good = offline(TextKind.KNOWLEDGE, req)
    assert check(TextKind.KNOWLEDGE, rules, good) == []
    snippet = rules["state"][0]
    bad = {**good, "body": good["body"].replace(snippet, "some time")}
    assert f"The body does not state `{snippet}` verbatim." in check(TextKind.KNOWLEDGE, rules, bad)


def _chat_req(small_requests: dict, remedy: str | None) -> TextRequest:
    def pred(f: dict) -> bool:
        offer = f.get("offer") or {}
        return (offer.get("remedy") == remedy) if remedy else offer.get("remedy") not in (None, "none")

    return first(small_requests, TextKind.CHAT, pred)


def test_chat_offer_present_exactly_when_the_facts_say(small_requests: dict, env: PromptEnv) -> None:
    req = _chat_req(small_requests, None)
    rules = rules_for(TextKind.CHAT, req.facts, env.phrases)
    phrase = rules["offer"]["phrase"]
    ap, cp = rules["agent_prefix"], rules["customer_prefix"]
    product = req.facts["product"]
    good = f"{cp}Hi, my {product} broke.\n{ap}Sorry! I can give you a {phrase}.\n{cp}Thanks."
    assert check(TextKind.CHAT, rules, {"body": good}) == []
    no_offer = good.replace(f"a {phrase}", "a hug")
    assert any("exact words" in p for p in check(TextKind.CHAT, rules, {"body": no_offer}))
    other = next(p for p in rules["phrases"] if p != phrase)
    extra = good + f"\n{ap}Also a {other}."
    assert any(other in p for p in check(TextKind.CHAT, rules, {"body": extra}))
    # A customer may ask for anything; only agent lines are checked for offers.
    asks = good + f"\n{cp}Could I get a {other} instead?"
    assert check(TextKind.CHAT, rules, {"body": asks}) == []
    unprefixed = good + "\nAgent: bye"
    assert any("Every line must start" in p for p in check(TextKind.CHAT, rules, {"body": unprefixed}))
    # A transcript header before the first speaker line is fine, but it may not carry an offer either.
    header = f"Chat started 2024-01-02 10:00 UTC via Web Chat\n{good}"
    assert check(TextKind.CHAT, rules, {"body": header}) == []
    assert any(other in p for p in check(TextKind.CHAT, rules, {"body": f"Offer: {other}\n{good}"}))
    confess = good + f"\n{ap}This violates policy, sorry."
    assert any("policy violation" in p for p in check(TextKind.CHAT, rules, {"body": confess}))


def test_chat_decline_names_no_resolution(small_requests: dict, env: PromptEnv) -> None:
    offered = _chat_req(small_requests, None)
    req = TextRequest(TextKind.CHAT, offered.key, {**offered.facts, "offer": {"remedy": "none"}})
    rules = rules_for(TextKind.CHAT, req.facts, env.phrases)
    assert rules["offer"] == {"decline": True}
    ap, cp = rules["agent_prefix"], rules["customer_prefix"]
    body = f"{cp}My {req.facts['product']} is late.\n{ap}The window has passed, sorry."
    assert check(TextKind.CHAT, rules, {"body": body}) == []
    leaked = body + f"\n{ap}I cannot offer a {rules['phrases'][0]}."
    assert any("must decline" in p for p in check(TextKind.CHAT, rules, {"body": leaked}))


def test_a_phrase_inside_the_issue_name_is_no_offer_but_outside_it_is(env: PromptEnv) -> None:
    """As the validators read offers (`textrules.offered`): an agent naming the issue "Loyalty points not
    redeemed" offers nothing; "your loyalty points" elsewhere names the remedy."""
    facts = {
        "customer_first": "Ann",
        "agent": "Bo Li",
        "product": "Nova Tee",
        "issue": "loyalty_redemption",
        "offer": {"remedy": "none"},
    }
    rules = rules_for(TextKind.CHAT, facts, env.phrases)
    assert "loyalty points" in rules["phrases"] and rules["issue_name"] == "Loyalty points not redeemed"
    opening = "Ann: My loyalty points are missing for the Nova Tee."  # customers may say anything
    naming = f"{opening}\nBo Li (Agent): I see: loyalty points not redeemed. The window has passed, sorry."
    assert check(TextKind.CHAT, rules, {"body": naming}) == []
    offering = f"{opening}\nBo Li (Agent): Your loyalty points case is noted."
    assert check(TextKind.CHAT, rules, {"body": offering}) == [
        "The agent's lines must decline without naming any resolution, but it says `loyalty points`."
    ]


def test_email_thread_rules(small_requests: dict, env: PromptEnv) -> None:
    req = first(
        small_requests,
        TextKind.EMAIL_THREAD,
        lambda f: (
            any(m["kind"] == "agent_offer" and m["offer"]["remedy"] != "none" for m in f["messages"])
            and len(f["messages"]) >= 3
        ),
    )
    rules = rules_for(TextKind.EMAIL_THREAD, req.facts, env.phrases)
    good = offline(TextKind.EMAIL_THREAD, req)
    assert check(TextKind.EMAIL_THREAD, rules, good) == []
    short = {"messages": good["messages"][:-1]}
    assert check(TextKind.EMAIL_THREAD, rules, short) == [
        f"The thread must have exactly {len(good['messages'])} messages, one per planned message "
        f"(got {len(good['messages']) - 1})."
    ]
    i = next(i for i, m in enumerate(rules["messages"]) if "offer" in m)
    phrase = rules["messages"][i]["offer"]["phrase"]
    no_offer = copy.deepcopy(good)
    no_offer["messages"][i]["body"] = no_offer["messages"][i]["body"].replace(phrase, "gesture")
    assert any("exact words" in p for p in check(TextKind.EMAIL_THREAD, rules, no_offer))
    j = next(j for j, m in enumerate(rules["messages"]) if m["from"] == "agent" and "offer" not in m)
    early = copy.deepcopy(good)
    early["messages"][j]["body"] += f" I can already promise a {phrase}."
    assert any(f"Message {j + 1}" in p for p in check(TextKind.EMAIL_THREAD, rules, early))
    unsigned = copy.deepcopy(good)
    agent = rules["messages"][j]["agent"]
    unsigned["messages"][j]["body"] = unsigned["messages"][j]["body"].replace(agent, "The team")
    assert any("signed by the agent" in p for p in check(TextKind.EMAIL_THREAD, rules, unsigned))


def test_paraphrase_keeps_ids_dates_and_suffix() -> None:
    text = (
        "Which agent closed case 500Ws00001yYVOnIAO fastest between 2023-01-01 and 2023-03-31? "
        "Return only the Id of the agent."
    )
    facts = {"text": text, "suffix": "Return only the Id of the agent.", "keep": ["fastest"]}
    rules = rules_for(TextKind.PARAPHRASE, facts, {})
    assert rules["keep"] == ["fastest", "500Ws00001yYVOnIAO", "2023-01-01", "2023-03-31"]
    good = (
        "Between 2023-01-01 and 2023-03-31, who was fastest at closing case 500Ws00001yYVOnIAO? "
        "Return only the Id of the agent."
    )
    assert check(TextKind.PARAPHRASE, rules, {"text": good}) == []
    assert check(TextKind.PARAPHRASE, rules, {"text": text}) == []  # faithful; rewording is the writer's duty
    lower_id = good.replace("500Ws00001yYVOnIAO", "500ws00001yyvonia0")
    assert "The paraphrase must keep `500Ws00001yYVOnIAO` exactly as written." in check(
        TextKind.PARAPHRASE, rules, {"text": lower_id}
    )
    reworded_suffix = good.replace("Return only the Id of the agent.", "Give just the agent's Id.")
    assert any("must end with" in p for p in check(TextKind.PARAPHRASE, rules, {"text": reworded_suffix}))


def test_preserved_tokens_are_ids_and_dates_only() -> None:
    found = preserved_tokens("Internationalization of 001Ws000001AbCdEFG on 2024-05-31T10:00:00Z and 12345")
    assert found == ["001Ws000001AbCdEFG", "2024-05-31T10:00:00Z"]


def test_product_mention_points_to_exactly_one_purchase() -> None:
    facts = {
        "product": "Velocity Swim Trunks",
        "noun": "Swim Trunks",
        "category": "Swimwear",
        "others": ["Nova Swim Trunks", "Velocity Running Shorts"],
    }
    rules = rules_for(TextKind.PRODUCT_MENTION, facts, {})
    assert (
        check(TextKind.PRODUCT_MENTION, rules, {"mention": "my swim shorts", "search_term": "Velocity Swim"})
        == []
    )
    ambiguous = check(TextKind.PRODUCT_MENTION, rules, {"mention": "my trunks", "search_term": "Swim Trunks"})
    assert ambiguous and "Nova Swim Trunks" in ambiguous[0]
    absent = check(TextKind.PRODUCT_MENTION, rules, {"mention": "my trunks", "search_term": "Board Shorts"})
    assert absent and "must use only words of the product name" in absent[0]
    # Words, not substrings: "Swim Velocity" still finds only the target; "Swim" alone does not.
    assert check(TextKind.PRODUCT_MENTION, rules, {"mention": "x", "search_term": "swim velocity"}) == []
    assert check(TextKind.PRODUCT_MENTION, rules, {"mention": "x", "search_term": "Swim"})
    # The task builders name the product `name`.
    named = rules_for(TextKind.PRODUCT_MENTION, {**facts, "name": facts.pop("product")}, {})
    assert named == rules


def test_paraphrase_finds_the_answer_format_suffix_itself() -> None:
    text = (
        "Which issue was reported most for this product in the past 3 months? The associated product Id is "
        "01tWs00001AbCdEFGH. Return only the Id of the most reported issue (an Issue__c Id), or None if there "
        "were no cases."
    )
    rules = rules_for(TextKind.PARAPHRASE, {"text": text, "task": "top_issue_identification"}, {})
    assert rules["suffix"] == (
        "Return only the Id of the most reported issue (an Issue__c Id), or None if there were no cases."
    )
    assert rules["keep"] == ["01tWs00001AbCdEFGH"]
    assert rules_for(TextKind.PARAPHRASE, {"text": "What is the return window?"}, {})["suffix"] is None


def test_an_article_before_a_plural_remedy_or_a_zero_price_is_sent_back() -> None:
    rules = {"mention": [], "windows": [{"phrase": "loyalty points", "days": 90}], "state": []}

    def body(text: str) -> dict[str, str]:
        return {"title": "Points", "summary": "The policy.", "body": text}

    good = "Agents may offer loyalty points within 90 days of purchase."
    assert check(TextKind.KNOWLEDGE, rules, body(good)) == []
    bare = check(
        TextKind.KNOWLEDGE, rules, body("Agents may offer a loyalty points within 90 days of purchase.")
    )
    assert bare == [
        "The body reads `a loyalty points`: no article before a plural or mass noun; write `loyalty points`."
    ]
    free = check(TextKind.KNOWLEDGE, rules, body(good + " The jacket cost $0.00."))
    assert len(free) == 1 and "$0.00" in free[0]
    assert check(TextKind.KNOWLEDGE, rules, body(good + " The jacket cost $0.99.")) == []
