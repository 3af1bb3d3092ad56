"""Hand-made task fixtures: tiny orgs with instances whose answers were worked out by hand.

Layout, one folder per task under `tests/fixtures/tasks/<task>/`:

    data/<Object>.csv      only the objects and columns the task needs, in the bundle's formats
    latent/...             latent files the task needs (policy table, article facts, issue keys)
    cases.json             {task, description, legend: {id: readable name}, cases: [
                              {name, params, outcome, expected, why}]}

`outcome` is `answer` (then `expected` is the answer string or null), `tie` or `ambiguous` (then
`expected` is the sorted list of tied / ambiguous candidates). `why` is the hand derivation.

Any solver can be run on these fixtures. A solver is a callable
`solver(bundle_root: Path, task: str, params: dict) -> str | None | list[str]` returning the answer, or
the sorted list of candidates when there is no single answer (tie / ambiguity). `materialize()` turns a
fixture into a complete bundle folder (every object's CSV with the model's full header, missing columns
empty, plus a manifest), so solvers that read bundles with `orgs.bundle.Bundle.read_object` work too:

    from tests.task_fixtures import run_fixtures
    failures = run_fixtures(my_solver, tmp_path)   # [] when every fixture case passes
"""

from __future__ import annotations

import csv
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orgs.bundle import FORMAT, FORMAT_VERSION
from schemas.model import load_model

FIXTURE_ROOT = Path(__file__).parent / "fixtures" / "tasks"

Solver = Callable[[Path, str, dict[str, Any]], "str | list[str] | None"]


@dataclass(frozen=True)
class FixtureCase:
    task: str
    name: str
    params: dict[str, Any]
    outcome: str  # answer | tie | ambiguous
    expected: str | list[str] | None
    why: str
    folder: Path

    @property
    def id(self) -> str:
        return f"{self.task}: {self.name}"


def fixture_tasks() -> list[str]:
    return sorted(p.name for p in FIXTURE_ROOT.iterdir() if (p / "cases.json").exists())


def load_cases(task: str | None = None) -> list[FixtureCase]:
    out = []
    for name in [task] if task else fixture_tasks():
        folder = FIXTURE_ROOT / name
        doc = json.loads((folder / "cases.json").read_text(encoding="utf-8"))
        if doc["task"] != name:
            raise ValueError(f"{folder / 'cases.json'}: /task is {doc['task']!r}, expected {name!r}")
        for c in doc["cases"]:
            out.append(
                FixtureCase(name, c["name"], c["params"], c["outcome"], c["expected"], c["why"], folder)
            )
    return out


def legend(task: str) -> dict[str, str]:
    return dict(json.loads((FIXTURE_ROOT / task / "cases.json").read_text(encoding="utf-8"))["legend"])


def materialize(task: str, dst: Path) -> Path:
    """Write the fixture of `task` as a complete bundle under `dst` and return its root."""
    src = FIXTURE_ROOT / task
    root = dst / task
    if root.exists():
        return root
    (root / "data").mkdir(parents=True)
    for spec in load_model():
        path = src / "data" / f"{spec.name}.csv"
        rows: list[dict[str, str]] = []
        if path.exists():
            with path.open(encoding="utf-8", newline="") as fh:
                reader = csv.DictReader(fh)
                unknown = [c for c in reader.fieldnames or [] if not spec.has_field(c)]
                if unknown:
                    raise ValueError(f"{path}: column(s) {unknown} are not fields of {spec.name}")
                rows = list(reader)
        with (root / "data" / f"{spec.name}.csv").open("w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(spec.field_names)
            for row in rows:
                writer.writerow([row.get(f, "") for f in spec.field_names])
    if (src / "latent").exists():
        shutil.copytree(src / "latent", root / "latent")
    else:
        (root / "latent").mkdir()
    (root / "tasks").mkdir()
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "seed": 0,  # a hand-written org has no generator seed; 0 satisfies the manifest contract
        "profile": {"name": f"fixture-{task}"},
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return root


def _normal(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return sorted(str(v) for v in value) if len(value) != 1 else value[0]
    return value


def check_case(solver: Solver, case: FixtureCase, root: Path) -> str | None:
    """None when `solver` gives the hand-worked result for `case`, else a sentence saying what differs."""
    got = _normal(solver(root, case.task, dict(case.params)))
    want = _normal(case.expected)
    if got == want:
        return None
    names = legend(case.task)

    def show(v: Any) -> str:
        if isinstance(v, list):
            return "[" + ", ".join(show(x) for x in v) + "]"
        return f"{v} ({names[v]})" if isinstance(v, str) and v in names else repr(v)

    return f"{case.id}: expected {case.outcome} {show(want)}, got {show(got)}. Hand derivation: {case.why}"


def run_fixtures(solver: Solver, dst: Path, task: str | None = None) -> list[str]:
    """Run `solver` on every hand-made fixture case (or those of `task`); one message per failure."""
    failures = []
    for case in load_cases(task):
        problem = check_case(solver, case, materialize(case.task, dst))
        if problem:
            failures.append(problem)
    return failures
