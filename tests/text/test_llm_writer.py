"""The LLM writer with the real `openai` client against the fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from generator.text.base import TextKind, TextRequest
from generator.text.checks import check, rules_for
from generator.text.llm import (
    LLMConfigError,
    LLMSettings,
    LLMStalled,
    LLMUnavailable,
    LLMVerificationError,
    LLMWriter,
    endpoint_host,
    endpoint_url,
    redact,
)
from generator.text.render import PromptEnv
from schemas.textsim import near_duplicates
from tests.fakes.openai_server import FakeOpenAI
from tests.text.conftest import SENTINEL_KEY, WriterFactory, run

Requests = dict[TextKind, list[TextRequest]]


def some(requests: Requests, kind: TextKind, n: int = 12) -> list[TextRequest]:
    return requests[kind][:n]


def assert_verified(
    kind: TextKind, reqs: list[TextRequest], out: list[dict[str, Any]], env: PromptEnv
) -> None:
    assert len(out) == len(reqs)
    for req, res in zip(reqs, out, strict=True):
        assert check(kind, rules_for(kind, req.facts, env.phrases), res) == [], req.key


def test_every_kind_is_written_and_verified(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    writer = llm_writer()
    for kind in small_requests:
        reqs = some(small_requests, kind)
        out = run(writer.write(kind, reqs))
        assert_verified(kind, reqs, out, env)
    assert fake.stats.formats == {"json_schema": fake.stats.requests}
    assert fake.stats.keys_seen == {SENTINEL_KEY}
    snap = writer.usage.snapshot()
    assert sum(k["requests"] for k in snap["kinds"].values()) == fake.stats.requests
    assert all(k["prompt_tokens"] > 0 and k["completion_tokens"] > 0 for k in snap["kinds"].values())


def test_paraphrases_and_product_mentions(llm_writer: WriterFactory, env: PromptEnv) -> None:
    writer = llm_writer()
    para = [
        TextRequest(
            TextKind.PARAPHRASE,
            f"q{i}",
            {
                "text": f"How many cases did agent 005Ws00000{i}AbCdEFG close before 2024-0{i + 1}-15? "
                "Answer with a number only.",
                "suffix": "Answer with a number only.",
            },
        )
        for i in range(3)
    ]
    out = run(writer.write(TextKind.PARAPHRASE, para))
    assert_verified(TextKind.PARAPHRASE, para, out, env)
    assert all(o["text"] != r.facts["text"] for o, r in zip(out, para, strict=True))
    from generator.text.checks import rules_for as rules
    from generator.text.llm import verify

    same = verify(
        TextKind.PARAPHRASE,
        rules(TextKind.PARAPHRASE, para[0].facts, {}),
        _reply({"text": para[0].facts["text"]}),
    )
    assert same == (None, ["The paraphrase must reword the original, not repeat it."])
    mentions = [
        TextRequest(
            TextKind.PRODUCT_MENTION,
            "m1",
            {
                "product": "Velocity Swim Trunks",
                "noun": "Swim Trunks",
                "category": "Swimwear",
                "others": ["Nova Swim Trunks", "Velocity Running Shorts"],
            },
        )
    ]
    out = run(writer.write(TextKind.PRODUCT_MENTION, mentions))
    assert_verified(TextKind.PRODUCT_MENTION, mentions, out, env)


def _reply(value: dict[str, Any]) -> Any:
    import json

    from generator.text.cache import CachedResponse

    return CachedResponse(json.dumps(value), None, "stop", 1, 1)


def test_identical_rerun_sends_nothing(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    reqs = some(small_requests, TextKind.CASE, 20)
    first = run(llm_writer().write(TextKind.CASE, reqs))
    sent = fake.stats.requests
    assert sent == 20
    fake.reset()
    again = llm_writer()  # a new writer, as in a new run
    assert run(again.write(TextKind.CASE, reqs)) == first
    assert fake.stats.requests == 0
    assert again.usage.kinds["case"]["cache_hits"] == 20
    fresh = llm_writer(use_cache=False)
    assert run(fresh.write(TextKind.CASE, reqs)) == first  # the fake is deterministic
    assert fake.stats.requests == 20


def test_retry_after_is_honoured(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(script=["429"], retry_after=1.0)
    t0 = time.monotonic()
    run(llm_writer(concurrency=1).write(TextKind.CASE, some(small_requests, TextKind.CASE, 2)))
    assert time.monotonic() - t0 >= 1.0
    assert fake.stats.status == {429: 1, 200: 2}


def test_retry_after_ms_and_429_without_header(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(script=["429", "429"], retry_after=0.3, retry_after_ms=True)
    t0 = time.monotonic()
    writer = llm_writer(concurrency=1)
    run(writer.write(TextKind.CASE, some(small_requests, TextKind.CASE, 1)))
    assert 0.6 <= time.monotonic() - t0 < 5
    fake.reset(script=["429", "429", "429"])  # no header: exponential back-off
    run(writer.write(TextKind.CASE, some(small_requests, TextKind.CASE, 3)[1:]))
    assert fake.stats.status[429] == 3 and fake.stats.status[200] == 2
    assert writer.usage.errors["rate_limited"] == 5


def test_server_errors_and_timeouts_are_retried(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    fake.reset(script=["500", "hang", "500"], hang_seconds=3.0)
    writer = llm_writer(concurrency=2, request_timeout=0.5)
    reqs = some(small_requests, TextKind.CHAT, 4)
    out = run(writer.write(TextKind.CHAT, reqs))
    assert_verified(TextKind.CHAT, reqs, out, env)
    assert writer.usage.errors["server_errors"] == 2
    assert writer.usage.errors["timeouts"] == 1


def test_persistent_server_errors_fail_with_a_clear_message(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(server_error_rate=1.0)
    writer = llm_writer(max_retries=2)
    with pytest.raises(LLMUnavailable, match=r"still failed after 2 retries \(HTTP 500.*check --base-url"):
        run(writer.write(TextKind.CASE, some(small_requests, TextKind.CASE, 3)))
    assert fake.stats.requests <= 3 * 3  # bounded, and the breaker stops the others


@pytest.mark.parametrize(
    "fault", ["invalid_json_rate", "truncate_rate", "refusal_rate", "wrong_content_rate"]
)
def test_bad_replies_are_repaired(
    fault: str, small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    fake.reset(**{fault: 1.0})  # every first answer is bad; follow-up turns come out right
    writer = llm_writer()
    reqs = some(small_requests, TextKind.KNOWLEDGE, 5)
    out = run(writer.write(TextKind.KNOWLEDGE, reqs))
    assert_verified(TextKind.KNOWLEDGE, reqs, out, env)
    assert writer.usage.kinds["knowledge"]["repairs"] == 5
    assert fake.stats.requests == 10
    if fault == "truncate_rate":  # the follow-up may use twice the tokens
        assert sorted(fake.stats.max_tokens)[-1] == 2 * sorted(fake.stats.max_tokens)[0]


@pytest.mark.parametrize("kind", [TextKind.CASE, TextKind.EMAIL_THREAD, TextKind.CHAT])
def test_a_zero_price_is_never_accepted(
    kind: TextKind, small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    """Issue 16: no "$0.00" purchase anywhere. Every first answer says the item cost $0.00 (and passes every
    other check); the writer must send it back, and what it keeps states no zero price."""
    fake.reset(zero_price_rate=1.0)
    writer = llm_writer()
    reqs = some(small_requests, kind, 4)
    out = run(writer.write(kind, reqs))
    assert_verified(kind, reqs, out, env)
    assert "$0.00" not in json.dumps(out)
    assert writer.usage.kinds[kind.value]["repairs"] == 4
    assert fake.stats.requests == 8


def test_records_that_keep_failing_fail_the_batch_or_are_filled(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(wrong_content_rate=1.0, faults_on_repairs=True)
    reqs = some(small_requests, TextKind.CASE, 4)
    writer = llm_writer(max_attempts=2)
    with pytest.raises(LLMVerificationError, match=r"4 of 4 case texts .* --fallback offline"):
        run(writer.write(TextKind.CASE, reqs))
    assert fake.stats.requests == 8
    assert [f["key"] for f in writer.usage.failures] == [r.key for r in reqs]
    assert "does not name" in writer.usage.failures[0]["reasons"][0]
    filled = llm_writer(max_attempts=2, fallback="offline")
    out = run(filled.write(TextKind.CASE, reqs))  # replayed from the cache, then filled offline
    assert [o["subject"] for o in out] == [
        o["subject"] for o in filled._offline.write_sync(TextKind.CASE, reqs)
    ]
    assert filled.usage.kinds["case"]["filled"] == 4 and filled.usage.failures[0]["filled"] is True


def test_rewrites_asked_by_the_pipeline_get_other_words(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    """The pipeline finds near-duplicates over a whole object and asks again with `attempt` = n; the writer
    renders a variation hint, so the answers differ, and counts the rewrites."""
    fake.reset(duplicate_texts=True)  # the same filler everywhere unless asked for a variation
    writer = llm_writer()
    reqs = some(small_requests, TextKind.PRODUCT, 10)
    first = run(writer.write(TextKind.PRODUCT, reqs))
    assert len(near_duplicates([o["description"] for o in first])) == 45  # every pair of the ten
    again = [TextRequest(r.kind, r.key, {**r.facts, "attempt": 1}) for r in reqs]
    out = run(writer.write(TextKind.PRODUCT, again))
    assert_verified(TextKind.PRODUCT, again, out, env)
    assert near_duplicates([o["description"] for o in out]) == []
    assert writer.usage.kinds["product"]["regenerations"] == 10 and fake.stats.requests == 20


def test_without_json_schema_support_it_steps_down(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    fake.reset(json_schema_supported=False)
    reqs = some(small_requests, TextKind.CHAT, 6)
    writer = llm_writer(concurrency=1)
    out = run(writer.write(TextKind.CHAT, reqs))
    assert_verified(TextKind.CHAT, reqs, out, env)
    assert fake.stats.formats == {"json_schema": 1, "json_object": 6}
    assert writer.usage.errors["format_downgrades"] == 1
    fake.reset(json_schema_supported=False)
    assert run(llm_writer().write(TextKind.CHAT, reqs)) == out  # a rerun finds the json_object answers
    assert fake.stats.requests == 0
    fake.reset(json_schema_supported=False, json_object_supported=False)
    plain = llm_writer(concurrency=1, use_cache=False)
    out = run(plain.write(TextKind.CHAT, reqs))  # schema in the prompt, fenced JSON parsed
    assert_verified(TextKind.CHAT, reqs, out, env)
    assert fake.stats.formats["text"] == 6


def test_sustained_rate_limiting_ends_within_the_stall_limit(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(rate_limit_rate=1.0)
    writer = llm_writer(max_stall_seconds=1.5, backoff_base=0.2, backoff_max=1.0)
    t0 = time.monotonic()
    with pytest.raises(LLMStalled) as info:
        run(writer.write(TextKind.CASE, some(small_requests, TextKind.CASE, 20)))
    elapsed = time.monotonic() - t0
    assert 1.5 <= elapsed < 4.0  # the limit, plus a watchdog tick and a loaded machine
    message = str(info.value)
    assert "429" in message and "--max-stall-seconds" in message and "--concurrency" in message
    assert writer.usage.errors["rate_limited"] >= 1


def test_a_retry_after_beyond_the_stall_limit_fails_at_once(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(rate_limit_rate=1.0, retry_after=3600)
    t0 = time.monotonic()
    with pytest.raises(LLMStalled, match=r"asked orgseed to wait 3600 s \(Retry-After\).*quota"):
        run(llm_writer(max_stall_seconds=30).write(TextKind.CASE, some(small_requests, TextKind.CASE, 5)))
    assert time.monotonic() - t0 < 2.0


def test_a_refused_key_is_terminal_and_never_echoed(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(require_key="sk-the-right-key-000000")
    with pytest.raises(LLMConfigError) as info:
        run(llm_writer().write(TextKind.CASE, some(small_requests, TextKind.CASE, 5)))
    assert "refused the API key (401" in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert SENTINEL_KEY not in str(info.value)
    assert fake.stats.status[401] >= 1


def test_concurrency_is_bounded_across_threads_and_event_loops(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    fake.reset(latency=0.05)
    writer = llm_writer(concurrency=4)
    reqs = small_requests[TextKind.CASE][:60]
    parts = [reqs[0:20], reqs[20:40], reqs[40:60]]
    results: dict[int, list[dict[str, Any]]] = {}

    def shard(i: int) -> None:  # as the Prefect thread runner does: one asyncio.run per shard
        results[i] = asyncio.run(writer.write(TextKind.CASE, parts[i]))

    threads = [threading.Thread(target=shard, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(results) == [0, 1, 2]
    assert_verified(TextKind.CASE, reqs, results[0] + results[1] + results[2], env)
    assert fake.stats.max_in_flight == 4
    assert fake.stats.requests == 60


def test_requests_per_minute_limit(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    writer = llm_writer(rpm=5, limit_window_seconds=1.0, concurrency=16)  # 5 per second
    t0 = time.monotonic()
    run(
        writer.write(
            TextKind.ISSUE, some(small_requests, TextKind.ISSUE, 8) + some(small_requests, TextKind.ISSUE, 4)
        )
    )
    assert time.monotonic() - t0 >= 1.0  # 12 requests at 5/s after a burst of 5


def test_dry_run_sends_nothing_and_estimates(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    reqs = some(small_requests, TextKind.CASE, 10)
    run(llm_writer().write(TextKind.CASE, reqs[:4]))  # 4 answers cached
    fake.reset()
    dry = llm_writer(dry_run=True, api_key="")
    out = run(dry.write(TextKind.CASE, reqs))
    assert len(out) == 10 and fake.stats.requests == 0
    row = dry.usage.kinds["case"]
    assert row["cache_hits"] == 4 and row["estimated_requests"] == 6
    assert row["estimated_prompt_tokens"] > 6 * 100 and row["estimated_completion_tokens"] > 0


def test_settings_round_trip_without_secrets(tmp_path: Path) -> None:
    s = LLMSettings(model="gpt-4o-mini", base_url="http://u:p@localhost:8000/v1/", rpm=10)
    opts = s.options()
    assert hash(opts) and LLMSettings.from_options(opts) == s
    assert (
        endpoint_url(s.base_url) == "http://localhost:8000/v1"
        and endpoint_host(s.base_url) == "localhost:8000"
    )
    assert endpoint_host(None) == "api.openai.com"
    with pytest.raises(LLMConfigError, match="Unknown LLM writer option"):
        LLMSettings.from_options({"model": "m", "api_key": "x"})


def test_openai_without_a_key_says_how_to_give_one(env: PromptEnv) -> None:
    with pytest.raises(LLMConfigError, match="set OPENAI_API_KEY"):
        LLMWriter(LLMSettings(model="gpt-4o-mini"), 0, env)


def test_key_from_dotenv(env: PromptEnv, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("OPENAI_API_KEY=sk-from-dotenv-123456\n")
    w = LLMWriter(LLMSettings(model="gpt-4o-mini"), 0, env)
    assert w._api_key == "sk-from-dotenv-123456"
    assert "sk-from-dotenv-123456" not in repr(w.describe()) and "sk-from-dotenv-123456" not in repr(
        w.settings
    )


def test_redact() -> None:
    assert redact("bad key sk-abcd1234567890xyz given", ["sk-abcd1234567890xyz"]) == "bad key *** given"
    assert redact("key sk-proj-ABCDEFGHIJKLMNOP") == "key sk-proj***"
