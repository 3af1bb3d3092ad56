"""Fields from data: fills every field that has a rule in the model (`x-sf.generate`, see schemas/rules.py).

Generator code produces an object's frame; every field it does not produce must have a rule, and a field with a
rule must not be produced by code (`check_produced`). A rule's values come from (seed, object, field, block),
where a block is `BLOCK_ROWS` rows of the finished frame (rows are in id order), so they do not depend on the
number of shards, on the other fields, or on which rules the model has besides this one.

A rule that reads other records (a random reference reads its target's ids, a copy reads along its path) waits
until they exist: `RuleFields` fills each field as soon as what it reads has been generated, so a lookup that the
cycle policy deferred (schemas/graph.py) is filled after its target, and its object is complete only then.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from faker import Faker

from generator.objects.base import BuildContext
from generator.objects.orders import BuildError
from generator.rng import derive_seed
from schemas.model import FieldSpec, ObjectSpec
from schemas.rules import (
    STRING_TYPES,
    Choice,
    Constant,
    Copy,
    FakerCall,
    FieldRule,
    RandomRecord,
    Range,
    Sequence,
    Value,
    a,
    copy_hops,
    describe,
    fit_text,
    needs,
    provider_method,
    python_value,
    sequence_value,
    value_problem,
)

BLOCK_ROWS = 1024


def check_produced(spec: ObjectSpec, frame: pd.DataFrame, later: tuple[str, ...] = ()) -> None:
    """Each field of `spec` comes from exactly one place: generator code (a column of `frame`, or one of the
    `later` fields it fills as the frame is written) or its rule."""
    for f in spec.fields:
        produced = f.name in frame.columns or f.name in later
        if f.rule is None and not produced:
            raise BuildError(
                f"{spec.path.name}: /properties/{f.name}: no generator code produces {spec.name}.{f.name} and it "
                'has no rule. Add one under its x-sf, e.g. "generate": {"constant": null} for an empty '
                "field (the rules are listed in schemas/rules.py and the README).",
                sobject=spec.name,
                field=f.name,
            )
        if f.rule is not None and produced:
            raise BuildError(
                f"{f.rule.where}: {spec.name}.{f.name} is produced by generator code (generator/objects/) and "
                "also has a rule; remove the rule (or the code).",
                sobject=spec.name,
                field=f.name,
            )


class RuleFields:
    """The rule fields still to fill, per generated object; `settle` fills every field that can be filled."""

    def __init__(self, ctx: BuildContext) -> None:
        self.ctx = ctx
        self.waiting: dict[str, list[FieldSpec]] = {}

    def add(self, sobject: str, frame: pd.DataFrame, later: tuple[str, ...] = ()) -> None:
        """`sobject` has been generated (its frame is `ctx.frames[sobject]`, without the `later` fields its
        writing fills); its rule fields now wait."""
        spec = self.ctx.model.get(sobject)
        check_produced(spec, frame, later)
        self.waiting[sobject] = spec.rule_fields

    def settle(self) -> list[str]:
        """Fill what can be filled (repeatedly: one filled field may be what another reads); return the objects
        that became complete, in the order they were added."""
        progress = True
        while progress:
            progress = False
            for sobject, fields in self.waiting.items():
                for f in list(fields):
                    if self._ready(sobject, f):
                        frame = self.ctx.frames[sobject]
                        frame[f.name] = rule_column(self.ctx, sobject, f, frame)
                        fields.remove(f)
                        progress = True
        complete = [name for name, fields in self.waiting.items() if not fields]
        for name in complete:
            del self.waiting[name]
        return complete

    def check_done(self) -> None:
        """After the last object: nothing may still wait (the model's checks make this unreachable)."""
        for sobject, fields in self.waiting.items():
            f = fields[0]
            assert f.rule is not None
            missing = sorted(
                f"{h.sobject}.{h.field}"
                for h in needs(self.ctx.model, sobject, f)
                if not self._has(h.sobject, h.field)
            )
            raise BuildError(
                f"{f.rule.where}: {sobject}.{f.name} reads {', '.join(missing)}, which no step produced.",
                sobject=sobject,
                field=f.name,
            )

    def _ready(self, sobject: str, f: FieldSpec) -> bool:
        return all(self._has(h.sobject, h.field) for h in needs(self.ctx.model, sobject, f))

    def _has(self, sobject: str, column: str) -> bool:
        frame = self.ctx.frames.get(sobject)
        return frame is not None and column in frame.columns


# -- one field ---------------------------------------------------------------------------------------------


def rule_column(ctx: BuildContext, sobject: str, f: FieldSpec, frame: pd.DataFrame) -> pd.Series:
    """The values of rule field `f` for every row of `frame` (the finished frame of `sobject`)."""
    fr = f.rule
    assert fr is not None
    n = len(frame)
    rule = fr.rule
    values: pd.Series
    if isinstance(rule, Constant):
        values = _typed(f, [rule.value] * n)
    elif isinstance(rule, Choice):
        values = _choice(ctx, sobject, f, rule, n)
    elif isinstance(rule, FakerCall):
        values = _faker(ctx, sobject, f, fr, rule, n)
    elif isinstance(rule, Sequence):
        values = _sequence(f, fr, rule, n)
    elif isinstance(rule, Range):
        values = _range(ctx, sobject, f, rule, n)
    elif isinstance(rule, RandomRecord):
        values = _random_record(ctx, sobject, f, rule, frame)
    else:
        values = _copy(ctx, sobject, f, rule, frame)
    if fr.null_share > 0:
        empty = np.concatenate(
            [
                ctx.rng("field-null", sobject, f.name, b).random(len(rows)) < fr.null_share
                for b, rows in enumerate(_blocks(n))
            ]
            or [np.zeros(0, dtype=bool)]
        )
        values = _without(f, values, empty)
    if not f.nillable and n and values.isna().any():
        first = int(np.flatnonzero(values.isna().to_numpy())[0])
        raise BuildError(
            f"{fr.where}: {sobject}.{f.name} is required, but its {fr.kind} rule leaves "
            f"{int(values.isna().sum())} of {n} records empty (the first: {frame['Id'].iloc[first]}). "
            "Make the field nillable or change the rule.",
            sobject=sobject,
            field=f.name,
        )
    return values.set_axis(frame.index)


def _blocks(n: int) -> list[range]:
    return [range(lo, min(n, lo + BLOCK_ROWS)) for lo in range(0, n, BLOCK_ROWS)]


def _choice(ctx: BuildContext, sobject: str, f: FieldSpec, rule: Choice, n: int) -> pd.Series:
    options: tuple[Value, ...] = rule.values
    weights = np.asarray(rule.weights, dtype=float)
    override = ctx.profile.picklist_weights(sobject, f.name)
    if override:  # the profile's [picklists.<Object>.<Field>] (values checked against the picklist on load)
        options = tuple(override)
        weights = np.asarray(list(override.values()), dtype=float)
    cum = np.cumsum(weights)
    picks = [
        np.searchsorted(cum, ctx.rng("field", sobject, f.name, b).random(len(rows)) * cum[-1], side="right")
        for b, rows in enumerate(_blocks(n))
    ]
    index = np.minimum(np.concatenate(picks) if picks else np.zeros(0, dtype=int), len(options) - 1)
    pool = np.empty(len(options), dtype=object)
    pool[:] = list(options)
    return _typed(f, pool[index].tolist())


def _faker(
    ctx: BuildContext, sobject: str, f: FieldSpec, fr: FieldRule, rule: FakerCall, n: int
) -> pd.Series:
    fake = Faker("en_US")
    method: Callable[..., Any] = provider_method(fake, rule.provider)
    args = rule.args
    out: list[Value] = []
    for b, rows in enumerate(_blocks(n)):
        fake.seed_instance(derive_seed(ctx.seed, "faker", "field", sobject, f.name, b))
        for _ in rows:
            raw = method(**args)
            try:
                value = fit_text(f, python_value(f, raw))
            except ValueError:
                raise BuildError(
                    f"{fr.where}: Faker's `{rule.provider}` gave {describe(raw)}, which {a(f.type)} field cannot "
                    "hold; choose another provider.",
                    sobject=sobject,
                    field=f.name,
                ) from None
            if value == "":
                value = None
            problem = value_problem(f, value)
            if problem is not None and value is not None:
                raise BuildError(
                    f"{fr.where}: Faker's `{rule.provider}` gave a value {sobject}.{f.name} cannot hold: {problem}. "
                    "Choose other arguments or another provider.",
                    sobject=sobject,
                    field=f.name,
                )
            out.append(value)
    return _typed(f, out)


def _sequence(f: FieldSpec, fr: FieldRule, rule: Sequence, n: int) -> pd.Series:
    values = [sequence_value(rule, f, i) for i in range(n)]
    if values:
        problem = value_problem(f, values[-1])
        if problem is not None:
            raise BuildError(f"{fr.where}: the sequence's last value does not fit: {problem}.", field=f.name)
    return _typed(f, values)


def _range(ctx: BuildContext, sobject: str, f: FieldSpec, rule: Range, n: int) -> pd.Series:
    span = ctx.profile.span
    draws = [ctx.rng("field", sobject, f.name, b) for b in range(len(_blocks(n)))]
    sizes = [len(rows) for rows in _blocks(n)]
    if f.type in ("date", "datetime"):
        unit = "D" if f.type == "date" else "s"
        default_high = np.datetime64(span.end, "D") if unit == "D" else np.datetime64(span.end_dt, "s") - 1
        low = np.datetime64(rule.low if rule.low is not None else span.start, unit)  # type: ignore[call-overload]
        high = np.datetime64(rule.high, unit) if rule.high is not None else default_high  # type: ignore[call-overload]
        width = int((high - low).astype(int)) + 1
        steps = np.concatenate(
            [g.integers(0, width, k) for g, k in zip(draws, sizes, strict=True)] or [np.zeros(0, int)]
        )
        return pd.Series(low + steps.astype(f"timedelta64[{unit}]"))
    lo, hi = float(rule.low), float(rule.high)  # type: ignore[arg-type]
    if f.type == "int":
        ints = [g.integers(int(lo), int(hi) + 1, k) for g, k in zip(draws, sizes, strict=True)]
        return pd.Series(np.concatenate(ints) if ints else np.zeros(0, dtype=np.int64), dtype="int64")
    numbers = np.concatenate(
        [lo + g.random(k) * (hi - lo) for g, k in zip(draws, sizes, strict=True)] or [np.zeros(0)]
    )
    scale = f.scale if f.scale is not None else 2 if f.type == "currency" else None
    return pd.Series(np.clip(numbers.round(scale), lo, hi) if scale is not None else numbers, dtype="float64")


def _random_record(
    ctx: BuildContext, sobject: str, f: FieldSpec, rule: RandomRecord, frame: pd.DataFrame
) -> pd.Series:
    n = len(frame)
    own = rule.target == sobject
    ids = (frame if own else ctx.frames[rule.target])["Id"].to_numpy(dtype=object)
    out = np.full(n, None, dtype=object)
    for b, rows in enumerate(_blocks(n)):
        u = ctx.rng("field", sobject, f.name, b).random(len(rows))
        if own:  # an earlier record, so a hierarchy never loops; the first record has no parent
            position = np.arange(rows.start, rows.stop)
            pick = np.floor(u * position).astype(int)
            out[rows.start : rows.stop] = np.where(position > 0, ids[pick], None)
        elif len(ids):
            out[rows.start : rows.stop] = ids[np.minimum((u * len(ids)).astype(int), len(ids) - 1)]
    return pd.Series(out, dtype=object)


def _copy(ctx: BuildContext, sobject: str, f: FieldSpec, rule: Copy, frame: pd.DataFrame) -> pd.Series:
    hops = copy_hops(ctx.model, sobject, rule.path)
    current = pd.Series(frame[hops[0].field].to_numpy())
    for hop in hops[1:]:
        source = frame if hop.sobject == sobject else ctx.frames[hop.sobject]
        lookup = pd.Series(source[hop.field].to_numpy(), index=source["Id"].to_numpy())
        current = current.map(lookup)
    if f.type in STRING_TYPES:
        return current.astype(object).where(current.notna(), None)
    return current


def _typed(f: FieldSpec, values: list[Value]) -> pd.Series:
    """Python values as the column type the bundle's formatters expect (schemas/formats.py)."""
    if f.type in ("date", "datetime"):  # numpy reads date/datetime objects, None as NaT
        return pd.Series(np.array(values, dtype="datetime64[D]" if f.type == "date" else "datetime64[s]"))
    has_null = any(v is None for v in values)
    if f.type == "int" and not has_null:
        return pd.Series(values, dtype="int64")
    if f.type in ("int", "double", "currency"):
        return pd.Series([np.nan if v is None else v for v in values], dtype="float64")
    if f.type == "boolean" and not has_null:
        return pd.Series(values, dtype=bool)
    return pd.Series(values, dtype=object)


def _without(f: FieldSpec, values: pd.Series, empty: np.ndarray) -> pd.Series:
    """`values` with the rows in `empty` left empty (the column keeps a type that can hold an empty value)."""
    if not empty.any():
        return values
    if values.dtype.kind in "iub":
        values = values.astype("float64" if values.dtype.kind in "iu" else object)
    values = values.copy()
    values[empty] = None
    return values
