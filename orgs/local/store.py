"""The embedded org's store: `org.sqlite` in the bundle root, built from `data/*.csv`.

One table per object, named and typed from the org model: text columns compare case-insensitively
(`COLLATE NOCASE`, as SOQL does), booleans are 0/1, numbers are INTEGER/REAL, dates are `YYYY-MM-DD` and
datetimes keep Salesforce's wire form (`2024-01-05T10:00:00.000+0000`, UTC, fixed width, so text order is
time order). Ids, lookups and date columns are indexed, except the system fields that hold one value in
every record of their object (`index_statements`). Each object with text fields also gets an FTS5 table
`fts_<Object>` (rowid = the record's rowid) for SOSL.

The build streams: each object's CSV (or parts) is read by pandas' C reader and inserted in batches of
BUILD_BATCH_ROWS records, so its memory is bounded by a batch, not by the object (scale 100: 36 s and
214 MB peak, against 88 s and 892 MB reading whole objects; benchmarks/results/task_stages.txt).

The store is rebuilt only when the bundle changes: `orgseed_meta` records the manifest's `data_sha256`,
a digest of the org model, the store format and each CSV's size and modification time.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from orgs.bundle import Bundle, BundleError
from orgs.local.computed import (
    DATE_TYPES,
    OrgFacts,
    api_user_fields,
    compute,
    constant_fields,
    date_columns,
    local_model,
    stored_spec,
    whole_object_fields,
    wire_datetime,
)
from orgs.local.text import FTS_TOKENIZER, search_texts
from schemas.model import FieldSpec, ObjectSpec, OrgModel, load_model

STORE_FILE = "org.sqlite"
# 2: computed fields (orgs/local/computed.py); 3: system fields; 4: COVERING_INDEXES; 5: contentless FTS tables;
# 6: no indexes on the system fields that hold one value in every record
STORE_VERSION = "6"
SEARCHABLE_TYPES = frozenset({"string", "textarea", "email", "phone", "url"})
INDEXED_TYPES = frozenset({"reference", "date", "datetime"})
# Multi-column indexes chosen from the query shapes of CRMArena's tools (reference crmarena.md §9), beyond
# the one-column ones above. The window tools (get_agent_handled_cases_by_period,
# get_non_transferred_case_ids, get_agent_transferred_cases_by_period) filter CaseHistory__c on
# Field__c = 'Owner Assignment' and a CreatedDate range and read NewValue__c / OldValue__c / CaseId__c / Id:
# with this index SQLite answers them from the index alone (EXPLAIN QUERY PLAN: SEARCH ... USING COVERING
# INDEX (Field__c=? AND CreatedDate>? AND CreatedDate<?)) instead of seeking each row of the whole date range
# in the table, about a third of their SQL time at scale 100 (8.8 → 6.2 ms for a quarter's 8,000 rows).
COVERING_INDEXES: dict[str, list[tuple[str, ...]]] = {
    "CaseHistory__c": [("Field__c", "CreatedDate", "NewValue__c", "OldValue__c", "CaseId__c", "Id")],
}
# virtual machine steps between two looks at a statement's deadline (about a millisecond of work)
PROGRESS_STEPS = 100_000

SQL_TYPES = {
    "boolean": "INTEGER",
    "int": "INTEGER",
    "double": "REAL",
    "currency": "REAL",
    "date": "TEXT",
    "datetime": "TEXT",
}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def searchable_fields(spec: ObjectSpec) -> list[FieldSpec]:
    return [f for f in spec.fields if f.type in SEARCHABLE_TYPES]


def fts_table(sobject: str) -> str:
    return quote(f"fts_{sobject}")


def column_sql(f: FieldSpec) -> str:
    sql_type = SQL_TYPES.get(f.type)
    if sql_type is None:  # text-like: id, reference, string, picklist, email, ...
        sql = f"{quote(f.name)} TEXT COLLATE NOCASE"
    else:
        sql = f"{quote(f.name)} {sql_type}"
    if f.name == "Id":
        sql += " PRIMARY KEY"
    return sql


def model_digest(model: OrgModel) -> str:
    doc = json.dumps([o.json_schema for o in model], sort_keys=True)
    return hashlib.sha256(doc.encode()).hexdigest()


def _converted(f: FieldSpec, values: list[Any]) -> list[Any]:
    """A column's CSV strings (None for empty) as the store holds them: booleans 0/1, numbers as numbers."""
    if f.type == "boolean":
        return [None if v is None else (1 if v.lower() == "true" else 0) for v in values]
    if f.type == "int":
        return [None if v is None else int(float(v)) for v in values]
    if f.type in ("double", "currency"):
        return [None if v is None else float(v) for v in values]
    return values


@dataclass
class StoreInfo:
    path: Path
    rebuilt: bool
    seconds: float
    data_sha256: str


PAGE_BYTES = 16_384  # the store's page size (see StoreBuilder)
MMAP_BYTES = 268_435_456
CACHE_KIB = 65_536  # SQLite's page cache per connection (a served org's choice; see Store)


class Store:
    """A built `org.sqlite`, opened read-only with one connection per thread. `mmap_bytes` of the file are
    memory-mapped by each connection opened afterwards (a served org's choice; a one-off reader such as the
    build's answer check sets 0: same speed, and the mapped pages do not add to its resident memory).
    `cache_kib` is each connection's page cache (the check keeps it small: the file's pages stay in the
    system's cache, where they do not count against the build's memory)."""

    def __init__(self, bundle: Bundle, model: OrgModel, info: StoreInfo) -> None:
        self.mmap_bytes = MMAP_BYTES
        self.cache_kib = CACHE_KIB
        self.bundle = bundle
        self.model = model
        self.info = info
        self.path = info.path
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[sqlite3.Connection] = []

    @classmethod
    def open(
        cls,
        root: Path | str,
        model: OrgModel | None = None,
        rebuild: bool = False,
        mmap_bytes: int = MMAP_BYTES,
        cache_kib: int = CACHE_KIB,
    ) -> Store:
        """The store of the bundle at `root`, (re)built first when missing or stale. Its `model` is `model`
        (default: the org model) with the fields the org computes (`computed.local_model`)."""
        bundle = Bundle(root)
        model = local_model(model or load_model())
        info = ensure_store(bundle, model, force=rebuild)
        store = cls(bundle, model, info)
        store.mmap_bytes = mmap_bytes
        store.cache_kib = cache_kib
        return store

    def connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = 1")
            conn.execute(f"PRAGMA mmap_size = {int(self.mmap_bytes)}")
            conn.execute(f"PRAGMA cache_size = -{int(self.cache_kib)}")
            conn.execute("PRAGMA temp_store = MEMORY")
            local = self._local
            local.deadline = None

            def past_deadline() -> int:  # SQLite calls it every PROGRESS_STEPS steps; non-zero stops
                return 1 if local.deadline is not None and time.monotonic() > local.deadline else 0

            conn.set_progress_handler(past_deadline, PROGRESS_STEPS)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    @contextlib.contextmanager
    def deadline(self, seconds: float) -> Iterator[None]:
        """Statements run on this thread's connection inside the block are stopped (sqlite3
        OperationalError "interrupted") once they have run `seconds`."""
        self.connection()
        local = self._local
        local.deadline = time.monotonic() + seconds
        try:
            yield
        finally:
            local.deadline = None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()


def _fingerprint(bundle: Bundle, model: OrgModel) -> dict[str, list[int]]:
    return {spec.name: fingerprint_of(bundle, spec) for spec in model}


def fingerprint_of(bundle: Bundle, spec: ObjectSpec) -> list[int]:
    """Size and modification time of each of the object's files (the file, or its parts in order)."""
    out: list[int] = []
    for path in bundle.data_files(spec.name):
        try:
            st = path.stat()
        except FileNotFoundError:
            raise BundleError(
                f"{path} is missing; the bundle has no data for {spec.name}. Rebuild the bundle.",
                file=str(path),
            ) from None
        out += [st.st_size, st.st_mtime_ns]
    return out


def _read_meta(path: Path) -> dict[str, str]:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error:
        return {}
    try:
        return dict(conn.execute("SELECT key, value FROM orgseed_meta").fetchall())
    except sqlite3.Error:
        return {}
    finally:
        conn.close()


def ensure_store(bundle: Bundle, model: OrgModel, force: bool = False) -> StoreInfo:
    """Build `org.sqlite` unless an up-to-date one is already there."""
    wanted = store_wanted(bundle, model)
    path = bundle.root / STORE_FILE
    if path.exists() and not force:
        meta = _read_meta(path)
        if all(meta.get(k) == v for k, v in wanted.items()):
            return StoreInfo(path, False, 0.0, wanted["data_sha256"])
    t0 = time.perf_counter()
    builder = StoreBuilder(bundle, model)
    try:
        facts = org_facts(bundle, model)
        for spec in model:
            builder.load(spec.name, facts)
        builder.finish(wanted)
    finally:
        builder.abandon()
    return StoreInfo(path, True, time.perf_counter() - t0, wanted["data_sha256"])


def store_wanted(bundle: Bundle, model: OrgModel) -> dict[str, str]:
    """What an up-to-date store of the bundle records in its orgseed_meta (and `ensure_store` compares)."""
    data_sha = bundle.read_manifest().get("data_sha256")
    if not data_sha:
        raise BundleError(
            f"{bundle.manifest_path}: /data_sha256 is empty; the build did not finish. Rebuild the bundle.",
            file=str(bundle.manifest_path),
        )
    return {
        "store_version": STORE_VERSION,
        "data_sha256": data_sha,
        "model_digest": model_digest(model),
        "fingerprint": json.dumps(_fingerprint(bundle, model), sort_keys=True),
    }


class StoreBuilder:
    """`org.sqlite` built an object at a time, into a temporary file beside it: `load` each object (in any
    order, e.g. as a build writes them), then `finish`, which loads what was not loaded, records the store's
    meta and moves it into place; `abandon` (always safe to call) removes an unfinished file.

    An object is loaded from its files as they are when `load` reads them; `finish` compares each loaded
    object's files (sizes and modification times) with what they are then and loads again any that changed,
    so a finished store holds the files its meta's fingerprint describes.

    An object can be loaded before the org's API user is known (`api_user_later`: a build writes the User
    after other objects): its records without an owner take NULL for it and its indexes from the first on
    such a field are left out, until `settle` writes the API user into those records and makes the indexes
    (in their order; `finish` settles what is left)."""

    def __init__(self, bundle: Bundle, model: OrgModel) -> None:
        self.bundle = bundle
        self.model = model
        self.path = bundle.root / STORE_FILE
        self.tmp = self.path.with_name(f"{STORE_FILE}.tmp-{os.getpid()}-{threading.get_ident()}")
        self.tmp.unlink(missing_ok=True)
        self.loaded: dict[str, list[int]] = {}  # object -> its files' fingerprint when it was read
        # object loaded with `api_user_later` -> its fields that take the API user, and the indexes left out
        self.unsettled: dict[str, tuple[list[str], list[str]]] = {}
        self.conn: sqlite3.Connection | None = sqlite3.connect(self.tmp)
        # 16 KiB pages rather than 4: fewer CPU-seconds inserting and indexing the records (scale 10: SQLite's
        # part of a build 1.94 -> 1.66 CPU-s), and the check through the org queries it as fast (2.55 CPU-s)
        self.conn.execute(f"PRAGMA page_size = {PAGE_BYTES}")
        self.conn.execute("PRAGMA journal_mode = OFF")
        self.conn.execute("PRAGMA synchronous = OFF")
        self.conn.execute("CREATE TABLE orgseed_meta (key TEXT PRIMARY KEY, value TEXT)")

    def load(self, name: str, facts: OrgFacts, api_user_later: bool = False) -> None:
        """Load object `name` (again, if it was loaded before). With `api_user_later`, the org's API user is
        not known yet (`facts.api_user` is None; see the class)."""
        if self.conn is None:
            raise RuntimeError(f"{self.tmp}: the store is finished or abandoned; {name} cannot be loaded")
        spec = self.model.get(name)
        if name in self.loaded:
            self.conn.execute(f"DROP TABLE {quote(name)}")
            self.conn.execute(f"DROP TABLE IF EXISTS {fts_table(name)}")
            self.unsettled.pop(name, None)
        indexes = index_statements(spec)
        fields = api_user_fields(spec) if api_user_later else []
        if fields:
            first = next((i for i, (cols, _) in enumerate(indexes) if set(cols) & set(fields)), len(indexes))
            self.unsettled[name] = (fields, [sql for _, sql in indexes[first:]])
            indexes = indexes[:first]
        before = fingerprint_of(self.bundle, spec)
        _load_object(self.conn, self.bundle, spec, facts, [sql for _, sql in indexes])
        if name not in self.unsettled:
            # the statistics of the table and its indexes, which the query planner reads (made as each table is
            # complete, so that `finish` has less to do once the last object is written); FTS5 reaches its
            # shadow tables by key alone, so they are not scanned
            self.conn.execute(f"ANALYZE {quote(name)}")
        after = fingerprint_of(self.bundle, spec)
        # an object whose files changed while it was read is marked stale: `finish` loads it again
        self.loaded[name] = after if after == before else []

    def settle(self, api_user: str | None) -> None:
        """Give the records of the objects loaded with `api_user_later` the org's API user, and make their
        indexes left out."""
        if self.conn is None:
            raise RuntimeError(f"{self.tmp}: the store is finished or abandoned")
        for name, (fields, indexes) in self.unsettled.items():
            if api_user is not None:
                # the fields are computed by one rule from the same record: NULL together, where it has no owner
                sets = ", ".join(f"{quote(f)} = ?1" for f in fields)
                self.conn.execute(
                    f"UPDATE {quote(name)} SET {sets} WHERE {quote(fields[0])} IS NULL", (api_user,)
                )
            for sql in indexes:
                self.conn.execute(sql)
            self.conn.execute(f"ANALYZE {quote(name)}")  # complete now (see `load`)
        self.unsettled.clear()

    def finish(self, wanted: dict[str, str] | None = None, facts: OrgFacts | None = None) -> StoreInfo:
        """Load the objects not loaded yet or changed since and settle the others (with `facts`, default: the
        bundle's), record the meta (`wanted`, default: `store_wanted` now) and move the store into place."""
        if self.conn is None:
            raise RuntimeError(f"{self.tmp}: the store is finished or abandoned")
        t0 = time.perf_counter()
        stale = [s.name for s in self.model if self.loaded.get(s.name) != fingerprint_of(self.bundle, s)]
        if stale or self.unsettled:
            facts = facts or org_facts(self.bundle, self.model)
            for name in stale:
                self.load(name, facts)
            self.settle(facts.api_user)
        meta = wanted or store_wanted(self.bundle, self.model)
        rows = [*meta.items(), ("built", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))]
        self.conn.executemany("INSERT INTO orgseed_meta (key, value) VALUES (?, ?)", rows)
        self.conn.commit()
        self.conn.close()
        self.conn = None
        os.replace(self.tmp, self.path)
        return StoreInfo(self.path, True, time.perf_counter() - t0, meta["data_sha256"])

    def abandon(self) -> None:
        """Close and remove an unfinished store (nothing, once it is finished)."""
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        self.tmp.unlink(missing_ok=True)


def org_facts_once_written(
    bundle: Bundle, model: OrgModel, written: Collection[str]
) -> tuple[OrgFacts, bool] | None:
    """`org_facts` as far as what they are read from is written (`written`: the objects whose files are
    complete), and whether the API user is known: the manifest's profile start gives the go-live, the first
    User the API user (None, and False, while the User is not written). None when the manifest has no start
    (the go-live then needs every object's dates)."""
    start = (bundle.read_manifest().get("profile") or {}).get("start")
    if not (isinstance(start, str) and len(start) == 10):
        return None
    if "User" in model.objects and "User" not in written:
        return OrgFacts(wire_datetime(start), None), False
    return org_facts(bundle, model), True


def org_facts(bundle: Bundle, model: OrgModel) -> OrgFacts:
    """The org's go-live instant and API user, for the system fields (orgs/local/computed.py)."""
    start = (bundle.read_manifest().get("profile") or {}).get("start")
    if isinstance(start, str) and len(start) == 10:
        go_live = wire_datetime(start)
    else:  # a bundle without a time span: its earliest date of any record
        dates = [
            d
            for spec in model
            if any(f.type in ("date", "datetime") and not f.computed for f in spec.fields)
            for column in date_columns(spec, bundle.read_raw(spec.name, stored_spec(spec)))
            for d in column
            if d
        ]
        go_live = min(dates, default="2000-01-01T00:00:00.000+0000")
    api_user = None
    if "User" in model.objects:
        users = bundle.read_raw("User", stored_spec(model.get("User")))
        api_user = str(users["Id"].iat[0]) if len(users) else None
    return OrgFacts(go_live, api_user)


# bytes of pending full-text terms held before they are written as one index segment (FTS5's 'hashsize';
# its default is 1 MB)
FTS_HASH_BYTES = 64 * 1024 * 1024

# records per batch of the build: memory is bounded by a batch (and the auto-numbers' two columns), not by
# the size of an object
BUILD_BATCH_ROWS = 50_000


def _stored_batches(
    bundle: Bundle, spec: ObjectSpec, columns: list[str] | None = None
) -> Iterator[pd.DataFrame]:
    """`columns` (default: every stored one) of `spec`'s records in batches of BUILD_BATCH_ROWS, by pandas' C
    reader when every file's header is the model's; otherwise `read_raw`, whose BundleError names the file
    and what differs."""
    stored = stored_spec(spec)
    names = [f.name for f in stored.fields]
    for path in bundle.data_files(spec.name):
        with path.open(encoding="utf-8", newline="") as fh:
            header = next(csv.reader(fh), None)
        if header != names:
            raw = bundle.read_raw(spec.name, stored)
            yield raw[columns or names]
            return
    yield from bundle.iter_columns(spec.name, columns or names, rows=BUILD_BATCH_ROWS)


def index_statements(spec: ObjectSpec) -> list[tuple[tuple[str, ...], str]]:
    """The CREATE INDEX statements of `spec`'s table, each with its columns, in the order they are made (the
    order SQLite's planner meets them in, which settles its choice between indexes of equal cost).

    A system field that holds one value in every record of the object (`constant_fields`, e.g. an
    OrderItem's CreatedById or CreatedDate) is not indexed. The planner would not use such an index for an
    equality or IN (its statistics say that a value matches every record, so it scans the table anyway); a
    range or ORDER BY on the field matches every record or none, and in rowid order, as a scan of the table
    does (at the cost of a sort). No CRMArena tool or task check filters or sorts on these fields, and
    their 56 indexes cost ~0.25 of the ~2.3 CPU-s of the store at scale 10."""
    table = quote(spec.name)
    constant = constant_fields(spec)
    out: list[tuple[tuple[str, ...], str]] = [
        ((f.name,), f"CREATE INDEX {quote(f'ix_{spec.name}_{f.name}')} ON {table} ({quote(f.name)})")
        for f in spec.fields
        if f.type in INDEXED_TYPES and f.name not in constant
    ]
    for columns in COVERING_INDEXES.get(spec.name, []):
        if all(spec.has_field(c) for c in columns):
            name = quote(f"cx_{spec.name}_{'_'.join(columns)}")
            out.append((columns, f"CREATE INDEX {name} ON {table} ({', '.join(quote(c) for c in columns)})"))
    return out


def _load_object(
    conn: sqlite3.Connection, bundle: Bundle, spec: ObjectSpec, facts: OrgFacts, indexes: list[str]
) -> None:
    """Create `spec`'s table (and its full-text table), insert its records, then make `indexes`."""
    table = quote(spec.name)
    conn.execute(f"CREATE TABLE {table} ({', '.join(column_sql(f) for f in spec.fields)})")
    names = [f.name for f in spec.fields]
    marks = ", ".join("?" for _ in spec.fields)
    names_sql = ", ".join(quote(name) for name in names)
    text_fields = searchable_fields(spec)
    text_idx = [names.index(f.name) for f in text_fields]
    if text_fields:
        cols = ", ".join(quote(f.name) for f in text_fields)
        fts = fts_table(spec.name)
        # contentless (content=''): SOSL reads only rowid and rank (bm25, from the index and the column
        # sizes), never the text back, so a second copy of every text is not written
        conn.execute(f"CREATE VIRTUAL TABLE {fts} USING fts5({cols}, tokenize='{FTS_TOKENIZER}', content='')")
        # pending terms flushed to a segment every FTS_HASH_BYTES instead of every 1 MB: fewer segments to
        # merge while loading (the same terms, positions and column sizes, so the same matches and ranks)
        conn.execute(f"INSERT INTO {fts} ({fts}, rank) VALUES ('hashsize', ?)", (FTS_HASH_BYTES,))
    # the auto-numbers rank every record: computed first from the two or three columns they need
    whole_names = whole_object_fields(spec)
    whole: dict[str, Sequence[Any]] = {}
    if whole_names:
        needed = ["Id", *(f.name for f in spec.fields if f.type in DATE_TYPES and not f.computed)]
        narrow = pd.concat(list(_stored_batches(bundle, spec, needed)), ignore_index=True)
        whole = compute(spec, narrow, facts, only=whole_names)
        del narrow
    done = 0
    for raw in _stored_batches(bundle, spec):
        n = len(raw)
        computed = compute(
            spec, raw, facts, only=[f.name for f in spec.fields if f.computed and f.name not in whole]
        )
        columns = []
        for f in spec.fields:
            if f.name in whole:
                columns.append(list(whole[f.name][done : done + n]))
            elif f.computed:
                columns.append(list(computed[f.name]))
            else:
                columns.append(_converted(f, raw[f.name].tolist()))
        del raw, computed
        # explicit rowids (1..n, CSV order): the FTS table and the default record order key off them
        rowids = range(done + 1, done + n + 1)
        conn.executemany(
            f"INSERT INTO {table} (rowid, {names_sql}) VALUES (?, {marks})",
            zip(rowids, *columns, strict=True),
        )
        if text_fields:
            conn.executemany(
                f"INSERT INTO {fts_table(spec.name)} (rowid, {cols}) "
                f"VALUES (?, {', '.join('?' for _ in text_idx)})",
                zip(rowids, *(search_texts(columns[i]) for i in text_idx), strict=True),
            )
        done += n
    for sql in indexes:
        conn.execute(sql)
