"""Fields a real org computes from stored ones, which the local org serves beside the bundle's columns.

A Salesforce org answers `SELECT Owner.Name FROM Case` although nobody ever writes `User.Name`: a person's
`Name` is the org's compound of FirstName and LastName (Contacts, Users, and Person Accounts, whose
Account Name is the person's), and `Case.IsClosed` follows from the case's Status. Agents write such
queries (reference crmarena.md §9 names `Owner.Name`), so the local org serves these fields as well:
read-only (neither createable nor updateable in describe), absent from the bundle's CSVs and the org model's JSON Schemas,
computed once when org.sqlite is built, and then queried, filtered, sorted and searched like any other.

The same holds for the system fields every record of a real org carries, which a bundle does not store:
`CreatedById`, `CreatedDate`, `LastModifiedById`, `LastModifiedDate`, `SystemModstamp`, `IsDeleted`, and the
auto-numbers `CaseNumber` and `OrderNumber`. A served bundle derives them by one rule (README, "System fields"):

- the record's *dates* are its own date and date-time fields (a date counts as 00:00:00 UTC);
- `CreatedDate`: the bundle's own CreatedDate where the object has one, else the record's earliest date, else
  the org's go-live instant (the start of the bundle's time span, `manifest.profile.start`; for a bundle
  without one, its earliest date of any record);
- `LastModifiedDate` = `SystemModstamp`: the record's latest date, never before CreatedDate;
- `CreatedById` = `LastModifiedById`: the record's OwnerId when it has one, else the org's API user (the
  bundle's first User);
- `IsDeleted`: false (a bundle holds no deleted records);
- `CaseNumber` / `OrderNumber`: 8-digit, zero-padded, numbered from 00000001 in CreatedDate order, ties by Id.

`local_model(model)` is the org model plus these fields, for every object that has the stored fields a
rule needs and does not declare the field itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import pandas as pd

from schemas.model import FieldSpec, ObjectSpec, OrgModel

CLOSED_STATUSES = frozenset({"closed"})  # Case Status values whose IsClosed is true (compared lower-case)


DATE_TYPES = frozenset({"date", "datetime"})
NUMBER_WIDTH = 8  # CaseNumber / OrderNumber: Salesforce's standard auto-numbers display 8 zero-padded digits


@dataclass(frozen=True)
class OrgFacts:
    """What the system-field rules need beyond one object's rows: the go-live instant and the API user."""

    go_live: str  # a date-time in the store's wire form (2020-06-01T00:00:00.000+0000)
    api_user: str | None


class Compute(Protocol):
    def __call__(self, spec: ObjectSpec, frame: pd.DataFrame, facts: OrgFacts) -> Sequence[Any]: ...


def wire_datetime(value: str) -> str:
    """A bundle date (`2020-06-01`) or date-time as the store's fixed-width UTC wire form."""
    return f"{value}T00:00:00.000+0000" if len(value) == 10 else value


_MEMO = threading.local()  # inside `compute`: the per-record date lists, derived once for all its rules


def _memo(kind: str, spec: ObjectSpec, frame: pd.DataFrame, make: Callable[[], Any]) -> Any:
    table: dict[tuple[str, str, int], Any] | None = getattr(_MEMO, "table", None)
    if table is None:
        return make()
    key = (kind, spec.name, id(frame))
    if key not in table:
        table[key] = make()
    return table[key]


def date_columns(spec: ObjectSpec, frame: pd.DataFrame) -> list[list[str | None]]:
    """The records' own dates (stored date and date-time fields), a list per field, in wire form (None for
    empty)."""

    def make() -> list[list[str | None]]:
        return [
            [wire_datetime(v) if v else None for v in frame[f.name].tolist()]
            for f in spec.fields
            if f.type in DATE_TYPES and not f.computed
        ]

    return list(_memo("dates", spec, frame, make))


def _earliest(columns: list[list[str | None]], n: int) -> list[str | None]:
    """Each of `n` records' earliest date in `columns` (None: it has none). Wire forms compare as times."""
    out: list[str | None] = [None] * n
    for col in columns:
        out = [d if e is None or (d is not None and d < e) else e for e, d in zip(out, col, strict=True)]
    return out


def _latest(columns: list[list[str | None]], n: int) -> list[str | None]:
    """Each of `n` records' latest date in `columns` (None: it has none)."""
    out: list[str | None] = [None] * n
    for col in columns:
        out = [d if e is None or (d is not None and d > e) else e for e, d in zip(out, col, strict=True)]
    return out


def created_dates(spec: ObjectSpec, frame: pd.DataFrame, facts: OrgFacts) -> list[str]:
    def make() -> list[str]:
        earliest = _earliest(date_columns(spec, frame), len(frame))
        if spec.has_field("CreatedDate") and not spec.field("CreatedDate").computed:
            own = [wire_datetime(v) if v else None for v in frame["CreatedDate"].tolist()]
            return [c or e or facts.go_live for c, e in zip(own, earliest, strict=True)]
        return [e or facts.go_live for e in earliest]

    return list(_memo("created", spec, frame, make))


def modified_dates(spec: ObjectSpec, frame: pd.DataFrame, facts: OrgFacts) -> list[str]:
    """The latest of the record's CreatedDate and dates."""

    def make() -> list[str]:
        created = created_dates(spec, frame, facts)
        latest = _latest(date_columns(spec, frame), len(frame))
        return [d if d is not None and d > c else c for c, d in zip(created, latest, strict=True)]

    return list(_memo("modified", spec, frame, make))


def creators(spec: ObjectSpec, frame: pd.DataFrame, facts: OrgFacts) -> list[str | None]:
    owners = frame["OwnerId"].tolist() if spec.has_field("OwnerId") else [None] * len(frame)
    return [o or facts.api_user for o in owners]


def numbers(spec: ObjectSpec, frame: pd.DataFrame, facts: OrgFacts) -> list[str]:
    created = created_dates(spec, frame, facts)
    ids = frame["Id"].tolist()
    order = sorted(zip(created, ids, range(len(frame)), strict=True))  # ties of both by record order
    out = [""] * len(frame)
    for rank, (_, _, i) in enumerate(order, start=1):
        out[i] = f"{rank:0{NUMBER_WIDTH}d}"
    return out


def not_deleted(spec: ObjectSpec, frame: pd.DataFrame, facts: OrgFacts) -> list[bool]:
    return [False] * len(frame)


def person_name(first: str | None, last: str | None) -> str:
    """`FirstName LastName`, or the LastName alone when there is no FirstName (as Salesforce composes it)."""
    return " ".join(part for part in (first, last) if part)


def status_closed(status: Any) -> bool:
    return status is not None and str(status).lower() in CLOSED_STATUSES


def full_name(frame: pd.DataFrame) -> list[str]:
    return [person_name(f, la) for f, la in zip(frame["FirstName"], frame["LastName"], strict=True)]


def is_closed(frame: pd.DataFrame) -> list[bool]:
    return [status_closed(status) for status in frame["Status"]]


def _frame_only(fn: Callable[[pd.DataFrame], Sequence[Any]]) -> Compute:
    return lambda spec, frame, facts: fn(frame)


@dataclass(frozen=True)
class Rule:
    name: str
    type: str
    label: str
    description: str
    requires: tuple[str, ...]
    compute: Compute
    length: int | None = None
    objects: tuple[str, ...] | None = None  # None: every object with the required fields
    reference_to: tuple[str, ...] = ()
    relationship_name: str | None = None
    auto_number: bool = False


RULES = (
    Rule(
        "Name",
        "string",
        "Full Name",
        "FirstName and LastName as one name, computed by the org (read-only).",
        ("FirstName", "LastName"),
        _frame_only(full_name),
        length=121,
    ),
    Rule(
        "IsClosed",
        "boolean",
        "Closed",
        "Whether the case's Status is a closed status, computed by the org (read-only).",
        ("Status",),
        _frame_only(is_closed),
        objects=("Case",),
    ),
    Rule(
        "CreatedById",
        "reference",
        "Created By ID",
        "The user who created the record (served bundles: its owner, else the API user).",
        (),
        creators,
        length=18,
        reference_to=("User",),
        relationship_name="CreatedBy",
    ),
    Rule(
        "CreatedDate",
        "datetime",
        "Created Date",
        "When the record was created (served bundles: its earliest date, else the org's go-live).",
        (),
        created_dates,
    ),
    Rule(
        "LastModifiedById",
        "reference",
        "Last Modified By ID",
        "The user who last changed the record (served bundles: its creator).",
        (),
        creators,
        length=18,
        reference_to=("User",),
        relationship_name="LastModifiedBy",
    ),
    Rule(
        "LastModifiedDate",
        "datetime",
        "Last Modified Date",
        "When the record was last changed (served bundles: its latest date).",
        (),
        modified_dates,
    ),
    Rule(
        "SystemModstamp",
        "datetime",
        "System Modstamp",
        "When the record was last changed by a user or by the system.",
        (),
        modified_dates,
    ),
    Rule("IsDeleted", "boolean", "Deleted", "Whether the record is in the recycle bin.", (), not_deleted),
    Rule(
        "CaseNumber",
        "string",
        "Case Number",
        "The case's auto-number, in creation order.",
        (),
        numbers,
        length=30,
        objects=("Case",),
        auto_number=True,
    ),
    Rule(
        "OrderNumber",
        "string",
        "Order Number",
        "The order's auto-number, in creation order.",
        (),
        numbers,
        length=30,
        objects=("Order",),
        auto_number=True,
    ),
)
SYSTEM_FIELDS = tuple(r.name for r in RULES[2:])


def rules_for(spec: ObjectSpec) -> list[Rule]:
    """The rules that add a field to `spec` (stored fields present, field not already declared)."""
    return [
        r
        for r in RULES
        if (r.objects is None or spec.name in r.objects)
        and all(spec.has_field(f) and not spec.field(f).computed for f in r.requires)
        and not spec.has_field(r.name)
    ]


def rule_field(r: Rule) -> FieldSpec:
    """The read-only field a rule adds."""
    return FieldSpec(
        name=r.name,
        type=r.type,
        label=r.label,
        description=r.description,
        nillable=False,
        length=r.length,
        reference_to=r.reference_to,
        relationship_name=r.relationship_name,
        createable=False,
        computed=True,
        auto_number=r.auto_number,
    )


def local_model(model: OrgModel) -> OrgModel:
    """`model` with the computed fields of `RULES` appended to the objects they apply to."""
    if any(f.computed for spec in model for f in spec.fields):
        return model  # already extended
    objects = []
    for spec in model:
        added = tuple(rule_field(r) for r in rules_for(spec))
        objects.append(replace(spec, fields=spec.fields + added) if added else spec)
    return OrgModel(objects, list(model.external.values()), model.root)


def stored_spec(spec: ObjectSpec) -> ObjectSpec:
    """`spec` without its computed fields: the columns of the bundle's CSV."""
    stored = tuple(f for f in spec.fields if not f.computed)
    return spec if len(stored) == len(spec.fields) else replace(spec, fields=stored)


def whole_object_fields(spec: ObjectSpec) -> list[str]:
    """The computed fields of `spec` whose value depends on every record (the auto-numbers: a rank in
    creation order); the others are computed from the record alone."""
    by_name = {r.name: r for r in RULES}
    return [f.name for f in spec.fields if f.computed and by_name[f.name].auto_number]


def constant_fields(spec: ObjectSpec) -> list[str]:
    """The computed fields of `spec` that take one value in every record, whatever the bundle: the creators
    of an object without an OwnerId (the API user), its system dates when it has no dates of its own (the
    go-live), and IsDeleted."""
    dated = any(f.type in DATE_TYPES and not f.computed for f in spec.fields)
    one_value = {
        creators: not spec.has_field("OwnerId"),
        created_dates: not dated,
        modified_dates: not dated,
        not_deleted: True,
    }
    by_name = {r.name: r for r in RULES}
    return [f.name for f in spec.fields if f.computed and one_value.get(by_name[f.name].compute, False)]


def api_user_fields(spec: ObjectSpec) -> list[str]:
    """The computed fields of `spec` that take the org's API user (`creators`: where a record has no owner)."""
    by_name = {r.name: r for r in RULES}
    return [f.name for f in spec.fields if f.computed and by_name[f.name].compute is creators]


def compute(
    spec: ObjectSpec, raw: pd.DataFrame, facts: OrgFacts, only: Collection[str] | None = None
) -> dict[str, Sequence[Any]]:
    """The values of `spec`'s computed fields (`only` those named, if given), from the stored columns of
    `raw` (strings, None for empty)."""
    by_name = {r.name: r for r in RULES}
    _MEMO.table = {}
    try:
        return {
            f.name: by_name[f.name].compute(spec, raw, facts)
            for f in spec.fields
            if f.computed and (only is None or f.name in only)
        }
    finally:
        _MEMO.table = None
