"""The task registry: one `TaskSpec` per CRMArena task, registered in one place.

A spec is the task's *contract*, the part every layer agrees on: its name and CRMArena abbreviation, the reward
metric, the share of instances whose answer is None, what kind of value the answer is, the JSON Schema of its
`params`, which params hold record ids (and of which object: the key prefixes come from the org model), which
ids the agent must be told, and the shape of the per-candidate table behind the answer. The code that *uses* a
spec is registered beside it, keyed by the spec's name, in the layer it belongs to:

- `generator/tasks/registry.py`: the builder (sampler, the builders' solver, an optional drafting step);
- `validators/task_solver.py`: the independent solver written from the task specification;
- `validators/tasks_soql.py`: the check through the org's API (CRMArena's SOQL/SOSL tool queries);
- `flows/tasks.py` checks that every registered spec has all three (`orgseed build` refuses to start otherwise).

The JSON Schemas of the task files (`schemas/tasks/tasks.schema.json`, `ground_truth.schema.json`) are rendered
from the registry by `render_task_schemas()`; the files on disk are the rendered result (a test keeps them in
step; `python -m schemas.taskspec` rewrites them). The README's "Adding a task" walks through a new task.
"""

from __future__ import annotations

import calendar
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

from schemas.model import SCHEMA_DIR, OrgModel, load_model

RewardMetric = Literal["exact_match", "fuzzy_match"]
# What the answer is: the id of a record (see `answer_id`), a month name, a US state code or free text.
AnswerKind = Literal["id", "month", "state", "text"]
# The per-candidate table in ground_truth.jsonl: `value` (e.g. mean handle time per agent), `count` (a table of
# counts, where zero entries may be left out), or None (no table, or one the checker does not compare).
TableKind = Literal["value", "count"] | None

NONE_SHARE = 0.3  # CRMArena: 39 of 130 instances answer None in the tasks that have None answers
MONTHS: tuple[str, ...] = tuple(calendar.month_name[1:])

# The id kinds tasks refer to, and the sObject whose key prefix each id carries (taken from the org model).
ID_KINDS: dict[str, str] = {
    "user": "User",
    "product": "Product2",
    "issue": "Issue__c",
    "article": "Knowledge__kav",
    "case": "Case",
    "contact": "Contact",
}
TASK_SCHEMA_DIR = SCHEMA_DIR / "tasks"


@dataclass(frozen=True)
class TaskSpec:
    """One task's contract. See the module docstring for where its code is registered."""

    name: str
    abbreviation: str  # CRMArena's leaderboard abbreviation (NCR, HTU, ...)
    description: str
    reward_metric: RewardMetric
    answer: AnswerKind
    params_schema: Mapping[str, Any]  # JSON Schema of `params` ($refs into ground_truth.schema.json's $defs)
    answer_id: str | None = None  # the id kind (a key of ID_KINDS) when `answer` is "id"
    none_share: float = 0.0  # share of instances whose answer is None
    param_ids: Mapping[str, str] = field(default_factory=dict)  # param name → id kind
    told_ids: tuple[str, ...] = ()  # params the agent must be told (in the query or metadata.required)
    dated: bool = False  # params carry `today_date`, which metadata.required must state
    table: TableKind = None
    column: int = 100  # position of the task's column on CRMArena's leaderboard (NCR first)
    external: bool = False  # CRMArena's harness treats the task as customer-facing ("external")

    def __post_init__(self) -> None:
        if self.answer == "id" and self.answer_id not in ID_KINDS:
            raise ValueError(
                f"task {self.name}: answer_id must be one of {sorted(ID_KINDS)} for an id answer."
            )
        unknown = sorted(set(self.param_ids.values()) - set(ID_KINDS))
        if unknown:
            raise ValueError(f"task {self.name}: param_ids name unknown id kinds {unknown}.")
        if not 0.0 <= self.none_share < 1.0:
            raise ValueError(f"task {self.name}: none_share must be in [0, 1).")


def _ref(defn: str) -> dict[str, str]:
    return {"$ref": f"#/$defs/{defn}"}


def _id_ref(kind: str) -> dict[str, str]:
    return {"$ref": f"tasks.schema.json#/$defs/{kind}Id"}


def _agent_window_task(name: str, abbr: str, column: int, description: str) -> TaskSpec:
    return TaskSpec(
        name=name,
        abbreviation=abbr,
        column=column,
        description=description,
        reward_metric="exact_match",
        answer="id",
        answer_id="user",
        none_share=NONE_SHARE,
        params_schema=_ref("agentWindow"),
        dated=True,
        table="value" if name == "handle_time" else "count",
    )


# CRMArena's nine tasks, in the block order of its released instances (reference §5.2).
BUILTIN: tuple[TaskSpec, ...] = (
    TaskSpec(
        name="knowledge_qa",
        abbreviation="KQA",
        column=5,
        external=True,
        description="Answer a customer's question from the knowledge articles.",
        reward_metric="fuzzy_match",
        answer="text",
        params_schema={
            "required": ["article_id", "question"],
            "properties": {"article_id": _id_ref("article"), "question": {"type": "string", "minLength": 1}},
        },
        param_ids={"article_id": "article"},
    ),
    TaskSpec(
        name="monthly_trend_analysis",
        abbreviation="MTA",
        column=7,
        description="The month in which a product's cases peaked over a window.",
        reward_metric="exact_match",
        answer="month",
        params_schema={
            "required": ["product_id", "today_date", "end_date", "period", "interval_count"],
            "not": {"anyOf": [{"required": ["period_name"]}, {"required": ["year"]}]},
            "properties": {
                "product_id": _id_ref("product"),
                "today_date": _ref("dateTime"),
                "end_date": _ref("dateTime"),
                "period": {"enum": ["month", "quarter"]},
                "interval_count": _ref("positive"),
            },
        },
        param_ids={"product_id": "product"},
        told_ids=("product_id",),
        dated=True,
        table="count",
    ),
    TaskSpec(
        name="top_issue_identification",
        abbreviation="TII",
        column=6,
        description="The issue most reported for a product over a window.",
        reward_metric="exact_match",
        answer="id",
        answer_id="issue",
        none_share=NONE_SHARE,
        params_schema={
            "allOf": [_ref("window")],
            "required": ["product_id", "today_date"],
            "properties": {"product_id": _id_ref("product"), "today_date": _ref("dateTime")},
        },
        param_ids={"product_id": "product"},
        told_ids=("product_id",),
        dated=True,
        table="count",
    ),
    TaskSpec(
        name="case_routing",
        abbreviation="NCR",
        column=0,
        description="The agent a new case should be routed to.",
        reward_metric="exact_match",
        answer="id",
        answer_id="user",
        params_schema={
            "required": ["issue_id", "product_id"],
            "properties": {"issue_id": _id_ref("issue"), "product_id": _id_ref("product")},
        },
        param_ids={"issue_id": "issue", "product_id": "product"},
    ),
    TaskSpec(
        name="named_entity_disambiguation",
        abbreviation="NED",
        column=3,
        external=True,
        description="Which product a customer means, from what they bought over a window.",
        reward_metric="exact_match",
        answer="id",
        answer_id="product",
        none_share=NONE_SHARE,
        params_schema={
            "required": ["contact_id", "today_date", "period", "interval_count", "ambiguous_product_name"],
            "properties": {
                "contact_id": _id_ref("contact"),
                "today_date": _ref("dateTime"),
                "period": {"enum": ["day", "week", "month"]},
                "interval_count": _ref("positive"),
                "ambiguous_product_name": {"type": "string", "minLength": 1},
            },
        },
        param_ids={"contact_id": "contact"},
        told_ids=("contact_id",),
        dated=True,
    ),
    _agent_window_task("handle_time", "HTU", 1, "The agent with the shortest or longest mean handle time."),
    _agent_window_task("transfer_count", "TCU", 2, "The agent with the fewest or most case transfers."),
    TaskSpec(
        name="policy_violation_identification",
        abbreviation="PVI",
        column=4,
        description="The knowledge article whose policy a case's handling violated.",
        reward_metric="exact_match",
        answer="id",
        answer_id="article",
        none_share=NONE_SHARE,
        params_schema={"required": ["case_id"], "properties": {"case_id": _id_ref("case")}},
        param_ids={"case_id": "case"},
        told_ids=("case_id",),
    ),
    TaskSpec(
        name="best_region_identification",
        abbreviation="BRI",
        column=8,
        description="The state whose closed cases were handled fastest over a window.",
        reward_metric="exact_match",
        answer="state",
        params_schema={
            "allOf": [_ref("window")],
            "required": ["today_date"],
            "properties": {"today_date": _ref("dateTime")},
        },
        dated=True,
        table="value",
    ),
)

_REGISTRY: dict[str, TaskSpec] = {}


class TaskRegistryError(ValueError):
    pass


def register(spec: TaskSpec) -> TaskSpec:
    """Add a task to the registry (after the ones already registered: block order is registration order)."""
    if spec.name in _REGISTRY:
        raise TaskRegistryError(f"task {spec.name!r} is registered already.")
    if any(s.abbreviation.lower() == spec.abbreviation.lower() for s in _REGISTRY.values()):
        raise TaskRegistryError(f"task {spec.name!r}: abbreviation {spec.abbreviation!r} is taken.")
    _REGISTRY[spec.name] = spec
    return spec


def unregister(name: str) -> None:
    if name in BUILTIN_NAMES:
        raise TaskRegistryError(f"task {name!r} is one of CRMArena's nine and cannot be removed.")
    _REGISTRY.pop(name, None)


@contextmanager
def registered(spec: TaskSpec) -> Iterator[TaskSpec]:
    """Register `spec` for the duration of a `with` block (tests, experiments)."""
    register(spec)
    try:
        yield spec
    finally:
        unregister(spec.name)


for _spec in BUILTIN:
    register(_spec)
BUILTIN_NAMES = frozenset(s.name for s in BUILTIN)
CRMARENA_TASKS: tuple[str, ...] = tuple(s.name for s in BUILTIN)  # CRMArena's nine, in block order


def specs() -> tuple[TaskSpec, ...]:
    """Every registered task, in block order."""
    return tuple(_REGISTRY.values())


def task_names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def leaderboard_order() -> tuple[TaskSpec, ...]:
    """The registered tasks in CRMArena's leaderboard column order (NCR, HTU, TCU, NED, PVI, KQA, TII, MTA, BRI)."""
    return tuple(sorted(specs(), key=lambda s: s.column))


def spec(name: str) -> TaskSpec:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise TaskRegistryError(f"unknown task {name!r}; expected one of {', '.join(_REGISTRY)}.") from None


def is_task(name: object) -> TypeGuard[str]:
    return isinstance(name, str) and name in _REGISTRY


def key_prefix(kind: str, model: OrgModel | None = None) -> str:
    """The key prefix of ids of `kind` (a key of ID_KINDS), from the org model."""
    return (model or load_model()).key_prefix(ID_KINDS[kind])


# -- the task files' JSON Schemas, rendered from the registry --------------------------------------------


def _answer_schema(s: TaskSpec) -> dict[str, Any]:
    one: dict[str, Any]
    if s.answer == "id":
        one = _ref(f"{s.answer_id}Id")
    elif s.answer == "month":
        one = _ref("monthName")
    elif s.answer == "state":
        one = _ref("stateCode")
    else:
        one = {"type": "string", "minLength": 1}
    item = {"anyOf": [one, {"type": "null"}]}
    return {"anyOf": [one, {"type": "null"}, {"type": "array", "minItems": 1, "maxItems": 1, "items": item}]}


def _branch(name: str, then: dict[str, Any]) -> dict[str, Any]:
    return {
        "if": {"properties": {"task": {"const": name}}, "required": ["task"]},
        "then": {"properties": then},
    }


def render_task_schemas(model: OrgModel | None = None) -> dict[str, dict[str, Any]]:
    """`tasks.schema.json` and `ground_truth.schema.json` for the registered tasks (file name → document)."""
    model = model or load_model()
    tasks_doc = json.loads((TASK_SCHEMA_DIR / "tasks.schema.template.json").read_text(encoding="utf-8"))
    truth_doc = json.loads(
        (TASK_SCHEMA_DIR / "ground_truth.schema.template.json").read_text(encoding="utf-8")
    )
    for name, doc in (("tasks", tasks_doc), ("ground_truth", truth_doc)):
        doc["$comment"] = (
            f"Rendered by schemas/taskspec.py from {name}.schema.template.json and the task registry; "
            "do not edit by hand (`python -m schemas.taskspec` rewrites it)."
        )
    defs = tasks_doc["$defs"]
    defs["taskName"] = {"enum": list(task_names())}
    for kind, sobject in ID_KINDS.items():
        defs[f"{kind}Id"] = {
            "type": "string",
            "pattern": f"^{model.key_prefix(sobject)}[0-9A-Za-z]{{15}}$",
            "description": f"{sobject} Id",
        }
    defs["monthName"] = {"enum": list(MONTHS)}
    defs["answers"] = {s.name: _answer_schema(s) for s in specs()}
    defs["instance"]["allOf"] = [
        _branch(
            s.name,
            {"reward_metric": {"const": s.reward_metric}, "answer": {"$ref": f"#/$defs/answers/{s.name}"}},
        )
        for s in specs()
    ]
    truth_doc["allOf"] = [
        _branch(
            s.name,
            {
                "params": dict(s.params_schema),
                "answer": {"$ref": f"tasks.schema.json#/$defs/answers/{s.name}"},
            },
        )
        for s in specs()
    ]
    return {"tasks.schema.json": tasks_doc, "ground_truth.schema.json": truth_doc}


def render_text(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def write_task_schemas(folder: Path = TASK_SCHEMA_DIR) -> list[Path]:
    """Rewrite the rendered schema files (only the built-in tasks may be registered: the files are published)."""
    extra = sorted(set(task_names()) - BUILTIN_NAMES)
    if extra:
        raise TaskRegistryError(f"not writing the published schemas with test tasks registered: {extra}.")
    out = []
    for name, doc in render_task_schemas().items():
        path = folder / name
        tmp = path.with_suffix(".tmp")
        tmp.write_text(render_text(doc), encoding="utf-8")
        tmp.replace(path)
        out.append(path)
    return out


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    for written in write_task_schemas():
        print(written)
