"""The nine CRMArena tasks: instances and ground truth derived from a bundle's records.

`build_tasks(root, ...)` reads the bundle, samples each task's parameters, solves them with the reference-solver
semantics (see each module), phrases the queries (paraphrased by the writer when it is an LLM), and writes
`tasks/tasks.json`, `tasks/schema.json` and `tasks/ground_truth.jsonl`.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from generator.rng import derive_seed
from generator.tasks.best_region_identification import sampler_best_region, solve_best_region
from generator.tasks.case_routing import draft_new_cases, sampler_case_routing, solve_case_routing
from generator.tasks.common import DOMAIN_DETAILS, Instance, OrgData, Solution, TaskBuildError, fill
from generator.tasks.handle_time import sampler_handle_time, solve_handle_time
from generator.tasks.knowledge_qa import sampler_knowledge_qa, solve_knowledge_qa
from generator.tasks.monthly_trend_analysis import sampler_monthly_trend, solve_monthly_trend
from generator.tasks.named_entity_disambiguation import ned_drafts, sampler_named_entity, solve_named_entity
from generator.tasks.policy_violation_identification import sampler_policy_violation, solve_policy_violation
from generator.tasks.top_issue_identification import sampler_top_issue, solve_top_issue
from generator.tasks.transfer_count import sampler_transfer_count, solve_transfer_count
from generator.text.base import TextKind, TextRequest, TextWriter
from orgs.bundle import Bundle
from schemas.crmarena import NONE_SHARE as _NONE
from schemas.crmarena import NONE_TASKS, TASK_ORDER, reward_metric
from schemas.model import OrgModel

SOLVERS: dict[str, Callable[[OrgData, dict[str, Any]], Solution]] = {
    "case_routing": solve_case_routing,
    "handle_time": solve_handle_time,
    "transfer_count": solve_transfer_count,
    "named_entity_disambiguation": solve_named_entity,
    "policy_violation_identification": solve_policy_violation,
    "top_issue_identification": solve_top_issue,
    "monthly_trend_analysis": solve_monthly_trend,
    "best_region_identification": solve_best_region,
    "knowledge_qa": solve_knowledge_qa,
}


def solve(
    root: Path, task: str, params: dict[str, Any], data: OrgData | None = None
) -> str | list[str] | None:
    """The builders' solver for one instance: the answer, or the sorted tied/ambiguous candidates."""
    sol = SOLVERS[task](data or OrgData(root), params)
    if sol.tie:
        return sorted(sol.tied)
    return sol.answer


class CountingWriter(TextWriter):
    """Counts the requests the task builders send to the run's writer (reported in the manifest)."""

    def __init__(self, inner: TextWriter) -> None:
        self.inner = inner
        self.name = inner.name
        self.requests: dict[str, int] = {}

    async def write(self, kind: TextKind, requests: Any) -> list[dict[str, Any]]:
        self.requests[kind.value] = self.requests.get(kind.value, 0) + len(requests)
        return await self.inner.write(kind, requests)


@dataclass
class TaskSet:
    instances: list[Instance]
    per_task: int
    text_requests: dict[str, int]

    def stats(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for task in TASK_ORDER:
            mine = [i for i in self.instances if i.task == task]
            answers = Counter(str(i.answer) for i in mine if i.answer is not None)
            margins = [i.solution.margin for i in mine if i.solution.margin is not None]
            out[task] = {
                "instances": len(mine),
                "none_share": round(sum(i.answer is None for i in mine) / max(1, len(mine)), 3),
                "majority_share": round(max(answers.values(), default=0) / max(1, len(mine)), 3),
                "distinct_answers": len(answers),
                "median_margin": round(median(margins), 3) if margins else None,
            }
        return out


def schema_config(model: OrgModel) -> list[dict[str, Any]]:
    """The schema config CRMArena agents receive: object → field → description (lookups say what they reference)."""
    out = []
    for obj in model:
        fields = {}
        for f in obj.fields:
            text = f.description
            if f.is_lookup:
                text = f"{text}. References {f.reference_to[0]} object"
            fields[f.name] = text
        out.append({"object": obj.name, "fields": fields})
    return out


async def build_tasks(
    root: Path,
    seed: int,
    per_task: int = 130,
    writer: TextWriter | None = None,
    answer_format: str = "scalar",
    model: OrgModel | None = None,
) -> TaskSet:
    if per_task < 1:
        raise TaskBuildError(f"--per-task must be at least 1 (got {per_task}).")
    if answer_format not in ("scalar", "list"):
        raise TaskBuildError(f"--answer-format must be scalar or list (got {answer_format}).")
    data = OrgData(root, model)
    if writer is None:
        from generator.text.offline import OfflineWriter

        writer = OfflineWriter(seed, str(data.manifest.get("company", "")) or "our company")

    def rng(task: str) -> random.Random:
        return random.Random(derive_seed(seed, "tasks", task))

    counting = CountingWriter(writer)
    writer = counting
    drafts_ncr = await draft_new_cases(data, rng("case_routing.drafts"), per_task * 2, writer)
    drafts_ned = await ned_drafts(data, rng("ned.drafts"), per_task * 8, writer)
    samplers = {
        "knowledge_qa": sampler_knowledge_qa(data),
        "monthly_trend_analysis": sampler_monthly_trend(data),
        "top_issue_identification": sampler_top_issue(data),
        "case_routing": sampler_case_routing(data, drafts_ncr),
        "named_entity_disambiguation": sampler_named_entity(data, drafts_ned),
        "handle_time": sampler_handle_time(data),
        "transfer_count": sampler_transfer_count(data),
        "policy_violation_identification": sampler_policy_violation(data),
        "best_region_identification": sampler_best_region(data),
    }
    instances: list[Instance] = []
    for task in TASK_ORDER:
        if task == "knowledge_qa":
            from generator.tasks.knowledge_qa import knowledge_facts

            available = len(knowledge_facts(data))
            if per_task > available:
                raise TaskBuildError(
                    f"knowledge_qa: the articles plant {available} facts, fewer than --per-task {per_task}. "
                    "Lower --per-task or raise [counts].Knowledge__kav."
                )
        instances += fill(task, per_task, _NONE if task in NONE_TASKS else 0.0, rng(task), samplers[task])
    await _paraphrase(instances, writer)
    _write(Bundle(root), data.model, instances, answer_format)
    return TaskSet(instances, per_task, dict(counting.requests))


async def _paraphrase(instances: list[Instance], writer: TextWriter) -> None:
    """Let the writer rephrase each query's question; the answer-format suffix (`tail`) is appended verbatim."""
    reqs = []
    for k, inst in enumerate(instances):
        reqs.append(TextRequest(TextKind.PARAPHRASE, f"q-{k}", {"text": inst.query, "task": inst.task}))
    out = await writer.write(TextKind.PARAPHRASE, reqs)
    for inst, res in zip(instances, out, strict=True):
        inst.query = str(res["text"])


def _write(bundle: Bundle, model: OrgModel, instances: list[Instance], answer_format: str) -> None:
    tasks, truth = [], []
    for idx, inst in enumerate(instances):
        answer: Any = inst.answer if answer_format == "scalar" else [inst.answer]
        tasks.append(
            {
                "idx": idx,
                "task": inst.task,
                "query": inst.full_query,
                "answer": answer,
                "reward_metric": reward_metric(inst.task),
                "metadata": {"required": inst.required, "optional": DOMAIN_DETAILS},
            }
        )
        truth.append(
            {
                "idx": idx,
                "task": inst.task,
                "params": inst.params,
                "answer": inst.answer,
                "candidates": inst.solution.candidates,
                "margin": inst.solution.margin,
            }
        )
    bundle.write_json("tasks/tasks.json", tasks)
    bundle.write_json("tasks/schema.json", schema_config(model))
    bundle.write_jsonl("tasks/ground_truth.jsonl", truth)


__all__ = ["SOLVERS", "TASK_ORDER", "TaskSet", "build_tasks", "schema_config"]
