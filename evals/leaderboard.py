"""The leaderboard in the shape of CRMArena's (seeds/crmarena-leaderboard.txt): one row per model and
framework, one column per task (NCR HTU TCU NED PVI KQA TII MTA BRI) holding the mean reward × 100 (token F1
for KQA), and Overall = the mean of the task columns. A task that was not run shows `-` and is left out of
Overall."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from evals.tasks import abbreviations

FRAMEWORK_NAMES = {"function-calling": "Function Calling", "react": "ReAct", "act": "Act"}


def task_scores(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, float | int]]:
    """Per task: mean reward × 100 over finished instances, and how many there were."""
    sums: dict[str, list[float]] = {}
    for r in rows:
        if r.get("status") == "done":
            sums.setdefault(str(r["task"]), []).append(float(r["reward"]))
    return {t: {"score": round(100 * sum(v) / len(v), 1), "instances": len(v)} for t, v in sums.items() if v}


def board_row(
    model: str, framework: str, scores: Mapping[str, Mapping[str, float | int]], **extra: Any
) -> dict[str, Any]:
    abbr = abbreviations()
    cols: dict[str, float | None] = {
        a: (float(scores[t]["score"]) if t in scores else None) for t, a in abbr.items()
    }
    present = [v for v in cols.values() if v is not None]
    overall = round(sum(present) / len(present), 1) if present else None
    return {
        "model": model,
        "framework": FRAMEWORK_NAMES.get(framework, framework),
        **cols,
        "Overall": overall,
        "instances": {abbr[t]: int(s["instances"]) for t, s in scores.items() if t in abbr},
        **extra,
    }


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    return f"{v:g}" if isinstance(v, float) else str(v)


def markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """A Markdown table, best Overall first."""
    columns = list(abbreviations().values())
    head = ["Model", "Agentic Framework", *columns, "Overall"]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---", "---"] + ["---:"] * (len(head) - 2)) + "|",
    ]
    for r in sorted(rows, key=lambda r: -(r.get("Overall") or -1.0)):
        cells = [
            str(r["model"]),
            str(r["framework"]),
            *(_cell(r.get(c)) for c in columns),
            _cell(r.get("Overall")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
