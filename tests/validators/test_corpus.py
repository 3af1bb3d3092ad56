"""The corruption corpus (tests/fixtures/corruptions/*.json): each corruption of the small bundle is reported
with the right rule at the exact record, field and line, and nothing else changes.

The clean small bundle is the baseline: a corrupted copy must report every expected finding (each exactly
as often as expected) and no finding the clean bundle does not already have.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES
from tests.validators.corpus import corrupt, matches
from validators.findings import RULES, Report
from validators.run import validate_bundle

CORPUS = sorted((FIXTURES / "corruptions").glob("*.json"))
# Rules no shipped object schema can trigger (empty cells are null, and no schema has a maximum or other
# keywords); tests/validators/test_schema.py covers them with a synthetic object schema.
NOT_IN_CORPUS = {"schema.min-length", "schema.maximum", "schema.constraint"}
# Symlinks, FIFOs and devices cannot be JSON recipes: tests/orgs/test_hostile_bundles.py makes them.
NOT_IN_CORPUS |= {"bundle.unsafe-file"}


def load(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def where(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["rule"], f.get("object"), f.get("record"), f.get("field"), f.get("file"), f.get("pointer"))


def test_the_corpus_is_large_and_distinct() -> None:
    specs = [load(p) for p in CORPUS]
    assert len(specs) >= 25
    assert len({s["title"] for s in specs}) == len(specs)


def test_every_rule_is_exercised_by_the_corpus() -> None:
    used = {e["rule"] for p in CORPUS for e in load(p)["expect"]}
    assert used <= set(RULES)
    assert set(RULES) - NOT_IN_CORPUS - used == set()


def test_clean_small_bundle_has_no_findings_but_near_duplicates(small_report: Report) -> None:
    others = [f.to_json() for f in small_report.findings if f.rule != "text.near-duplicate"]
    assert others == []
    assert small_report.exit_code == 0
    assert small_report.skipped == []


def test_clean_small_bundle_has_no_near_duplicates(small_report: Report) -> None:
    assert [f.to_json() for f in small_report.findings] == []


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_corruption_is_reported_exactly(
    path: Path, small_bundle: Path, small_report: Report, tmp_path: Path
) -> None:
    spec = load(path)
    corrupted = corrupt(spec, small_bundle, tmp_path / "bundle")
    expected = corrupted.expected()
    report = validate_bundle(tmp_path / "bundle")
    found = [f.to_json() for f in report.findings]

    wanted = Counter(json.dumps(e, sort_keys=True) for e in expected)
    for text, times in wanted.items():
        e = json.loads(text)
        hits = [f for f in found if matches(e, f)]
        assert len(hits) == times, f"{path.stem}: expected {times}× {e}, found {len(hits)}:\n" + "\n".join(
            json.dumps(f) for f in found
        )
    baseline = {where(f.to_json()) for f in small_report.findings}
    unexpected = [f for f in found if not any(matches(e, f) for e in expected) and where(f) not in baseline]
    assert unexpected == [], f"{path.stem}: unexpected findings"
    # Findings read like instructions: they name the record they are about.
    for f in found:
        if f.get("record"):
            assert f["record"] in f["message"]
    severe = {RULES[e["rule"]].severity.value for e in expected}
    assert report.exit_code == (2 if "fatal" in severe else 1 if "error" in severe else 0)


# the corruptions checked by the rules that look orders, order items and parents up a slice of rows at a time
SLICED = [
    p
    for p in CORPUS
    if p.stem.startswith(("integrity-cardinality", "integrity-dangling-order-item", "rules-item"))
    or p.stem in ("rules-activated-order-without-items", "rules-order-outside-book-validity")
]


@pytest.mark.parametrize("path", SLICED, ids=[p.stem for p in SLICED])
def test_corruption_is_reported_exactly_when_rows_are_looked_up_a_few_at_a_time(
    path: Path, small_bundle: Path, small_report: Report, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # slices of 3 order items and 3 parents: the corrupted row is in some later slice, so a row found there
    # must be reported with its own record and line, not its place in the slice
    from validators import integrity, rules

    monkeypatch.setattr(rules, "ITEM_SLICE", 3)
    monkeypatch.setattr(integrity, "PARENT_SLICE", 3)
    spec = load(path)
    corrupted = corrupt(spec, small_bundle, tmp_path / "bundle")
    found = [f.to_json() for f in validate_bundle(tmp_path / "bundle").findings]
    expected = corrupted.expected()
    assert expected
    for e in expected:
        assert sum(matches(e, f) for f in found) == expected.count(e), (path.stem, e, found)
    baseline = {where(f.to_json()) for f in small_report.findings}
    assert [f for f in found if not any(matches(e, f) for e in expected) and where(f) not in baseline] == []
