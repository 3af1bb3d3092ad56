"""The SOQL syntax tree. Every node keeps the offset of its first character (for located errors) and
declares its child slots in `slots`, so walking the tree is generic (`walk`).

The tree is what the parser saw, nothing resolved: names are as written, literals are decoded values.
Resolving names against the org model and typing happens in `scope.py` / `to_sql.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import ClassVar

AGGREGATES = frozenset({"COUNT", "COUNT_DISTINCT", "SUM", "AVG", "MIN", "MAX"})
DATE_FUNCTIONS = frozenset(
    {
        "CALENDAR_MONTH",
        "CALENDAR_QUARTER",
        "CALENDAR_YEAR",
        "DAY_IN_MONTH",
        "DAY_IN_WEEK",
        "DAY_IN_YEAR",
        "DAY_ONLY",
        "FISCAL_MONTH",
        "FISCAL_QUARTER",
        "FISCAL_YEAR",
        "HOUR_IN_DAY",
        "WEEK_IN_MONTH",
        "WEEK_IN_YEAR",
    }
)


@dataclass(eq=False)
class Node:
    pos: int
    slots: ClassVar[tuple[str, ...]] = ()

    def children(self) -> Iterator[Node]:
        for name in self.slots:
            value = getattr(self, name)
            if isinstance(value, Node):
                yield value
            elif isinstance(value, list):
                yield from (v for v in value if isinstance(v, Node))

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, depth first."""
        yield self
        for child in self.children():
            yield from child.walk()


# -- names and expressions ------------------------------------------------------------------------------


@dataclass(eq=False)
class Ident(Node):
    name: str

    @property
    def upper(self) -> str:
        return self.name.upper()


@dataclass(eq=False)
class FieldPath(Node):
    """`Name`, `Account.Name`, `OrderItem.Order.AccountId` (a leading object name or alias is allowed)."""

    parts: list[Ident]
    slots: ClassVar[tuple[str, ...]] = ("parts",)

    @property
    def text(self) -> str:
        return ".".join(p.name for p in self.parts)


@dataclass(eq=False)
class Call(Node):
    """`COUNT(Id)`, `CALENDAR_YEAR(CreatedDate)`, `FIELDS(ALL)`, `convertTimezone(CreatedDate)`, ..."""

    name: Ident
    args: list[Expr]
    end: int  # offset just after the closing parenthesis
    slots: ClassVar[tuple[str, ...]] = ("name", "args")

    @property
    def fn(self) -> str:
        return self.name.upper

    @property
    def is_aggregate(self) -> bool:
        return self.fn in AGGREGATES


Expr = FieldPath | Call | Ident


# -- literals -------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Literal(Node):
    """A value in a condition. kind: string | number | boolean | null | date | datetime."""

    kind: str
    value: str | int | float | bool | date | datetime | None
    text: str  # as written (strings keep their quotes and escapes; LIKE re-reads them)

    @property
    def count(self) -> int:
        """The value of a LIMIT/OFFSET number."""
        assert isinstance(self.value, int)
        return self.value


@dataclass(eq=False)
class DateConst(Node):
    """A relative date range: `TODAY`, `LAST_N_DAYS:30`, `THIS_FISCAL_YEAR`, ..."""

    name: str  # upper case, without the `:n`
    n: int | None
    text: str


Value = Literal | DateConst


# -- the query ------------------------------------------------------------------------------------------


@dataclass(eq=False)
class SelectItem(Node):
    expr: Expr | SubQuery
    alias: Ident | None = None
    slots: ClassVar[tuple[str, ...]] = ("expr", "alias")


@dataclass(eq=False)
class SubQuery(Node):
    query: Query
    slots: ClassVar[tuple[str, ...]] = ("query",)


@dataclass(eq=False)
class OrderItem(Node):
    expr: Expr
    descending: bool = False
    nulls: str | None = None  # "FIRST" | "LAST" | None (Salesforce default: nulls first ascending)
    slots: ClassVar[tuple[str, ...]] = ("expr",)


@dataclass(eq=False)
class Query(Node):
    source: str = field(repr=False, compare=False)
    select: list[SelectItem]
    sobject: Ident
    alias: Ident | None = None
    where: Cond | None = None
    group_by: list[Expr] = field(default_factory=list)
    group_by_pos: int | None = None
    having: Cond | None = None
    order_by: list[OrderItem] = field(default_factory=list)
    limit: Literal | None = None
    offset: Literal | None = None
    using_scope: Ident | None = None
    with_clause: Ident | None = None
    for_clause: list[Ident] = field(default_factory=list)
    end: int = 0  # offset just after the query (the closing parenthesis of a subquery excluded)
    slots: ClassVar[tuple[str, ...]] = (
        "select",
        "sobject",
        "alias",
        "where",
        "group_by",
        "having",
        "order_by",
        "limit",
        "offset",
    )


# -- conditions -----------------------------------------------------------------------------------------


@dataclass(eq=False)
class BoolOp(Node):
    op: str  # "AND" | "OR"
    items: list[Cond]
    slots: ClassVar[tuple[str, ...]] = ("items",)


@dataclass(eq=False)
class Not(Node):
    item: Cond
    slots: ClassVar[tuple[str, ...]] = ("item",)


@dataclass(eq=False)
class Compare(Node):
    left: Expr
    op: str  # = != < <= > >=
    right: Value
    op_pos: int = 0
    slots: ClassVar[tuple[str, ...]] = ("left", "right")


@dataclass(eq=False)
class InList(Node):
    left: Expr
    values: list[Value]
    negated: bool = False
    slots: ClassVar[tuple[str, ...]] = ("left", "values")


@dataclass(eq=False)
class InQuery(Node):
    """A semi-join (`Id IN (SELECT AccountId FROM Contact)`) or, negated, an anti-join."""

    left: Expr
    query: Query
    negated: bool = False
    slots: ClassVar[tuple[str, ...]] = ("left", "query")


@dataclass(eq=False)
class Like(Node):
    left: Expr
    pattern: Value
    slots: ClassVar[tuple[str, ...]] = ("left", "pattern")


@dataclass(eq=False)
class Includes(Node):
    """INCLUDES / EXCLUDES (multi-select picklists)."""

    left: Expr
    values: list[Value]
    excludes: bool = False
    slots: ClassVar[tuple[str, ...]] = ("left", "values")


Cond = BoolOp | Not | Compare | InList | InQuery | Like | Includes
