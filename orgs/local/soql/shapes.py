"""Queries that differ only in their literals: compiled once per shape, each query's literals bound after.

CRMArena's tools send a few query shapes many times with other ids and dates (the build's answer check at
scale 10: 1,947 queries, 1,868 distinct texts, ~100 shapes; compiling them was ~0.5 CPU-s, mostly lists of
ids parsed and checked one by one). A query's shape (`Shape.key`) is its text with these literals lifted out:

- a plain string literal holding an 18-character id (`'500...'`), bound as itself;
- a list of more than LONG_IN_LIST such strings (a `tokens.T.RUN`), bound as one JSON array of them;
- a datetime literal, bound in the stored form (`filters.wire_datetime`); a date literal, as `YYYY-MM-DD`.

The compiler uses such a literal's value in one way only: it becomes one bound parameter, in that form,
whatever field it is compared with (or the query is refused); nothing else in the plan depends on it. So two
queries of one shape have the same SQL and record shape and differ in those parameters only.

That is checked, not assumed, when a shape is first met (`ShapePlan.learn`): each lifted literal's form must
be the value of exactly one parameter of the query's plan, and the same text with other values in the lifted
literals must compile to the same plan but for those parameters, holding the other values. Otherwise (and for
plans with parent-to-child subqueries, whose child plans share the parameters) the shape's queries are
compiled one by one. Every query is still split into tokens, so a literal the lexer refuses (`2024-02-30`)
is refused as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

from orgs.local.soql import compile_soql
from orgs.local.soql.errors import SoqlError
from orgs.local.soql.filters import LONG_IN_LIST, wire_datetime
from orgs.local.soql.plan import ChildOut, Plan
from orgs.local.soql.tokens import T, tokenize_compact
from schemas.model import OrgModel

_ID18 = re.compile(r"[0-9A-Za-z]{18}")
_RUN_ID = re.compile(r"'([0-9A-Za-z]{18})'")  # the ids of a run (other strings: no match)
MARK = "\x00"  # a lifted literal in a shape's key (a query with this character is not shaped)
MAX_KEY = 16_384  # longer shapes are not kept (as engine.PLAN_CACHE_MAX_TEXT)


@dataclass(frozen=True)
class Lifted:
    """A literal lifted out of a query: its span in the text, its class and the value it is bound as."""

    start: int
    end: int
    kind: str  # "i" an id, "r" a list of ids, "t" a datetime, "d" a date
    bound: str


@dataclass(frozen=True)
class Shape:
    key: str
    lifted: tuple[Lifted, ...]

    @property
    def distinct(self) -> bool:
        """Whether the lifted literals are bound as distinct values (`ShapePlan.learn` needs it)."""
        return len({lit.bound for lit in self.lifted}) == len(self.lifted)


def shape_of(source: str) -> Shape | None:
    """The query's shape, or None when it has no literal to lift (or cannot be split into tokens: the
    compiler then says why)."""
    if MARK in source:
        return None
    try:
        tokens = tokenize_compact(source)
    except SoqlError:
        return None
    lifted: list[Lifted] = []
    for tok in tokens:
        kind = tok.kind
        if kind is T.DATETIME:
            lifted.append(Lifted(tok.offset, tok.end, "t", wire_datetime(tok.value)))
        elif kind is T.DATE:
            lifted.append(Lifted(tok.offset, tok.end, "d", date.isoformat(tok.value)))
        elif kind is T.STRING:
            # 20 characters for an 18-character value: written plainly, without escapes
            if tok.end - tok.offset == 20 and _ID18.fullmatch(tok.value):
                lifted.append(Lifted(tok.offset, tok.end, "i", tok.value))
        elif kind is T.RUN:
            ids = _RUN_ID.findall(source, tok.offset, tok.end)
            # every string of the run an id (a run's strings are plain: two quotes each)
            if len(ids) > LONG_IN_LIST and 2 * len(ids) == source.count("'", tok.offset, tok.end):
                # json.dumps(ids): ids have nothing to escape
                lifted.append(Lifted(tok.offset, tok.end, "r", '["' + '", "'.join(ids) + '"]'))
    if not lifted:
        return None
    pieces: list[str] = []
    at = 0
    for lit in lifted:
        pieces += (source[at : lit.start], MARK, lit.kind)
        at = lit.end
    pieces.append(source[at:])
    key = "".join(pieces)
    return Shape(key, tuple(lifted)) if len(key) <= MAX_KEY else None


# Other values of each class, for the second compile of `ShapePlan.learn` (the n-th lifted literal's)
_OTHER = {
    "i": lambda n: f"'{n:06d}ZzZzZzZzZzZz'",
    "r": lambda n: ", ".join(f"'{n:06d}{k:06d}ZzZzZz'" for k in range(LONG_IN_LIST + 1)),
    "t": lambda n: f"{1901 + n:04d}-02-03T04:05:06Z",
    "d": lambda n: f"{1901 + n:04d}-02-03",
}


def _with_other_literals(source: str, shape: Shape) -> str:
    pieces: list[str] = []
    at = 0
    for n, lit in enumerate(shape.lifted):
        pieces += (source[at : lit.start], _OTHER[lit.kind](n))
        at = lit.end
    pieces.append(source[at:])
    return "".join(pieces)


@dataclass(frozen=True)
class ShapePlan:
    """The plan of one query of a shape and the parameter each lifted literal is bound to, in order."""

    plan: Plan
    names: tuple[str, ...]

    @staticmethod
    def learn(source: str, shape: Shape, plan: Plan, model: OrgModel, today: date) -> ShapePlan | None:
        """The shape's plan from one of its queries (`source`, compiled to `plan`), or None when the shape's
        queries cannot be bound this way (see the module's doc). Needs `shape.distinct`."""
        if plan.shape is not None and any(isinstance(it, ChildOut) for it in plan.shape.items):
            return None
        names = []
        for lit in shape.lifted:
            found = [name for name, value in plan.params.items() if value == lit.bound]
            if len(found) != 1:
                return None
            names.append(found[0])
        other_source = _with_other_literals(source, shape)
        other = shape_of(other_source)
        if other is None or other.key != shape.key:
            return None
        if len({lit.bound for lit in shape.lifted + other.lifted}) != 2 * len(shape.lifted):
            return None
        try:
            other_plan = compile_soql(other_source, model, today)
        except SoqlError:
            return None
        learned = ShapePlan(plan, tuple(names))
        return learned if learned.bind(other.lifted) == other_plan else None

    def bind(self, lifted: tuple[Lifted, ...]) -> Plan:
        """The plan of the shape's query whose lifted literals are `lifted`."""
        params: dict[str, Any] = dict(self.plan.params)
        for name, lit in zip(self.names, lifted, strict=True):
            params[name] = lit.bound
        p = self.plan
        return Plan(p.kind, p.sobject, p.sql, params, p.shape, p.columns)
