"""The validators package as a library: no orchestration imports, and one table of rule ids."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import TypedDict

from tests.conftest import REPO
from validators.findings import RULES, Finding, Severity, drop_covered, finding

RULE_LITERAL = re.compile(r"\"((?:bundle|schema|integrity|rules|text)\.[a-z-]+)\"")


class Cell(TypedDict):
    """The location keywords of `finding`."""

    object: str
    record: str
    field: str
    file: str
    line: int


def test_validators_never_import_prefect_typer_or_rich() -> None:
    code = (
        "import sys, validators, validators.run\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'prefect', 'typer', 'rich', 'generator'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == ""


def test_every_rule_id_the_code_uses_is_declared() -> None:
    used: set[str] = set()
    for path in sorted((REPO / "validators").glob("*.py")):
        if path.name != "findings.py" and not path.name.startswith(
            "task"
        ):  # task checks report Disagreements
            used |= set(RULE_LITERAL.findall(path.read_text(encoding="utf-8")))
    assert used, "no rule ids found; the pattern is wrong"
    assert used - set(RULES) == set()
    family = {"bundle", "schema", "integrity", "rules", "text"}
    assert {r.split(".")[0] for r in RULES} == family
    for rule in RULES.values():
        assert set(rule.covers) <= set(RULES)


def test_a_covering_rule_reports_a_cell_once() -> None:
    cell: Cell = {"object": "Case", "record": "500x", "field": "OwnerId", "file": "data/Case.csv", "line": 3}
    next_line: Cell = {**cell, "line": 4}
    required = finding("schema.required", "empty", **cell)
    lookup = finding("integrity.required-lookup", "no owner", **cell)
    elsewhere = finding("schema.required", "empty", **next_line)
    assert drop_covered([required, lookup, elsewhere]) == [lookup, elsewhere]


def test_findings_serialise_without_empty_keys() -> None:
    f = Finding(
        "text.near-duplicate", Severity.WARNING, "m", "Case", "500x", "Description", "data/Case.csv", 9
    )
    assert f.to_json() == {
        "severity": "warning",
        "rule": "text.near-duplicate",
        "object": "Case",
        "record": "500x",
        "field": "Description",
        "file": "data/Case.csv",
        "line": 9,
        "message": "m",
    }
    assert f.where() == "data/Case.csv:9"
    assert Path(f.file or "").name == "Case.csv"
