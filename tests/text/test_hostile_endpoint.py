"""Hostile LLM endpoints (issue 10 item 5): what gateways and overloaded servers send, through the real client.

Each fault that used to end a build with a raw traceback (a 200 with a cut JSON body, an HTML page, an
`{"error": ...}` envelope or no choices) has its reproducer here, then a build runs through a mix of every
fault at once and must come out whole, and a rerun must come from the cache alone.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from flows.cli import app
from generator.text.base import TextKind, TextRequest
from generator.text.cache import CachedResponse
from generator.text.llm import BadAnswer, LLMUnavailable, excerpt, read_completion
from generator.text.render import PromptEnv
from tests.conftest import SMALL_PROFILE
from tests.fakes.openai_server import FakeOpenAI, html_page
from tests.text.conftest import SENTINEL_KEY, WriterFactory, run
from tests.text.test_build_llm import TEXT_FIELDS, rows
from tests.text.test_llm_writer import assert_verified

Requests = dict[TextKind, list[TextRequest]]

# What each transport fault is counted as by the writer (reports/llm_usage.json `errors`).
COUNTED_AS = {
    "cut": "bad_answers",
    "html-200": "bad_answers",
    "error-200": "bad_answers",
    "empty-choices": "bad_answers",
    "close": "connection_errors",
    "500-html": "server_errors",
    "502-html": "server_errors",
    "503-html": "server_errors",
    "429-bare": "rate_limited",
}


def completion(content: Any = "{}", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
    body.update(extra)
    return body


# -- reading a 200's body ---------------------------------------------------------------------------------


def test_a_completion_is_read() -> None:
    body = json.dumps(completion('{"name": "x"}')).encode()
    assert read_completion(body) == CachedResponse('{"name": "x"}', None, "stop", 11, 7)
    refused = completion(None)
    refused["choices"][0]["message"]["refusal"] = "No."
    del refused["usage"]
    assert read_completion(json.dumps(refused).encode()) == CachedResponse(None, "No.", "stop", 0, 0)


@pytest.mark.parametrize(
    ("body", "content_type", "named"),
    [
        (json.dumps(completion("x"))[:60].encode(), "application/json", "a cut-off or invalid JSON body"),
        (html_page(200).body, "text/html; charset=utf-8", "an HTML page"),
        (html_page(502).body, "application/json", "an HTML page"),  # mislabelled
        (b"upstream connect error", "text/plain", "a non-JSON body"),
        (
            b'{"error": {"message": "overloaded", "type": "server_error"}}',
            "application/json",
            "an error envelope",
        ),
        (json.dumps(completion(choices=[])).encode(), "application/json", "a completion with no choices"),
        (b'{"object": "list", "data": []}', "application/json", "JSON without `choices`"),
        (b"[1, 2]", "application/json", "JSON that is not an object"),
        (b"", "application/json", "an empty body"),
        (b"\xff\xfe{}", "application/json", "a body that is not UTF-8 text"),
        (json.dumps(completion(choices=[{"message": "hi"}])).encode(), "", "a malformed chat completion"),
        (json.dumps(completion(["a", "b"])).encode(), "", "a malformed chat completion"),
        (
            json.dumps(completion("x", usage={"prompt_tokens": -1})).encode(),
            "",
            "a malformed chat completion",
        ),
        (b"[" * 100_000, "application/json", "a cut-off or invalid JSON body"),
    ],
)
def test_bodies_that_are_not_completions_are_named(body: bytes, content_type: str, named: str) -> None:
    with pytest.raises(BadAnswer) as info:
        read_completion(body, content_type)
    assert info.value.what == named


def test_html_is_shown_by_its_title() -> None:
    assert excerpt(html_page(502).body.decode()) == "an HTML page: 502 Bad Gateway"
    assert excerpt("x" * 500, 20) == "x" * 19 + "…"
    assert excerpt("<html><body>  Service\n down </body></html>") == "an HTML page: Service down"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.binary(max_size=300) | st.text(max_size=300).map(str.encode),
    st.sampled_from(["application/json", "text/html", ""]),
)
def test_any_body_is_a_completion_or_a_named_fault(body: bytes, content_type: str) -> None:
    """A reader never raises anything but BadAnswer, whatever an endpoint sends."""
    try:
        reply = read_completion(body, content_type)
    except BadAnswer as exc:
        assert exc.what
        return
    assert isinstance(reply, CachedResponse)


_JSON_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80)


@settings(max_examples=150, deadline=None)
@given(
    content=st.none() | _JSON_TEXT,
    finish=st.sampled_from([None, "stop", "length", "content_filter"]),
    tokens=st.tuples(st.integers(0, 10**9), st.integers(0, 10**9)),
    cut=st.floats(0.0, 0.999),
)
def test_completions_read_back_and_any_cut_is_a_fault(
    content: str | None, finish: str | None, tokens: tuple[int, int], cut: float
) -> None:
    body = completion(content, usage={"prompt_tokens": tokens[0], "completion_tokens": tokens[1]})
    body["choices"][0]["finish_reason"] = finish
    raw = json.dumps(body, ensure_ascii=False).encode()
    assert read_completion(raw) == CachedResponse(content, None, finish, *tokens)
    with pytest.raises(BadAnswer):  # every strict prefix of a JSON object is not JSON
        read_completion(raw[: int(len(raw) * cut)])


# -- each fault, once: retried, counted, and the text is still right ----------------------------------------


@pytest.mark.parametrize("fault", sorted(COUNTED_AS))
def test_each_fault_is_retried_and_counted(
    fault: str, small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI, env: PromptEnv
) -> None:
    fake.reset(script=[fault, fault])
    writer = llm_writer(concurrency=1, use_cache=False)
    reqs = small_requests[TextKind.ISSUE][:2]
    out = run(writer.write(TextKind.ISSUE, reqs))
    assert_verified(TextKind.ISSUE, reqs, out, env)
    assert fake.stats.requests == 4
    assert writer.usage.errors[COUNTED_AS[fault]] == 2
    assert sum(writer.usage.errors.values()) == 2


def test_a_slow_answer_past_the_timeout_is_retried(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(script=["slow"], slow_seconds=0.6)
    writer = llm_writer(concurrency=1, use_cache=False, request_timeout=0.3)
    run(writer.write(TextKind.ISSUE, small_requests[TextKind.ISSUE][:1]))
    assert writer.usage.errors["timeouts"] == 1 and fake.stats.requests == 2


@pytest.mark.parametrize(
    ("fault", "named"),
    [
        ("html-200", "answered 200 with an HTML page (Sign in to continue)"),
        ("error-200", "answered 200 with an error envelope (The server is overloaded"),
        ("cut", "answered 200 with a cut-off or invalid JSON body"),
        ("empty-choices", "answered 200 with a completion with no choices"),
    ],
)
def test_a_fault_that_persists_is_reported_by_name(
    fault: str, named: str, small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(faults={fault: 1.0})
    writer = llm_writer(max_retries=2, use_cache=False)
    with pytest.raises(LLMUnavailable) as info:
        run(writer.write(TextKind.ISSUE, small_requests[TextKind.ISSUE][:2]))
    message = str(info.value)
    assert named in message and "still failed after 2 retries" in message and "--base-url" in message
    assert info.value.fields["fault"] == named.split(" with ", 1)[1].split(" (")[0]
    assert SENTINEL_KEY not in message  # the envelope echoes the key; the message does not


def test_a_5xx_html_page_is_summarised(
    small_requests: Requests, llm_writer: WriterFactory, fake: FakeOpenAI
) -> None:
    fake.reset(faults={"502-html": 1.0})
    with pytest.raises(LLMUnavailable) as info:
        run(llm_writer(max_retries=1).write(TextKind.ISSUE, small_requests[TextKind.ISSUE][:1]))
    message = str(info.value)
    assert "HTTP 502" in message and "an HTML page: 502 Bad Gateway" in message and "<html" not in message


# -- the CLI: the error by name, no traceback, the right exit code; --request-timeout --------------------------


def cli_build(fake: FakeOpenAI, out: Path, cache: Path, *extra: str) -> Any:
    return CliRunner().invoke(
        app,
        [
            "build",
            "--no-prefect",
            "--profile",
            str(SMALL_PROFILE),
            "--out",
            str(out),
            "--force",
            "--writer",
            "openai",
            "--model",
            "fake-model",
            "--base-url",
            fake.base_url,
            "--cache",
            str(cache),
            *extra,
        ],
    )


def test_the_cli_names_a_persistent_bad_answer_without_a_traceback(
    fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    fake.reset(faults={"html-200": 1.0})
    result = cli_build(fake, tmp_path / "b", tmp_path / "llm.sqlite", "--max-stall-seconds", "2")
    text = " ".join(result.output.split())
    assert result.exit_code == 1, text  # the endpoint failed (README: 1), not the input
    # Back-off (1 s, doubling) outlasts --max-stall-seconds 2, so the stall ends the run, naming what it saw.
    assert "No request to the LLM endpoint" in text and "× 200 with an HTML page" in text
    assert "The endpoint keeps failing: check --base-url" in text
    assert "Traceback" not in result.output and SENTINEL_KEY not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "3601"])
def test_request_timeout_is_checked(value: str, fake: FakeOpenAI, tmp_path: Path) -> None:
    result = cli_build(fake, tmp_path / "b", tmp_path / "llm.sqlite", "--request-timeout", value)
    assert result.exit_code == 2
    assert "--request-timeout must be more than 0" in " ".join(result.output.split())
    assert fake.stats.requests == 0 and not (tmp_path / "b").exists()


def test_request_timeout_needs_the_llm_writer(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["build", "--no-prefect", "--out", str(tmp_path / "b"), "--request-timeout", "5"]
    )
    assert result.exit_code == 2 and "--request-timeout only apply to the LLM writer" in result.output


# -- a build through every fault at once ----------------------------------------------------------------------

MIX = {
    "429": 0.02,  # with Retry-After (0.05 s)
    "429-bare": 0.01,  # without: exponential back-off
    "500": 0.01,
    "500-html": 0.01,
    "502-html": 0.01,
    "503-html": 0.01,
    "close": 0.01,
    "cut": 0.015,
    "html-200": 0.01,
    "error-200": 0.01,
    "empty-choices": 0.01,
    "hang": 0.01,  # past --request-timeout (1 s)
    "slow": 0.02,  # within it
}


def test_a_build_through_every_fault_at_once_loses_nothing(
    fake: FakeOpenAI,
    tmp_path: Path,
    small_bundle: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    caplog.set_level(logging.DEBUG)
    knobs: dict[str, Any] = {
        "faults": MIX,
        "max_faults_per_request": 2,  # fewer than the writer's retries: no unlucky run can fail the test
        "retry_after": 0.05,
        "hang_seconds": 2.0,
        "slow_seconds": 0.2,
        "truncate_rate": 0.02,  # finish_reason "length", repaired by a follow-up turn
        "schema_invalid_rate": 0.02,  # valid JSON in the wrong shape, repaired likewise
        "require_key": SENTINEL_KEY,
        "seed": 3,
    }
    fake.reset(**knobs)
    cache = tmp_path / "cache" / "llm.sqlite"
    flags = ("--request-timeout", "1", "--concurrency", "16", "--per-task", "3")
    first = cli_build(fake, tmp_path / "one", cache, *flags)
    assert first.exit_code == 0, first.output
    faults = dict(fake.stats.faults)
    assert set(faults) == set(MIX), faults  # every fault really happened
    assert fake.stats.status[429] >= faults["429"] + faults["429-bare"]

    manifest = json.loads((tmp_path / "one" / "manifest.json").read_text())
    usage = json.loads((tmp_path / "one" / "reports" / "llm_usage.json").read_text())
    assert usage["failed_records"] == 0 and usage["filled_by_offline"] == 0
    assert manifest["writer"]["failed"] == 0 and manifest["writer"]["filled"] == 0
    assert usage["totals"]["repairs"] > 0  # the cut-off and schema-invalid replies were asked again
    errors = usage["errors"]
    assert (
        errors["bad_answers"]
        == faults["cut"] + faults["html-200"] + faults["error-200"] + faults["empty-choices"]
    )
    # (a loaded machine may time out a slow answer too, never fewer than the hangs)
    assert errors["connection_errors"] == faults["close"] and errors["timeouts"] >= faults["hang"]
    assert errors["server_errors"] == sum(faults[f] for f in ("500", "500-html", "502-html", "503-html"))
    # Nothing lost: the record counts are the offline build's (they do not depend on the writer), and
    # every text field of every record is there.
    offline = json.loads((small_bundle / "manifest.json").read_text())
    assert manifest["counts"] == offline["counts"]
    for sobject, text_fields in TEXT_FIELDS.items():
        got = rows(tmp_path / "one", sobject)
        assert len(got) == offline["counts"][sobject]
        assert all(row[f].strip() for row in got for f in text_fields), sobject

    # A rerun: the cache answers everything, the endpoint hears nothing, the data are identical.
    fake.reset(**knobs)
    second = cli_build(fake, tmp_path / "two", cache, *flags)
    assert second.exit_code == 0, second.output
    assert fake.stats.requests == 0
    again = json.loads((tmp_path / "two" / "manifest.json").read_text())
    assert again["data_sha256"] == manifest["data_sha256"]

    # The key is nowhere: not in any file written (bundles, cache, work folders), the output or the logs.
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "llm.sqlite" for p in written)
    for path in written:
        assert SENTINEL_KEY.encode() not in path.read_bytes(), path
    assert SENTINEL_KEY not in first.output + second.output
    assert all(SENTINEL_KEY not in r.getMessage() for r in caplog.records)
