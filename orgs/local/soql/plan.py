"""What the compiler hands the engine: parameterised SQL plus how to shape its rows into records.

A `Plan` is immutable and independent of any request, so it can be cached by query text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class FieldOut:
    """A selected field: record key (API casing) and its column in the SQL row."""

    key: str
    col: int
    boolean: bool = False


@dataclass(frozen=True)
class ParentOut:
    """A child-to-parent relationship: a nested record, or null when the lookup is empty."""

    key: str
    sobject: str
    id_col: int
    items: tuple[Out, ...]


@dataclass(frozen=True)
class ChildOut:
    """A parent-to-child subquery: a nested query result, or null when there are no children."""

    key: str
    plan: ChildPlan


Out = FieldOut | ParentOut | ChildOut


@dataclass(frozen=True)
class RecordShape:
    sobject: str
    id_col: int
    items: tuple[Out, ...]


@dataclass(frozen=True)
class ChildPlan:
    """SQL selecting the children of a set of parents (`:parent_ids`, a JSON array), in output order."""

    sql: str
    params: dict[str, Any]
    fk_col: int
    shape: RecordShape
    limit: int | None = None


@dataclass(frozen=True)
class AggColumn:
    key: str
    col: int
    boolean: bool = False


@dataclass(frozen=True)
class Plan:
    """kind: `records` (sObject rows), `aggregate` (AggregateResult rows) or `count` (COUNT())."""

    kind: str
    sobject: str
    sql: str
    params: dict[str, Any]
    shape: RecordShape | None = None
    columns: tuple[AggColumn, ...] = field(default_factory=tuple)
