"""The nine CRMArena tasks: instances and ground truth derived from a bundle's records.

`build_tasks(root, ...)` reads the bundle, samples each task's parameters, solves them with the reference-solver
semantics (see each module), phrases the queries (paraphrased by the writer when it is an LLM), and writes
`tasks/tasks.json`, `tasks/schema.json` and `tasks/ground_truth.jsonl`.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from statistics import median
from typing import Any

from generator.rng import derive_seed
from generator.tasks.common import (
    DOMAIN_DETAILS,
    Instance,
    OrgData,
    Solution,
    TaskBuildError,
    fill,
    within_span,
)
from generator.tasks.registry import BUILDERS, builder
from generator.tasks.voice import apply_voice
from generator.text.base import TextKind, TextRequest, TextWriter
from orgs.bundle import Bundle
from schemas.model import OrgModel
from schemas.taskspec import spec, specs, task_names


def solve(
    root: Path, task: str, params: dict[str, Any], data: OrgData | None = None
) -> str | list[str] | None:
    """The builders' solver for one instance: the answer, or the sorted tied/ambiguous candidates."""
    sol: Solution = builder(task).solve(data or OrgData(root), params)
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
    per_task: int  # instances per task built (below `requested` when the org could not yield more)
    text_requests: dict[str, int]
    requested: int = 0
    short: dict[str, int] = field(default_factory=dict)  # tasks that limited per_task → what they yielded

    def stats(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for task in task_names():
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
    adapt: bool = False,
) -> TaskSet:
    """Build `per_task` instances of every registered task. With `adapt` (per_task is the profile's default,
    not one the user asked for), an org too small for that many builds as many as every task yields, the
    same number for each task; otherwise a task that cannot be filled is an error."""
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
    tasks = specs()
    builders = {s.name: builder(s.name) for s in tasks}
    n = per_task
    short: dict[str, int] = {}  # tasks the org cannot fill at the requested count, and how many they yield
    for name, b in builders.items():
        available = b.supply(data) if b.supply is not None else None
        if available is not None and available < n:
            if not adapt:
                raise TaskBuildError(
                    f"{name}: the org yields {available} distinct instances, fewer than --per-task {per_task}. "
                    "Lower --per-task or raise the profile's counts."
                )
            short[name] = available
            n = available
    prepared: dict[str, Any] = {}
    for task, b in builders.items():  # drafts first, in block order (they may call the writer)
        if b.prepare is not None:
            prepared[task] = await b.prepare(data, rng(str(b.prepare_stream)), per_task, writer)
    while True:
        # every task at the same count n (CRMArena's blocks); with `adapt`, lowered to what every task yields
        first = data.span_start.date()
        samplers = {
            task: within_span(b.sampler(data, prepared.get(task)), first) for task, b in builders.items()
        }
        blocks = {
            s.name: fill(s.name, n, s.none_share, rng(s.name), samplers[s.name], partial=adapt) for s in tasks
        }
        fewest = min(len(b) for b in blocks.values())
        if fewest == n:
            break
        short.update({name: len(b) for name, b in blocks.items() if len(b) < n})
        if fewest == 0:
            raise TaskBuildError(
                f"the org yields no instance of {', '.join(k for k, b in blocks.items() if not b)}; raise the "
                "profile's counts or build a data-only org with --per-task 0."
            )
        n = fewest
    instances = [inst for s in tasks for inst in blocks[s.name]]
    if data.style == "crmarena":
        apply_voice(instances, seed)
    await _paraphrase(instances, writer)
    _write(Bundle(root), data.model, instances, answer_format)
    return TaskSet(instances, n, dict(counting.requests), requested=per_task, short=short)


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
                "reward_metric": spec(inst.task).reward_metric,
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


__all__ = ["BUILDERS", "TaskSet", "build_tasks", "schema_config", "solve"]
