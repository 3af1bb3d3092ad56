"""Fidelity figures (issue 16 item 7): measured on the default org and held to their targets.

Targets and the CRMArena figures they come from (CRMArena's released task set: SalesforceAIResearch/CRMArena,
first commit, `crm_sandbox/data/tasks_natural.json`, 1,170 instances, 130 per task):

| figure                                   | target | CRMArena | orgseed before issue 16 |
|------------------------------------------|--------|----------|-------------------------|
| distinct policy-violation queries        | >= 50  | 67       | 4                       |
| distinct queries, every other task       | >= 100 | 116-130  | 101-130                 |
| queries mentioning None                  | 0      | 0 outside PVI's format line (PVI: "or None if no violation is found") | over half |
| queries with an example answer "(e.g."   | 0      | BRI's "(eg. CA)" | 260 (MTA, BRI)   |
| NED queries holding the exact name       | 0%     | 0%       | ~50% of answerable      |

The text figures (distinct-n per field, repeated 8-word sequences, verbatim knowledge questions) are in the
report too; their targets belong to the writer's work (issue 16 items 1 and 3) and are held by its tests.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from orgs.bundle import Bundle
from validators import fidelity_report
from validators.audit import run_audit
from validators.fidelity_report import (
    TARGETS,
    TEXT_FIELDS,
    below_target,
    fidelity_figures,
    figures_from,
    query_figures,
)

OTHER_TASKS_DISTINCT_TARGET = 100


def test_the_default_org_meets_every_query_target(default_bundle: Path) -> None:
    figures = fidelity_figures(default_bundle)
    assert figures["below_target"] == []
    distinct = {q["task"]: q["distinct_queries"] for q in figures["queries"]}
    assert distinct["policy_violation_identification"] >= 50
    others = {t: v for t, v in distinct.items() if t != "policy_violation_identification"}
    assert len(others) == 8 and min(others.values()) >= OTHER_TASKS_DISTINCT_TARGET, others
    assert figures["none_mentions"] == 0 and figures["answer_hints"] == 0
    assert figures["ned_exact_name_share"] == 0.0
    # The build wrote the same figures and keeps their summary in the manifest.
    assert json.loads((default_bundle / "reports" / "fidelity.json").read_text()) == figures
    manifest = json.loads((default_bundle / "manifest.json").read_text())
    assert manifest["tasks"]["fidelity"]["distinct_queries"] == distinct
    assert "reports/fidelity.json" in manifest["files"]


def test_text_figures_cover_the_written_fields(default_bundle: Path) -> None:
    figures = fidelity_figures(default_bundle)
    names = {t["name"] for t in figures["text"]}
    assert {"Case.Subject", "Case.Description", "LiveChatTranscript.Body", "EmailMessage.TextBody"} <= names
    for t in figures["text"]:
        assert 0 < t["distinct_1"] <= t["distinct_2"] <= t["distinct_3"] <= 1
        assert all(0 < g["share"] <= 1 and len(g["text"].split()) == 8 for g in t["top_8grams"])


def test_a_field_past_the_held_size_is_read_again(
    default_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each text field is read once while its text fits in TEXT_HELD characters, else twice: same figures."""
    reads: Counter[str] = Counter()  # "sObject.field" → reads of that column alone
    iter_columns = Bundle.iter_columns

    def counted(bundle: Bundle, sobject: str, columns: list[str], rows: int | None = None) -> Any:
        reads[".".join([sobject, *columns])] += 1
        return iter_columns(bundle, sobject, columns, rows)

    monkeypatch.setattr(Bundle, "iter_columns", counted)
    held = fidelity_figures(default_bundle)["text"]
    assert {t["name"]: reads[t["name"]] for t in held} == {t["name"]: 1 for t in held}
    reads.clear()
    monkeypatch.setattr(fidelity_report, "TEXT_HELD", 0)
    assert fidelity_figures(default_bundle)["text"] == held
    assert {t["name"]: reads[t["name"]] for t in held} == {t["name"]: 2 for t in held}


def test_query_figures_by_hand() -> None:
    tasks = [
        {"task": "policy_violation_identification", "query": "Was a policy broken? Return the Id, or None."},
        {"task": "policy_violation_identification", "query": "Was a policy broken? Return the Id, or None."},
        {"task": "policy_violation_identification", "query": "Did the agent breach a policy?"},
        {"task": "monthly_trend_analysis", "query": "Which month? Return the month name (e.g. January)."},
        {"task": "monthly_trend_analysis", "query": "Nonetheless, which month?"},  # "Nonetheless" is not None
    ]
    rows = {q["task"]: q for q in query_figures(tasks)}
    assert rows["policy_violation_identification"] == {
        "task": "policy_violation_identification",
        "instances": 3,
        "distinct_queries": 2,
        "crmarena_distinct_queries": 67,
        "none_mentions": 2,
        "answer_hints": 0,
    }
    assert (
        rows["monthly_trend_analysis"]["none_mentions"],
        rows["monthly_trend_analysis"]["answer_hints"],
    ) == (0, 1)


def test_below_target_names_each_missed_figure() -> None:
    """The figures of the default org before issue 16: 4 PVI queries, None in most queries, names in NED."""
    products = pd.DataFrame({"Name": ["Apex Trail Runners"]})

    def frames(name: str) -> pd.DataFrame | None:
        return products if name == "Product2" else None

    tasks = [
        {"task": "policy_violation_identification", "query": f"Q{k % 4}? Return the Id, or None if none."}
        for k in range(130)
    ] + [{"task": "named_entity_disambiguation", "query": "Show me the Apex Trail Runners I bought."}]
    figures = figures_from(frames, tasks, [])
    missed = {b["figure"]: b for b in figures["below_target"]}
    assert set(missed) == {
        "none_mentions",
        "distinct_queries.policy_violation_identification",
        "ned_exact_name_share",
    }
    assert missed["distinct_queries.policy_violation_identification"]["value"] == 4
    assert missed["none_mentions"]["value"] == 130 and missed["ned_exact_name_share"]["value"] == 1.0
    assert below_target({"queries": []}) == []  # no task files: nothing to hold to a target
    assert set(TARGETS) == {
        "none_mentions",
        "answer_hints",
        "distinct_queries.policy_violation_identification",
        "ned_exact_name_share",
        *(f"top_8gram.{o}.{f}" for o, f in TEXT_FIELDS),
    }


def test_a_templated_text_field_is_below_target_once_it_has_a_sample() -> None:
    """130 subjects of which 20 share one 8-word run (15%) miss the 3% target; 129 of them are too few to hold."""
    shared = "my order arrived late and the box was torn"
    subjects = [
        f"{shared} {k}" if k < 20 else f"subject number {k} about something else entirely" for k in range(130)
    ]

    def frames(rows: int) -> Any:
        return lambda name: pd.DataFrame({"Subject": subjects[:rows]}) if name == "Case" else None

    missed = {b["figure"]: b for b in below_target(figures_from(frames(130), [], []))}
    assert set(missed) == {"top_8gram.Case.Subject"}
    assert missed["top_8gram.Case.Subject"]["value"] == round(20 / 130, 4)
    assert missed["top_8gram.Case.Subject"]["target"] == "<= 0.03"
    assert below_target(figures_from(frames(129), [], [])) == []


def test_the_audit_shows_the_figures(default_bundle: Path) -> None:
    report = run_audit(default_bundle)
    section = report["sections"]["fidelity"]
    assert section["verdict"] == "ok" and section["flags"] == []
    assert section["figures"]["queries"] == fidelity_figures(default_bundle)["queries"]
