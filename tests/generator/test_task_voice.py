"""Queries in CRMArena's voice (issue 16 item 2), measured on the default org against CRMArena's released set.

CRMArena's figures come from its repository's first commit (SalesforceAIResearch/CRMArena,
`crm_sandbox/data/tasks_natural.json`, 1,170 instances, read with the `fetch` tool on 2026-12-04):
policy violation has 67 distinct queries over 130 instances; monthly trend, top issue and best region give
`metadata.required` as "- Today's date: YYYY-MM-DD" only; NED as "- Contact Id interacting: ...\\n- Today's
date: ..."; PVI as "- Case Id to be considered is: ..."; NED queries never hold the product's exact name.
(CRMArena's PVI queries do say "or None if no violation is found"; the issue asks for no "or None" unless
the profile asks, so the crmarena style has none.)
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pandas as pd

from generator.tasks import build_tasks
from tests.conftest import copy_bundle
from validators.fidelity import distinct_n
from validators.tasks import check_tasks

PVI_DISTINCT_TARGET = 50  # issue 16: ">= 50 distinct policy violation queries" (CRMArena: 67)


def _tasks(root: Path) -> list[dict]:
    return json.loads((root / "tasks" / "tasks.json").read_text())


def test_default_org_speaks_crmarenas_voice(default_bundle: Path) -> None:
    tasks = _tasks(default_bundle)
    assert [t["idx"] for t in tasks if re.search(r"\bNone\b", t["query"])] == []
    assert [t["idx"] for t in tasks if "(e.g." in t["query"] or "(eg." in t["query"]] == []
    pvi = [t for t in tasks if t["task"] == "policy_violation_identification"]
    assert len({t["query"] for t in pvi}) >= PVI_DISTINCT_TARGET
    for t in tasks:
        req = t["metadata"]["required"]
        if t["task"] in ("monthly_trend_analysis", "top_issue_identification", "best_region_identification"):
            assert re.fullmatch(r"- Today's date: \d{4}-\d\d-\d\d", req), req
        elif t["task"] == "named_entity_disambiguation":
            assert re.fullmatch(
                r"- Contact Id interacting: 003\w{15}\n- Today's date: \d{4}-\d\d-\d\d", req
            ), req
        elif t["task"] == "policy_violation_identification":
            assert re.fullmatch(r"- Case Id to be considered is: 500\w{15}", req), req
        elif t["task"] in ("case_routing", "handle_time", "transfer_count"):
            assert req.startswith("## ") and "Policy" in req  # CRMArena states these policies; so do we


def test_ned_queries_never_name_the_product(default_bundle: Path) -> None:
    names = pd.read_csv(default_bundle / "data" / "Product2.csv", dtype=str)["Name"].str.lower().tolist()
    ned = [t for t in _tasks(default_bundle) if t["task"] == "named_entity_disambiguation"]
    named = [t["idx"] for t in ned if any(n in t["query"].lower() for n in names)]
    assert named == []  # the issue found about half of the answerable queries naming the product exactly
    assert len({t["query"] for t in ned}) == len(ned)


def test_explicit_style_keeps_the_policies_and_the_answers(small_bundle: Path, tmp_path: Path) -> None:
    """`[tasks] style = "explicit"`: today's wording (policies in metadata.required, "or None" in the query);
    the same instances and answers as the crmarena style, except NED whose wording decides its instances."""
    voiced = copy_bundle(small_bundle, tmp_path / "voiced")
    explicit = copy_bundle(small_bundle, tmp_path / "explicit")
    manifest = json.loads((explicit / "manifest.json").read_text())
    manifest["profile"]["task_style"] = "explicit"
    (explicit / "manifest.json").write_text(json.dumps(manifest))
    for root in (voiced, explicit):
        asyncio.run(build_tasks(root, seed=0, per_task=10))
        assert check_tasks(root) == []
    a, b = _tasks(voiced), _tasks(explicit)
    pvi = [t for t in b if t["task"] == "policy_violation_identification"]
    assert all("or None if no policy was violated" in t["query"] for t in pvi)
    assert all("## Policy Violation Check" in t["metadata"]["required"] for t in pvi)
    assert all("(e.g. January)" in t["query"] for t in b if t["task"] == "monthly_trend_analysis")
    assert not any("None" in t["query"] for t in a)
    for x, y in zip(a, b, strict=True):
        if x["task"] != "named_entity_disambiguation":
            assert (x["task"], x["answer"]) == (y["task"], y["answer"])


# Word-pair diversity (distinct-2 over the 130 full queries, answer-format line included) of CRMArena's released
# queries, computed from tasks_natural.json (first commit, read 2026-12-04) with validators.fidelity.distinct_n;
# orgseed's default org before this change in brackets, with its distinct queries of 130:
#   monthly_trend_analysis      0.153 (0.074; 115 distinct)
#   top_issue_identification    0.158 (0.155; 130)
#   best_region_identification  0.067 (0.063; 103)
#   transfer_count              0.094 (0.058; 125)
#   handle_time                 0.099 (0.061; 130)
CRMARENA_QUERY_DISTINCT_2 = {
    "monthly_trend_analysis": 0.153,
    "top_issue_identification": 0.158,
    "best_region_identification": 0.067,
    "transfer_count": 0.094,
    "handle_time": 0.099,
}


def test_reworded_tasks_read_differently_and_vary_as_crmarenas(default_bundle: Path) -> None:
    tasks = _tasks(default_bundle)
    truth = [
        json.loads(x) for x in (default_bundle / "tasks" / "ground_truth.jsonl").read_text().splitlines()
    ]
    names = pd.read_csv(default_bundle / "data" / "Product2.csv", dtype=str).set_index("Id")["Name"]
    for task, target in CRMARENA_QUERY_DISTINCT_2.items():
        rows = [(t, g) for t, g in zip(tasks, truth, strict=True) if t["task"] == task]
        queries = [t["query"] for t, _ in rows]
        # instances differ (distinct parameters), so their queries do
        assert len({json.dumps(g["params"], sort_keys=True) for _, g in rows}) == len(rows)
        assert len(set(queries)) == len(rows) == 130, task
        assert distinct_n(queries, 2) >= target, (task, distinct_n(queries, 2))
        for t, g in rows:
            if "product_id" in g["params"]:  # these tasks name the product (NED does not)
                assert names[g["params"]["product_id"]] in t["query"], t["idx"]
            assert not re.search(r"\bNone\b|\(e\.?g\.", t["query"]), t["idx"]
