"""Format checks of the task files: JSON Schemas, idx order and blocks, ids, cross-file agreement.

Used by `validators/tasks.py` (which adds the re-derived answers); every problem is one `Disagreement`.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import jsonschema
from referencing import Registry, Resource

from schemas.formats import sf_id_suffix
from schemas.model import SCHEMA_DIR as MODEL_DIR
from schemas.model import load_model
from schemas.taskspec import is_task, key_prefix, render_task_schemas, spec, specs, task_names
from schemas.textrules import doublings, zero_price

SCHEMA_DIR = MODEL_DIR / "tasks"
SCHEMA_FILES = ("tasks.schema.json", "ground_truth.schema.json", "schema_config.schema.json")
# tasks.schema.json and ground_truth.schema.json are rendered from the task registry (schemas/taskspec.py).


def _prefix(kind: str) -> str:
    """The key prefix of ids of `kind` (the org model owns prefixes)."""
    return key_prefix(kind, load_model())


def _answer_kind(task: str | None) -> str | None:
    """The id kind of `task`'s answer, when its answer is a record id."""
    return spec(task).answer_id if is_task(task) else None


def _param_ids() -> dict[str, str]:
    """Every param that holds an id, over the registered tasks: param name → id kind."""
    return {key: kind for s in specs() for key, kind in s.param_ids.items()}


@dataclass(frozen=True)
class Disagreement:
    """One problem with the task files.

    kind: `missing` (a file, line or instance is absent), `format` (shape, ids, order, metadata),
    `answer_mismatch`, `tie` (no single winner: the builder must not emit it), `ambiguous` (several
    answers where one is expected), `candidates_mismatch`, `margin_mismatch`, `underivable` (the data
    does not allow an answer: unknown case, article or question).
    """

    idx: int | None
    task: str | None
    kind: str
    expected: Any
    found: Any
    message: str
    file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- small helpers -------------------------------------------------------------------------------------


def id_problem(value: Any, prefix: str) -> str | None:
    """Why `value` is not an 18-character id with key prefix `prefix` (None when it is one)."""
    if not isinstance(value, str):
        return f"expected a {prefix}… id, got {value!r}"
    if len(value) != 18 or not value.isalnum() or not value.isascii():
        return f"`{value}` is not an 18-character alphanumeric id"
    if not value.startswith(prefix):
        return f"`{value}` has key prefix `{value[:3]}`, expected `{prefix}`"
    if sf_id_suffix(value[:15]) != value[15:]:
        return f"`{value}` has the wrong case-safe suffix (expected `{sf_id_suffix(value[:15])}`)"
    return None


def unwrap(answer: Any) -> Any:
    """A scalar answer from the scalar or one-element-list form (`[x]`, `[null]`)."""
    if isinstance(answer, list) and len(answer) == 1:
        return answer[0]
    return answer


def show(value: Any) -> str:
    return "null" if value is None else json.dumps(value, ensure_ascii=False)


@cache
def _validators_for(names: tuple[str, ...]) -> dict[str, jsonschema.Draft202012Validator]:
    del names  # the cache key: the registered tasks
    docs = _documents()
    registry = _registry(docs)
    return {name: jsonschema.Draft202012Validator(doc, registry=registry) for name, doc in docs.items()}


def _documents() -> dict[str, Any]:
    docs: dict[str, Any] = dict(render_task_schemas(load_model()))
    docs["schema_config.schema.json"] = json.loads(
        (SCHEMA_DIR / "schema_config.schema.json").read_text(encoding="utf-8")
    )
    return docs


def _registry(docs: Mapping[str, Any]) -> Registry[Any]:
    return Registry().with_resources((doc["$id"], Resource.from_contents(doc)) for doc in docs.values())


def _validators() -> dict[str, jsonschema.Draft202012Validator]:
    return _validators_for(task_names())


# -- the per-task fast path ------------------------------------------------------------------------------
# Both task schemas end in `allOf` of one branch per task, `{"if": {task is T}, "then": ...}`
# (schemas/taskspec.py `_branch`), so validating a document evaluates every task's `if` and most of the
# time goes there. For a document whose `task` is the string T, each `if` holds exactly when its T is T,
# so the schema with `allOf` cut down to T's `then` (the other entries kept as they are) accepts exactly
# the documents the whole schema accepts. `schema_errors` asks that cut-down validator first; only a
# document it rejects is checked again by the whole schema, for the whole schema's errors.


def _task_of_branch(branch: Any) -> str | None:
    """T when `branch` is exactly `_branch(T, ...)`'s shape: {"if": {task const T, required task}, "then"}."""
    if not isinstance(branch, Mapping) or set(branch) != {"if", "then"}:
        return None
    cond = branch["if"]
    if (
        not isinstance(cond, Mapping)
        or set(cond) != {"properties", "required"}
        or cond["required"] != ["task"]
    ):
        return None
    props = cond["properties"]
    if not isinstance(props, Mapping) or set(props) != {"task"}:
        return None
    const = props["task"]
    if not isinstance(const, Mapping) or set(const) != {"const"} or not isinstance(const["const"], str):
        return None
    return const["const"]


def _cut(schema: dict[str, Any], task: str) -> dict[str, Any]:
    """`schema` with its `allOf`'s task branches cut down to `task`'s `then`."""
    kept = []
    for branch in schema.get("allOf", []):
        t = _task_of_branch(branch)
        if t is None:
            kept.append(branch)
        elif t == task:
            kept.append(branch["then"])
    return {**schema, "allOf": kept}


@cache
def _per_task_for(names: tuple[str, ...]) -> dict[str, dict[str, jsonschema.Draft202012Validator]]:
    """schema file → task → the validator of one document of that task (`tasks.schema.json`: of one item)."""
    docs = _documents()
    truth, tasks = docs["ground_truth.schema.json"], docs["tasks.schema.json"]
    out: dict[str, dict[str, jsonschema.Draft202012Validator]] = {
        "ground_truth.schema.json": {},
        "tasks.schema.json": {},
    }
    if tasks.get("type") != "array" or tasks.get("items") != {"$ref": "#/$defs/instance"}:
        return {}  # not the shape the item by item fast path below reads
    extra: dict[str, Any] = {}
    for task in names:
        # a copy of each document under its own $id, so the whole documents stay in the registry as they are
        cut_truth = {**_cut(truth, task), "$id": f"{truth['$id']}?task={task}"}
        item = {k: v for k, v in tasks.items() if k not in ("type", "items")}
        item["$defs"] = {**tasks["$defs"], "instance": _cut(tasks["$defs"]["instance"], task)}
        item["$ref"] = "#/$defs/instance"
        item["$id"] = f"{tasks['$id']}?task={task}"
        extra[task] = (cut_truth, item)
    registry = _registry(docs)
    by_id = {doc["$id"]: doc for doc in docs.values()}
    by_id.update((d["$id"], d) for pair in extra.values() for d in pair)
    for task, (cut_truth, item) in extra.items():
        # else validated with the registry resolving each $ref, as the whole schema is
        with contextlib.suppress(_NotInlined):
            cut_truth, item = _inline(cut_truth, cut_truth["$id"], by_id), _inline(item, item["$id"], by_id)
        out["ground_truth.schema.json"][task] = jsonschema.Draft202012Validator(cut_truth, registry=registry)
        out["tasks.schema.json"][task] = jsonschema.Draft202012Validator(item, registry=registry)
    return out


class _NotInlined(Exception):
    """A `$ref` that `_inline` cannot replace (a cycle, a target it cannot find)."""


_DATA_KEYWORDS = frozenset(
    {"const", "enum", "default", "examples", "$comment"}
)  # values that are not schemas


def _inline(node: Any, base: str, docs: Mapping[str, Any], depth: int = 0) -> Any:
    """The schema `node` (of the document whose URI is `base`) with every `$ref` replaced by the schema it
    points at, itself inlined against its own document: `{"$ref": r, ...}` becomes `{"allOf": [target,
    ...], ...}`, which accepts the same instances (in 2020-12 `$ref` is an applicator beside its siblings).
    Resolving a reference through the registry on every use was a third of a task document's validation.
    `$defs` are dropped (they validate nothing). Raises _NotInlined on a cycle or a target not found."""
    if depth > 64:
        raise _NotInlined("a $ref cycle")
    if isinstance(node, list):
        return [_inline(x, base, docs, depth) for x in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("$ref", "$defs"):
            continue
        if key in ("$dynamicRef", "$anchor", "$dynamicAnchor", "$recursiveRef"):
            raise _NotInlined(key)
        out[key] = value if key in _DATA_KEYWORDS else _inline(value, base, docs, depth)
    ref = node.get("$ref")
    if ref is None:
        return out
    if not isinstance(ref, str):
        raise _NotInlined("a $ref that is not a string")
    uri, _, pointer = urljoin(base, ref).partition("#")
    target: Any = docs.get(uri)
    if target is None:
        raise _NotInlined(f"no document {uri}")
    for part in [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]:
        if not isinstance(target, Mapping) or part not in target:
            raise _NotInlined(f"{ref} points at nothing")
        target = target[part]
    inlined = _inline(target, uri, docs, depth + 1)
    if not out:
        return inlined
    return {**out, "allOf": [inlined, *out.get("allOf", [])]}


def _valid_by_task(name: str, doc: Any) -> bool:
    """True when the per-task validators accept `doc` (then the whole schema does); False: ask the whole."""
    per_task = _per_task_for(task_names()).get(name)
    if per_task is None:
        return False

    def one(item: Any) -> bool:
        task = item.get("task") if isinstance(item, Mapping) else None
        validator = per_task.get(task) if isinstance(task, str) else None
        return validator is not None and validator.is_valid(item)

    if name == "tasks.schema.json":
        return isinstance(doc, list) and all(one(item) for item in doc)
    return one(doc)


def _pointer(path: Iterable[Any]) -> str:
    """A JSON Pointer ("" for the document itself)."""
    return "".join(f"/{p}" for p in path)


def _leaf(err: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """The most telling sub-error of an anyOf/oneOf failure: a pattern or enum miss beats `not null`."""
    if not err.context:
        return err
    ranked = sorted(err.context, key=lambda e: (e.validator == "type", len(e.absolute_path)))
    return _leaf(ranked[0])


def _message(err: jsonschema.ValidationError) -> str:
    rule = err.validator_value
    if err.validator == "not" and isinstance(err.instance, Mapping) and isinstance(rule, Mapping):
        keys = [k for s in rule.get("anyOf", []) for k in s.get("required", [])]
        present = ", ".join(k for k in keys if k in err.instance)
        return (
            f"must not contain {present} here: a window is either relative (end_date, period, "
            "interval_count) or named (period_name, year), never both"
        )
    text = err.message
    return text if len(text) <= 240 else text[:237] + "..."


def schema_errors(name: str, doc: Any) -> list[tuple[str, str]]:
    """(JSON pointer, message) for each way `doc` breaks `schemas/tasks/<name>`."""
    if name in ("tasks.schema.json", "ground_truth.schema.json") and _valid_by_task(name, doc):
        return []
    out = []
    for err in _validators()[name].iter_errors(doc):
        leaf = _leaf(err)
        out.append((_pointer(leaf.absolute_path), _message(leaf)))
    return sorted(set(out))


# -- reading -------------------------------------------------------------------------------------------


@dataclass
class TaskFiles:
    tasks: list[Any] | None
    schema_config: Any
    ground_truth: list[Any] | None
    problems: list[Disagreement]


def read_task_files(tasks_dir: Path) -> TaskFiles:
    problems: list[Disagreement] = []

    def load_json(name: str) -> Any:
        path = tasks_dir / name
        if not path.exists():
            problems.append(
                Disagreement(
                    None, None, "missing", name, None, f"{path} is missing; run the task builders.", name
                )
            )
            return None
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            problems.append(
                Disagreement(
                    None, None, "format", "valid JSON", None, f"{path}: {exc}; rewrite the file.", name
                )
            )
            return None

    tasks = load_json("tasks.json")
    schema_config = load_json("schema.json")
    gt: list[Any] | None = None
    gt_path = tasks_dir / "ground_truth.jsonl"
    if not gt_path.exists():
        problems.append(
            Disagreement(
                None,
                None,
                "missing",
                "ground_truth.jsonl",
                None,
                f"{gt_path} is missing; the task builders must write one line per instance.",
                "ground_truth.jsonl",
            )
        )
    else:
        gt = []
        for lineno, line in enumerate(gt_path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                gt.append(json.loads(line))
            except json.JSONDecodeError as exc:
                problems.append(
                    Disagreement(
                        None,
                        None,
                        "format",
                        "one JSON object per line",
                        line[:80],
                        f"{gt_path}:{lineno}: invalid JSON ({exc.msg}); write one JSON object per line.",
                        "ground_truth.jsonl",
                    )
                )
    if tasks is not None and not isinstance(tasks, list):
        problems.append(
            Disagreement(
                None, None, "format", "a JSON list", type(tasks).__name__, "tasks.json must be a list."
            )
        )
        tasks = None
    return TaskFiles(tasks, schema_config, gt, problems)


# -- format checks -------------------------------------------------------------------------------------


def idx_task(doc: Any) -> tuple[int | None, str | None]:
    if isinstance(doc, Mapping):
        idx = doc.get("idx")
        task = doc.get("task")
        return (idx if isinstance(idx, int) and not isinstance(idx, bool) else None), (
            task if isinstance(task, str) else None
        )
    return None, None


def check_tasks_format(tasks: Sequence[Any]) -> list[Disagreement]:
    """tasks.json against its schema, plus idx continuity, block order and id checksums."""
    out: list[Disagreement] = []
    for pointer, message in schema_errors("tasks.schema.json", list(tasks)):
        parts = pointer.split("/")
        pos = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        idx, task = idx_task(tasks[pos]) if pos is not None and pos < len(tasks) else (None, None)
        out.append(
            Disagreement(
                idx,
                task,
                "format",
                "valid per schemas/tasks/tasks.schema.json",
                pointer,
                f"tasks.json{pointer}: {message}. Fix the builder that writes this instance.",
                "tasks.json",
            )
        )
    for pos, doc in enumerate(tasks):
        idx, task = idx_task(doc)
        if idx is not None and idx != pos:
            out.append(
                Disagreement(
                    idx,
                    task,
                    "format",
                    pos,
                    idx,
                    f"tasks.json[{pos}] has idx {idx}; instances must be listed in idx order with idx = "
                    "position (0, 1, 2, ... with no gaps or repeats). Renumber the instances.",
                    "tasks.json",
                )
            )
        kind = _answer_kind(task)
        if kind is not None and task is not None and isinstance(doc, Mapping):
            problem = _answer_id_problem(task, kind, doc.get("answer"))
            if problem:
                out.append(
                    Disagreement(idx, task, "format", _prefix(kind), doc.get("answer"), problem, "tasks.json")
                )
        if isinstance(doc, Mapping) and isinstance(doc.get("query"), str):
            amount = zero_price(doc["query"])
            if amount:
                out.append(
                    Disagreement(
                        idx,
                        task,
                        "format",
                        "a real price",
                        amount,
                        f"tasks.json[{pos}].query says an item cost {amount}; nothing is sold for nothing, so "
                        "the builder gave the writer no price. Pass the product's price and rebuild.",
                        "tasks.json",
                    )
                )
            doubled = doublings(doc["query"])
            if doubled:
                out.append(
                    Disagreement(
                        idx,
                        task,
                        "format",
                        "no doubled article or determiner",
                        doubled[0],
                        f"tasks.json[{pos}].query reads {doubled[0]!r}, an article or determiner doubled by a "
                        "template; fix the query template that produced it and rebuild.",
                        "tasks.json",
                    )
                )
    out.extend(check_block_order([idx_task(d) for d in tasks], "tasks.json"))
    return out


def _answer_id_problem(task: str, kind: str, answer: Any) -> str | None:
    value = unwrap(answer)
    if value is None:
        return None
    problem = id_problem(value, _prefix(kind))
    return f"{task} answer: {problem}; the answer must be a real record id." if problem else None


def check_block_order(entries: Sequence[tuple[int | None, str | None]], file: str) -> list[Disagreement]:
    """Blocks of N instances per task in CRMArena's order (0 knowledge_qa, N monthly_trend_analysis, ...)."""
    out: list[Disagreement] = []
    idxs = [i for i, _ in entries if i is not None]
    seen = Counter(idxs)
    for dup, count in sorted(seen.items()):
        if count > 1:
            out.append(
                Disagreement(
                    dup,
                    None,
                    "format",
                    1,
                    count,
                    f"{file}: idx {dup} appears {count} times; give every instance its own idx.",
                    file,
                )
            )
    if idxs:
        missing = sorted(set(range(max(idxs) + 1)) - set(idxs))
        for gap in missing[:20]:
            out.append(
                Disagreement(
                    gap,
                    None,
                    "format",
                    gap,
                    None,
                    f"{file}: idx {gap} is missing (idx must run "
                    "0, 1, 2, ... without gaps); renumber the instances or add the missing one.",
                    file,
                )
            )
    order = task_names()
    total = len(entries)
    if total % len(order):
        out.append(
            Disagreement(
                None,
                None,
                "format",
                f"a multiple of {len(order)}",
                total,
                f"{file} has {total} "
                f"instances; expected N per task for the {len(order)} tasks (N x {len(order)}).",
                file,
            )
        )
        return out
    n = total // len(order)
    for pos, (idx, task) in enumerate(sorted(entries, key=lambda e: (e[0] is None, e[0] or 0))):
        want = order[pos // n] if n else None
        if task != want:
            out.append(
                Disagreement(
                    idx,
                    task,
                    "format",
                    want,
                    task,
                    f"{file}: idx {idx} is a {task} instance but "
                    f"positions {pos // n * n}..{pos // n * n + n - 1} belong to {want} (block order "
                    f"{', '.join(order)}, {n} each). Emit the blocks in that order.",
                    file,
                )
            )
    return out


def check_ground_truth_format(rows: Sequence[Any]) -> list[Disagreement]:
    out: list[Disagreement] = []
    for line, row in enumerate(rows, start=1):
        idx, task = idx_task(row)
        for pointer, message in schema_errors("ground_truth.schema.json", row):
            out.append(
                Disagreement(
                    idx,
                    task,
                    "format",
                    "valid per schemas/tasks/ground_truth.schema.json",
                    pointer,
                    f"ground_truth.jsonl line {line}{' at ' + pointer if pointer else ''}: {message}. Fix the builder that writes it.",
                    "ground_truth.jsonl",
                )
            )
        if not isinstance(row, Mapping) or task is None:
            continue
        params = row.get("params")
        if isinstance(params, Mapping):
            for key, kind in _param_ids().items():
                if key in params:
                    problem = id_problem(params[key], _prefix(kind))
                    if problem:
                        out.append(
                            Disagreement(
                                idx,
                                task,
                                "format",
                                _prefix(kind),
                                params[key],
                                f"ground_truth.jsonl "
                                f"line {line} params.{key}: {problem}; use the record's real id.",
                                "ground_truth.jsonl",
                            )
                        )
            end, today = params.get("end_date"), params.get("today_date")
            if isinstance(end, str) and isinstance(today, str) and end != today[:10] + "T00:00:00Z":
                out.append(
                    Disagreement(
                        idx,
                        task,
                        "format",
                        today[:10] + "T00:00:00Z",
                        end,
                        f"ground_truth.jsonl line "
                        f"{line}: params.end_date should be today_date at 00:00Z (the relative window ends at "
                        "the start of today); fix end_date or today_date.",
                        "ground_truth.jsonl",
                    )
                )
        answer_kind = _answer_kind(task)
        if answer_kind is not None:
            problem = _answer_id_problem(task, answer_kind, row.get("answer"))
            if problem:
                out.append(
                    Disagreement(
                        idx,
                        task,
                        "format",
                        _prefix(answer_kind),
                        row.get("answer"),
                        problem,
                        "ground_truth.jsonl",
                    )
                )
    return out


def check_schema_config(config: Any) -> list[Disagreement]:
    """schema.json against its schema and against the org model (fields exist; lookups say what they reference)."""
    out = [
        Disagreement(
            None,
            None,
            "format",
            "valid per schemas/tasks/schema_config.schema.json",
            pointer,
            f"schema.json{pointer}: {message}. Regenerate the schema config from the org model.",
            "schema.json",
        )
        for pointer, message in schema_errors("schema_config.schema.json", config)
    ]
    if not isinstance(config, list):
        return out
    model = load_model()
    for entry in config:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("fields"), Mapping):
            continue
        name = entry.get("object")
        if not isinstance(name, str) or not model.has(name):
            continue
        spec = model.get(name)
        for field_name, description in entry["fields"].items():
            if not spec.has_field(field_name):
                out.append(
                    Disagreement(
                        None,
                        None,
                        "format",
                        f"a field of {name}",
                        field_name,
                        f"schema.json: "
                        f"{name}.{field_name} is not a field of the org model; remove it or add it to "
                        f"schemas/objects/{name}.json.",
                        "schema.json",
                    )
                )
                continue
            f = spec.field(field_name)
            for target in f.reference_to if f.is_lookup else ():
                if f"References {target} object" not in str(description):
                    out.append(
                        Disagreement(
                            None,
                            None,
                            "format",
                            f"References {target} object",
                            description,
                            f"schema.json: the description of lookup {name}.{field_name} must say "
                            f"`References {target} object` so agents can follow the relationship.",
                            "schema.json",
                        )
                    )
    return out


def check_agreement(tasks: Sequence[Any], gt: Sequence[Any]) -> list[Disagreement]:
    """tasks.json and ground_truth.jsonl describe the same instances with the same answers."""
    out: list[Disagreement] = []
    by_idx = {i: d for d in tasks for i, _ in [idx_task(d)] if i is not None}
    gt_by_idx = {i: r for r in gt for i, _ in [idx_task(r)] if i is not None}
    for idx in sorted(set(by_idx) - set(gt_by_idx)):
        out.append(
            Disagreement(
                idx,
                idx_task(by_idx[idx])[1],
                "missing",
                "a ground_truth.jsonl line",
                None,
                f"idx {idx} is in tasks.json but has no line in ground_truth.jsonl; write its params and "
                "derivation.",
                "ground_truth.jsonl",
            )
        )
    for idx in sorted(set(gt_by_idx) - set(by_idx)):
        out.append(
            Disagreement(
                idx,
                idx_task(gt_by_idx[idx])[1],
                "missing",
                "a tasks.json instance",
                None,
                f"idx {idx} is in ground_truth.jsonl but not in tasks.json; drop the line or add the instance.",
                "tasks.json",
            )
        )
    for idx in sorted(set(by_idx) & set(gt_by_idx)):
        t, g = by_idx[idx], gt_by_idx[idx]
        if not isinstance(t, Mapping) or not isinstance(g, Mapping):
            continue
        if t.get("task") != g.get("task"):
            out.append(
                Disagreement(
                    idx,
                    t.get("task"),
                    "format",
                    t.get("task"),
                    g.get("task"),
                    f"idx {idx} is a "
                    f"{t.get('task')} instance in tasks.json but {g.get('task')} in ground_truth.jsonl; the two "
                    "files must list the same instances.",
                    "ground_truth.jsonl",
                )
            )
        if unwrap(t.get("answer")) != unwrap(g.get("answer")):
            out.append(
                Disagreement(
                    idx,
                    t.get("task"),
                    "answer_mismatch",
                    unwrap(g.get("answer")),
                    unwrap(t.get("answer")),
                    f"idx {idx}: tasks.json answers {show(unwrap(t.get('answer')))} but ground_truth.jsonl "
                    f"{show(unwrap(g.get('answer')))}; both must come from the same derivation.",
                    "tasks.json",
                )
            )
    return out


def check_metadata(tasks: Sequence[Any], gt: Sequence[Any]) -> list[Disagreement]:
    """Date tasks tell the agent today's date; NED/PVI/TII/MTA tell it the ids it needs."""
    out: list[Disagreement] = []
    gt_by_idx = {i: r for r in gt for i, _ in [idx_task(r)] if i is not None}
    for doc in tasks:
        idx, task = idx_task(doc)
        row = gt_by_idx.get(idx) if idx is not None else None
        if (
            not isinstance(doc, Mapping)
            or not isinstance(row, Mapping)
            or not isinstance(row.get("params"), Mapping)
        ):
            continue
        params = row["params"]
        meta = doc.get("metadata")
        required = str(meta.get("required", "")) if isinstance(meta, Mapping) else ""
        query = str(doc.get("query", ""))
        task_spec = spec(task) if is_task(task) else None
        if task_spec is not None and task_spec.dated and isinstance(params.get("today_date"), str):
            today = params["today_date"][:10]
            if today not in required:
                out.append(
                    Disagreement(
                        idx,
                        task,
                        "format",
                        today,
                        None,
                        f"idx {idx} ({task}): metadata.required "
                        f"does not contain today's date {today}; add `## Today's date: {today}` to the policy "
                        "text.",
                        "tasks.json",
                    )
                )
        for key in task_spec.told_ids if task_spec is not None else ():
            value = params.get(key)
            if isinstance(value, str) and value not in query and value not in required:
                out.append(
                    Disagreement(
                        idx,
                        task,
                        "format",
                        value,
                        None,
                        f"idx {idx} ({task}): params.{key} {value} "
                        "appears neither in the query nor in metadata.required, so the agent cannot know it; "
                        "mention it (CRMArena puts it in the query suffix or the required context).",
                        "tasks.json",
                    )
                )
    return out
