"""Ground truth through the org's API: CRMArena's tool queries via simple-salesforce over HTTPS."""

from __future__ import annotations

import json
from pathlib import Path

from orgs.local import connect, disconnect
from tests.conftest import copy_bundle
from validators.tasks_soql import check_tasks_via_api


def test_the_default_build_re_derived_every_answer_through_the_api(default_bundle: Path) -> None:
    api = json.loads((default_bundle / "manifest.json").read_text())["tasks"]["api_check"]
    assert api["instances"] == 1170 and api["queries"] > 1000


def test_a_wrong_answer_of_every_task_is_caught(tmp_path: Path, small_bundle: Path) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    path = root / "tasks" / "ground_truth.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    tampered: dict[int, object] = {}
    seen: set[str] = set()
    for g in rows:
        if g["task"] in seen:
            continue
        others = [
            h["answer"] for h in rows if h["task"] == g["task"] and h["answer"] not in (None, g["answer"])
        ]
        if g["answer"] is not None and others:
            g["answer"] = others[0]  # another real answer of the same task: plausible, and wrong
        elif g["answer"] is not None:
            g["answer"] = None
        else:
            g["answer"] = others[0] if others else "005Ws0000000000AAA"
        tampered[g["idx"]] = g["answer"]
        seen.add(g["task"])
    path.write_text("".join(json.dumps(g) + "\n" for g in rows))
    try:
        result = check_tasks_via_api(root, connect(root))
    finally:
        disconnect(root)
    assert len(seen) == 9
    assert sorted(d.idx for d in result.disagreements) == sorted(tampered)
    for d in result.disagreements:
        assert d.expected == tampered[d.idx] and "CRMArena tool queries" in d.message


def test_the_lines_checked_are_the_files_with_only_what_the_check_reads(small_bundle: Path) -> None:
    """ground_truth_lines keeps, of each line, idx, task, params and answer, as the file has them, in file
    order; the candidates (most of the file at scale) are not held (expected: the file read here whole)."""
    from validators.tasks_soql import ground_truth_lines

    path = small_bundle / "tasks" / "ground_truth.jsonl"
    whole = [json.loads(line) for line in path.read_text().splitlines()]
    assert whole and all("candidates" in g for g in whole)  # the file has more than the check reads
    got = ground_truth_lines(small_bundle)
    assert got == [{k: g[k] for k in ("idx", "task", "params", "answer")} for g in whole]
