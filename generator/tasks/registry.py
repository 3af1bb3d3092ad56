"""The builders' half of the task registry: for each task of `schemas.taskspec`, how instances are drawn and
solved from the bundle's records (and, for tasks that need them, texts drafted before drawing).

A builder is registered under its spec's name. `build_tasks` runs every registered task: first each builder's
`prepare` step (in block order: they may ask the text writer for drafts), then each task's sampler until its
block is full. `flows/tasks.py` checks that every spec has a builder, an independent solver and an API check.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from generator.tasks.best_region_identification import sampler_best_region, solve_best_region
from generator.tasks.case_routing import draft_new_cases, sampler_case_routing, solve_case_routing
from generator.tasks.common import OrgData, Sampler, Solution, TaskBuildError
from generator.tasks.handle_time import sampler_handle_time, solve_handle_time
from generator.tasks.knowledge_qa import knowledge_facts, sampler_knowledge_qa, solve_knowledge_qa
from generator.tasks.monthly_trend_analysis import sampler_monthly_trend, solve_monthly_trend
from generator.tasks.named_entity_disambiguation import ned_drafts, sampler_named_entity, solve_named_entity
from generator.tasks.policy_violation_identification import sampler_policy_violation, solve_policy_violation
from generator.tasks.top_issue_identification import sampler_top_issue, solve_top_issue
from generator.tasks.transfer_count import sampler_transfer_count, solve_transfer_count
from generator.text.base import TextWriter

Solver = Callable[[OrgData, dict[str, Any]], Solution]
# prepare(data, rng, per_task, writer) -> what the sampler needs beyond the data (e.g. drafted new cases).
Prepare = Callable[[OrgData, random.Random, int, TextWriter], Awaitable[Any]]


@dataclass(frozen=True)
class TaskBuilder:
    """How one task's instances are drawn from a bundle.

    sampler(data, prepared) returns the `Sampler` that `common.fill` draws instances with; `solve` answers one
    instance from its params (the builders' solver; `validators/task_solver.py` holds the independent one);
    `prepare` runs before any sampler, with its own random stream `prepare_stream`; `supply(data)` is how
    many distinct instances the org can yield at most, when the task knows it up front (None: unbounded).
    """

    sampler: Callable[[OrgData, Any], Sampler]
    solve: Solver
    prepare: Prepare | None = None
    prepare_stream: str | None = None
    supply: Callable[[OrgData], int] | None = None


BUILDERS: dict[str, TaskBuilder] = {}


def register_builder(name: str, builder: TaskBuilder) -> TaskBuilder:
    if name in BUILDERS:
        raise TaskBuildError(f"a builder for task {name!r} is registered already.")
    if builder.prepare is not None and not builder.prepare_stream:
        raise TaskBuildError(
            f"task {name!r}: a builder with a prepare step needs its own prepare_stream name."
        )
    BUILDERS[name] = builder
    return builder


@contextmanager
def registered_builder(name: str, builder: TaskBuilder) -> Iterator[TaskBuilder]:
    register_builder(name, builder)
    try:
        yield builder
    finally:
        BUILDERS.pop(name, None)


def _no_prep(make: Callable[[OrgData], Sampler]) -> Callable[[OrgData, Any], Sampler]:
    return lambda data, _prepared: make(data)


async def _routing_drafts(data: OrgData, rng: random.Random, per_task: int, writer: TextWriter) -> Any:
    return await draft_new_cases(data, rng, per_task * 2, writer)


async def _ned_drafts(data: OrgData, rng: random.Random, per_task: int, writer: TextWriter) -> Any:
    return await ned_drafts(data, rng, per_task * 8, writer)


def _knowledge_supply(data: OrgData) -> int:
    """One instance per fact the articles plant."""
    return len(knowledge_facts(data))


register_builder(
    "knowledge_qa",
    TaskBuilder(_no_prep(sampler_knowledge_qa), solve_knowledge_qa, supply=_knowledge_supply),
)
register_builder("monthly_trend_analysis", TaskBuilder(_no_prep(sampler_monthly_trend), solve_monthly_trend))
register_builder("top_issue_identification", TaskBuilder(_no_prep(sampler_top_issue), solve_top_issue))
register_builder(
    "case_routing",
    TaskBuilder(sampler_case_routing, solve_case_routing, _routing_drafts, "case_routing.drafts"),
)
register_builder(
    "named_entity_disambiguation",
    TaskBuilder(sampler_named_entity, solve_named_entity, _ned_drafts, "ned.drafts"),
)
register_builder("handle_time", TaskBuilder(_no_prep(sampler_handle_time), solve_handle_time))
register_builder("transfer_count", TaskBuilder(_no_prep(sampler_transfer_count), solve_transfer_count))
register_builder(
    "policy_violation_identification", TaskBuilder(_no_prep(sampler_policy_violation), solve_policy_violation)
)
register_builder("best_region_identification", TaskBuilder(_no_prep(sampler_best_region), solve_best_region))


def builder(name: str) -> TaskBuilder:
    try:
        return BUILDERS[name]
    except KeyError:
        raise TaskBuildError(
            f"task {name!r} is registered in schemas/taskspec.py but has no builder; register one with "
            "generator.tasks.registry.register_builder."
        ) from None


__all__ = [
    "BUILDERS",
    "Prepare",
    "Solver",
    "TaskBuilder",
    "builder",
    "register_builder",
    "registered_builder",
]
