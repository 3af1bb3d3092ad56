"""The local org: a bundle's store answering SOQL, SOSL, describe and record reads, in REST shapes.

`LocalOrg` knows nothing about HTTP; `api.py` maps requests onto it (`bulk.py` reuses `LocalOrg.plan` and
`LocalOrg.store` for Bulk API 2.0 query jobs). Results are built in the exact JSON shapes
Salesforce returns: `attributes {type, url}`, nested parent records (or null), nested child query
results (or null), `AggregateResult` rows with `expr0...` keys, and query locators for paging.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
import string
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from itertools import chain, repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

import orjson

from orgs.bundle import Bundle
from orgs.local.errors import NotFound, OrgApiError
from orgs.local.limits import DEFAULT_LIMITS, ServeLimits
from orgs.local.records import Builders, ChildRows
from orgs.local.soql import Plan, compile_soql
from orgs.local.soql.filters import ID_RE, to18
from orgs.local.soql.plan import ChildOut, FieldOut, RecordShape
from orgs.local.soql.scope import NO_SUCH_COLUMN, quote
from orgs.local.soql.shapes import ShapePlan, shape_of
from orgs.local.sosl import SearchPlan, compile_sosl, register_matcher
from orgs.local.store import CACHE_KIB, MMAP_BYTES, Store
from schemas.model import ObjectSpec, OrgModel, load_model

API_VERSION = "59.0"
PAGE_SIZE = 2000
MIN_BATCH = 200
PLAN_CACHE = 512
PLAN_CACHE_MAX_TEXT = 16_384  # longer statements are compiled every time (a REST URI cannot be longer)
_ALPHABET = string.ascii_letters + string.digits
_LOCATOR_OFFSET = re.compile(r"[0-9]{1,10}")
Row = tuple[Any, ...]

# SQLite's refusals of statements too large for it: the query is too complicated (Salesforce's code for a
# statement it cannot run as written)
_TOO_COMPLICATED = (
    "expression tree is too large",
    "too many sql variables",
    "parser stack overflow",
    "too many terms in compound select",
    "like or glob pattern too complex",
    "string or blob too big",
    "too many columns",
    "too many fts5 columns",
)


_NATIVE_TYPES = frozenset({str, int, type(None)})


def _sqlite_native(rows: list[Row]) -> bool:
    """Whether SQL rows hold only str, int and None (the set of their values' types, taken in C): records
    built from them are JSON-native, since SQLite's integers are 64-bit. A float (possibly infinite) or a
    blob makes it False, and the caller checks the records themselves."""
    return set(map(type, chain.from_iterable(rows))) <= _NATIVE_TYPES


def _getter(cols: list[int]) -> Callable[[Row], tuple[Any, ...]]:
    """The values at `cols` of a row, as a tuple (itemgetter gives a bare value for one column)."""
    if len(cols) == 1:
        col = cols[0]
        return lambda r: (r[col],)
    return itemgetter(*cols)


def _plain_records(keys: list[str], cols: list[int], rows: list[Row]) -> list[dict[str, Any]]:
    """`{keys[i]: row[cols[i]]}` for every row, each step in C (no Python frame per row)."""
    return list(map(dict, map(zip, repeat(tuple(keys)), map(_getter(cols), rows))))


def _estimated_bytes(rows: list[Row]) -> int:
    """About how much memory `rows` hold (measured on up to 200 rows spread over them)."""
    if not rows:
        return 0
    step = max(1, len(rows) // 200)
    sample = rows[::step]
    per_row = sum(
        64 + 8 * len(r) + sum(49 + len(v) if isinstance(v, str) else 24 for v in r) for r in sample
    ) / len(sample)
    return int(per_row * len(rows))


@dataclass
class Cursor:
    plan: Plan
    rows: list[Row]
    batch: int
    endpoint: str  # query | queryAll
    touched: float = field(default_factory=time.monotonic)
    size: int = 0  # estimated bytes held


def _with_records(head: dict[str, Any], records: str) -> bytes:
    """`head` (a query result without its records) as JSON, then `"records"`: the records' JSON text."""
    return orjson.dumps(head)[:-1] + b',"records":[' + records.encode() + b"]}"


class QueryTimeout(OrgApiError):
    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"Your query request was running for too long (stopped after {seconds:g} s). Select fewer "
            "records (a narrower WHERE, a LIMIT) or use Bulk API 2.0.",
            error_code="QUERY_TIMEOUT",
        )


def default_today(bundle: Bundle, manifest: dict[str, Any] | None = None) -> tuple[date, str]:
    """The day the org's "today" is, and where it came from.

    The day after the bundle's time span ends (the profile's `[time] end`, as the manifest recorded it at
    build time, else read from the profile), so relative dates (TODAY, LAST_N_DAYS:n, ...) give the same
    answers on every run. Falls back to the day after the latest date in the data when neither says.
    """
    manifest = manifest or bundle.read_manifest()
    span = manifest.get("time") or {}
    if isinstance(span, dict) and span.get("end"):
        return date.fromisoformat(str(span["end"])[:10]) + timedelta(days=1), "manifest time.end"
    profile = manifest.get("profile") or {}
    end = profile.get("end")
    if isinstance(end, str):  # the span the build used, as the manifest recorded it (no profile to read)
        try:
            return date.fromisoformat(end[:10]) + timedelta(days=1), f"profile {profile.get('name')} time.end"
        except ValueError:
            pass
    for ref in (profile.get("path"), profile.get("name")):
        if not ref:
            continue
        try:
            from schemas.profile import load_profile

            loaded = load_profile(str(ref))
        except Exception:  # the profile moved or changed; try the next reference
            continue
        return loaded.span.end + timedelta(days=1), f"profile {loaded.name} time.end"
    return _latest_day(bundle) + timedelta(days=1), "latest date in the data"


def _latest_day(bundle: Bundle) -> date:
    latest = date(1970, 1, 1)
    conn = sqlite3.connect(f"file:{bundle.root / 'org.sqlite'}?mode=ro", uri=True)
    try:
        for spec in load_model():
            for f in spec.fields:
                if f.type in ("date", "datetime"):
                    row = conn.execute(
                        f"SELECT MAX(substr({quote(f.name)},1,10)) FROM {quote(spec.name)}"
                    ).fetchone()
                    if row and row[0]:
                        latest = max(latest, date.fromisoformat(row[0]))
    finally:
        conn.close()
    return latest


class LocalOrg:
    """A bundle served as an org. Thread-safe; SQLite connections are per thread and read-only."""

    def __init__(
        self,
        root: Path | str,
        *,
        today: date | None = None,
        model: OrgModel | None = None,
        rebuild: bool = False,
        limits: ServeLimits = DEFAULT_LIMITS,
        mmap_bytes: int = MMAP_BYTES,
        cache_kib: int = CACHE_KIB,
    ) -> None:
        self.serve_limits = limits
        self.bundle = Bundle(root)
        self.manifest = self.bundle.read_manifest()
        self.store = Store.open(
            self.bundle.root, model, rebuild=rebuild, mmap_bytes=mmap_bytes, cache_kib=cache_kib
        )
        self.model = self.store.model  # the org model with the fields the org computes (computed.py)
        if today is None:
            self.today, self.today_source = default_today(self.bundle, self.manifest)
        else:
            self.today, self.today_source = today, "given"
        self.org_id = "00D" + self.manifest["data_sha256"][:12].upper() + "AAA"
        # plans by query text, SOSL plans, and shape plans (`soql/shapes.py`; None: a shape not bound so)
        self._plans: OrderedDict[str, Plan | SearchPlan | ShapePlan | None] = OrderedDict()
        self._cursors: OrderedDict[str, Cursor] = OrderedDict()
        self._lock = threading.Lock()
        self.builders = Builders()

    # -- SOQL ---------------------------------------------------------------------------------------------

    def plan(self, soql: str) -> Plan:
        with self._lock:
            found = self._plans.get(soql)
            if isinstance(found, Plan):
                self._plans.move_to_end(soql)
                return found
        plan = self._shaped_plan(soql)
        if len(soql) <= PLAN_CACHE_MAX_TEXT:
            self._keep_plan(soql, plan)
        return plan

    def _shaped_plan(self, soql: str) -> Plan:
        """The plan of a query not cached by its text: its shape's plan with its literals bound, when the
        shape was met before and binds (`soql/shapes.py`), else compiled."""
        shape = shape_of(soql)
        if shape is None:
            return compile_soql(soql, self.model, self.today)
        key = "\x00shape\x00" + shape.key
        with self._lock:
            known = key in self._plans
            found = self._plans.get(key)
            if known:
                self._plans.move_to_end(key)
        if isinstance(found, ShapePlan):
            return found.bind(shape.lifted)
        plan = compile_soql(soql, self.model, self.today)
        if not known and shape.distinct:
            self._keep_plan(key, ShapePlan.learn(soql, shape, plan, self.model, self.today))
        return plan

    def _keep_plan(self, key: str, plan: Plan | SearchPlan | ShapePlan | None) -> None:
        with self._lock:
            self._plans[key] = plan
            if len(self._plans) > PLAN_CACHE:
                self._plans.popitem(last=False)

    def run_soql(self, soql: str) -> tuple[Plan, list[Row]]:
        """Compile and run a query: its plan and all its SQL rows (for REST paging, Bulk, ground truth)."""
        plan = self.plan(soql)
        return plan, self.execute(plan.sql, plan.params)

    def execute(
        self, sql: str, params: dict[str, Any], limit: int | None = None, search: bool = False
    ) -> list[Row]:
        """Run compiled SQL on this thread's connection: all its rows (or the first `limit`), stopped after
        the query time-out (QUERY_TIMEOUT); statements SQLite cannot run as written are
        QUERY_TOO_COMPLICATED."""
        conn = self.store.connection()
        try:
            with self.store.deadline(self.serve_limits.query_timeout):
                cursor = conn.execute(sql, params)
                return cursor.fetchall() if limit is None else cursor.fetchmany(limit)
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if text == "interrupted":
                raise QueryTimeout(self.serve_limits.query_timeout) from exc
            if any(marker in text for marker in _TOO_COMPLICATED):
                raise OrgApiError(
                    "Query is either selecting too many fields or the filter conditions are very "
                    f"complicated ({exc}). Split it into simpler queries.",
                    error_code="QUERY_TOO_COMPLICATED",
                ) from exc
            if search and text.startswith("fts5:"):
                raise OrgApiError(
                    f"The search query cannot be run ({exc}); simplify it.", error_code="MALFORMED_SEARCH"
                ) from exc
            raise

    def query(
        self,
        soql: str,
        version: str = API_VERSION,
        *,
        include_deleted: bool = False,
        batch: int | None = None,
    ) -> dict[str, Any]:
        """The first page of a query, as `/query` answers (`/queryAll`: the store has no deleted rows)."""
        if not soql or not soql.strip():
            raise OrgApiError(
                "A query string is required: pass it as the q parameter.", error_code="MALFORMED_QUERY"
            )
        plan, rows = self.run_soql(soql)
        if plan.kind == "count":
            return {"totalSize": int(rows[0][0]), "done": True, "records": []}
        if plan.kind == "aggregate":
            records = [self.aggregate_record(plan, r) for r in rows]
            return {"totalSize": len(records), "done": True, "records": records}
        return self.page(self._cursor(plan, rows, include_deleted, batch), 0, version)

    def query_json(
        self,
        soql: str,
        version: str = API_VERSION,
        *,
        include_deleted: bool = False,
        batch: int | None = None,
    ) -> bytes:
        """`query`'s answer as the JSON a client receives, byte for byte `orjson.dumps(query(...))`: records
        of plain shapes are written straight from the SQL rows (records.JsonRecords), others as dicts."""
        if not soql or not soql.strip():
            return orjson.dumps(self.query(soql, version, include_deleted=include_deleted, batch=batch))
        plan, rows = self.run_soql(soql)
        if plan.kind == "count":
            return orjson.dumps({"totalSize": int(rows[0][0]), "done": True, "records": []})
        if plan.kind == "aggregate":
            writer = self.builders.aggregate(plan.columns)
            records_text = writer.encode(rows) if writer is not None else None
            if records_text is None:
                records = [self.aggregate_record(plan, r) for r in rows]
                return orjson.dumps({"totalSize": len(records), "done": True, "records": records})
            return _with_records({"totalSize": len(rows), "done": True}, records_text)
        return self.page_json(self._cursor(plan, rows, include_deleted, batch), 0, version)

    @staticmethod
    def _cursor(plan: Plan, rows: list[Row], include_deleted: bool, batch: int | None) -> Cursor:
        size = PAGE_SIZE if batch is None else max(MIN_BATCH, min(PAGE_SIZE, batch))
        return Cursor(plan, rows, size, "queryAll" if include_deleted else "query")

    def bare_records(self, soql: str, version: str = API_VERSION) -> tuple[list[dict[str, Any]], bool]:
        """Every record of a query (all pages, as `query` then `query_more` until done give them) less the
        top-level `attributes` (nested parent records keep theirs), for readers in this process that drop
        them anyway; and whether the records are made of JSON's own types only (str, int in 64 bits,
        finite float, bool, None, lists and dicts), as `orjson` would give them back unchanged.

        No cursor is kept and no page is cut: the rows are shaped once. A shape of plain fields (the
        common case) is built as `dict(zip(keys, row))`; any other goes through `shape` and loses its
        `attributes` after."""
        if not soql or not soql.strip():
            raise OrgApiError(
                "A query string is required: pass it as the q parameter.", error_code="MALFORMED_QUERY"
            )
        plan, rows = self.run_soql(soql)
        if plan.kind == "count":
            return [], True
        if plan.kind == "aggregate":
            if any(c.boolean for c in plan.columns):
                records = [self.aggregate_record(plan, r) for r in rows]
                for rec in records:
                    del rec["attributes"]
            else:  # aggregate_record's keys and values, less `attributes`
                records = _plain_records([c.key for c in plan.columns], [c.col for c in plan.columns], rows)
            return records, _sqlite_native(rows)
        assert plan.shape is not None
        items = plan.shape.items
        if all(type(it) is FieldOut for it in items):
            records = _plain_records([it.key for it in items], [it.col for it in items], rows)  # type: ignore[union-attr]
            booleans = [(it.key, it.col) for it in items if it.boolean]  # type: ignore[union-attr]
            for key, col in booleans:
                for rec, r in zip(records, rows, strict=True):
                    v = r[col]
                    rec[key] = None if v is None else v != 0
            return records, _sqlite_native(rows)
        records = self.shape(rows, plan.shape, version)
        for rec in records:
            del rec["attributes"]
        # a subquery's children come from other rows: the caller checks the records themselves
        return records, not any(isinstance(it, ChildOut) for it in items) and _sqlite_native(rows)

    def query_more(self, locator: str, version: str = API_VERSION) -> dict[str, Any]:
        """A following page: `locator` is `<cursor id>-<offset>` from `nextRecordsUrl`."""
        cursor, offset, cursor_id = self._located(locator)
        return self.page(cursor, offset, version, cursor_id)

    def query_more_json(self, locator: str, version: str = API_VERSION) -> bytes:
        """`query_more`'s answer as JSON bytes (as `query_json`)."""
        cursor, offset, cursor_id = self._located(locator)
        return self.page_json(cursor, offset, version, cursor_id)

    def page_key(self, locator: str) -> str | None:
        """What identifies the cost of `locator`'s page (its query's SQL and batch size; None when the
        cursor is not held): api.py runs pages seen to be quick on the event loop."""
        with self._lock:
            cursor = self._cursors.get(locator.rpartition("-")[0])
        return None if cursor is None else f"more:{cursor.batch}:{cursor.plan.sql}"

    def _located(self, locator: str) -> tuple[Cursor, int, str]:
        """The cursor and offset of `locator` (`<cursor id>-<offset>`), or INVALID_QUERY_LOCATOR."""
        cursor_id, _, offset_text = locator.rpartition("-")
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            cursor = self._cursors.get(cursor_id)
            if cursor is not None:
                cursor.touched = now
                self._cursors.move_to_end(cursor_id)
        if (
            cursor is None
            or not _LOCATOR_OFFSET.fullmatch(offset_text)
            or int(offset_text) >= len(cursor.rows)
        ):
            # Salesforce's words, whether the cursor never was, is finished, or was forgotten (unused for
            # limits.cursor_ttl, or the oldest beyond limits.max_cursors / max_cursor_bytes)
            raise OrgApiError("invalid query locator", error_code="INVALID_QUERY_LOCATOR")
        return cursor, int(offset_text), cursor_id

    def page(self, cursor: Cursor, offset: int, version: str, cursor_id: str | None = None) -> dict[str, Any]:
        chunk = cursor.rows[offset : offset + cursor.batch]
        assert cursor.plan.shape is not None
        records = self.shape(chunk, cursor.plan.shape, version)
        result = self._page_head(cursor, offset, version, cursor_id)
        result["records"] = records
        return result

    def page_json(self, cursor: Cursor, offset: int, version: str, cursor_id: str | None = None) -> bytes:
        """`page` as JSON bytes, its records written straight from the rows when their shape allows."""
        chunk = cursor.rows[offset : offset + cursor.batch]
        shape = cursor.plan.shape
        assert shape is not None
        records_text = self.shape_json(chunk, shape, version)
        if records_text is None:
            records = self.shape(chunk, shape, version)
            result = self._page_head(cursor, offset, version, cursor_id)
            result["records"] = records
            return orjson.dumps(result)
        return _with_records(self._page_head(cursor, offset, version, cursor_id), records_text)

    def _page_head(self, cursor: Cursor, offset: int, version: str, cursor_id: str | None) -> dict[str, Any]:
        """A page's items before its records (keeping the cursor while pages follow, dropping it after
        the last)."""
        rows = cursor.rows
        result: dict[str, Any] = {"totalSize": len(rows), "done": True}
        nxt = offset + cursor.batch
        if nxt < len(rows):
            if cursor_id is None:
                cursor_id = "01g" + "".join(secrets.choice(_ALPHABET) for _ in range(15))
                cursor.size = _estimated_bytes(rows)
                self._keep(cursor_id, cursor)
            result["done"] = False
            result["nextRecordsUrl"] = f"/services/data/v{version}/{cursor.endpoint}/{cursor_id}-{nxt}"
        elif cursor_id is not None:
            with self._lock:
                self._cursors.pop(cursor_id, None)
        return result

    def _keep(self, cursor_id: str, cursor: Cursor) -> None:
        """Hold a cursor; forget the stale ones, then the oldest beyond the count and byte budgets (the new
        one is kept even alone over the byte budget: its next page is asked for right away)."""
        limits = self.serve_limits
        with self._lock:
            self._expire(time.monotonic())
            self._cursors[cursor_id] = cursor
            held = sum(c.size for c in self._cursors.values())
            while len(self._cursors) > 1 and (
                len(self._cursors) > limits.max_cursors or held > limits.max_cursor_bytes
            ):
                _, old = self._cursors.popitem(last=False)
                held -= old.size

    def _expire(self, now: float) -> None:
        stale = [k for k, c in self._cursors.items() if now - c.touched > self.serve_limits.cursor_ttl]
        for k in stale:
            del self._cursors[k]

    def open_cursors(self) -> tuple[int, int]:
        """How many query cursors are held, and their estimated bytes."""
        with self._lock:
            return len(self._cursors), sum(c.size for c in self._cursors.values())

    # -- SOSL ---------------------------------------------------------------------------------------------

    def search_plan(self, sosl: str) -> SearchPlan:
        key = "\x00sosl\x00" + sosl
        with self._lock:
            found = self._plans.get(key)
        if isinstance(found, SearchPlan):
            return found
        plan = compile_sosl(sosl, self.model, self.today)
        if len(sosl) <= PLAN_CACHE_MAX_TEXT:
            self._keep_plan(key, plan)
        return plan

    def search(self, sosl: str, version: str = API_VERSION) -> dict[str, Any]:
        """A SOSL search, as `/search` answers: `{"searchRecords": [...]}` (per object, in order)."""
        if not sosl or not sosl.strip():
            raise OrgApiError(
                "A search string is required: pass it as the q parameter.", error_code="MALFORMED_SEARCH"
            )
        plan = self.search_plan(sosl)
        conn = self.store.connection()
        out: list[dict[str, Any]] = []
        left = plan.limit
        for obj in plan.objects:
            if left <= 0:
                break
            if obj.matcher is not None:
                register_matcher(conn, obj.matcher)
            rows = self.execute(obj.sql, obj.params, limit=left, search=True)
            left -= len(rows)
            out.extend(self.shape(rows, obj.shape, version))
        return {"searchRecords": out}

    # -- shaping ------------------------------------------------------------------------------------------

    @staticmethod
    def aggregate_record(plan: Plan, row: tuple[Any, ...]) -> dict[str, Any]:
        rec: dict[str, Any] = {"attributes": {"type": "AggregateResult"}}
        for c in plan.columns:
            v = row[c.col]
            rec[c.key] = bool(v) if c.boolean and v is not None else v
        return rec

    def shape_json(self, rows: list[Row], shape: RecordShape, version: str) -> str | None:
        """The rows' records as JSON text, comma-separated (exactly orjson's of `shape(...)`), or None when
        the shape (subqueries, parents, booleans) or a value on this page is one only `shape` writes."""
        if any(isinstance(it, ChildOut) for it in shape.items):
            return None
        writer = self.builders.get(shape, f"/services/data/v{version}/sobjects/", {}).json
        return None if writer is None else writer.encode(rows)

    def shape(self, rows: list[tuple[Any, ...]], shape: RecordShape, version: str) -> list[dict[str, Any]]:
        """SQL rows → records (running the page's parent-to-child subqueries first)."""
        base = f"/services/data/v{version}/sobjects/"
        children: dict[str, ChildRows] = {}
        if rows:
            ids: str | None = None
            for it in shape.items:
                if not isinstance(it, ChildOut):
                    continue
                ids = ids or json.dumps([r[shape.id_col] for r in rows])
                groups: dict[str, list[tuple[Any, ...]]] = {}
                params = {**it.plan.params, "parent_ids": ids}
                for crow in self.execute(it.plan.sql, params):
                    groups.setdefault(str(crow[it.plan.fk_col]).lower(), []).append(crow)
                children[it.key] = ChildRows(groups, self.builders.get(it.plan.shape, base, {}))
        return self.builders.get(shape, base, children).many(rows)

    # -- records ------------------------------------------------------------------------------------------

    def sobject(self, name: str) -> ObjectSpec:
        if not self.model.has(name):
            raise NotFound(
                f"The requested resource does not exist: sObject type '{name}' is not in this org.",
            )
        return self.model.get(name)

    def record(self, sobject: str, record_id: str, fields: list[str] | None, version: str) -> dict[str, Any]:
        """GET sobjects/<Obj>/<id>[?fields=a,b]."""
        spec = self.sobject(sobject)
        if not ID_RE.match(record_id):
            raise NotFound(f"Provided external ID field does not exist or is not accessible: {record_id}")
        wanted = self._fields(spec, fields)
        cols = ", ".join(quote(f) for f in wanted)
        row = (
            self.store.connection()
            .execute(f'SELECT {cols} FROM {quote(spec.name)} WHERE "Id" = ?', (to18(record_id),))
            .fetchone()
        )
        if row is None:
            raise NotFound()
        return self._record(spec, wanted, row, version)

    def record_by_external_id(
        self, sobject: str, field_name: str, value: str, version: str
    ) -> dict[str, Any]:
        """GET sobjects/<Obj>/<ExternalIdField>/<value>."""
        spec = self.sobject(sobject)
        if not spec.has_field(field_name) or not (
            spec.field(field_name).external_id or spec.field(field_name).name == "Id"
        ):
            raise NotFound(f"Provided external ID field does not exist or is not accessible: {field_name}")
        f = spec.field(field_name)
        if f.name == "Id":
            return self.record(sobject, value, None, version)
        wanted = self._fields(spec, None)
        cols = ", ".join(quote(n) for n in wanted)
        rows = (
            self.store.connection()
            .execute(f"SELECT {cols} FROM {quote(spec.name)} WHERE {quote(f.name)} = ?", (value,))
            .fetchall()
        )
        if not rows:
            raise NotFound()
        if len(rows) > 1:
            raise OrgApiError(
                f"More than one record has {f.name} = {value}.", error_code="MULTIPLE_CHOICES", status=300
            )
        return self._record(spec, wanted, rows[0], version)

    def _fields(self, spec: ObjectSpec, fields: list[str] | None) -> list[str]:
        if not fields:
            return spec.field_names
        out = []
        for name in fields:
            if not spec.has_field(name):
                raise OrgApiError(
                    NO_SUCH_COLUMN.format(field=name, sobject=spec.name), error_code="INVALID_FIELD"
                )
            canonical = spec.field(name).name
            if canonical not in out:
                out.append(canonical)
        return out

    @staticmethod
    def _record(spec: ObjectSpec, names: list[str], row: tuple[Any, ...], version: str) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "attributes": {
                "type": spec.name,
                "url": f"/services/data/v{version}/sobjects/{spec.name}/{row[0]}",
            }
        }
        for name, value in zip(names, row, strict=True):
            if spec.field(name).type == "boolean" and value is not None:
                value = bool(value)
            rec[name] = value
        if "Id" in names:
            rec["attributes"]["url"] = f"/services/data/v{version}/sobjects/{spec.name}/{rec['Id']}"
        return rec

    def record_counts(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        conn = self.store.connection()
        specs = [self.sobject(n) for n in names] if names else list(self.model)
        return [
            {"count": conn.execute(f"SELECT COUNT(*) FROM {quote(s.name)}").fetchone()[0], "name": s.name}
            for s in specs
        ]

    def close(self) -> None:
        self.store.close()
