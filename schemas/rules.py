"""Field rules: where a field that no generator code produces gets its values.

A field's `x-sf.generate` holds one rule. `schemas/meta/xsf.json` checks its shape; this module checks it
against the field and the model (when the model loads, so a broken rule stops a build before anything is
written) and turns it into a typed, immutable `FieldRule`. `generator/objects/fields.py` applies it.

    {"constant": "Consumer"}                       every record gets this value (null: always empty)
    {"choice": {"Gold": 1, "Silver": 3}}           a value drawn with these weights; keys are written as the CSV
                                                   shows them (`true`, `12.5`, `2024-01-31`); a profile's
                                                   `[picklists.<Object>.<Field>]` weights replace them
    {"choice": "uniform"}                          a picklist value, all equally likely
    {"faker": "company"}                           a Faker (en_US) provider ...
    {"faker": {"provider": "pyint", "args": {"min_value": 1, "max_value": 9}}}   ... with keyword arguments
    {"sequence": {"prefix": "L-", "digits": 6}}    L-000001, L-000002, ... in row (= id) order
    {"range": {"min": 1, "max": 5}}                a number drawn uniformly, both ends included
    {"range": {}}                                  a date or datetime in the profile's time span (or give
                                                   "min"/"max" as the CSV writes them)
    {"reference": "random"}                        a random record of the looked-up object (a self-lookup: an
                                                   earlier record, so hierarchies never loop)
    {"copy": "ContactId.AccountId"}                the value reached through lookups from the record (here the
                                                   contact's account); any field type, the types must agree
    {"copy": "CreatedDate"}                        another field of the same record

Any rule may add `"nullShare": 0.2` (nillable fields only): that share of records is left empty.

Values respect the field: its x-sf type, length and picklist, and its JSON Schema keywords for constants and
choices. Faker text longer than the field's length is cut to it (Faker has no length argument for most
providers); a Faker value of the wrong type (a date for a text field) is an error. Unique fields take only
`sequence`, the one rule that cannot repeat a value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import jsonschema
import networkx as nx

from schemas.errors import ModelError, did_you_mean
from schemas.formats import format_datetime, is_date, is_email, parse_datetime

if TYPE_CHECKING:
    from schemas.model import FieldSpec, ObjectSpec, OrgModel

# A field's value as the generator holds it: text (also picklists, lookups, dates written as text in
# constants are parsed to `date`), bool, int, float, date, datetime (naive UTC); None is empty.
Value = str | bool | int | float | date | datetime | None

STRING_TYPES = frozenset({"string", "textarea", "email", "phone", "url", "picklist", "reference", "id"})
SEQUENCE_TYPES = frozenset({"string", "textarea", "int", "double"})
FRACTION_TYPES = frozenset({"double", "currency"})


@dataclass(frozen=True)
class Constant:
    value: Value


@dataclass(frozen=True)
class Choice:
    values: tuple[Value, ...]
    weights: tuple[float, ...]


@dataclass(frozen=True)
class FakerCall:
    provider: str
    args_json: str = "{}"  # the keyword arguments as canonical JSON (keeps the rule hashable)

    @property
    def args(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.args_json)
        return loaded


@dataclass(frozen=True)
class Sequence:
    prefix: str = ""
    start: int = 1
    digits: int = 1


@dataclass(frozen=True)
class Range:
    low: Value  # None: the start of the profile's time span (dates and datetimes only)
    high: Value  # None: its end (the last day; for a datetime the last second)


@dataclass(frozen=True)
class RandomRecord:
    target: str


@dataclass(frozen=True)
class Copy:
    path: tuple[str, ...]  # lookup fields, then the copied field


Rule = Constant | Choice | FakerCall | Sequence | Range | RandomRecord | Copy
KINDS: dict[type, str] = {
    Constant: "constant",
    Choice: "choice",
    FakerCall: "faker",
    Sequence: "sequence",
    Range: "range",
    RandomRecord: "reference",
    Copy: "copy",
}
RANGE_TYPES = frozenset({"int", "double", "currency", "date", "datetime"})


@dataclass(frozen=True)
class FieldRule:
    """One field's rule, with where it is written (for messages)."""

    rule: Rule
    null_share: float
    file: str  # the object schema's path
    pointer: str  # /properties/<Field>/x-sf/generate

    @property
    def kind(self) -> str:
        return KINDS[type(self.rule)]

    @property
    def where(self) -> str:
        """`<Object>.json: /properties/<Field>/x-sf/generate`, as the model's other errors name places."""
        return f"{Path(self.file).name}: {self.pointer}"


# -- values ----------------------------------------------------------------------------------------------


def json_value(f: FieldSpec, raw: Any) -> Value:
    """A JSON value (a constant) as the field's value; ValueError says why it does not fit."""
    if raw is None:
        return None
    if f.type in ("date", "datetime"):
        if not isinstance(raw, str):
            raise ValueError(f"a {f.type} is written as text, not {json.dumps(raw)}")
        return cell_value(f, raw)
    return python_value(f, raw)


def cell_value(f: FieldSpec, text: str) -> Value:
    """A value written as the CSV shows it (a choice key) as the field's value."""
    if f.type == "boolean":
        if text not in ("true", "false"):
            raise ValueError(f"a boolean is written `true` or `false`, not `{text}`")
        return text == "true"
    if f.type == "int":
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"`{text}` is not a whole number") from None
    if f.type in FRACTION_TYPES:
        try:
            number = float(text)
        except ValueError:
            raise ValueError(f"`{text}` is not a number") from None
        if not math.isfinite(number):
            raise ValueError(f"`{text}` is not a finite number")
        return number
    if f.type == "date":
        if not is_date(text):
            raise ValueError(f"`{text}` is not a date written YYYY-MM-DD")
        return date.fromisoformat(text)
    if f.type == "datetime":
        try:
            return parse_datetime(text)
        except ValueError:
            raise ValueError(f"`{text}` is not a datetime written YYYY-MM-DDTHH:MM:SS.000+0000") from None
    return text


def python_value(f: FieldSpec, value: Any) -> Value:
    """A Python value (a Faker result, a JSON constant) as the field's value; ValueError when the type differs."""
    if value is None:
        return None
    t = f.type
    if t in STRING_TYPES:
        if isinstance(value, str):
            return value
    elif t == "boolean":
        if isinstance(value, bool):
            return value
    elif t == "int":
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    elif t in FRACTION_TYPES:
        if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
            number = float(value)
            if math.isfinite(number):
                return number
    elif t == "date":
        if isinstance(value, date) and not isinstance(value, datetime):
            return value
    elif t == "datetime" and isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.replace(microsecond=0)
    raise ValueError(f"{describe(value)} does not fit {a(t)} field")


def fit_text(f: FieldSpec, value: Value) -> Value:
    """Text cut to the field's length (Faker output only: generated words, nothing of the user's is cut)."""
    if isinstance(value, str) and f.length is not None and len(value) > f.length:
        return value[: f.length].rstrip() or value[: f.length]
    return value


def value_problem(f: FieldSpec, value: Value) -> str | None:
    """Why `value` cannot be stored in `f` (x-sf type, length, picklist, email), or None."""
    if value is None:
        return None if f.nillable else "the field is required, so it cannot be empty"
    if isinstance(value, str):
        if value == "":
            return "an empty text is written as null (and the field then needs to be nillable)"
        if f.length is not None and len(value) > f.length:
            return f"`{value}` is {len(value)} characters long; the field holds {f.length}"
        if f.picklist and value not in f.picklist:
            return f"`{value}` is not a picklist value.{did_you_mean(value, f.picklist)} Allowed: {', '.join(f.picklist)}"
        if f.type == "email" and not is_email(value):
            return f"`{value}` is not an email address"
    return None


def cell_json(value: Value) -> Any:
    """The JSON value the validators see for `value` (dates and datetimes as their CSV text)."""
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, date):
        return value.isoformat()
    return value


def describe(value: Any) -> str:
    """A value for a message: its repr (shortened) and its Python type."""
    shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
    return f"{shown} ({type(value).__name__})"


# -- parsing one field's rule ------------------------------------------------------------------------------


class _Fail(Protocol):
    def __call__(self, message: str, sub: str = "") -> ModelError: ...


def parse_rule(f: FieldSpec, raw: dict[str, Any], path: Path) -> FieldRule:
    """Check `x-sf.generate` of `f` (already shaped by the meta-schema) against the field itself."""
    pointer = f"/properties/{f.name}/x-sf/generate"

    def fail(message: str, sub: str = "") -> ModelError:
        return ModelError(
            f"{path.name}: {pointer}{sub}: {sentence(message)}",
            file=str(path),
            pointer=pointer + sub,
            field=f.name,
        )

    if f.type == "id":
        raise fail("the Id is assigned by orgseed; remove the rule")
    null_share = float(raw.get("nullShare", 0.0))
    if null_share > 0 and not f.nillable:
        raise fail(
            f"nullShare leaves records empty, but {f.name} is required; remove it or make the field nillable",
            "/nullShare",
        )
    kind = next(k for k in KINDS.values() if k in raw)
    if f.unique and kind != "sequence":
        raise fail(f"{f.name} is unique, and a {kind} rule can repeat values; use a sequence")
    rule: Rule
    if kind == "constant":
        try:
            value = json_value(f, raw["constant"])
        except ValueError as exc:
            raise fail(str(exc), "/constant") from None
        _check_value(f, value, fail, "/constant")
        rule = Constant(value)
    elif kind == "choice":
        rule = _parse_choice(f, raw["choice"], fail)
    elif kind == "faker":
        spec = raw["faker"]
        provider, args = (spec, {}) if isinstance(spec, str) else (spec["provider"], spec.get("args", {}))
        rule = FakerCall(provider, json.dumps(args, sort_keys=True))
    elif kind == "sequence":
        rule = _parse_sequence(f, raw["sequence"], fail)
    elif kind == "range":
        rule = _parse_range(f, raw["range"], fail)
    elif kind == "reference":
        if f.type != "reference":
            raise fail(
                f"a random reference needs a lookup field, and {f.name} is {a(f.type)} field", "/reference"
            )
        if f.org_provided:
            raise fail(
                f"{f.name} points at an org-provided object (resolved when seeding); it has no records to pick",
                "/reference",
            )
        if len(f.reference_to) != 1:
            raise fail(
                f"{f.name} can point at {', '.join(f.reference_to)}; a random reference needs one target",
                "/reference",
            )
        rule = RandomRecord(f.reference_to[0])
    else:
        rule = Copy(tuple(raw["copy"].split(".")))
    return FieldRule(rule, null_share, str(path), pointer)


def _check_value(f: FieldSpec, value: Value, fail: _Fail, sub: str) -> None:
    problem = value_problem(f, value)
    if problem is None and value is not None:
        schema = {k: v for k, v in f.json_schema.items() if k != "x-sf"}
        error = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(schema).iter_errors(cell_json(value))
        )
        if error is not None:
            problem = (
                f"{json.dumps(cell_json(value))} does not satisfy the field's JSON Schema: {error.message}"
            )
    if problem is not None:
        raise fail(problem, sub)


def _parse_choice(f: FieldSpec, raw: Any, fail: _Fail) -> Choice:
    if raw == "uniform":
        if not f.picklist:
            raise fail(
                f'"uniform" draws from the picklist, and {f.name} is {a(f.type)} field; list the values with weights',
                "/choice",
            )
        return Choice(tuple(f.picklist), tuple(1.0 for _ in f.picklist))
    values: list[Value] = []
    weights: list[float] = []
    for key, weight in raw.items():
        sub = f"/choice/{key.replace('~', '~0').replace('/', '~1')}"
        try:
            value = cell_value(f, key)
        except ValueError as exc:
            raise fail(str(exc), sub) from None
        _check_value(f, value, fail, sub)
        if value in values:
            raise fail(f"`{key}` is the same value as an earlier key", sub)
        values.append(value)
        weights.append(float(weight))
    if sum(weights) <= 0:
        raise fail("the weights must not all be zero", "/choice")
    return Choice(tuple(values), tuple(weights))


def _parse_sequence(f: FieldSpec, raw: dict[str, Any], fail: _Fail) -> Sequence:
    if f.type not in SEQUENCE_TYPES:
        raise fail(
            f"a sequence fills string, textarea, int or double fields, and {f.name} is {a(f.type)} field",
            "/sequence",
        )
    seq = Sequence(str(raw.get("prefix", "")), int(raw.get("start", 1)), int(raw.get("digits", 1)))
    if seq.prefix and f.type not in ("string", "textarea"):
        raise fail(
            f"a prefix makes text, and {f.name} is {a(f.type)} field; drop the prefix", "/sequence/prefix"
        )
    first = sequence_value(seq, f, 0)
    problem = value_problem(f, first)
    if problem is not None:
        raise fail(f"the first value: {problem}", "/sequence")
    return seq


def _parse_range(f: FieldSpec, raw: dict[str, Any], fail: _Fail) -> Range:
    if f.type not in RANGE_TYPES:
        raise fail(
            f"a range fills number, date and datetime fields, and {f.name} is {a(f.type)} field", "/range"
        )
    ends: list[Value] = []
    for end in ("min", "max"):
        if end not in raw:
            if f.type not in ("date", "datetime"):
                raise fail(f"a range of numbers needs `{end}`", "/range")
            ends.append(None)
            continue
        try:
            value = json_value(f, raw[end])
        except ValueError as exc:
            raise fail(str(exc), f"/range/{end}") from None
        _check_value(f, value, fail, f"/range/{end}")
        ends.append(value)
    low, high = ends
    if low is not None and high is not None and low > high:  # type: ignore[operator]
        raise fail(f"min ({raw['min']}) is greater than max ({raw['max']})", "/range")
    return Range(low, high)


def sequence_value(seq: Sequence, f: FieldSpec, row: int) -> Value:
    number = seq.start + row
    if f.type in ("int", "double"):
        return number
    return f"{seq.prefix}{number:0{seq.digits}d}"


# -- checks that need the whole model ------------------------------------------------------------------------


@dataclass(frozen=True)
class Hop:
    """One read of a copy path: column `field` of object `sobject`."""

    sobject: str
    field: str


def copy_hops(model: OrgModel, sobject: str, path: Iterable[str]) -> tuple[Hop, ...]:
    """The reads a copy path makes, starting on `sobject`: each lookup, then the copied field."""
    hops: list[Hop] = []
    current = model.get(sobject)
    parts = list(path)
    for i, name in enumerate(parts):
        if not current.has_field(name):
            raise LookupError(
                f"`{current.name}` has no field `{name}`.{did_you_mean(name, current.field_names)}"
            )
        f = current.field(name)
        hops.append(Hop(current.name, f.name))
        if i == len(parts) - 1:
            break
        if not f.is_lookup:
            raise LookupError(
                f"`{current.name}.{f.name}` is {a(f.type)} field, not a lookup; only lookups can be followed"
            )
        if f.org_provided or len(f.reference_to) != 1:
            raise LookupError(
                f"`{current.name}.{f.name}` points at {', '.join(f.reference_to)}, whose records are not in the bundle"
            )
        current = model.get(f.reference_to[0])
    return tuple(hops)


def needs(model: OrgModel, sobject: str, f: FieldSpec) -> frozenset[Hop]:
    """The columns a rule reads (other than its own): a random reference reads the target's ids, a copy its path."""
    assert f.rule is not None
    rule = f.rule.rule
    if isinstance(rule, RandomRecord):
        return frozenset({Hop(rule.target, "Id")})
    if isinstance(rule, Copy):
        hops = copy_hops(model, sobject, rule.path)
        targets = {Hop(model.get(h.sobject).field(h.field).reference_to[0], "Id") for h in hops[:-1]}
        return frozenset(hops) | targets
    return frozenset()


def copy_problem(src: FieldSpec, src_object: str, dst: FieldSpec) -> str | None:
    """Why values of `src` (of `src_object`) cannot be copied into `dst`, or None."""
    ids_of = (src_object,) if src.type == "id" else src.reference_to if src.type == "reference" else None
    if dst.type == "reference":
        if ids_of is None:
            return f"it copies {a(src.type)} field into a lookup"
        if ids_of != dst.reference_to:
            return f"it copies ids of {', '.join(ids_of)} into a lookup to {', '.join(dst.reference_to)}"
        return None
    if ids_of is not None:
        if dst.type in ("string", "textarea") and (dst.length is None or dst.length >= 18):
            return None
        return f"it copies 18-character ids into {a(dst.type)} field" + (
            f" of {dst.length}" if dst.length else ""
        )
    if dst.type == "picklist":
        if src.type != "picklist":
            return f"it copies {a(src.type)} field into a picklist"
        extra = [v for v in src.picklist if v not in dst.picklist]
        return f"{src_object}.{src.name} has values the picklist lacks: {', '.join(extra)}" if extra else None
    if dst.type in STRING_TYPES:
        if src.type not in STRING_TYPES:
            return f"it copies {a(src.type)} field into {a(dst.type)} field"
        longest = max((len(v) for v in src.picklist), default=src.length or 0)
        if dst.length is not None and longest > dst.length:
            return f"{src_object}.{src.name} holds up to {longest} characters, this field {dst.length}"
        if dst.type == "email" and src.type != "email":
            return f"it copies {a(src.type)} field into an email field"
        return None
    if dst.type in FRACTION_TYPES and src.type in (*FRACTION_TYPES, "int"):
        return None
    if src.type != dst.type:
        return f"it copies {a(src.type)} field into {a(dst.type)} field"
    return None


def check_rules(model: OrgModel) -> None:
    """The checks that need more than one field: copy paths and their types, Faker providers, and rule cycles."""
    graph: nx.DiGraph = nx.DiGraph()
    probe = _FakerProbe()
    for o in model:
        for f in o.fields:
            if f.rule is None:
                continue
            rule = f.rule.rule
            if isinstance(rule, Copy):
                sub = f.rule.pointer + "/copy"
                try:
                    hops = copy_hops(model, o.name, rule.path)
                except LookupError as exc:
                    raise _fail(f.rule, sub, f"`{'.'.join(rule.path)}`: {exc}") from None
                last = hops[-1]
                problem = copy_problem(model.get(last.sobject).field(last.field), last.sobject, f)
                if problem is not None:
                    raise _fail(
                        f.rule, sub, f"`{'.'.join(rule.path)}` cannot fill {o.name}.{f.name}: {problem}"
                    )
            elif isinstance(rule, FakerCall):
                probe.check(o, f)
            for hop in needs(model, o.name, f):
                source = model.get(hop.sobject).field(hop.field)
                if source.rule is not None:
                    graph.add_edge((hop.sobject, source.name), (o.name, f.name))
    try:
        cycle = nx.find_cycle(graph)
    except nx.NetworkXNoCycle:
        return
    sobject, name = min(a for a, _b in cycle)
    first = model.get(sobject).field(name)
    assert first.rule is not None
    loop = " → ".join(f"{a[0]}.{a[1]}" for a, _b in cycle)
    raise _fail(
        first.rule, "", f"the rules of {loop} read each other in a loop; fill one of them another way"
    )


def _fail(rule: FieldRule, pointer: str, message: str) -> ModelError:
    pointer = pointer or rule.pointer
    return ModelError(
        f"{Path(rule.file).name}: {pointer}: {sentence(message)}", file=rule.file, pointer=pointer
    )


def sentence(message: str) -> str:
    """`message` ending with one full stop (a message that quotes a question keeps its question mark)."""
    return message if message.endswith((".", "?")) else message + "."


def a(word: str) -> str:
    """`word` with its indefinite article: `an int`, `a string`."""
    return f"{'an' if word[:1] in 'aeiou' else 'a'} {word}"


class _FakerProbe:
    """Checks a Faker rule when the model loads: the provider exists, takes the arguments and gives values of
    the field's type. Faker is imported only when a model has Faker rules (its import costs ~0.5 s)."""

    def __init__(self) -> None:
        self._fake: Any = None

    def check(self, o: ObjectSpec, f: FieldSpec) -> None:
        assert f.rule is not None and isinstance(f.rule.rule, FakerCall)
        call = f.rule.rule
        method = provider_method(self.faker(), call.provider)
        if method is None:
            names = sorted({n for p in self.faker().providers for n in dir(p) if not n.startswith("_")})
            raise _fail(
                f.rule,
                f.rule.pointer + "/faker",
                f"Faker has no provider `{call.provider}`.{did_you_mean(call.provider, names)} "
                "See https://faker.readthedocs.io/en/stable/providers.html",
            )
        for seed in range(3):
            self.faker().seed_instance(seed)
            try:
                raw = method(**call.args)
            except Exception as exc:
                raise _fail(
                    f.rule,
                    f.rule.pointer + "/faker",
                    f"Faker's `{call.provider}({_kwargs(call.args)})` failed: {type(exc).__name__}: {exc}; "
                    "check its arguments",
                ) from None
            try:
                value = fit_text(f, python_value(f, raw))
            except ValueError:
                raise _fail(
                    f.rule,
                    f.rule.pointer + "/faker",
                    f"Faker's `{call.provider}` gives values such as {describe(raw)}, which {a(f.type)} field "
                    "cannot hold; choose another provider",
                ) from None
            problem = value_problem(f, value)
            if problem is not None and value is not None:
                raise _fail(
                    f.rule,
                    f.rule.pointer + "/faker",
                    f"Faker's `{call.provider}` gives values that do not fit: {problem}",
                )

    def faker(self) -> Any:
        if self._fake is None:
            from faker import Faker  # lazily: most models have no Faker rule

            self._fake = Faker("en_US")
        return self._fake


def provider_method(fake: Any, name: str) -> Any:
    """The bound provider method `name` of a Faker instance, or None (Faker's own machinery is not a provider)."""
    from faker.providers import BaseProvider

    if name.startswith("_"):
        return None
    try:
        method = getattr(fake, name)
    except (AttributeError, TypeError):  # Faker refuses some of its own names (`seed`) with a TypeError
        return None
    owner = getattr(method, "__self__", None)
    return method if callable(method) and isinstance(owner, BaseProvider) else None


def _kwargs(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in args.items())
