"""An empty org's state directory: one SQLite database (`org.sqlite`, WAL) that survives restarts.

`STATE_DIR/org.sqlite` holds one table per object (named and typed as the bundle store's, `store.py`, plus an
FTS5 table per object with text fields, for SOSL), and the org's own bookkeeping:
- `orgseed_meta`: the edition and its knobs, the org's settings, its id and API user;
- `orgseed_objects`: the catalogue of objects and fields (`catalog.py`), custom ones included;
- `orgseed_permset_fields`: field-level security of each permission set;
- `orgseed_counters`: the next record number per key prefix and the auto-numbers;
- `orgseed_recycle`: deleted records (the recycle bin), until emptied or hard-deleted;
- `orgseed_jobs` / `orgseed_job_results`: Bulk API 2.0 ingest jobs, their CSV and their per-row results.

Every write is one SQLite transaction, so a server killed at any point leaves the state as of its last
committed write: a Bulk job's batch commits its records, results and counts together, and a job that was
running when the server died is picked up again where it stopped (`ingest.py`).

One server at a time: `StateDir.open` takes an exclusive lock on `STATE_DIR/org.lock` and a second server on
the same directory is refused with the holder's pid.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import sqlite3
import string
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orgs.local.soql.filters import to18
from orgs.local.store import INDEXED_TYPES, column_sql, fts_table, quote, searchable_fields
from orgs.local.text import FTS_TOKENIZER, search_text
from orgs.local.writable.catalog import Catalog, Entry, standard_entries
from orgs.local.writable.editions import Edition, edition
from schemas.errors import UsageError
from schemas.model import FieldSpec, ObjectSpec

DB_FILE = "org.sqlite"
LOCK_FILE = "org.lock"
STATE_VERSION = "1"
ADMIN_PROFILE = "System Administrator"
STANDARD_PROFILE = "Standard User"
SALESFORCE_LICENSE = "Salesforce"
_ID_ALPHABET = string.ascii_uppercase + string.digits


def now_wire() -> str:
    """The current instant in Salesforce's wire form, with milliseconds."""
    t = datetime.now(UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}+0000"


@dataclass
class Settings:
    """Org settings a loader switches (the way a real org switches them: `metadata.py`)."""

    audit_fields: bool = False  # "Enable Set Audit Fields upon Record Creation ..." (User Interface)
    knowledge: bool = False
    chat: bool = False

    def as_dict(self) -> dict[str, bool]:
        return {"audit_fields": self.audit_fields, "knowledge": self.knowledge, "chat": self.chat}


class StateLocked(UsageError):
    pass


def _lock(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = ""
        try:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
        finally:
            os.close(fd)
        raise StateLocked(
            f"{path.parent} is in use by another orgseed server (pid {holder or 'unknown'}). Stop that "
            "server first, or give this one another state directory.",
            file=str(path),
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


class StateDir:
    """An empty org's state on disk. Thread-safe: one writer connection behind a lock."""

    def __init__(self, root: Path, fd: int, conn: sqlite3.Connection) -> None:
        self.root = root
        self.path = root / DB_FILE
        self._fd = fd
        self.conn = conn
        self.lock = threading.RLock()
        self._depth = 0
        self.reload()

    def reload(self) -> None:
        """The org's identity, edition, settings and catalogue as the database holds them."""
        meta = dict(self.conn.execute("SELECT key, value FROM orgseed_meta").fetchall())
        self.org_id: str = meta["org_id"]
        self.api_user: str = meta["api_user"]
        self.edition = Edition(**json.loads(meta["edition"]))
        self.settings = Settings(**json.loads(meta["settings"]))
        self.catalog = Catalog(
            [
                Entry.from_json(t)
                for (t,) in self.conn.execute("SELECT spec FROM orgseed_objects ORDER BY rowid")
            ]
        )

    # -- opening -------------------------------------------------------------------------------------------

    @classmethod
    def open(cls, root: Path | str, edition_name: str | None = None, **knobs: Any) -> StateDir:
        """Open the state at `root`, creating a new empty org there when it holds none (`edition_name`,
        default developer, and `knobs` override the edition's limits). Opening an existing org with a
        different edition is refused: an org's edition is fixed when it is created."""
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise UsageError(
                f"{root} is not a directory; give a directory for the org's state.", file=str(root)
            )
        root.mkdir(parents=True, exist_ok=True)
        db = root / DB_FILE
        if not db.exists() and any(p.name not in (LOCK_FILE,) for p in root.iterdir()):
            raise UsageError(
                f"{root} holds files that are not an orgseed org's state; give an empty or new directory.",
                file=str(root),
            )
        fd = _lock(root / LOCK_FILE)
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
                new = not conn.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'orgseed_meta'"
                ).fetchone()
            except sqlite3.DatabaseError as exc:
                raise UsageError(
                    f"{db} cannot be read as an orgseed org's state ({exc}); give a new state directory.",
                    file=str(db),
                ) from None
            if new:
                ed = edition(edition_name or "developer")
                if knobs:
                    ed = ed.with_changes(**{k: v for k, v in knobs.items() if v is not None})
                _create(conn, ed)
            else:
                meta = dict(conn.execute("SELECT key, value FROM orgseed_meta").fetchall())
                if meta.get("state_version") != STATE_VERSION:
                    raise UsageError(
                        f"{db} was written by another version of orgseed (state version "
                        f"{meta.get('state_version')}, this one reads {STATE_VERSION}); use a new state directory.",
                        file=str(db),
                    )
                stored = json.loads(meta["edition"])
                if edition_name is not None and stored["name"] != edition_name:
                    raise UsageError(
                        f"{root} holds a {stored['name']} org; its edition cannot change. Leave out --edition "
                        "or give a new state directory.",
                        file=str(db),
                    )
                changed = {k: v for k, v in knobs.items() if v is not None and stored.get(k) != v}
                if changed:
                    stored.update(changed)
                    conn.execute(
                        "UPDATE orgseed_meta SET value = ? WHERE key = 'edition'", (json.dumps(stored),)
                    )
                    conn.execute(
                        'UPDATE "DuplicateRule" SET "IsActive" = ?',
                        (int(stored.get("duplicate_rule", "off") != "off"),),
                    )
            return cls(root, fd, conn)
        except BaseException:
            if conn is not None:
                conn.close()
            os.close(fd)
            raise

    def close(self) -> None:
        with self.lock:
            self.conn.close()
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    # -- transactions and bookkeeping --------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on any error)."""
        with self.lock:
            if self._depth:  # a nested block joins the transaction already open on this thread
                self._depth += 1
                try:
                    yield self.conn
                finally:
                    self._depth -= 1
                return
            self.conn.execute("BEGIN IMMEDIATE")
            self._depth = 1
            try:
                yield self.conn
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            else:
                self.conn.execute("COMMIT")
            finally:
                self._depth = 0

    def set_meta(self, conn: sqlite3.Connection, key: str, value: Any) -> None:
        conn.execute(
            "INSERT INTO orgseed_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, json.dumps(value)),
        )

    def save_settings(self, conn: sqlite3.Connection) -> None:
        self.set_meta(conn, "settings", self.settings.as_dict())

    def save_entry(self, conn: sqlite3.Connection, entry: Entry) -> None:
        conn.execute(
            "INSERT INTO orgseed_objects (name, spec) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET spec = excluded.spec",
            (entry.spec.name, entry.to_json()),
        )
        self.catalog.entries[entry.spec.name] = entry

    def granted(self) -> set[tuple[str, str]]:
        """(object, field) pairs readable by the API user through its assigned permission sets."""
        return self._field_permissions("readable")

    def editable(self) -> set[tuple[str, str]]:
        """(object, field) pairs the API user may write through its assigned permission sets."""
        return self._field_permissions("editable")

    def _field_permissions(self, column: str) -> set[tuple[str, str]]:
        rows = self.conn.execute(
            "SELECT f.sobject, f.field FROM orgseed_permset_fields f "
            'JOIN "PermissionSet" p ON p."Name" = f.permset '
            'JOIN "PermissionSetAssignment" a ON a."PermissionSetId" = p."Id" '
            f'WHERE a."AssigneeId" = ? AND f.{column} = 1',
            (self.api_user,),
        ).fetchall()
        return {(o, f) for o, f in rows}

    def user_permission(self, name: str) -> bool:
        """Does a permission set assigned to the API user grant `name` (e.g. CreateAuditFields)?"""
        col = quote(f"Permissions{name}")
        row = self.conn.execute(
            f'SELECT 1 FROM "PermissionSet" p JOIN "PermissionSetAssignment" a ON a."PermissionSetId" = p."Id" '
            f'WHERE a."AssigneeId" = ? AND p.{col} = 1 LIMIT 1',
            (self.api_user,),
        ).fetchone()
        return row is not None

    def next_ids(self, conn: sqlite3.Connection, prefix: str, n: int) -> list[str]:
        """`n` new record ids for key prefix `prefix` (18 characters)."""
        return new_ids(conn, prefix, n)

    def next_numbers(self, conn: sqlite3.Connection, name: str, n: int) -> list[str]:
        """`n` auto-numbers (CaseNumber, OrderNumber): 8 digits, zero-padded, from 00000001."""
        start = counter(conn, f"number:{name}", n)
        return [f"{i:08d}" for i in range(start, start + n)]

    def storage_used(self) -> int:
        row = self.conn.execute("SELECT COALESCE(SUM(bytes), 0) FROM orgseed_storage").fetchone()
        return int(row[0])


# -- tables ----------------------------------------------------------------------------------------------------


def create_table(conn: sqlite3.Connection, spec: ObjectSpec) -> None:
    table = quote(spec.name)
    conn.execute(f"CREATE TABLE {table} ({', '.join(column_sql(f) for f in spec.fields)})")
    for f in spec.fields:
        if f.type in INDEXED_TYPES or f.external_id or f.unique:
            add_index(conn, spec.name, f)
    create_fts(conn, spec)


def add_index(conn: sqlite3.Connection, sobject: str, f: FieldSpec) -> None:
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {quote(f'ix_{sobject}_{f.name}')} ON {quote(sobject)} ({quote(f.name)})"
    )


def create_fts(conn: sqlite3.Connection, spec: ObjectSpec) -> None:
    """(Re)create the object's full-text table over its text fields, indexing the rows it holds."""
    conn.execute(f"DROP TABLE IF EXISTS {fts_table(spec.name)}")
    text_fields = searchable_fields(spec)
    if not text_fields:
        return
    cols = ", ".join(quote(f.name) for f in text_fields)
    conn.execute(
        f"CREATE VIRTUAL TABLE {fts_table(spec.name)} USING fts5({cols}, tokenize='{FTS_TOKENIZER}')"
    )
    rows = conn.execute(f"SELECT rowid, {cols} FROM {quote(spec.name)}").fetchall()
    if rows:
        conn.executemany(
            f"INSERT INTO {fts_table(spec.name)} (rowid, {cols}) VALUES (?, {', '.join('?' for _ in text_fields)})",
            [(r[0], *(search_text(v) for v in r[1:])) for r in rows],
        )


def insert_rows(conn: sqlite3.Connection, spec: ObjectSpec, rows: list[dict[str, Any]]) -> None:
    """Insert stored values (already converted) into the object's table and its full-text index."""
    if not rows:
        return
    names = [f.name for f in spec.fields]
    top = conn.execute(f"SELECT COALESCE(MAX(rowid), 0) FROM {quote(spec.name)}").fetchone()[0]
    cols = ", ".join(quote(n) for n in names)
    marks = ", ".join("?" for _ in names)
    numbered = [(top + i + 1, *(r.get(n) for n in names)) for i, r in enumerate(rows)]
    conn.executemany(f"INSERT INTO {quote(spec.name)} (rowid, {cols}) VALUES (?, {marks})", numbered)
    text_fields = searchable_fields(spec)
    if text_fields:
        fcols = ", ".join(quote(f.name) for f in text_fields)
        conn.executemany(
            f"INSERT INTO {fts_table(spec.name)} (rowid, {fcols}) VALUES (?, {', '.join('?' for _ in text_fields)})",
            [(top + i + 1, *(search_text(r.get(f.name)) for f in text_fields)) for i, r in enumerate(rows)],
        )


def update_rows(
    conn: sqlite3.Connection, spec: ObjectSpec, changes: list[tuple[str, dict[str, Any]]]
) -> None:
    """Apply `(id, {field: stored value})` changes, keeping the full-text index in step."""
    text_fields = searchable_fields(spec)
    text_names = {f.name for f in text_fields}
    for record_id, values in changes:
        if not values:
            continue
        sets = ", ".join(f"{quote(k)} = ?" for k in values)
        conn.execute(f'UPDATE {quote(spec.name)} SET {sets} WHERE "Id" = ?', (*values.values(), record_id))
        if text_names & set(values):
            fcols = ", ".join(quote(f.name) for f in text_fields)
            row = conn.execute(
                f'SELECT rowid, {fcols} FROM {quote(spec.name)} WHERE "Id" = ?', (record_id,)
            ).fetchone()
            conn.execute(f"DELETE FROM {fts_table(spec.name)} WHERE rowid = ?", (row[0],))
            conn.execute(
                f"INSERT INTO {fts_table(spec.name)} (rowid, {fcols}) VALUES (?, {', '.join('?' for _ in text_fields)})",
                (row[0], *(search_text(v) for v in row[1:])),
            )


def delete_rows(conn: sqlite3.Connection, spec: ObjectSpec, ids: Iterable[str]) -> None:
    has_fts = bool(searchable_fields(spec))
    for record_id in ids:
        row = conn.execute(f'SELECT rowid FROM {quote(spec.name)} WHERE "Id" = ?', (record_id,)).fetchone()
        if row is None:
            continue
        conn.execute(f"DELETE FROM {quote(spec.name)} WHERE rowid = ?", (row[0],))
        if has_fts:
            conn.execute(f"DELETE FROM {fts_table(spec.name)} WHERE rowid = ?", (row[0],))


# -- a new org ----------------------------------------------------------------------------------------------------

_BOOKKEEPING = (
    "CREATE TABLE orgseed_meta (key TEXT PRIMARY KEY, value TEXT)",
    "CREATE TABLE orgseed_objects (name TEXT PRIMARY KEY, spec TEXT NOT NULL)",
    "CREATE TABLE orgseed_permset_fields (permset TEXT, sobject TEXT, field TEXT, readable INTEGER, "
    "editable INTEGER, PRIMARY KEY (permset, sobject, field))",
    "CREATE TABLE orgseed_counters (key TEXT PRIMARY KEY, value INTEGER)",
    "CREATE TABLE orgseed_storage (id TEXT PRIMARY KEY, sobject TEXT, bytes INTEGER)",
    "CREATE TABLE orgseed_recycle (id TEXT PRIMARY KEY, sobject TEXT, deleted TEXT, record TEXT)",
    "CREATE TABLE orgseed_jobs (id TEXT PRIMARY KEY, info TEXT NOT NULL, state TEXT NOT NULL, "
    "csv BLOB, batches_done INTEGER NOT NULL DEFAULT 0, batch_rows INTEGER NOT NULL)",
    "CREATE TABLE orgseed_job_results (job TEXT, kind TEXT, seq INTEGER, line TEXT)",
    "CREATE INDEX ix_job_results ON orgseed_job_results (job, kind, seq)",
)


def _org_id() -> str:
    return to18("00D" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(12)))


def _create(conn: sqlite3.Connection, ed: Edition) -> None:
    """A new, empty org of edition `ed`."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        for sql in _BOOKKEEPING:
            conn.execute(sql)
        entries = standard_entries(ed.person_accounts)
        for e in entries:
            create_table(conn, e.spec)
            conn.execute("INSERT INTO orgseed_objects (name, spec) VALUES (?, ?)", (e.spec.name, e.to_json()))
        org_id = _org_id()
        created = now_wire()
        by_name = {e.spec.name: e.spec for e in entries}

        def new_id(prefix: str) -> str:
            return new_ids(conn, prefix, 1)[0]

        admin = new_id("005")

        def system(rec: dict[str, Any], spec: ObjectSpec) -> dict[str, Any]:
            names = {f.name for f in spec.fields}
            for k, v in (
                ("CreatedById", admin),
                ("LastModifiedById", admin),
                ("CreatedDate", created),
                ("LastModifiedDate", created),
                ("SystemModstamp", created),
                ("IsDeleted", 0),
            ):
                if k in names:
                    rec.setdefault(k, v)
            return rec

        edition_label = "Enterprise Edition" if ed.name == "enterprise" else "Developer Edition"
        insert_rows(
            conn,
            by_name["Organization"],
            [
                system(
                    {
                        "Id": org_id,
                        "Name": "orgseed empty org",
                        "OrganizationType": edition_label,
                        "IsSandbox": 0,
                        "InstanceName": "LOCAL",
                        "LanguageLocaleKey": "en_US",
                        "TimeZoneSidKey": "America/Los_Angeles",
                    },
                    by_name["Organization"],
                )
            ],
        )
        license_id = new_id("100")
        insert_rows(
            conn,
            by_name["UserLicense"],
            [
                system(
                    {
                        "Id": license_id,
                        "Name": SALESFORCE_LICENSE,
                        "LicenseDefinitionKey": "SFDC",
                        "TotalLicenses": ed.salesforce_licenses,
                        "UsedLicenses": 1,
                        "Status": "Active",
                    },
                    by_name["UserLicense"],
                )
            ],
        )
        admin_profile, standard_profile = new_id("00e"), new_id("00e")
        insert_rows(
            conn,
            by_name["Profile"],
            [
                system(
                    {
                        "Id": admin_profile,
                        "Name": ADMIN_PROFILE,
                        "UserLicenseId": license_id,
                        "PermissionsModifyAllData": 1,
                    },
                    by_name["Profile"],
                ),
                system(
                    {
                        "Id": standard_profile,
                        "Name": STANDARD_PROFILE,
                        "UserLicenseId": license_id,
                        "PermissionsModifyAllData": 0,
                    },
                    by_name["Profile"],
                ),
            ],
        )
        user_spec = by_name["User"]
        admin_row = {
            "Id": admin,
            "FirstName": "Org",
            "LastName": "Admin",
            "Name": "Org Admin",
            "Email": "admin@orgseed.local",
            "Username": f"admin@{org_id.lower()}.orgseed.local",
            "Alias": "oadmin",
            "ProfileId": admin_profile,
            "IsActive": 1,
            "LanguageLocaleKey": "en_US",
            "EmailEncodingKey": "UTF-8",
            "TimeZoneSidKey": "America/Los_Angeles",
            "LocaleSidKey": "en_US",
        }
        insert_rows(conn, user_spec, [system(admin_row, user_spec)])
        insert_rows(
            conn,
            by_name["Pricebook2"],
            [
                system(
                    {"Id": new_id("01s"), "Name": "Standard Price Book", "IsActive": 1, "IsStandard": 1},
                    by_name["Pricebook2"],
                )
            ],
        )
        if ed.person_accounts:
            rt = by_name["RecordType"]
            insert_rows(
                conn,
                rt,
                [
                    system(
                        {
                            "Id": new_id("012"),
                            "Name": name,
                            "DeveloperName": dev,
                            "SobjectType": "Account",
                            "IsPersonType": person,
                            "IsActive": 1,
                        },
                        rt,
                    )
                    for name, dev, person in (
                        ("Person Account", "PersonAccount", 1),
                        ("Business Account", "Business_Account", 0),
                    )
                ],
            )
        dup = by_name["DuplicateRule"]
        insert_rows(
            conn,
            dup,
            [
                system(
                    {
                        "Id": new_id("0Bm"),
                        "DeveloperName": "Standard_Contact_Duplicate_Rule",
                        "SobjectType": "Contact",
                        "IsActive": int(ed.duplicate_rule != "off"),
                    },
                    dup,
                )
            ],
        )
        meta = {
            "state_version": STATE_VERSION,
            "org_id": org_id,
            "api_user": admin,
            "created": created,
            "edition": json.dumps(ed.as_dict()),
            "settings": json.dumps(Settings(knowledge=ed.knowledge, chat=ed.chat).as_dict()),
        }
        conn.executemany("INSERT INTO orgseed_meta (key, value) VALUES (?, ?)", list(meta.items()))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def counter(conn: sqlite3.Connection, key: str, n: int) -> int:
    """Take `n` numbers from the org's counter `key` (inside the caller's transaction); the first one."""
    row = conn.execute("SELECT value FROM orgseed_counters WHERE key = ?", (key,)).fetchone()
    start = int(row[0]) if row else 1
    conn.execute(
        "INSERT INTO orgseed_counters (key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, start + n),
    )
    return start


def new_ids(conn: sqlite3.Connection, prefix: str, n: int) -> list[str]:
    """`n` new 18-character record ids with key prefix `prefix`."""
    start = counter(conn, f"id:{prefix}", n)
    return [to18(f"{prefix}8W{i:010d}") for i in range(start, start + n)]
