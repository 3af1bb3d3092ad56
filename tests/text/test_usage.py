"""Usage accounting, the price table and the merged report."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.text.usage import PriceError, Usage, build_report, load_prices, load_snapshots, price_for


def test_packaged_prices_and_prefix_match() -> None:
    prices, source = load_prices()
    assert source == "generator/text/prices.toml"
    assert price_for("gpt-4o-mini-2024-07-18", prices) == ("gpt-4o-mini", prices["gpt-4o-mini"])
    dated = price_for("gpt-4o-2024-08-06", prices)
    assert dated is not None and dated[0] == "gpt-4o"
    assert price_for("llama3", prices) is None


def test_price_file_override_and_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    own = tmp_path / "p.toml"
    own.write_text('[models."local"]\ninput = 0.0\noutput = 0.0\n')
    monkeypatch.setenv("ORGSEED_PRICES", str(own))
    assert load_prices()[0] == {"local": {"input": 0.0, "output": 0.0}}
    own.write_text('[models."x"]\ninput = "cheap"\n')
    with pytest.raises(PriceError, match="model `x` needs numeric `input` and `output`"):
        load_prices()


def test_snapshots_merge_into_a_report(tmp_path: Path) -> None:
    a = Usage("gpt-4o-mini", "api.openai.com")
    a.add("case", records=10, requests=12, prompt_tokens=1_000_000, completion_tokens=100_000, repairs=2)
    a.error("rate_limited")
    b = Usage("gpt-4o-mini", "api.openai.com")
    b.add("case", records=5, cache_hits=5, cached_prompt_tokens=500, cached_completion_tokens=50)
    b.add("chat", records=1, requests=1, prompt_tokens=10, completion_tokens=10, failed=1, filled=1)
    b.failures.append({"kind": "chat", "key": "x", "reasons": ["r"], "filled": True})
    a.save(tmp_path, "a")
    b.save(tmp_path, "b")
    report = build_report(load_snapshots(tmp_path))
    case = report["models"]["gpt-4o-mini"]["kinds"]["case"]
    assert case["records"] == 15 and case["requests"] == 12 and case["cache_hits"] == 5
    assert case["cache_hit_rate"] == round(5 / 17, 4)
    assert case["cost_usd"] == pytest.approx(0.15 + 0.06)
    assert report["totals"]["records"] == 16
    assert report["errors"]["rate_limited"] == 1
    assert report["failed_records"] == 1 and report["filled_by_offline"] == 1
    assert "note" not in report


def test_unpriced_model_says_where_to_add_it(tmp_path: Path) -> None:
    u = Usage("my-local-llm", "localhost:8000")
    u.add("case", records=1, requests=1, prompt_tokens=5, completion_tokens=5)
    u.save(tmp_path, "u")
    report = build_report(load_snapshots(tmp_path))
    assert report["totals"]["cost_usd"] is None
    assert "No price for my-local-llm in generator/text/prices.toml" in report["note"]
