"""The instances an evaluation runs: a bundle's `tasks/tasks.json`, `tasks/schema.json` and ground truth."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schemas.errors import UsageError
from schemas.taskspec import leaderboard_order, specs, task_names


def abbreviations() -> dict[str, str]:
    """Task name → the leaderboard's column, in its column order (seeds/crmarena-leaderboard.txt), for the
    registered tasks (schemas/taskspec.py)."""
    return {s.name: s.abbreviation for s in leaderboard_order()}


def external_tasks() -> frozenset[str]:
    """The tasks CRMArena's harness treats as customer-facing ("external") (reference §1, assets.py)."""
    return frozenset(s.name for s in specs() if s.external)


@dataclass(frozen=True)
class Instance:
    idx: int
    task: str
    query: str
    answer: tuple[str, ...]  # the ground truth as a list of strings; None is ("None",)
    reward_metric: str
    required: str
    optional: str
    params: dict[str, Any]  # the reference-solver params of ground_truth.jsonl ({} when absent)

    @property
    def scalar_answer(self) -> str:
        return ", ".join(self.answer)


class BundleTasks:
    """Every instance of a bundle and its schema config."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        tasks_path = self.root / "tasks" / "tasks.json"
        schema_path = self.root / "tasks" / "schema.json"
        for p in (tasks_path, schema_path):
            if not p.is_file():
                raise UsageError(
                    f"{p} is missing: {self.root} is not a bundle with tasks. Build one with `orgseed build` "
                    "(or add tasks with `orgseed tasks BUNDLE`).",
                    path=str(p),
                )
        raw = _load_json(tasks_path)
        if not isinstance(raw, list):
            raise UsageError(f"{tasks_path}: expected a JSON list of task instances.", path=str(tasks_path))
        self.schema: list[dict[str, Any]] = _load_json(schema_path)
        params: dict[int, dict[str, Any]] = {}
        gt_path = self.root / "tasks" / "ground_truth.jsonl"
        if gt_path.is_file():
            for n, line in enumerate(gt_path.read_text(encoding="utf-8").splitlines(), 1):
                if line.strip():
                    try:
                        g = json.loads(line)
                        params[int(g["idx"])] = dict(g.get("params") or {})
                    except (ValueError, KeyError, TypeError) as exc:
                        raise UsageError(
                            f"{gt_path}:{n}: not a ground-truth line ({exc}).", path=str(gt_path)
                        ) from exc
        self.instances: list[Instance] = []
        for i, t in enumerate(raw):
            try:
                meta = t.get("metadata") or {}
                if isinstance(meta, str):  # some copies carry metadata as a stringified dict
                    meta = json.loads(meta)
                idx = int(t["idx"])
                self.instances.append(
                    Instance(
                        idx=idx,
                        task=str(t["task"]),
                        query=str(t["query"]),
                        answer=normalise_answer(t["answer"]),
                        reward_metric=str(t["reward_metric"]),
                        required=str(meta.get("required") or ""),
                        optional=str(meta.get("optional") or ""),
                        params=params.get(idx, {}),
                    )
                )
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise UsageError(
                    f"{tasks_path}: instance at /{i} is malformed ({exc!r}); expected idx, task, query, answer, "
                    "reward_metric and metadata.",
                    path=str(tasks_path),
                    pointer=f"/{i}",
                ) from exc

    def select(self, tasks: list[str] | None = None, per_task: int | None = None) -> list[Instance]:
        """The instances of `tasks` (all when None), the first `per_task` of each in idx order."""
        wanted = resolve_tasks(tasks) if tasks else list(task_names())
        out: list[Instance] = []
        for name in wanted:
            mine = sorted((i for i in self.instances if i.task == name), key=lambda i: i.idx)
            out += mine if per_task is None else mine[:per_task]
        return sorted(out, key=lambda i: i.idx)


def normalise_answer(answer: Any) -> tuple[str, ...]:
    """A scalar, a one-element list or null → a tuple of strings (null → ('None',)), whatever the answer
    format the task files were built with."""
    if isinstance(answer, list):
        items = tuple("None" if a is None else str(a) for a in answer)
        return items or ("None",)
    return ("None",) if answer is None else (str(answer),)


def resolve_tasks(names: list[str]) -> list[str]:
    """Task names from names or leaderboard abbreviations (NCR, htu, ...), in block order."""
    abbr = abbreviations()
    by_abbr = {v.lower(): k for k, v in abbr.items()}
    out: set[str] = set()
    for raw in names:
        for name in (n.strip() for n in raw.split(",")):
            if not name:
                continue
            key = by_abbr.get(name.lower(), name)
            if key not in abbr:
                raise UsageError(
                    f"--tasks: unknown task {name!r}; use task names ({', '.join(task_names())}) or their "
                    f"abbreviations ({', '.join(abbr.values())}).",
                    task=name,
                )
            out.add(key)
    return [t for t in task_names() if t in out]


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it as JSON ({exc}).", path=str(path)) from exc
