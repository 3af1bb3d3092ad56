"""Fields a real org computes from stored ones, which the local org serves beside the bundle's columns.

A Salesforce org answers `SELECT Owner.Name FROM Case` although nobody ever writes `User.Name`: a person's
`Name` is the org's compound of FirstName and LastName (Contacts, Users, and Person Accounts, whose
Account Name is the person's), and `Case.IsClosed` follows from the case's Status. Agents write such
queries (reference crmarena.md §9 names `Owner.Name`), so the local org serves these fields as well:
read-only (neither createable nor updateable in describe), absent from the bundle's CSVs and the org model's JSON Schemas,
computed once when org.sqlite is built, and then queried, filtered, sorted and searched like any other.

`local_model(model)` is the org model plus these fields, for every object that has the stored fields a
rule needs and does not declare the field itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd

from schemas.model import FieldSpec, ObjectSpec, OrgModel

CLOSED_STATUSES = frozenset({"closed"})  # Case Status values whose IsClosed is true (compared lower-case)


def full_name(frame: pd.DataFrame) -> list[str]:
    """`FirstName LastName`, or the LastName alone when there is no FirstName (as Salesforce composes it)."""
    return [
        " ".join(part for part in (first, last) if part)
        for first, last in zip(frame["FirstName"], frame["LastName"], strict=True)
    ]


def is_closed(frame: pd.DataFrame) -> list[bool]:
    return [status is not None and str(status).lower() in CLOSED_STATUSES for status in frame["Status"]]


@dataclass(frozen=True)
class Rule:
    name: str
    type: str
    label: str
    description: str
    requires: tuple[str, ...]
    compute: Callable[[pd.DataFrame], Sequence[Any]]
    length: int | None = None
    objects: tuple[str, ...] | None = None  # None: every object with the required fields


RULES = (
    Rule(
        "Name",
        "string",
        "Full Name",
        "FirstName and LastName as one name, computed by the org (read-only).",
        ("FirstName", "LastName"),
        full_name,
        length=121,
    ),
    Rule(
        "IsClosed",
        "boolean",
        "Closed",
        "Whether the case's Status is a closed status, computed by the org (read-only).",
        ("Status",),
        is_closed,
        objects=("Case",),
    ),
)


def rules_for(spec: ObjectSpec) -> list[Rule]:
    """The rules that add a field to `spec` (stored fields present, field not already declared)."""
    return [
        r
        for r in RULES
        if (r.objects is None or spec.name in r.objects)
        and all(spec.has_field(f) and not spec.field(f).computed for f in r.requires)
        and not spec.has_field(r.name)
    ]


def local_model(model: OrgModel) -> OrgModel:
    """`model` with the computed fields of `RULES` appended to the objects they apply to."""
    if any(f.computed for spec in model for f in spec.fields):
        return model  # already extended
    objects = []
    for spec in model:
        added = tuple(
            FieldSpec(
                name=r.name,
                type=r.type,
                label=r.label,
                description=r.description,
                nillable=False,
                length=r.length,
                createable=False,
                computed=True,
            )
            for r in rules_for(spec)
        )
        objects.append(replace(spec, fields=spec.fields + added) if added else spec)
    return OrgModel(objects, list(model.external.values()), model.root)


def stored_spec(spec: ObjectSpec) -> ObjectSpec:
    """`spec` without its computed fields: the columns of the bundle's CSV."""
    stored = tuple(f for f in spec.fields if not f.computed)
    return spec if len(stored) == len(spec.fields) else replace(spec, fields=stored)


def compute(spec: ObjectSpec, raw: pd.DataFrame) -> dict[str, Sequence[Any]]:
    """The values of `spec`'s computed fields, from the stored columns of `raw` (strings, None for empty)."""
    by_name = {r.name: r for r in RULES}
    return {f.name: by_name[f.name].compute(raw) for f in spec.fields if f.computed}
