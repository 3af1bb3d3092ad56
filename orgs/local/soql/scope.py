"""Name resolution: field paths → columns of the org model, with the joins they need.

A path is resolved from the query's object: `Account.Owner.LastName` on Case walks Case.AccountId →
Account.OwnerId → User.LastName (LEFT JOINs, so records with an empty lookup are kept, as Salesforce
does). The query's own object name or alias may prefix a path (`OrderItem.Order.AccountId` from
OrderItem). Unknown names fail with Salesforce's INVALID_FIELD messages, located at the bad name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orgs.local.soql import ast
from orgs.local.soql.errors import SoqlSemanticError
from schemas.model import FieldSpec, ObjectSpec, OrgModel

MAX_RELATIONSHIP_DEPTH = 5
LONG_TEXT_MIN = 256  # textareas longer than 255 are Long Text Areas: not filterable, sortable or groupable

NO_SUCH_COLUMN = (
    "No such column '{field}' on entity '{sobject}'. If you are attempting to use a custom field, be sure to "
    "append the '__c' after the custom field name. Please reference your WSDL or the describe call for the "
    "appropriate names."
)
NO_SUCH_RELATIONSHIP = (
    "Didn't understand relationship '{name}' in field path. If you are attempting to use a custom "
    "relationship, be sure to append the '__r' after the custom relationship name. Please reference your "
    "WSDL or the describe call for the appropriate names."
)
NOT_SUPPORTED_TYPE = (
    "sObject type '{name}' is not supported. If you are attempting to use a custom object, be sure to "
    "append the '__c' after the entity name. Please reference your WSDL or the describe call for the "
    "appropriate names."
)

# The type names Salesforce uses in filter errors ("must be of type dateTime ...").
SOAP_TYPE = {
    "id": "id",
    "reference": "id",
    "boolean": "boolean",
    "currency": "double",
    "double": "double",
    "int": "int",
    "date": "date",
    "datetime": "dateTime",
}


def kind_of(f: FieldSpec) -> str:
    """The comparison kind of a field: id, text, number, boolean, date or datetime."""
    if f.type in ("id", "reference"):
        return "id"
    if f.type in ("currency", "double", "int"):
        return "number"
    if f.type in ("boolean", "date", "datetime"):
        return f.type
    return "text"


def is_long_text(f: FieldSpec) -> bool:
    return f.type == "textarea" and (f.length or 0) >= LONG_TEXT_MIN


def is_groupable(f: FieldSpec) -> bool:
    """Salesforce's `groupable`: not long text, datetimes (group by a date function) or fractional numbers."""
    return not is_long_text(f) and f.type not in ("datetime", "double", "currency")


def quote(name: str) -> str:
    """An identifier from the org model (never user text) as a quoted SQL name."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class Resolved:
    """A field path resolved to a SQL column."""

    sql: str
    field: FieldSpec
    sobject: str
    rels: tuple[str, ...]  # canonical relationship names walked from the query's object
    nullable: bool
    text: str  # as written
    pos: int

    @property
    def kind(self) -> str:
        return kind_of(self.field)

    @property
    def key(self) -> tuple[str, ...]:
        """Identity of the column, for duplicate and GROUP BY checks."""
        return (*(r.lower() for r in self.rels), self.field.name.lower())


@dataclass
class Scope:
    """One FROM object with its alias and the LEFT JOINs its paths need."""

    model: OrgModel
    spec: ObjectSpec
    alias: str  # SQL alias of the root table
    source: str
    user_alias: str | None = None  # the alias written after FROM, if any
    counter: list[int] = field(default_factory=lambda: [0])
    joins: dict[tuple[str, ...], tuple[str, ObjectSpec]] = field(default_factory=dict)
    join_sql: list[str] = field(default_factory=list)

    def child(self, spec: ObjectSpec, user_alias: str | None = None) -> Scope:
        """A scope for a subquery: fresh joins, aliases unique within the whole statement."""
        return Scope(self.model, spec, self.next_alias(), self.source, user_alias, self.counter)

    def next_alias(self) -> str:
        self.counter[0] += 1
        return f"t{self.counter[0]}"

    def error(self, detail: str, pos: int, code: str = "INVALID_FIELD") -> SoqlSemanticError:
        return SoqlSemanticError(detail, self.source, pos, error_code=code)

    def strip_prefix(self, parts: list[ast.Ident]) -> list[ast.Ident]:
        """Drop a leading object name or FROM alias (`OrderItem.Order.AccountId` → `Order.AccountId`)."""
        if len(parts) < 2:
            return parts
        head = parts[0].name.lower()
        if self.relationship(self.spec, parts[0].name) is not None:
            return parts
        if head == self.spec.name.lower() or (self.user_alias and head == self.user_alias.lower()):
            return parts[1:]
        return parts

    @staticmethod
    def relationship(spec: ObjectSpec, name: str) -> FieldSpec | None:
        low = name.lower()
        for f in spec.lookups:
            if f.relationship_name and f.relationship_name.lower() == low:
                return f
        return None

    def resolve(self, path: ast.FieldPath) -> Resolved:
        parts = self.strip_prefix(path.parts)
        spec = self.spec
        alias = self.alias
        rels: list[str] = []
        nullable = False
        for part in parts[:-1]:
            lookup = self.relationship(spec, part.name)
            if lookup is None:
                raise self.error(NO_SUCH_RELATIONSHIP.format(name=part.name), part.pos)
            target_name = lookup.reference_to[0]
            if len(lookup.reference_to) > 1:
                raise self.error(
                    f"Relationship '{part.name}' is polymorphic; the local org does not follow polymorphic "
                    "relationships. Select the lookup id instead.",
                    part.pos,
                    "MALFORMED_QUERY",
                )
            if not self.model.has(target_name):
                raise self.error(
                    f"Relationship '{lookup.relationship_name}' points to '{target_name}', an object that "
                    f"exists only in a real org; the local org has no {target_name} records. Select "
                    f"{lookup.name} instead.",
                    part.pos,
                )
            rels.append(lookup.relationship_name or part.name)
            if len(rels) > MAX_RELATIONSHIP_DEPTH:
                raise self.error(
                    f"A field path can follow at most {MAX_RELATIONSHIP_DEPTH} relationships "
                    f"(child-to-parent); '{path.text}' follows more.",
                    part.pos,
                    "MALFORMED_QUERY",
                )
            target = self.model.get(target_name)
            alias = self.join(tuple(rels), alias, lookup, target)
            spec = target
            nullable = True
        last = parts[-1]
        if not spec.has_field(last.name):
            if self.relationship(spec, last.name) is not None:
                # `SELECT Account FROM Contact`: a relationship is not a column
                raise self.error(NO_SUCH_COLUMN.format(field=last.name, sobject=spec.name), last.pos)
            raise self.error(NO_SUCH_COLUMN.format(field=last.name, sobject=spec.name), last.pos)
        f = spec.field(last.name)
        return Resolved(
            sql=f"{alias}.{quote(f.name)}",
            field=f,
            sobject=spec.name,
            rels=tuple(rels),
            nullable=nullable or f.nillable,
            text=path.text,
            pos=path.pos,
        )

    def join(self, key: tuple[str, ...], from_alias: str, lookup: FieldSpec, target: ObjectSpec) -> str:
        lowered = tuple(k.lower() for k in key)
        found = self.joins.get(lowered)
        if found is not None:
            return found[0]
        alias = self.next_alias()
        self.joins[lowered] = (alias, target)
        self.join_sql.append(
            f'LEFT JOIN {quote(target.name)} AS {alias} ON {alias}."Id" = {from_alias}.{quote(lookup.name)}'
        )
        return alias

    def parent_id(self, rels: tuple[str, ...]) -> str:
        """SQL of the Id column of the parent reached by `rels` (already joined)."""
        alias, _ = self.joins[tuple(r.lower() for r in rels)]
        return f'{alias}."Id"'

    def parent_object(self, rels: tuple[str, ...]) -> str:
        return self.joins[tuple(r.lower() for r in rels)][1].name


def resolve_object(model: OrgModel, name: ast.Ident, source: str) -> ObjectSpec:
    """The FROM object, or Salesforce's INVALID_TYPE error at its name."""
    if model.has(name.name):
        return model.get(name.name)
    if name.name in model.external or name.name.lower() in {e.lower() for e in model.external}:
        raise SoqlSemanticError(
            f"sObject type '{name.name}' is not supported by the local org: it exists only in a real org "
            "(orgseed resolves it when seeding). Query the objects listed by describe().",
            source,
            name.pos,
            error_code="INVALID_TYPE",
        )
    raise SoqlSemanticError(
        NOT_SUPPORTED_TYPE.format(name=name.name), source, name.pos, error_code="INVALID_TYPE"
    )
