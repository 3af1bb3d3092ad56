"""org.sqlite: built from the bundle, typed and indexed from the model, rebuilt only when the bundle changes."""

from __future__ import annotations

import json
import sqlite3
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from orgs.bundle import BundleError
from orgs.local.engine import LocalOrg, default_today
from orgs.local.store import STORE_FILE, Store
from schemas.model import load_model
from tests.conftest import copy_bundle


@pytest.fixture
def bundle(small_bundle: Path, tmp_path: Path) -> Path:
    copy = copy_bundle(small_bundle, tmp_path / "bundle")
    (copy / STORE_FILE).unlink(missing_ok=True)
    return copy


def test_built_once_then_reused(bundle: Path) -> None:
    first = Store.open(bundle)
    assert first.info.rebuilt and (bundle / STORE_FILE).exists()
    mtime = (bundle / STORE_FILE).stat().st_mtime_ns
    again = Store.open(bundle)
    assert not again.info.rebuilt
    assert (bundle / STORE_FILE).stat().st_mtime_ns == mtime
    assert Store.open(bundle, rebuild=True).info.rebuilt


def test_rebuilt_when_a_csv_changes(bundle: Path) -> None:
    Store.open(bundle)
    path = bundle / "data" / "Issue__c.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")  # drop the last issue
    store = Store.open(bundle)
    assert store.info.rebuilt
    count = store.connection().execute('SELECT COUNT(*) FROM "Issue__c"').fetchone()[0]
    assert count == len(lines) - 2


def test_rebuilt_when_the_manifest_hash_changes(bundle: Path) -> None:
    Store.open(bundle)
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["data_sha256"] = "0" * 64
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    assert Store.open(bundle).info.rebuilt
    assert not Store.open(bundle).info.rebuilt


def test_rebuilt_when_the_store_is_damaged(bundle: Path) -> None:
    Store.open(bundle)
    (bundle / STORE_FILE).write_bytes(b"not a database")
    assert Store.open(bundle).info.rebuilt


def test_missing_bundle_files_are_named(bundle: Path) -> None:
    (bundle / "data" / "Case.csv").unlink()
    with pytest.raises(BundleError, match=r"Case\.csv is missing"):
        Store.open(bundle)


def test_org_computed_fields_are_derived_from_the_csvs(bundle: Path) -> None:
    conn = sqlite3.connect(Store.open(bundle).path)
    for sobject in ("User", "Contact", "Account"):
        frame = pd.read_csv(bundle / "data" / f"{sobject}.csv", dtype=str, keep_default_na=False)
        expected = [f"{a} {b}".strip() for a, b in zip(frame["FirstName"], frame["LastName"], strict=True)]
        got = [r[0] for r in conn.execute(f'SELECT "Name" FROM "{sobject}" ORDER BY rowid')]
        assert got == expected and len(got) > 0
    cases = pd.read_csv(bundle / "data" / "Case.csv", dtype=str, keep_default_na=False)
    got = [r[0] for r in conn.execute('SELECT "IsClosed" FROM "Case" ORDER BY rowid')]
    assert got == [int(s == "Closed") for s in cases["Status"]] and 0 < sum(got) < len(got)


def test_tables_are_typed_and_indexed(bundle: Path) -> None:
    store = Store.open(bundle)
    conn = sqlite3.connect(store.path)
    model = load_model()
    for spec in model:
        cols = {r[1]: r[2] for r in conn.execute(f'PRAGMA table_info("{spec.name}")')}
        # after the model's columns, the fields a real org computes: a person's Name, Case.IsClosed, then the
        # system fields of every record (CreatedDate only where the model has none) and the auto-numbers
        person = spec.has_field("FirstName") and spec.has_field("LastName") and not spec.has_field("Name")
        system = [
            "CreatedById",
            "CreatedDate",
            "LastModifiedById",
            "LastModifiedDate",
            "SystemModstamp",
            "IsDeleted",
        ]
        system = [f for f in system if not spec.has_field(f)]
        number = {"Case": ["CaseNumber"], "Order": ["OrderNumber"]}.get(spec.name, [])
        extra = ["Name"] * person + ["IsClosed"] * (spec.name == "Case") + system + number
        assert list(cols) == spec.field_names + extra
        for f in spec.fields:
            want = {"boolean": "INTEGER", "int": "INTEGER", "double": "REAL", "currency": "REAL"}.get(
                f.type, "TEXT"
            )
            assert cols[f.name] == want, (spec.name, f.name)
        indexed = {
            row[2]
            for (name,) in conn.execute(
                f"SELECT name FROM sqlite_master WHERE type='index' AND tbl_name='{spec.name}'"
            )
            for row in conn.execute(f'PRAGMA index_info("{name}")')
        }
        for f in spec.fields:
            if f.type in ("id", "reference", "date", "datetime"):
                assert f.name in indexed, (spec.name, f.name)
    assert conn.execute('SELECT typeof("IsActive") FROM "Product2" LIMIT 1').fetchone()[0] == "integer"
    assert conn.execute("SELECT value FROM orgseed_meta WHERE key = 'store_version'").fetchone()
    fts = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'fts\\_%' ESCAPE '\\'")}
    assert {"fts_Product2", "fts_Knowledge__kav", "fts_Case"} <= fts
    assert "fts_OrderItem" not in fts  # no text fields: not searchable
    conn.close()


def _indexed(conn: sqlite3.Connection, table: str) -> set[str]:
    """The columns of `table` that an index begins with."""
    return {
        conn.execute(f'PRAGMA index_info("{name}")').fetchone()[2]
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=?", (table,)
        )
    }


def test_system_fields_with_one_value_in_every_record_are_not_indexed(bundle: Path) -> None:
    """The creators of an object without an OwnerId are all the API user, and the system dates of an object
    without dates of its own all the go-live: such columns get no index; the others keep theirs."""
    from orgs.local.computed import constant_fields, local_model

    conn = sqlite3.connect(Store.open(bundle).path)
    creators = {"CreatedById", "LastModifiedById"}
    dates = {"CreatedDate", "LastModifiedDate", "SystemModstamp"}
    expected_unindexed = {
        "Case": set(),  # owned, dated
        "Order": creators,  # no owner, dated (EffectiveDate)
        "Contact": dates,  # owned, no dates
        "OrderItem": creators | dates,
    }
    for table, unindexed in expected_unindexed.items():
        indexed = _indexed(conn, table)
        assert not unindexed & indexed, table
        assert (creators | dates) - unindexed <= indexed, table
    for spec in local_model(load_model()):  # what constant_fields names does hold a single value here
        for name in constant_fields(spec):
            distinct = conn.execute(f'SELECT COUNT(DISTINCT "{name}") FROM "{spec.name}"').fetchone()[0]
            assert distinct <= 1, (spec.name, name)
    conn.close()


def test_store_is_read_only(bundle: Path) -> None:
    store = Store.open(bundle)
    with pytest.raises(sqlite3.OperationalError):
        store.connection().execute('DELETE FROM "Case"')


def test_default_today_comes_from_the_profile(bundle: Path) -> None:
    org = LocalOrg(bundle)
    assert org.today == date(2024, 6, 1)  # small.toml extends crmarena: the span ends 2024-05-31
    assert "profile" in org.today_source
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["profile"]["path"] = "/nowhere/gone.toml"
    manifest["profile"]["name"] = "no-such-profile"
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    from orgs.bundle import Bundle

    # the span's end as the manifest recorded it at build time: the profile need not be found
    assert default_today(Bundle(bundle)) == (date(2024, 6, 1), "profile no-such-profile time.end")
    del manifest["profile"]["end"]
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    day, source = default_today(Bundle(bundle))
    assert source == "latest date in the data"
    assert date(2024, 5, 1) < day <= date(2024, 6, 1)


def test_today_changes_relative_dates(bundle: Path) -> None:
    assert LocalOrg(bundle).query("SELECT COUNT() FROM Case WHERE CreatedDate = TODAY")["totalSize"] == 0
    day = LocalOrg(bundle).query("SELECT CreatedDate FROM Case ORDER BY CreatedDate DESC LIMIT 1")["records"][
        0
    ]
    latest = date.fromisoformat(day["CreatedDate"][:10])
    later = LocalOrg(bundle, today=latest)
    assert later.query("SELECT COUNT() FROM Case WHERE CreatedDate = TODAY")["totalSize"] >= 1


def test_concurrent_readers(bundle: Path) -> None:
    import threading

    org = LocalOrg(bundle)
    results: list[int] = []

    def work() -> None:
        for _ in range(20):
            results.append(org.query("SELECT COUNT() FROM OrderItem")["totalSize"])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 80 and len(set(results)) == 1
    org.close()


def test_a_reader_chooses_whether_its_connections_map_the_file(bundle: Path) -> None:
    """A served org maps MMAP_BYTES of the file; a one-off reader (the build's answer check) maps none, and a
    connection opened before the change keeps what it was opened with."""
    from orgs.local.store import MMAP_BYTES

    served = Store.open(bundle)
    checker = Store.open(bundle)
    unmapped = Store.open(
        bundle, mmap_bytes=0
    )  # as the build's answer check opens it (LocalOrg(mmap_bytes=0))
    try:
        before = checker.connection()
        checker.mmap_bytes = 0
        assert served.connection().execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
        assert before.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
        # a connection of another thread is opened with the new setting
        import threading

        seen: list[int] = []
        t = threading.Thread(
            target=lambda: seen.append(checker.connection().execute("PRAGMA mmap_size").fetchone()[0])
        )
        t.start()
        t.join()
        assert seen == [0]
        assert unmapped.connection().execute("PRAGMA mmap_size").fetchone()[0] == 0
    finally:
        served.close()
        checker.close()
        unmapped.close()


# The SOQL of CRMArena's three window tools (reference crmarena.md §9), as orgs/crmarena_tools.py sends it.
WINDOW_QUERIES = [
    "SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= {s} AND CreatedDate <= {e} "
    "AND Field__c = 'Owner Assignment'",
    "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND CreatedDate >= {s} "
    "AND CreatedDate <= {e} GROUP BY CaseId__c HAVING COUNT(Id) = 1",
    "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
    "AND OldValue__c != NULL AND CreatedDate >= {s} AND CreatedDate <= {e}",
]
WINDOWS = [
    ("2019-01-01T00:00:00Z", "2030-01-01T00:00:00Z"),
    ("2020-01-01T00:00:00Z", "2020-07-01T00:00:00Z"),
    ("2021-03-01T00:00:00Z", "2021-04-01T00:00:00Z"),
]


def _all_records(org: LocalOrg, soql: str) -> list[dict[str, object]]:
    page = org.query(soql)
    records = list(page["records"])
    while not page["done"]:
        page = org.query_more(page["nextRecordsUrl"].rsplit("/", 1)[1])
        records += page["records"]
    return records


def test_window_tools_are_answered_from_the_covering_index(bundle: Path) -> None:
    """The window tools' SQL reads CaseHistory__c's covering index alone, and answers exactly what the same
    store answers once that index is dropped (the plain one-column indexes and the table)."""
    org = LocalOrg(bundle)
    conn = org.store.connection()
    with_index = {}
    for q in WINDOW_QUERIES:
        for s, e in WINDOWS:
            soql = q.format(s=s, e=e)
            plan = org.plan(soql)
            steps = " | ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + plan.sql, plan.params))
            assert "USING COVERING INDEX cx_CaseHistory__c" in steps, steps
            with_index[soql] = _all_records(org, soql)
    assert any(len(v) > 1 for v in with_index.values())  # the windows are not all empty
    org.close()
    writable = sqlite3.connect(bundle / STORE_FILE)
    names = [
        n
        for (n,) in writable.execute(
            "SELECT name FROM sqlite_master WHERE type='index' AND name LIKE 'cx\\_%' ESCAPE '\\'"
        )
    ]
    assert names
    for n in names:
        writable.execute(f'DROP INDEX "{n}"')
    writable.commit()
    writable.close()
    plain = LocalOrg(bundle)
    assert not plain.store.info.rebuilt
    for soql, records in with_index.items():
        assert _all_records(plain, soql) == records, soql
    plain.close()


def test_page_cache_per_connection_is_the_callers(bundle: Path) -> None:
    """A served org keeps SQLite's 64 MiB page cache per connection; the build's in-process answer check asks
    for a small one (flows/answer_check.py CHECK_CACHE_KIB), and each connection it opens has exactly that."""
    from flows.answer_check import CHECK_CACHE_KIB

    served = LocalOrg(bundle)
    check = LocalOrg(bundle, mmap_bytes=0, cache_kib=CHECK_CACHE_KIB)
    try:
        assert served.store.connection().execute("PRAGMA cache_size").fetchone()[0] == -65_536
        conn = check.store.connection()
        assert conn.execute("PRAGMA cache_size").fetchone()[0] == -CHECK_CACHE_KIB
        assert conn.execute("PRAGMA mmap_size").fetchone()[0] == 0
        assert CHECK_CACHE_KIB < 65_536
    finally:
        served.close()
        check.close()


def test_full_text_index_holds_the_search_tokens_of_the_stored_texts(bundle: Path) -> None:
    """Every token the FTS index holds (read back through fts5vocab, which reads the index itself) is, in
    order, a token of the stored value per Salesforce's rule (`search_tokens`: letters and digits split),
    for every record and text field of every object: nothing missing, moved or extra."""
    from orgs.local.computed import local_model
    from orgs.local.store import searchable_fields
    from orgs.local.text import search_tokens

    store = Store.open(bundle)
    conn = sqlite3.connect(":memory:")
    conn.execute(f"ATTACH 'file:{store.path}?mode=ro' AS s")
    checked = 0
    for spec in local_model(load_model()):
        fields = [f.name for f in searchable_fields(spec)]
        if not fields:
            continue
        conn.execute(
            f'CREATE VIRTUAL TABLE temp."v_{spec.name}" USING fts5vocab(s, "fts_{spec.name}", instance)'
        )
        indexed: dict[tuple[int, int], list[str]] = {}
        rows = conn.execute(
            f'SELECT doc, col, offset, term FROM temp."v_{spec.name}" ORDER BY doc, col, offset'
        )
        for doc, col, offset, term in rows:
            tokens = indexed.setdefault((doc, fields.index(col)), [])
            assert offset == len(tokens), (spec.name, doc, col)
            tokens.append(term)
        cols = ", ".join(f'"{f}"' for f in fields)
        folded: set[tuple[int, int]] = set()
        for rowid, *values in conn.execute(f'SELECT rowid, {cols} FROM s."{spec.name}"'):
            for i, value in enumerate(values):
                expected = search_tokens(value) if value else []
                if value is not None and not value.isascii():
                    assert len(indexed.get((rowid, i), [])) == len(expected)  # diacritics folded by FTS5
                    folded.add((rowid, i))
                    continue
                assert indexed.pop((rowid, i), []) == expected, (spec.name, rowid, fields[i], value)
                checked += 1
        # nothing indexed for a record or field the table does not hold
        assert set(indexed) <= folded, (spec.name, sorted(set(indexed) - folded)[:5])
    assert checked > 1000


def _dump(path: Path) -> dict[str, Any]:
    """Every object table's rows in rowid order, its full-text index's (term, doc, column, offset) rows, the
    planner's statistics and each table's indexes in the order the planner meets them: what a query can see of
    a store."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [
            r[0]
            for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
            if not r[0].startswith(("fts_", "sqlite_", "orgseed_"))
        ]
        out: dict[str, Any] = {}
        for t in tables:
            out[t] = conn.execute(f'SELECT rowid, * FROM "{t}" ORDER BY rowid').fetchall()
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (f"fts_{t}",)).fetchone():
                conn.execute(f'CREATE VIRTUAL TABLE temp."v_{t}" USING fts5vocab(main, "fts_{t}", instance)')
                out[f"fts_{t}"] = conn.execute(
                    f'SELECT term, doc, col, offset FROM temp."v_{t}" ORDER BY term, doc, col, offset'
                ).fetchall()
        out["stats"] = sorted(conn.execute("SELECT tbl, idx, stat FROM sqlite_stat1").fetchall())
        out["indexes"] = sorted(
            conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'").fetchall()
        )
        by_table: dict[str, list[str]] = {}
        for table, index in conn.execute(
            "SELECT tbl_name, name FROM sqlite_master WHERE type = 'index' ORDER BY rowid"
        ):
            by_table.setdefault(table, []).append(index)
        out["index_order"] = by_table
        meta = dict(conn.execute("SELECT key, value FROM orgseed_meta").fetchall())
        meta.pop("built")
        out["meta"] = meta
        return out
    finally:
        conn.close()


def test_built_an_object_at_a_time_in_any_order_it_is_the_same_store(bundle: Path, tmp_path: Path) -> None:
    """StoreBuilder (the sidecar loads objects as a build writes them): objects loaded in reverse order, one of
    them twice, then finished, give the store `ensure_store` builds in the model's order: the same rows,
    index, statistics and meta."""
    from orgs.bundle import Bundle
    from orgs.local.computed import local_model
    from orgs.local.store import StoreBuilder, org_facts

    whole = _dump(Store.open(bundle).path)
    (bundle / STORE_FILE).unlink()
    model = local_model(load_model())
    b = Bundle(bundle)
    builder = StoreBuilder(b, model)
    facts = org_facts(b, model)
    names = [s.name for s in model]
    for name in reversed(names[1:]):  # the first object is left for `finish`
        builder.load(name, facts)
    builder.load(names[-1], facts)
    assert not (bundle / STORE_FILE).exists()  # nothing in place before it is finished
    builder.finish()
    assert _dump(bundle / STORE_FILE) == whole
    assert not Store.open(bundle).info.rebuilt  # its meta is what an up-to-date store records


def test_objects_loaded_before_the_api_user_is_known_are_the_same_once_settled(
    bundle: Path, tmp_path: Path
) -> None:
    """A build writes the User after other objects: loaded without the API user (its records without an owner
    take NULL for it, and the indexes from the first on such a field wait), then settled once the User is
    known, they are what a store built with it holds. An object settled by `finish` alone is too."""
    from orgs.bundle import Bundle
    from orgs.local.computed import OrgFacts, local_model
    from orgs.local.store import StoreBuilder, org_facts

    whole = _dump(Store.open(bundle).path)
    model = local_model(load_model())
    b = Bundle(bundle)
    facts = org_facts(b, model)
    assert facts.api_user is not None
    early = OrgFacts(facts.go_live, None)
    names = [s.name for s in model if s.name != "User"]
    for settle_in_finish in (False, True):
        (bundle / STORE_FILE).unlink()
        builder = StoreBuilder(b, model)
        for name in names:
            builder.load(name, early, api_user_later=True)
        conn = builder.conn
        assert conn is not None
        # before it is settled: NULL where the API user goes, and no index on those fields yet
        assert conn.execute('SELECT COUNT(*) FROM "Account" WHERE CreatedById IS NULL').fetchone()[0] > 0
        assert not conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'Contact' AND sql LIKE '%CreatedById%'"
        ).fetchall()
        if not settle_in_finish:
            builder.settle(facts.api_user)
        builder.load("User", facts)
        builder.finish()
        assert _dump(bundle / STORE_FILE) == whole
        assert not Store.open(bundle).info.rebuilt


def test_an_object_changed_after_it_was_loaded_is_loaded_again(bundle: Path) -> None:
    from orgs.bundle import Bundle
    from orgs.local.computed import local_model
    from orgs.local.store import StoreBuilder, org_facts

    model = local_model(load_model())
    b = Bundle(bundle)
    builder = StoreBuilder(b, model)
    builder.load("Issue__c", org_facts(b, model))
    path = bundle / "data" / "Issue__c.csv"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")  # drop the last issue after it was loaded
    builder.finish()
    store = Store.open(bundle)
    assert not store.info.rebuilt
    count = store.connection().execute('SELECT COUNT(*) FROM "Issue__c"').fetchone()[0]
    assert count == len(lines) - 2  # the header and the issue dropped


def test_an_abandoned_build_leaves_nothing(bundle: Path) -> None:
    from orgs.bundle import Bundle
    from orgs.local.computed import local_model
    from orgs.local.store import StoreBuilder, org_facts

    model = local_model(load_model())
    b = Bundle(bundle)
    builder = StoreBuilder(b, model)
    builder.load("Account", org_facts(b, model))
    builder.abandon()
    assert sorted(p.name for p in bundle.iterdir() if p.name.startswith(STORE_FILE)) == []
    with pytest.raises(RuntimeError, match="finished or abandoned"):
        builder.load("Contact", org_facts(b, model))
