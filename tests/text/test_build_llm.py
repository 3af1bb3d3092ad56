"""`orgseed build --writer openai` end to end against the fake server: faults, reruns, secrets, CLI."""

from __future__ import annotations

import asyncio
import csv
import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.build import BuildOptions, BuildReport, build_bundle
from flows.cli import app
from generator.pipeline import LocalExecutor
from generator.text.llm import LLMSettings, LLMVerificationError
from orgs.bundle import staging_path
from tests.conftest import SMALL_PROFILE
from tests.fakes.openai_server import FakeOpenAI
from tests.text.conftest import SENTINEL_KEY

TEXT_FIELDS = {
    "Case": ["Subject", "Description"],
    "EmailMessage": ["Subject", "TextBody"],
    "LiveChatTranscript": ["Body"],
    "Knowledge__kav": ["Title", "Summary", "FAQ_Answer__c"],
    "Product2": ["Name", "Description"],
    "Issue__c": ["Name", "Description__c"],
    "ProductCategory": ["Description"],
}


def build(out: Path, fake: FakeOpenAI, cache: Path, **llm: Any) -> BuildReport:
    settings = LLMSettings(
        model="fake-model", base_url=fake.base_url, cache=str(cache), concurrency=16, **llm
    )
    opts = BuildOptions(
        profile=str(SMALL_PROFILE), out=str(out), force=True, engine="local", writer="openai", llm=settings
    )
    return asyncio.run(build_bundle(opts, LocalExecutor()))


def rows(bundle: Path, sobject: str) -> list[dict[str, str]]:
    with (bundle / "data" / f"{sobject}.csv").open(newline="") as fh:
        return list(csv.DictReader(fh))


def planned_texts(manifest: dict) -> int:
    """Every text the build asks the writer for: one per record text, the rewrites of near-duplicates, and the
    task builders' drafts (new routing cases, product mentions) and query paraphrases."""
    text = manifest["text"]
    tasks = (manifest.get("tasks") or {}).get("text_requests", {})
    return (
        sum(text["requests"].values())
        + sum(text["regenerated_near_duplicates"].values())
        + sum(tasks.values())
    )


def test_faulty_endpoint_build_then_free_identical_rerun(
    fake: FakeOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL_KEY)
    faults = {
        "rate_limit_rate": 0.2,
        "retry_after": 0.1,
        "server_error_rate": 0.05,
        "invalid_json_rate": 0.05,
        "require_key": SENTINEL_KEY,
    }
    fake.reset(**faults)
    cache = tmp_path / "cache" / "llm.sqlite"
    t0 = time.monotonic()
    first = build(tmp_path / "one", fake, cache)
    cold_seconds = time.monotonic() - t0
    assert fake.stats.keys_seen == {SENTINEL_KEY}
    assert fake.stats.status[429] > 20 and fake.stats.status[500] > 3  # the faults really happened

    usage = json.loads((tmp_path / "one" / "reports" / "llm_usage.json").read_text())
    planned = planned_texts(first.manifest)
    totals = usage["totals"]
    assert totals["records"] == planned > 400
    assert usage["failed_records"] == 0 and usage["filled_by_offline"] == 0
    assert totals["repairs"] > 0  # invalid JSON was repaired, not dropped
    assert totals["requests"] == fake.stats.status[200]
    assert usage["errors"]["rate_limited"] == fake.stats.status[429]
    assert first.manifest["writer"] == {
        "name": "openai",
        "model": "fake-model",
        "base_url_host": f"127.0.0.1:{fake.port}",
        "cache": True,
        "fallback": None,
        "failed": 0,
        "filled": 0,
    }
    assert first.manifest["files"]["reports/llm_usage.json"]

    # No record lost, every text present, and each case names its product (checked from the CSVs alone).
    for sobject, fields in TEXT_FIELDS.items():
        for row in rows(tmp_path / "one", sobject):
            assert all(row[f].strip() for f in fields), (sobject, row["Id"])
    assert len(rows(tmp_path / "one", "Case")) == first.counts["Case"]
    product_of_item = {r["Id"]: r["Product2Id"] for r in rows(tmp_path / "one", "OrderItem")}
    product_name = {r["Id"]: r["Name"] for r in rows(tmp_path / "one", "Product2")}
    for case in rows(tmp_path / "one", "Case"):
        assert product_name[product_of_item[case["OrderItemId__c"]]] in case["Description"]

    # The same build again: zero requests, byte-identical data.
    fake.reset(**faults)
    second = build(tmp_path / "two", fake, cache)
    assert fake.stats.requests == 0
    assert second.manifest["data_sha256"] == first.manifest["data_sha256"]
    rerun = json.loads((tmp_path / "two" / "reports" / "llm_usage.json").read_text())
    assert rerun["totals"]["cache_hits"] == totals["requests"] and rerun["totals"]["requests"] == 0

    # The key is nowhere: not in the bundles, the cache, the usage snapshots or the output.
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("llm.sqlite") for p in written)
    for path in written:
        assert SENTINEL_KEY.encode() not in path.read_bytes(), path
    out = capsys.readouterr()
    assert SENTINEL_KEY not in out.out + out.err
    assert cold_seconds < 60


def test_failures_are_reported_and_fail_the_build_unless_filled(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.reset(wrong_content_rate=0.5, faults_on_repairs=True)
    cache = tmp_path / "llm.sqlite"
    with pytest.raises(LLMVerificationError, match="--fallback offline"):
        build(tmp_path / "strict", fake, cache)
    report = json.loads((staging_path(tmp_path / "strict") / "reports" / "llm_usage.json").read_text())
    assert report["failed_records"] > 0 and report["filled_by_offline"] == 0
    assert report["failures"][0]["reasons"] and report["failures"][0]["filled"] is False

    filled = build(tmp_path / "filled", fake, cache, fallback="offline")
    usage = json.loads((tmp_path / "filled" / "reports" / "llm_usage.json").read_text())
    assert filled.manifest["writer"]["filled"] == usage["filled_by_offline"] == usage["failed_records"] > 0
    assert usage["totals"]["records"] == planned_texts(filled.manifest)


def test_dry_run_estimates_and_sends_nothing(fake: FakeOpenAI, tmp_path: Path) -> None:
    out = tmp_path / "never"
    result = CliRunner().invoke(
        app,
        [
            "build",
            "--profile",
            str(SMALL_PROFILE),
            "--out",
            str(out),
            "--writer",
            "openai",
            "--model",
            "gpt-4o-mini",
            "--base-url",
            fake.base_url,
            "--dry-run",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "nothing sent" in result.output and "email_thread" in result.output
    assert fake.stats.requests == 0
    assert not out.exists()


def test_sustained_429s_end_the_cli_run_with_advice(fake: FakeOpenAI, tmp_path: Path) -> None:
    fake.reset(rate_limit_rate=1.0)
    t0 = time.monotonic()
    result = CliRunner().invoke(
        app,
        [
            "build",
            "--no-prefect",
            "--profile",
            str(SMALL_PROFILE),
            "--out",
            str(tmp_path / "b"),
            "--writer",
            "openai",
            "--model",
            "fake-model",
            "--base-url",
            fake.base_url,
            "--max-stall-seconds",
            "1",
        ],
    )
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert (
        "No request to the LLM endpoint" in text and "--concurrency" in text and "--max-stall-seconds" in text
    )
    assert time.monotonic() - t0 < 8
    assert (staging_path(tmp_path / "b") / "reports" / "llm_usage.json").exists()
    assert not (tmp_path / "b").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "gpt-4o"], "only apply to the LLM writer; add --writer openai"),
        (["--writer", "openai"], "--writer openai needs --model"),
        (["--writer", "openai", "--model", "gpt-4o"], "set OPENAI_API_KEY"),
        (["--writer", "llm"], "Unknown --writer `llm`"),
        (
            ["--writer", "openai", "--model", "m", "--base-url", "localhost:8000"],
            "--base-url must be an http(s) URL",
        ),
        (
            ["--writer", "openai", "--model", "m", "--base-url", "http://x/v1", "--concurrency", "0"],
            "--concurrency",
        ),
        (
            ["--writer", "openai", "--model", "m", "--base-url", "http://x/v1", "--fallback", "skip"],
            "--fallback",
        ),
    ],
)
def test_bad_writer_options_fail_before_anything_is_written(
    args: list[str], message: str, tmp_path: Path
) -> None:
    out = tmp_path / "b"
    result = CliRunner().invoke(app, ["build", "--no-prefect", "--out", str(out), *args])
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert not out.exists()
