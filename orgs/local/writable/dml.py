"""Writes to an empty org, checked and refused as a real org checks and refuses them.

`Writer.insert / update / upsert / delete` take a batch of records (from one REST call, one sObject
Collections request or one Bulk API 2.0 batch) and return one `SaveResult` per record, in input order. A
record is written whole or not at all; with `all_or_none` a batch is written whole or not at all. Every
refusal carries Salesforce's status code and message (`../shared/reference/salesforce-api.md` §4.2,
`seeding.md` Part B; texts marked INFERRED there are the reference's best knowledge):

- `INVALID_FIELD` (unknown field, or a field hidden by field-level security), `INVALID_FIELD_FOR_INSERT_UPDATE`
  (system and computed fields; audit fields without the org preference and the "Set Audit Fields upon Record
  Creation" permission, and always on update and upsert), `REQUIRED_FIELD_MISSING`, `STRING_TOO_LONG`,
  `INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST`, `INVALID_EMAIL_ADDRESS`, `INVALID_TYPE_ON_FIELD_IN_RECORD`,
  `MALFORMED_ID`, `FIELD_INTEGRITY_EXCEPTION` (an id of the wrong object), `INVALID_CROSS_REFERENCE_KEY`,
  `DUPLICATE_VALUE` (unique and external-id fields; a second price for a product in one price book),
  `DUPLICATE_USERNAME`, `STANDARD_PRICE_NOT_DEFINED`, `FIELD_INTEGRITY_EXCEPTION` for order products outside
  the order's price book and for changes to activated orders, Knowledge versions that are not drafts,
  `LICENSE_LIMIT_EXCEEDED`, `STORAGE_LIMIT_EXCEEDED`, `DUPLICATES_DETECTED` (the duplicate-rule knob),
  `UNABLE_TO_LOCK_ROW` (the lock-contention knob, raised by the Bulk processor), and
  `ALL_OR_NONE_OPERATION_ROLLED_BACK`.

System fields are the org's: `Id`, `CreatedDate`/`LastModifiedDate`/`SystemModstamp` (now), `CreatedById`/
`LastModifiedById` (the API user), `IsDeleted`, `CaseNumber`/`OrderNumber` (next auto-number), `Name` of a
person (FirstName LastName), `Case.IsClosed`. With the audit permission an insert may set `CreatedDate`,
`CreatedById`, `LastModifiedDate`, `LastModifiedById` (and the model's audit fields such as `Case.ClosedDate`)
on the objects Salesforce allows it for.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from orgs.local.computed import person_name, status_closed
from orgs.local.errors import NotFound, OrgApiError
from orgs.local.soql.filters import ID_RE, to18
from orgs.local.store import quote
from orgs.local.writable.editions import record_bytes
from orgs.local.writable.state import StateDir, delete_rows, insert_rows, now_wire, update_rows
from schemas.model import FieldSpec, ObjectSpec, OrgModel

AUDIT_SYSTEM_FIELDS = ("CreatedDate", "CreatedById", "LastModifiedDate", "LastModifiedById")
# objects whose audit fields an insert may set (seeding.md B1): these standard objects and every custom object
AUDIT_OBJECTS = frozenset({"Account", "Case", "Contact", "EmailMessage", "Knowledge__kav"})
# standard fields the org keeps to itself although the CRMArena model stores them
ORG_ONLY = {("Knowledge__kav", "PublishStatus")}
CREATE_ONLY = {("EmailMessage", "ParentId"), ("OrderItem", "OrderId"), ("OrderItem", "PricebookEntryId")}
# required fields a new record gets a value for when the writer leaves them out
DEFAULTS: dict[tuple[str, str], Any] = {
    ("Case", "Status"): "New",
    ("Order", "Status"): "Draft",
    ("Knowledge__kav", "PublishStatus"): "Draft",
    ("LiveChatTranscript", "Status"): "Completed",
    ("User", "IsActive"): 1,
    ("Pricebook2", "IsActive"): 1,
}
# required by a real org although the CRMArena model lets them be empty (seeding.md B4)
REQUIRED_ON_WRITE = {("LiveChatTranscript", "LiveChatVisitorId")}
# required in the CRMArena model but not by a real org on insert
NOT_REQUIRED = {("Order", "Pricebook2Id"), ("OrderItem", "Product2Id"), ("EmailMessage", "MessageDate")}
ACTIVATED = "Activated"
READ_ONLY_OBJECTS = frozenset(
    {"Organization", "UserLicense", "Profile", "PermissionSet", "RecordType", "DuplicateRule"}
)
DRAFT = "Draft"
EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DT_RE = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$"
)
RecordIn = dict[str, Any]


@dataclass
class RecordError:
    code: str
    message: str
    fields: list[str] = field(default_factory=list)

    def as_rest(self) -> dict[str, Any]:
        return {"statusCode": self.code, "message": self.message, "fields": self.fields}

    def as_csv(self) -> str:
        """The failedResults cell: `CODE:message:field list --`."""
        return f"{self.code}:{self.message}:{','.join(self.fields)} --"


@dataclass
class SaveResult:
    id: str | None
    errors: list[RecordError] = field(default_factory=list)
    created: bool | None = None

    @property
    def success(self) -> bool:
        return not self.errors

    def as_rest(self, with_created: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "success": self.success,
            "errors": [e.as_rest() for e in self.errors],
        }
        if with_created:
            out["created"] = bool(self.created) if self.success else False
        return out


class DmlError(OrgApiError):
    """A refused single-record write, answered as Salesforce does: 400 with `[{message, errorCode, fields}]`."""

    def __init__(self, err: RecordError, status: int = 400) -> None:
        super().__init__(err.message, error_code=err.code, status=status)
        self.error_fields = err.fields

    def to_json(self) -> list[dict[str, Any]]:
        return [{"message": self.message, "errorCode": self.error_code, "fields": self.error_fields}]


class Rejected(Exception):
    """One record refused (internal: becomes the record's SaveResult error)."""

    def __init__(self, code: str, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.error = RecordError(code, message, fields or [])


ROLLED_BACK = RecordError(
    "ALL_OR_NONE_OPERATION_ROLLED_BACK",
    "Record rolled back because not all records were valid and the request was using AllOrNone header",
)


class _RolledBack(Exception):
    """Raised inside a write transaction to undo it whole (`allOrNone` with a failed record)."""


def _roll_back(results: list[SaveResult]) -> list[SaveResult]:
    """`allOrNone` with a failure: every record that would have been written is reported rolled back."""
    for r in results:
        if r.success:
            if r.created:
                r.id, r.created = None, None
            r.errors.append(ROLLED_BACK)
    return results


def wire(value: str) -> str:
    """A date-time in any of the forms Salesforce accepts, as the store's UTC wire form."""
    m = _DT_RE.match(value.strip())
    if not m:
        raise ValueError(value)
    y, mo, d, h, mi, s, frac, tz = m.groups()
    dt = datetime(int(y), int(mo), int(d), int(h or 0), int(mi or 0), int(s or 0))
    ms = int((frac or "0")[:3].ljust(3, "0"))
    if tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        dt -= sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms:03d}+0000"


_INDEXES: dict[int, tuple[ObjectSpec, dict[str, FieldSpec]]] = {}


def fields_of(spec: ObjectSpec) -> dict[str, FieldSpec]:
    """`spec`'s fields by lower-case name. (ObjectSpec.field hashes the whole spec on every call, which a
    write of 10,000 records x 10 fields cannot afford: measured 5 of 7.7 s for 22,000 price book entries.)"""
    found = _INDEXES.get(id(spec))
    if found is None or found[0] is not spec:
        if len(_INDEXES) > 256:
            _INDEXES.clear()
        found = (spec, {f.name.lower(): f for f in spec.fields})
        _INDEXES[id(spec)] = found
    return found[1]


def _type_error(f: FieldSpec, value: Any) -> Rejected:
    return Rejected(
        "INVALID_TYPE_ON_FIELD_IN_RECORD", f"{f.label}: value not of required type: {value}", [f.name]
    )


def convert(f: FieldSpec, value: Any) -> Any:
    """A written value (JSON value or CSV text) as the store keeps it; Rejected when it is not of the type."""
    t = f.type
    if t == "boolean":
        if isinstance(value, bool):
            return int(value)
        text = str(value).strip().lower()
        if text in ("true", "1"):
            return 1
        if text in ("false", "0"):
            return 0
        raise _type_error(f, value)
    if t == "int":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _type_error(f, value) from None
        if not math.isfinite(number) or number != int(number):
            raise _type_error(f, value)
        return int(number)
    if t in ("double", "currency", "percent"):
        if isinstance(value, bool):
            raise _type_error(f, value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise _type_error(f, value) from None
        if not math.isfinite(number):
            raise _type_error(f, value)
        return number
    if isinstance(value, (dict, list)):
        raise _type_error(f, value)
    text = value if isinstance(value, str) else str(value)
    if t == "date":
        m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:Z|T00:00:00(?:\.000)?Z?)?", text.strip())
        if not m:
            raise _type_error(f, value)
        try:
            datetime.strptime(m.group(1), "%Y-%m-%d")
        except ValueError:
            raise _type_error(f, value) from None
        return m.group(1)
    if t == "datetime":
        try:
            return wire(text)
        except ValueError:
            raise _type_error(f, value) from None
    if t in ("id", "reference"):
        if not ID_RE.match(text):
            raise Rejected("MALFORMED_ID", f"{f.label}: id value of incorrect type: {text}", [f.name])
        return to18(text)
    if f.length is not None and len(text) > f.length:
        raise Rejected(
            "STRING_TOO_LONG", f"{f.label}: data value too large: {text} (max length={f.length})", [f.name]
        )
    if t == "picklist" and f.picklist and text not in f.picklist:
        raise Rejected(
            "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST",
            f"{f.label}: bad value for restricted picklist field: {text}",
            [f.name],
        )
    if t == "email" and text and not EMAIL_RE.match(text):
        raise Rejected("INVALID_EMAIL_ADDRESS", f"{f.label}: invalid email address: {text}", [f.name])
    return text


@dataclass
class Batch:
    """Records of one write call for one object, with where each came from (input position)."""

    spec: ObjectSpec
    records: list[RecordIn]
    results: list[SaveResult]
    # stored values of the records still in play, by input position
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    # update: each record as the org holds it now (read once by the checks, used again by the write)
    current: dict[int, dict[str, Any]] = field(default_factory=dict)

    def fail(self, i: int, err: RecordError) -> None:
        self.results[i].errors.append(err)
        self.rows.pop(i, None)


class Writer:
    """The DML of one empty org. Callers hold no lock: each call is one transaction under the state's lock."""

    def __init__(
        self, state: StateDir, model: Callable[[], OrgModel], on_change: Callable[[], None] | None = None
    ) -> None:
        self.state = state
        self._model = model
        self._on_change = on_change
        self._perms: tuple[bool, set[tuple[str, str]]] | None = None
        # parents found by external id during one write call (a batch names the same parents many times)
        self._parents: dict[tuple[str, str, str], list[Any]] = {}

    def invalidate(self) -> None:
        """Permissions or settings changed: look them up again on the next write."""
        self._perms = None

    def perms(self) -> tuple[bool, set[tuple[str, str]]]:
        """(audit fields allowed, editable custom fields), as of the last change."""
        if self._perms is None:
            audit = self.state.settings.audit_fields and self.state.user_permission("CreateAuditFields")
            self._perms = (audit, self.state.editable())
        return self._perms

    def _changed(self, sobject: str) -> None:
        if sobject in ("PermissionSetAssignment", "PermissionSet"):
            self.invalidate()
            if self._on_change is not None:
                self._on_change()

    @property
    def model(self) -> OrgModel:
        return self._model()

    # -- what may be written -----------------------------------------------------------------------------------

    def spec(self, sobject: str) -> ObjectSpec:
        model = self.model
        if not model.has(sobject):
            raise NotFound(
                f"The requested resource does not exist: sObject type '{sobject}' is not in this org."
            )
        return model.get(sobject)

    def audit_allowed(self) -> bool:
        return self.perms()[0]

    def writable(self, spec: ObjectSpec, f: FieldSpec, op: str) -> bool:
        """May `op` (insert | update) set `f`?"""
        name = f.name
        if name == "Id" or (spec.name, name) in ORG_ONLY:
            return False
        if op == "update" and (spec.name, name) in CREATE_ONLY:
            return False
        audit = name in AUDIT_SYSTEM_FIELDS or f.audit
        if audit:
            return op == "insert" and (spec.custom or spec.name in AUDIT_OBJECTS) and self.audit_allowed()
        if f.computed or not f.createable:
            return False
        if spec.name in READ_ONLY_OBJECTS:
            return False
        if f.custom:
            return (spec.name, name) in self.perms()[1]
        return True

    # -- the operations ---------------------------------------------------------------------------------------

    def insert(
        self,
        sobject: str,
        records: list[RecordIn],
        *,
        all_or_none: bool = False,
        allow_save: bool = False,
        locked: Callable[[str], bool] | None = None,
    ) -> list[SaveResult]:
        spec = self.spec(sobject)
        self._check_operation(spec, "insert")
        self._parents.clear()
        batch = Batch(spec, records, [SaveResult(None) for _ in records])
        with self.state.transaction() as conn:
            for i, rec in enumerate(records):
                try:
                    batch.rows[i] = self._prepare(conn, spec, rec, "insert")
                except Rejected as exc:
                    batch.fail(i, exc.error)
            self._check_references(conn, batch)
            self._check_unique(conn, batch)
            self._business_insert(conn, batch, allow_save)
            if locked is not None:
                self._check_locks(batch, locked)
            self._check_storage(conn, batch)
            if all_or_none and any(not r.success for r in batch.results):
                return _roll_back(batch.results)
            self._write_inserts(conn, batch)
        self._changed(spec.name)
        return batch.results

    def update(
        self,
        sobject: str | None,
        records: list[RecordIn],
        *,
        all_or_none: bool = False,
        locked: Callable[[str], bool] | None = None,
    ) -> list[SaveResult]:
        """Update records by Id (`sobject` None: each record names its type in `attributes.type`, or the
        Id's key prefix says it)."""
        results = [SaveResult(None) for _ in records]
        self._parents.clear()
        groups: dict[str, list[int]] = {}
        for i, rec in enumerate(records):
            rid = _record_id(rec)
            if rid is None:
                results[i].errors.append(
                    RecordError("MISSING_ARGUMENT", "Id not specified in an update call", [])
                )
                continue
            if not ID_RE.match(rid):
                results[i].errors.append(
                    RecordError("MALFORMED_ID", f"Record ID: id value of incorrect type: {rid}", ["Id"])
                )
                continue
            results[i].id = to18(rid)
            name = sobject or self.model.object_for_prefix(rid[:3])
            if name is None:
                results[i].errors.append(
                    RecordError("INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", [])
                )
                continue
            groups.setdefault(name, []).append(i)
        with self.state.transaction() as conn:
            staged: list[Batch] = []
            for name, idx in groups.items():
                spec = self.spec(name)
                self._check_operation(spec, "update")
                sub = Batch(spec, [records[i] for i in idx], [results[i] for i in idx])
                for j, rec in enumerate(sub.records):
                    try:
                        sub.rows[j] = self._prepare(conn, spec, rec, "update")
                    except Rejected as exc:
                        sub.fail(j, exc.error)
                self._check_references(conn, sub)
                self._check_unique(conn, sub)
                self._business_update(conn, sub)
                if locked is not None:
                    self._check_locks(sub, locked)
                staged.append(sub)
            if all_or_none and any(not r.success for r in results):
                return _roll_back(results)
            for sub in staged:
                self._write_updates(conn, sub)
        for r in results:
            if r.success:
                r.created = False
        return results

    def upsert(
        self,
        sobject: str,
        ext_field: str,
        records: list[RecordIn],
        *,
        all_or_none: bool = False,
        allow_save: bool = False,
        locked: Callable[[str], bool] | None = None,
    ) -> list[SaveResult]:
        """Insert or update each record by `ext_field` (an external-id field, or Id)."""
        spec = self.spec(sobject)
        if not spec.has_field(ext_field) or not (
            spec.field(ext_field).external_id or spec.field(ext_field).name == "Id"
        ):
            raise NotFound(f"Provided external ID field does not exist or is not accessible: {ext_field}")
        f = spec.field(ext_field)
        results: list[SaveResult] = [SaveResult(None) for _ in records]
        inserts: list[int] = []
        updates: list[int] = []
        keys: dict[int, Any] = {}
        conn = self.state.conn
        with self.state.lock:
            seen: Counter[str] = Counter()
            for i, rec in enumerate(records):
                value = _get(rec, f.name)
                if value in (None, ""):
                    if f.name == "Id":
                        inserts.append(i)
                        continue
                    results[i].errors.append(
                        RecordError(
                            "REQUIRED_FIELD_MISSING", f"Required fields are missing: [{f.name}]", [f.name]
                        )
                    )
                    continue
                key = str(value).lower()
                seen[key] += 1
                keys[i] = value
            for i, value in keys.items():
                if seen[str(value).lower()] > 1:
                    results[i].errors.append(
                        RecordError(
                            "DUPLICATE_VALUE",
                            f"Duplicate external id specified: {value}",
                            [f.name],
                        )
                    )
                    continue
                stored = to18(str(value)) if f.name == "Id" else value
                found = conn.execute(
                    f"SELECT Id FROM {quote(spec.name)} WHERE {quote(f.name)} = ? LIMIT 2", (stored,)
                ).fetchall()
                if len(found) > 1:
                    results[i].errors.append(
                        RecordError(
                            "DUPLICATE_EXTERNAL_ID",
                            f"{f.label}: more than one record found for external id field: {[r[0] for r in found]}",
                            [f.name],
                        )
                    )
                elif found:
                    results[i].id = found[0][0]
                    updates.append(i)
                elif f.name == "Id":
                    results[i].errors.append(
                        RecordError(
                            "NOT_FOUND",
                            "Provided external ID field does not exist or is not accessible: Id",
                            [],
                        )
                    )
                else:
                    inserts.append(i)
        if all_or_none and any(not r.success for r in results):
            return _roll_back(results)
        try:
            with self.state.transaction():  # the inserts and the updates join it: all or none is whole
                if inserts:
                    out = self._insert_for_upsert(
                        spec.name, [records[i] for i in inserts], allow_save, locked
                    )
                    for i, r in zip(inserts, out, strict=True):
                        results[i] = r
                if updates:
                    recs = []
                    for i in updates:
                        rec = {
                            k: v
                            for k, v in records[i].items()
                            if k.lower() != f.name.lower() or f.name == "Id"
                        }
                        rec["Id"] = results[i].id
                        recs.append(rec)
                    out = self.update(spec.name, recs, locked=locked)
                    for i, r in zip(updates, out, strict=True):
                        results[i] = r
                if all_or_none and any(not r.success for r in results):
                    raise _RolledBack
        except _RolledBack:
            return _roll_back(results)
        return results

    def _insert_for_upsert(
        self,
        sobject: str,
        records: list[RecordIn],
        allow_save: bool,
        locked: Callable[[str], bool] | None,
    ) -> list[SaveResult]:
        """An upsert's inserts: as `insert`, but audit fields are refused (seeding.md B1: insert only)."""
        spec = self.spec(sobject)
        index = fields_of(spec)
        results: list[SaveResult] = []
        clean: list[RecordIn] = []
        where: list[int] = []
        for i, rec in enumerate(records):
            audit = [
                k
                for k in rec
                if (f := index.get(k.lower())) is not None
                and (f.name in AUDIT_SYSTEM_FIELDS or f.audit)
                and rec[k] not in (None, "")
            ]
            if audit:
                results.append(SaveResult(None, [_readonly(spec, audit[0]).error]))
            else:
                results.append(SaveResult(None))
                clean.append(rec)
                where.append(i)
        if clean:
            inserted = self.insert(sobject, clean, allow_save=allow_save, locked=locked)
            for i, r in zip(where, inserted, strict=True):
                results[i] = r
        return results

    def insert_mixed(
        self, records: list[RecordIn], *, all_or_none: bool = False, allow_save: bool = False
    ) -> list[SaveResult]:
        """sObject Collections create: records of several types (`attributes.type`), in input order, in
        one transaction."""
        results = [SaveResult(None) for _ in records]
        groups: dict[str, list[int]] = {}
        for i, rec in enumerate(records):
            attributes = rec.get("attributes")
            kind = attributes.get("type") if isinstance(attributes, dict) else None
            if not kind:
                results[i].errors.append(RecordError("INVALID_TYPE", "Must send a concrete entity type.", []))
            elif _record_id(rec):
                results[i].errors.append(
                    RecordError("INVALID_FIELD", "Records in a create request must not have an id.", ["Id"])
                )
            elif not self.model.has(kind):
                results[i].errors.append(
                    RecordError("INVALID_TYPE", f"sObject type '{kind}' is not supported.", [])
                )
            else:
                groups.setdefault(kind, []).append(i)
        try:
            with self.state.transaction():
                for kind, idx in groups.items():
                    inserted = self.insert(kind, [records[i] for i in idx], allow_save=allow_save)
                    for i, r in zip(idx, inserted, strict=True):
                        results[i] = r
                if all_or_none and any(not r.success for r in results):
                    raise _RolledBack
        except _RolledBack:
            return _roll_back(results)
        return results

    def delete(self, ids: list[str], *, all_or_none: bool = False, hard: bool = False) -> list[SaveResult]:
        results = [SaveResult(None) for _ in ids]
        with self.state.transaction() as conn:
            plan: list[tuple[int, ObjectSpec, str]] = []
            for i, raw in enumerate(ids):
                rid = raw.strip()
                if not ID_RE.match(rid):
                    results[i].errors.append(RecordError("MALFORMED_ID", f"malformed id {rid}", []))
                    continue
                rid = to18(rid)
                results[i].id = rid
                name = self.model.object_for_prefix(rid[:3])
                if name is None:
                    results[i].errors.append(
                        RecordError("INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", [])
                    )
                    continue
                spec = self.model.get(name)
                row = conn.execute(f'SELECT 1 FROM {quote(name)} WHERE "Id" = ?', (rid,)).fetchone()
                if row is None:
                    deleted = conn.execute("SELECT 1 FROM orgseed_recycle WHERE id = ?", (rid,)).fetchone()
                    if deleted:
                        results[i].errors.append(RecordError("ENTITY_IS_DELETED", "entity is deleted", []))
                    else:
                        results[i].errors.append(
                            RecordError("INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", [])
                        )
                    continue
                try:
                    self._check_delete(conn, spec, rid)
                except Rejected as exc:
                    results[i].errors.append(exc.error)
                    continue
                plan.append((i, spec, rid))
            if all_or_none and any(not r.success for r in results):
                return _roll_back(results)
            stamp = now_wire()
            for _, spec, rid in plan:
                self._clear_lookups(conn, spec, rid)
                if not hard:
                    names = [f.name for f in spec.fields]
                    row = conn.execute(
                        f'SELECT {", ".join(quote(n) for n in names)} FROM {quote(spec.name)} WHERE "Id" = ?',
                        (rid,),
                    ).fetchone()
                    conn.execute(
                        "INSERT OR REPLACE INTO orgseed_recycle (id, sobject, deleted, record) VALUES (?, ?, ?, ?)",
                        (rid, spec.name, stamp, json.dumps(dict(zip(names, row, strict=True)))),
                    )
                delete_rows(conn, spec, [rid])
                conn.execute("DELETE FROM orgseed_storage WHERE id = ?", (rid,))
                if spec.name == "User":
                    self._count_licences(conn)
        for _, spec, _ in plan:
            self._changed(spec.name)
        return results

    # -- checks ---------------------------------------------------------------------------------------------------

    def _check_operation(self, spec: ObjectSpec, op: str) -> None:
        if spec.name in READ_ONLY_OBJECTS:
            raise OrgApiError(
                f"entity type cannot be {op}ed: {spec.label}", error_code="INVALID_TYPE_FOR_OPERATION"
            )

    def _prepare(self, conn: sqlite3.Connection, spec: ObjectSpec, rec: RecordIn, op: str) -> dict[str, Any]:
        """The stored values `rec` sets (insert: with defaults and system fields), or Rejected."""
        out: dict[str, Any] = {}
        nulls: list[str] = []
        index = fields_of(spec)
        for key, value in rec.items():
            if key == "attributes" or (key.lower() == "id" and op == "update"):
                continue
            f_or_none = index.get(key.lower())
            if isinstance(value, dict) and f_or_none is None:
                # a parent by external id in JSON: {"Account": {"Ext__c": "x"}}
                f, resolved = self._relationship(conn, spec, key, value)
                out[f.name] = resolved
                continue
            if "." in key and f_or_none is None:
                rel, _, ext = key.partition(".")
                if value in (None, ""):
                    continue
                f, resolved = self._relationship(conn, spec, rel, {ext: value})
                out[f.name] = resolved
                continue
            if f_or_none is None:
                raise Rejected(
                    "INVALID_FIELD", f"No such column '{key}' on sobject of type {spec.name}", [key]
                )
            f = f_or_none
            if value is None or value == "#N/A":
                if not self.writable(spec, f, op):
                    continue
                nulls.append(f.name)
                out[f.name] = None
                continue
            if value == "":
                continue  # an empty CSV cell: unset on insert, left as it is on update
            if not self.writable(spec, f, op):
                raise _readonly(spec, f.name)
            out[f.name] = convert(f, value)
        if op == "update":
            for name in nulls:
                f = index[name.lower()]
                if not f.nillable and f.type != "boolean" and (spec.name, name) not in NOT_REQUIRED:
                    raise Rejected("REQUIRED_FIELD_MISSING", f"Required fields are missing: [{name}]", [name])
            return out
        # insert: defaults, required fields, system fields
        for f in spec.fields:
            if f.name in out and out[f.name] is not None:
                continue
            default = DEFAULTS.get((spec.name, f.name))
            if default is not None:
                out[f.name] = default
            elif f.type == "boolean" and not f.computed:
                out[f.name] = 0
            elif f.name == "OwnerId" and f.is_lookup:
                out[f.name] = self.state.api_user
        missing = [
            f.name
            for f in spec.fields
            if (not f.nillable or (spec.name, f.name) in REQUIRED_ON_WRITE)
            and f.name != "Id"
            and not f.computed
            and f.name not in AUDIT_SYSTEM_FIELDS
            and not f.audit
            and (spec.name, f.name) not in NOT_REQUIRED
            and out.get(f.name) is None
            and (f.createable or (spec.name, f.name) in ORG_ONLY)
        ]
        if missing:
            raise Rejected(
                "REQUIRED_FIELD_MISSING", f"Required fields are missing: [{', '.join(missing)}]", missing
            )
        return out

    def _relationship(
        self, conn: sqlite3.Connection, spec: ObjectSpec, rel: str, value: dict[str, Any]
    ) -> tuple[FieldSpec, str]:
        """Resolve a parent given by one of its external-id fields: the lookup field and the parent's Id."""
        f = next((x for x in spec.lookups if (x.relationship_name or "").lower() == rel.lower()), None)
        if f is None or len(value) != 1:
            raise Rejected("INVALID_FIELD", f"No such column '{rel}' on sobject of type {spec.name}", [rel])
        ((ext, key),) = value.items()
        model = self.model
        for target in f.reference_to:
            if not model.has(target):
                continue
            t = model.get(target)
            if not t.has_field(ext) or not (
                t.field(ext).external_id or t.field(ext).name in ("Id", "Username", "Email")
            ):
                raise Rejected("INVALID_FIELD", f"No such column '{ext}' on sobject of type {target}", [rel])
            tf = t.field(ext)
            stored = to18(str(key)) if tf.name == "Id" else key
            memo = (t.name, tf.name, str(stored).lower())
            rows = self._parents.get(memo)
            if rows is None:
                rows = conn.execute(
                    f"SELECT Id FROM {quote(t.name)} WHERE {quote(tf.name)} = ? LIMIT 2", (stored,)
                ).fetchall()
                if len(self._parents) > 200_000:
                    self._parents.clear()
                self._parents[memo] = rows
            if len(rows) > 1:
                raise Rejected(
                    "DUPLICATE_EXTERNAL_ID",
                    f"Foreign key external ID: {key} matched more than one record for field {tf.name} in entity {t.name}",
                    [f.name],
                )
            if rows:
                return f, rows[0][0]
            raise Rejected(
                "INVALID_FIELD",
                f"Foreign key external ID: {key} not found for field {tf.name} in entity {t.name}",
                [f.name],
            )
        raise Rejected("INVALID_FIELD", f"No such column '{rel}' on sobject of type {spec.name}", [rel])

    def _check_references(self, conn: sqlite3.Connection, batch: Batch) -> None:
        model = self.model
        for f in batch.spec.lookups:
            prefixes = {model.get(t).key_prefix: t for t in f.reference_to if model.has(t)}
            wanted: dict[str, list[int]] = {}
            for i, row in list(batch.rows.items()):
                v = row.get(f.name)
                if v is None:
                    continue
                if v[:3] not in prefixes:
                    batch.fail(
                        i,
                        RecordError(
                            "FIELD_INTEGRITY_EXCEPTION",
                            f"{f.label}: id value of incorrect type: {v}",
                            [f.name],
                        ),
                    )
                    continue
                wanted.setdefault(v, []).append(i)
            if not wanted:
                continue
            found: set[str] = set()
            ids = list(wanted)
            for target in prefixes.values():
                for k in range(0, len(ids), 500):
                    chunk = ids[k : k + 500]
                    found.update(
                        r[0]
                        for r in conn.execute(
                            f'SELECT "Id" FROM {quote(target)} WHERE "Id" IN ({", ".join("?" for _ in chunk)})',
                            chunk,
                        )
                    )
            for v, idx in wanted.items():
                if v not in found:
                    for i in idx:
                        batch.fail(
                            i,
                            RecordError(
                                "INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", [f.name]
                            ),
                        )

    def _check_unique(self, conn: sqlite3.Connection, batch: Batch) -> None:
        spec = batch.spec
        for f in spec.fields:
            if not (f.unique or f.external_id):
                continue
            seen: dict[str, int] = {}
            for i, row in sorted(batch.rows.items()):
                v = row.get(f.name)
                if v is None:
                    continue
                key = str(v).lower()
                own = batch.results[i].id
                hit = conn.execute(
                    f'SELECT "Id" FROM {quote(spec.name)} WHERE {quote(f.name)} = ? AND "Id" IS NOT ? LIMIT 1',
                    (v, own),
                ).fetchone()
                if hit is None and key in seen:
                    hit = (batch.results[seen[key]].id or "",)
                if hit is not None:
                    if spec.name == "User" and f.name == "Username":
                        batch.fail(
                            i,
                            RecordError(
                                "DUPLICATE_USERNAME",
                                "Duplicate Username.The username already exists in this or another Salesforce "
                                "organization. Usernames must be unique across all Salesforce organizations. To "
                                "resolve, use a different username (it doesn't need to match the user's email address).",
                                ["Username"],
                            ),
                        )
                    else:
                        batch.fail(
                            i,
                            RecordError(
                                "DUPLICATE_VALUE",
                                f"duplicate value found: {f.name} duplicates value on record with id: {hit[0]}",
                                [f.name],
                            ),
                        )
                    continue
                seen[key] = i

    def _business_insert(self, conn: sqlite3.Connection, batch: Batch, allow_save: bool) -> None:
        name = batch.spec.name
        if name == "PricebookEntry":
            self._price_entries(conn, batch)
        elif name == "Order":
            for i, row in list(batch.rows.items()):
                if row.get("Status") != DRAFT:
                    batch.fail(
                        i,
                        _order_error(
                            "You can't create an activated order. Insert it as Draft, add its order products, then activate it.",
                            ["Status"],
                        ),
                    )
        elif name == "OrderItem":
            self._order_items(conn, batch)
        elif name == "User":
            self._licences(conn, batch)
        elif name == "Contact":
            self._duplicate_rule(conn, batch, allow_save)

    def _business_update(self, conn: sqlite3.Connection, batch: Batch) -> None:
        name = batch.spec.name
        cols = [f.name for f in batch.spec.fields]
        select = f'SELECT {", ".join(quote(c) for c in cols)} FROM {quote(name)} WHERE "Id" = ?'
        for i, row in list(batch.rows.items()):
            rid = batch.results[i].id
            current = conn.execute(select, (rid,)).fetchone()
            if current is None:
                deleted = conn.execute("SELECT 1 FROM orgseed_recycle WHERE id = ?", (rid,)).fetchone()
                batch.fail(
                    i,
                    RecordError("ENTITY_IS_DELETED", "entity is deleted", [])
                    if deleted
                    else RecordError("INVALID_CROSS_REFERENCE_KEY", "invalid cross reference id", []),
                )
                continue
            now = batch.current[i] = dict(zip(cols, current, strict=True))
            if name == "Order":
                status = row.get("Status", now["Status"])
                others = [k for k in row if k != "Status" and row[k] != now.get(k)]
                if now["Status"] == ACTIVATED and others and status == ACTIVATED:
                    batch.fail(
                        i,
                        _order_error(
                            "You can't edit an activated order. Set its Status to Draft first.", others
                        ),
                    )
                    continue
                if now["Status"] != ACTIVATED and status == ACTIVATED:
                    items = conn.execute(
                        'SELECT COUNT(*) FROM "OrderItem" WHERE "OrderId" = ?', (rid,)
                    ).fetchone()[0]
                    if not items:
                        batch.fail(
                            i,
                            _order_error(
                                "You can't activate an order that has no order products.", ["Status"]
                            ),
                        )
            elif name == "OrderItem":
                order = conn.execute(
                    'SELECT "Status" FROM "Order" WHERE "Id" = ?', (now["OrderId"],)
                ).fetchone()
                if order and order[0] == ACTIVATED:
                    batch.fail(
                        i,
                        _order_error("You can't change the order products of an activated order.", list(row)),
                    )
            elif name == "Knowledge__kav":
                if now.get("PublishStatus") != DRAFT:
                    batch.fail(
                        i,
                        RecordError(
                            "INVALID_OPERATION",
                            "Only draft article versions can be updated; create a draft of this article first.",
                            [],
                        ),
                    )
            elif name == "User" and row.get("IsActive") == 1 and not now.get("IsActive"):
                used, total = self._licence_use(conn)
                if used >= total:
                    batch.fail(i, RecordError("LICENSE_LIMIT_EXCEEDED", "License Limit Exceeded", []))

    def _price_entries(self, conn: sqlite3.Connection, batch: Batch) -> None:
        std = conn.execute('SELECT "Id" FROM "Pricebook2" WHERE "IsStandard" = 1').fetchone()
        std_id = std[0] if std else None
        have = {(p, b) for p, b in conn.execute('SELECT "Product2Id", "Pricebook2Id" FROM "PricebookEntry"')}
        for i, row in sorted(batch.rows.items()):
            pair = (row.get("Product2Id"), row.get("Pricebook2Id"))
            if pair in have:
                batch.fail(
                    i,
                    RecordError(
                        "DUPLICATE_VALUE", "This price definition already exists in this price book", []
                    ),
                )
                continue
            if pair[1] != std_id and (pair[0], std_id) not in have:
                batch.fail(
                    i,
                    RecordError(
                        "STANDARD_PRICE_NOT_DEFINED", "No standard price defined for this product", []
                    ),
                )
                continue
            have.add(pair)

    def _order_items(self, conn: sqlite3.Connection, batch: Batch) -> None:
        for i, row in list(batch.rows.items()):
            order = conn.execute(
                'SELECT "Status", "Pricebook2Id" FROM "Order" WHERE "Id" = ?', (row.get("OrderId"),)
            ).fetchone()
            entry = conn.execute(
                'SELECT "Pricebook2Id", "Product2Id" FROM "PricebookEntry" WHERE "Id" = ?',
                (row.get("PricebookEntryId"),),
            ).fetchone()
            if order is None or entry is None:
                continue  # the reference check has refused it
            if order[0] == ACTIVATED:
                batch.fail(
                    i, _order_error("You can't add order products to an activated order.", ["OrderId"])
                )
                continue
            if order[1] is None or entry[0] != order[1]:
                batch.fail(
                    i,
                    RecordError(
                        "FIELD_INTEGRITY_EXCEPTION",
                        "Order Products must have a Price Book Entry that belongs to the Price Book related to the parent Order",
                        ["PricebookEntryId"],
                    ),
                )
                continue
            if row.get("Product2Id") is None:
                row["Product2Id"] = entry[1]
            elif row["Product2Id"] != entry[1]:
                batch.fail(
                    i,
                    RecordError(
                        "FIELD_INTEGRITY_EXCEPTION",
                        "The product of an order product must be the product of its price book entry.",
                        ["Product2Id"],
                    ),
                )

    def _licence_use(self, conn: sqlite3.Connection) -> tuple[int, int]:
        used = conn.execute('SELECT COUNT(*) FROM "User" WHERE "IsActive" = 1').fetchone()[0]
        total = conn.execute(
            'SELECT "TotalLicenses" FROM "UserLicense" WHERE "Name" = \'Salesforce\''
        ).fetchone()[0]
        return int(used), int(total)

    def _licences(self, conn: sqlite3.Connection, batch: Batch) -> None:
        used, total = self._licence_use(conn)
        for i, row in sorted(batch.rows.items()):
            if row.get("IsActive") != 1:
                continue
            if used >= total:
                batch.fail(i, RecordError("LICENSE_LIMIT_EXCEEDED", "License Limit Exceeded", []))
                continue
            used += 1

    def _count_licences(self, conn: sqlite3.Connection) -> None:
        used, _ = self._licence_use(conn)
        conn.execute('UPDATE "UserLicense" SET "UsedLicenses" = ? WHERE "Name" = \'Salesforce\'', (used,))

    def _duplicate_rule(self, conn: sqlite3.Connection, batch: Batch, allow_save: bool) -> None:
        rule = self.state.edition.duplicate_rule
        if rule == "off" or (rule == "alert" and allow_save):
            return
        seen: set[str] = set()
        for i, row in sorted(batch.rows.items()):
            email = (row.get("Email") or "").lower()
            if not email:
                continue
            hit = conn.execute('SELECT 1 FROM "Contact" WHERE "Email" = ? LIMIT 1', (email,)).fetchone()
            if hit or email in seen:
                batch.fail(i, RecordError("DUPLICATES_DETECTED", "Use one of these records?", []))
                continue
            seen.add(email)

    def _check_locks(self, batch: Batch, locked: Callable[[str], bool]) -> None:
        for i, row in list(batch.rows.items()):
            for f in batch.spec.lookups:
                v = row.get(f.name)
                if "User" in f.reference_to:
                    continue  # owners: not a parent row a child's DML locks
                if v is not None and locked(v):
                    batch.fail(
                        i,
                        RecordError(
                            "UNABLE_TO_LOCK_ROW",
                            "unable to obtain exclusive access to this record or 1 records",
                            [],
                        ),
                    )
                    break

    def _check_storage(self, conn: sqlite3.Connection, batch: Batch) -> None:
        limit = int(self.state.edition.data_storage_mb * 1024 * 1024)
        used = self.state.storage_used()
        for i, row in sorted(batch.rows.items()):
            size = record_bytes(batch.spec.name, row, self.state.edition.person_accounts)
            if size and used + size > limit:
                batch.fail(i, RecordError("STORAGE_LIMIT_EXCEEDED", "storage limit exceeded", []))
                continue
            used += size
            row["__bytes"] = size

    def _check_delete(self, conn: sqlite3.Connection, spec: ObjectSpec, rid: str) -> None:
        if spec.name in READ_ONLY_OBJECTS:
            raise Rejected("INVALID_TYPE_FOR_OPERATION", f"entity type cannot be deleted: {spec.label}")
        if rid == self.state.api_user or spec.name == "User":
            raise Rejected("DELETE_FAILED", "Users cannot be deleted; deactivate them instead.")
        if spec.name == "Pricebook2":
            std = conn.execute('SELECT "IsStandard" FROM "Pricebook2" WHERE "Id" = ?', (rid,)).fetchone()
            if std and std[0]:
                raise Rejected("DELETE_FAILED", "The standard price book cannot be deleted.")
        if spec.name == "Order":
            st = conn.execute('SELECT "Status" FROM "Order" WHERE "Id" = ?', (rid,)).fetchone()
            if st and st[0] == ACTIVATED:
                raise Rejected(
                    "FIELD_INTEGRITY_EXCEPTION",
                    "You can't delete an activated order. Set its Status to Draft first.",
                )
        if spec.name == "OrderItem":
            st = conn.execute(
                'SELECT o."Status" FROM "OrderItem" i JOIN "Order" o ON o."Id" = i."OrderId" WHERE i."Id" = ?',
                (rid,),
            ).fetchone()
            if st and st[0] == ACTIVATED:
                raise Rejected(
                    "FIELD_INTEGRITY_EXCEPTION", "You can't delete the order products of an activated order."
                )
        for child in self.model:
            for f in child.lookups:
                if spec.name in f.reference_to and not f.nillable:
                    hit = conn.execute(
                        f"SELECT 1 FROM {quote(child.name)} WHERE {quote(f.name)} = ? LIMIT 1", (rid,)
                    ).fetchone()
                    if hit:
                        raise Rejected(
                            "DELETE_FAILED",
                            f"Your attempt to delete {spec.label} {rid} could not be completed because it is "
                            f"associated with the following {child.label_plural}. Delete them first.",
                        )

    def _clear_lookups(self, conn: sqlite3.Connection, spec: ObjectSpec, rid: str) -> None:
        """Optional lookups to a deleted record are cleared, as Salesforce clears them."""
        for child in self.model:
            for f in child.lookups:
                if spec.name in f.reference_to and f.nillable:
                    conn.execute(
                        f"UPDATE {quote(child.name)} SET {quote(f.name)} = NULL WHERE {quote(f.name)} = ?",
                        (rid,),
                    )

    # -- writing -----------------------------------------------------------------------------------------------

    def _write_inserts(self, conn: sqlite3.Connection, batch: Batch) -> None:
        spec = batch.spec
        order = sorted(batch.rows)
        if not order:
            return
        ids = self.state.next_ids(conn, spec.key_prefix, len(order))
        stamp = now_wire()
        names = {f.name for f in spec.fields}
        numbers: list[str] = []
        auto = next((f.name for f in spec.fields if f.auto_number), None)
        if auto:
            numbers = self.state.next_numbers(conn, f"{spec.name}.{auto}", len(order))
        rows = []
        sizes = []
        for n, i in enumerate(order):
            row = batch.rows[i]
            sizes.append((ids[n], row.pop("__bytes", 0)))
            row["Id"] = ids[n]
            row["CreatedDate"] = row.get("CreatedDate") or stamp
            row["CreatedById"] = row.get("CreatedById") or self.state.api_user
            row["LastModifiedDate"] = row.get("LastModifiedDate") or row["CreatedDate"]
            row["LastModifiedById"] = row.get("LastModifiedById") or row["CreatedById"]
            row["SystemModstamp"] = stamp
            row["IsDeleted"] = 0
            if auto:
                row[auto] = numbers[n]
            _derive(spec, row, stamp)
            rows.append({k: v for k, v in row.items() if k in names})
            batch.results[i].id = ids[n]
            batch.results[i].created = True
        insert_rows(conn, spec, rows)
        conn.executemany(
            "INSERT INTO orgseed_storage (id, sobject, bytes) VALUES (?, ?, ?)",
            [(rid, spec.name, size) for rid, size in sizes if size],
        )
        if spec.name == "User":
            self._count_licences(conn)

    def _write_updates(self, conn: sqlite3.Connection, batch: Batch) -> None:
        spec = batch.spec
        index = fields_of(spec)
        stamp = now_wire()
        changes = []
        for i, row in sorted(batch.rows.items()):
            row.pop("__bytes", None)
            rid = batch.results[i].id
            assert rid is not None
            current = batch.current[i]
            merged = {**current, **row}
            _derive(spec, merged, stamp, before=current)
            row.update({k: merged[k] for k in merged if merged[k] != current.get(k)})
            row["LastModifiedDate"] = stamp
            row["LastModifiedById"] = self.state.api_user
            row["SystemModstamp"] = stamp
            changes.append((rid, {k: v for k, v in row.items() if k.lower() in index}))
        update_rows(conn, spec, changes)
        if spec.name == "User":
            self._count_licences(conn)


def _derive(spec: ObjectSpec, row: dict[str, Any], stamp: str, before: dict[str, Any] | None = None) -> None:
    """The computed fields of a written record (a person's Name, Case.IsClosed and ClosedDate), by the rules
    a served bundle uses (orgs/local/computed.py)."""
    index = fields_of(spec)
    if "name" in index and index["name"].computed and "lastname" in index:
        row["Name"] = person_name(row.get("FirstName"), row.get("LastName"))
    if spec.name == "Case" and "Status" in row:
        closed = status_closed(row.get("Status"))
        row["IsClosed"] = 1 if closed else 0
        if closed and not row.get("ClosedDate"):
            row["ClosedDate"] = stamp
        elif not closed and before is not None and status_closed(before.get("Status")):
            row["ClosedDate"] = None


def _order_error(message: str, fields: list[str]) -> RecordError:
    return RecordError("FIELD_INTEGRITY_EXCEPTION", message, fields)


def _readonly(spec: ObjectSpec, name: str) -> Rejected:
    f = fields_of(spec).get(name.lower())
    canonical = f.name if f is not None else name
    return Rejected(
        "INVALID_FIELD_FOR_INSERT_UPDATE",
        f"Unable to create/update fields: {canonical}. Please check the security settings of this field and "
        "verify that it is read/write for your profile or permission set.",
        [canonical],
    )


def _record_id(rec: RecordIn) -> str | None:
    for k, v in rec.items():
        if k.lower() == "id" and v:
            return str(v)
    return None


def _get(rec: RecordIn, name: str) -> Any:
    for k, v in rec.items():
        if k.lower() == name.lower():
            return v
    return None
