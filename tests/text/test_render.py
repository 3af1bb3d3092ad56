"""Prompts: rendered from the facts, with a machine-readable block and a template version."""

from __future__ import annotations

import json

import pytest

from generator.text.base import TextKind, TextRequest
from generator.text.checks import rules_for
from generator.text.llm import strict_schema
from generator.text.render import (
    PromptEnv,
    PromptError,
    Template,
    fill,
    load_template,
    output_shape,
    parse_facts_block,
    render,
    template_version,
)


def test_every_kind_renders_its_facts_and_rules(
    small_requests: dict[TextKind, list[TextRequest]], env: PromptEnv
) -> None:
    for kind, reqs in small_requests.items():
        req = reqs[0]
        prompt = render(kind, req.facts, env)
        system, user = prompt.messages
        assert system["role"] == "system" and env.company in system["content"]
        assert user["role"] == "user" and "{{" not in user["content"]
        block = parse_facts_block(user["content"])
        assert block["task"] == kind.value
        assert block["facts"] == json.loads(json.dumps(req.facts, default=str))
        assert block["rules"] == prompt.rules == rules_for(kind, req.facts, env.phrases)
        assert prompt.template_version == template_version(kind)
        assert output_shape(kind, req.facts) in user["content"]


def test_prompts_carry_the_latent_facts(
    small_requests: dict[TextKind, list[TextRequest]], env: PromptEnv
) -> None:
    chat = next(r for r in small_requests[TextKind.CHAT] if r.facts["offer"]["remedy"] != "none")
    user = render(TextKind.CHAT, chat.facts, env).messages[1]["content"]
    assert f'"{chat.facts["offer"]["phrase"]}"' in user
    assert f"{chat.facts['agent']} (Agent): " in user and chat.facts["product"] in user
    violating = next(
        (
            r
            for r in small_requests[TextKind.CHAT]
            if r.facts["violation"] and r.facts["offer"]["remedy"] != "none"
        ),
        None,
    )
    if violating is not None:
        assert (
            "outside the company policy" in render(TextKind.CHAT, violating.facts, env).messages[1]["content"]
        )
    email = max(small_requests[TextKind.EMAIL_THREAD], key=lambda r: len(r.facts["messages"]))
    user = render(TextKind.EMAIL_THREAD, email.facts, env).messages[1]["content"]
    assert f"Write exactly {len(email.facts['messages'])} messages" in user
    assert email.facts["case_description"] in user  # the thread's previous message
    policy = next(r for r in small_requests[TextKind.KNOWLEDGE] if r.facts["kind"] == "issue_policy")
    user = render(TextKind.KNOWLEDGE, policy.facts, env).messages[1]["content"]
    for remedy, days in policy.facts["remedies"].items():
        assert f'"{policy.facts["remedy_phrases"][remedy]}": within {days} days' in user


def test_rendering_is_deterministic_and_variants_differ(
    small_requests: dict[TextKind, list[TextRequest]], env: PromptEnv
) -> None:
    req = small_requests[TextKind.CASE][0]
    a, b = render(TextKind.CASE, req.facts, env), render(TextKind.CASE, req.facts, env)
    assert a.messages == b.messages
    v1 = render(TextKind.CASE, req.facts, env, variant=1)
    assert v1.messages != a.messages and "Variation 1" in v1.messages[1]["content"]
    assert parse_facts_block(v1.messages[1]["content"]) == parse_facts_block(a.messages[1]["content"])


def test_template_files_have_versions() -> None:
    for kind in TextKind:
        t = load_template(kind.value)
        assert t.version.isdigit() and t.body
    assert template_version(TextKind.CHAT).startswith(f"chat.v{load_template('chat').version}+system.v")


def test_unknown_placeholder_names_the_file_and_the_choices() -> None:
    with pytest.raises(PromptError, match=r"prompts/chat\.txt uses `\{\{nope\}\}`.*available: agent"):
        fill(Template("chat", "1", "Hi {{nope}}"), {"agent": "x"})


def test_strict_schema_drops_what_strict_mode_rejects() -> None:
    from generator.text.base import OUTPUT_SCHEMAS

    strict = strict_schema(OUTPUT_SCHEMAS[TextKind.EMAIL_THREAD])
    assert "minLength" not in json.dumps(strict)
    assert strict["required"] == ["messages"] and strict["additionalProperties"] is False
    assert "minLength" in json.dumps(OUTPUT_SCHEMAS[TextKind.EMAIL_THREAD])  # the original is untouched
