"""The task registry, bound: every task registered in `schemas/taskspec.py` must have its three parts.

The spec lives in `schemas/` (the bottom layer); the builder in `generator/tasks/registry.py`, the independent
solver in `validators/task_solver.py` and the check through the org's API in `validators/tasks_soql.py` — three
layers that may not import each other. Only this top layer sees all of them, so this is where the registry is
checked whole: `orgseed build` and `orgseed tasks` refuse to start when a part is missing or stray.
"""

from __future__ import annotations

from typing import ClassVar

from generator.tasks.registry import BUILDERS
from schemas.errors import Terminal
from schemas.taskspec import task_names
from validators.task_solver import SOLVERS
from validators.tasks_soql import API_CHECKS

PARTS = (
    ("a builder", BUILDERS, "generator.tasks.registry.register_builder"),
    ("an independent solver", SOLVERS, "validators.task_solver.register_solver"),
    ("an API check", API_CHECKS, "validators.tasks_soql.register_api_check"),
)


class TaskRegistryIncomplete(Terminal):
    """A registered task lacks a part (or a part names no registered task): exit 2."""

    FIELDS: ClassVar[tuple[str, ...]] = ("problems",)

    def __init__(self, message: str, *, problems: list[str]) -> None:
        super().__init__(message)
        self.problems = problems


def registry_gaps() -> list[str]:
    """Why the task registry is not whole (empty when every spec has all three parts and nothing is stray)."""
    names = task_names()
    out: list[str] = []
    for part, table, how in PARTS:
        for name in names:
            if name not in table:
                out.append(f"task {name!r} has no {part.split(' ', 1)[1]}; register one with {how}.")
        for name in sorted(set(table) - set(names)):
            out.append(
                f"{part} is registered for {name!r}, which is not a task of schemas/taskspec.py; "
                "register its TaskSpec or remove the part."
            )
    return out


def require_complete_registry() -> None:
    gaps = registry_gaps()
    if gaps:
        raise TaskRegistryIncomplete(
            "The task registry is incomplete:\n" + "\n".join(f"  - {g}" for g in gaps), problems=gaps
        )
