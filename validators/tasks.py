"""Check a bundle's task files: format, cross-file agreement, and every answer re-derived independently.

`check_tasks(bundle_root)` reads `tasks/tasks.json`, `tasks/schema.json` and `tasks/ground_truth.jsonl`,
validates them against the JSON Schemas in `schemas/tasks/`, checks what a schema cannot say (idx order
and task blocks, id checksums, the two files agreeing, the today date in `metadata.required`, knowledge
answers present in their article, schema-config fields and lookups against the org model), then recomputes
every instance's answer from its `params` with `validators.task_solver` — code written from the task
specification, not from the builders — and compares it with both files. Every problem becomes one
`Disagreement`; nothing raises on the first problem.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.taskspec import is_task, spec
from validators.task_format import (
    Disagreement,
    check_agreement,
    check_block_order,
    check_ground_truth_format,
    check_metadata,
    check_schema_config,
    check_tasks_format,
    id_problem,
    idx_task,
    read_task_files,
    schema_errors,
    show,
    unwrap,
)
from validators.task_solver import SOLVERS, ParamError, Solution, TaskData, solve

VALUE_TOLERANCE = 0.01  # the builders may round minutes / seconds to two decimals


@dataclass
class TaskCheckReport:
    disagreements: list[Disagreement]
    instances: int
    seconds: float


# -- answers -------------------------------------------------------------------------------------------


def _table(task: str) -> str | None:
    """The kind of candidate table behind `task`'s answers (`value`, `count`, or None)."""
    return spec(task).table if is_task(task) else None


def _explain(task: str, sol: Solution) -> str:
    solver = SOLVERS.get(task)
    if solver is not None and solver.explain is not None:
        return solver.explain(sol)
    if _table(task) is not None and isinstance(sol.candidates, Mapping):
        d = sol.details
        top = sorted(sol.candidates.items(), key=lambda kv: kv[1])[:3]
        shown = ", ".join(f"{k}: {v:g}" for k, v in top)
        return f"window {d.get('window')}, {len(sol.candidates)} candidate(s) ({shown}{'...' if len(sol.candidates) > 3 else ''})"
    return ""


def _values_differ(a: float, b: float) -> bool:
    return not math.isclose(a, b, rel_tol=1e-6, abs_tol=VALUE_TOLERANCE)


def compare_candidates(task: str, mine: Solution, theirs: Any) -> str | None:
    """Why the builder's `candidates` differ from the re-derived table (None when they agree)."""
    solver = SOLVERS.get(task)
    if solver is not None and solver.compare_candidates is not None:
        return solver.compare_candidates(mine, theirs)
    table = _table(task)
    if table is None or not isinstance(mine.candidates, Mapping):
        return None
    if theirs is None:
        theirs = {}
    if not isinstance(theirs, Mapping):
        return f"candidates should be an object of candidate → value, got {type(theirs).__name__}"
    try:
        t = {str(k): float(v) for k, v in theirs.items()}
    except (TypeError, ValueError):
        return "candidates values must be numbers"
    m = dict(mine.candidates)
    if table == "count":
        t = {k: v for k, v in t.items() if v != 0}
        m = {k: v for k, v in m.items() if v != 0}
    only_mine, only_theirs = sorted(set(m) - set(t)), sorted(set(t) - set(m))
    if only_mine or only_theirs:
        return f"candidate keys differ: missing {only_mine[:5]}, unexpected {only_theirs[:5]}"
    off = [k for k in sorted(m) if _values_differ(m[k], t[k])]
    if off:
        k = off[0]
        return f"{len(off)} value(s) differ, e.g. {k}: re-derived {m[k]:g}, found {t[k]:g}"
    return None


def check_answer(
    task: str,
    idx: int,
    params: Mapping[str, Any],
    row: Mapping[str, Any],
    tasks_answer: Any,
    data: TaskData,
    tasks_has: bool = True,
) -> list[Disagreement]:
    """Re-derive one instance and compare it with ground_truth.jsonl (and tasks.json's answer)."""
    try:
        sol = solve(data, task, params)
    except ParamError as exc:
        return [
            Disagreement(
                idx,
                task,
                "format",
                "interpretable params",
                dict(params),
                f"idx {idx} ({task}): {exc.message} Fix the params written to ground_truth.jsonl.",
                "ground_truth.jsonl",
            )
        ]
    out: list[Disagreement] = []
    gt_answer = unwrap(row.get("answer"))
    why = _explain(task, sol)
    if sol.problem is not None:
        return [
            Disagreement(
                idx,
                task,
                "underivable",
                None,
                gt_answer,
                f"idx {idx} ({task}): {sol.problem}; "
                "the instance cannot be checked — fix its params or the data they point at.",
                "ground_truth.jsonl",
            )
        ]
    if sol.tied:
        out.append(
            Disagreement(
                idx,
                task,
                "tie",
                list(sol.tied),
                gt_answer,
                f"idx {idx} ({task}): "
                f"{len(sol.tied)} candidates tie for the answer ({', '.join(sol.tied)}; {why}); the builder "
                "must never emit a tie — drop the instance or resample its parameters.",
                "ground_truth.jsonl",
            )
        )
        return out
    if sol.ambiguous:
        out.append(
            Disagreement(
                idx,
                task,
                "ambiguous",
                list(sol.ambiguous),
                gt_answer,
                f"idx {idx} ({task}): "
                f"{len(sol.ambiguous)} answers fit ({', '.join(sol.ambiguous)}; {why}); resample the "
                "instance so exactly one does.",
                "ground_truth.jsonl",
            )
        )
        return out
    for file, found in (("ground_truth.jsonl", gt_answer), ("tasks.json", unwrap(tasks_answer))):
        if file == "tasks.json" and not tasks_has:
            continue
        if found != sol.answer:
            out.append(
                Disagreement(
                    idx,
                    task,
                    "answer_mismatch",
                    sol.answer,
                    found,
                    f"idx {idx} ({task}): "
                    f"{file} answers {show(found)} but re-deriving from params gives {show(sol.answer)} "
                    f"({why}); find which derivation is wrong and fix it.",
                    file,
                )
            )
    own_check = SOLVERS[task].check if task in SOLVERS else None
    broken = own_check(sol, params) if own_check is not None else None
    if broken is not None:
        expected, found, message = broken
        out.append(
            Disagreement(
                idx, task, "format", expected, found, f"idx {idx} ({task}): {message}", "ground_truth.jsonl"
            )
        )
    if "candidates" in row:
        problem = compare_candidates(task, sol, row.get("candidates"))
        if problem:
            out.append(
                Disagreement(
                    idx,
                    task,
                    "candidates_mismatch",
                    sol.candidates,
                    row.get("candidates"),
                    f"idx {idx} ({task}): ground_truth candidates disagree with the re-derived table: "
                    f"{problem}; check the builder's per-candidate computation.",
                    "ground_truth.jsonl",
                )
            )
    margin = row.get("margin")
    if _table(task) is not None and isinstance(margin, int | float) and not isinstance(margin, bool):
        if sol.answer is not None and margin <= 0:
            out.append(
                Disagreement(
                    idx,
                    task,
                    "margin_mismatch",
                    sol.margin,
                    margin,
                    f"idx {idx} ({task}): "
                    f"margin {margin} means a tie or a wrong winner; the winner must lead strictly.",
                    "ground_truth.jsonl",
                )
            )
        elif sol.margin is not None and _values_differ(abs(float(margin)), sol.margin):
            out.append(
                Disagreement(
                    idx,
                    task,
                    "margin_mismatch",
                    sol.margin,
                    margin,
                    f"idx {idx} ({task}): "
                    f"margin {margin:g} but the winner leads the runner-up by {sol.margin:g}; recompute it.",
                    "ground_truth.jsonl",
                )
            )
    return out


def check_answers(data: TaskData, tasks: Sequence[Any], gt: Sequence[Any]) -> list[Disagreement]:
    by_idx = {i: d for d in tasks for i, _ in [idx_task(d)] if i is not None}
    out: list[Disagreement] = []
    for row in gt:
        idx, task = idx_task(row)
        if idx is None or not is_task(task) or not isinstance(row.get("params"), Mapping):
            continue
        doc = by_idx.get(idx)
        tasks_answer = doc.get("answer") if isinstance(doc, Mapping) else None
        out.extend(check_answer(task, idx, row["params"], row, tasks_answer, data, tasks_has=doc is not None))
    return out


# -- entry point ---------------------------------------------------------------------------------------


def check_task_documents(
    tasks: Sequence[Any] | None,
    schema_config: Any,
    gt: Sequence[Any] | None,
    data: TaskData | None,
) -> list[Disagreement]:
    """Every check on already-loaded documents (`data` None: format and agreement checks only)."""
    out: list[Disagreement] = []
    if tasks is not None:
        out.extend(check_tasks_format(tasks))
    if schema_config is not None:
        out.extend(check_schema_config(schema_config))
    if gt is not None:
        out.extend(check_ground_truth_format(gt))
        out.extend(check_block_order([idx_task(r) for r in gt], "ground_truth.jsonl"))
    if tasks is not None and gt is not None:
        out.extend(check_agreement(tasks, gt))
        out.extend(check_metadata(tasks, gt))
    if gt is not None and data is not None:
        out.extend(check_answers(data, tasks or [], gt))
    return out


def _named(gt: Sequence[Any], key: str) -> set[str]:
    """The values of `params.<key>` the instances of `gt` name (rows without it, or malformed, name none)."""
    return {
        str(row["params"][key])
        for row in gt
        if isinstance(row, Mapping) and isinstance(row.get("params"), Mapping) and key in row["params"]
    }


def message_cases(gt: Sequence[Any]) -> set[str]:
    """The cases the instances name (`params.case_id`): the only ones whose emails and chats a solver reads
    (policy violation), so the check keeps their messages and not the whole EmailMessage and chat objects."""
    return _named(gt, "case_id")


def order_contacts(gt: Sequence[Any]) -> set[str]:
    """The contacts the instances name (`params.contact_id`): the only ones whose accounts' orders a solver
    reads (named-entity disambiguation), so the check indexes their orders and not every order of the org."""
    return _named(gt, "contact_id")


def check_tasks_report(bundle_root: Path | str) -> TaskCheckReport:
    started = time.perf_counter()
    root = Path(bundle_root)
    files = read_task_files(root / "tasks")
    gt = files.ground_truth
    data = TaskData.load(root, message_cases(gt), order_contacts(gt)) if gt else None
    found = files.problems + check_task_documents(files.tasks, files.schema_config, files.ground_truth, data)
    found.sort(key=lambda d: (d.idx is None, d.idx if d.idx is not None else 0, d.kind))
    return TaskCheckReport(found, len(files.ground_truth or []), time.perf_counter() - started)


def check_tasks(bundle_root: Path | str) -> list[Disagreement]:
    """All disagreements between the bundle's task files and an independent re-derivation (empty = clean)."""
    return check_tasks_report(bundle_root).disagreements


__all__ = [
    "Disagreement",
    "TaskCheckReport",
    "check_answer",
    "check_task_documents",
    "check_tasks",
    "check_tasks_report",
    "id_problem",
    "schema_errors",
    "unwrap",
]
