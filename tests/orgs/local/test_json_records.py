"""Query pages written as JSON straight from the SQL rows (records.JsonRecords, LocalOrg.query_json) give the
bytes the dict path gives (orjson over `RecordBuilder.many` / `LocalOrg.query`), for every shape: a
Hypothesis property over generated field lists and rows, a hand-written golden record, and the served org's
pages (first pages and nextRecordsUrl pages) for the CRMArena tools and shapes the fast path leaves to the
dict path."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orgs.local.engine import LocalOrg
from orgs.local.records import JsonRecords, RecordBuilder
from orgs.local.serve import LocalServer
from orgs.local.soql.plan import AggColumn, FieldOut, ParentOut, Plan

BASE = "/services/data/v59.0/sobjects/"
# what orjson escapes (or refuses) inside a string: quote, backslash, C0 controls, lone surrogates
ESCAPED = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')

keys = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,12}(__c)?", fullmatch=True)
texts = st.one_of(
    st.text(max_size=12),  # any unicode but surrogates
    st.text(alphabet=st.characters(codec=None, categories=None), max_size=6),  # surrogates, controls too
    st.sampled_from(["", "a", 'say "hi"', "back\\slash", "line\nbreak", "tab\t", "é", "😀", "\u2028", "%s"]),
    st.from_regex(r"[0-9A-Za-z]{18}", fullmatch=True),
    st.just("2024-03-01T10:00:00.000+0000"),
)
values = st.one_of(
    st.none(),
    texts,
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def shapes(draw: Any) -> tuple[list[Any], int, list[tuple[Any, ...]]]:
    """(items, id column, rows): a record shape over SQL rows whose column 0 is the id."""
    names = draw(st.lists(keys, min_size=1, max_size=5, unique_by=str.lower))
    items: list[Any] = []
    col = 1
    for name in names:
        kind = draw(st.sampled_from(["field", "field", "field", "boolean", "parent"]))
        if kind == "parent":
            items.append(ParentOut(name + "__r", "Account", col, (FieldOut("Name", col + 1),)))
            col += 2
        else:
            items.append(FieldOut(name, col, boolean=kind == "boolean"))
            col += 1
    plain = draw(st.booleans())  # half the examples: text and nulls only, the fast path's ground
    cell = st.one_of(st.none(), texts) if plain else values
    ids = st.from_regex(r"[0-9A-Za-z]{18}", fullmatch=True) if plain else st.one_of(texts, st.none())
    rows = draw(
        st.lists(st.tuples(ids, *[cell] * (col - 1)), max_size=8),
    )
    return items, 0, rows


def _dict_path(builder: RecordBuilder, rows: list[tuple[Any, ...]]) -> bytes | type[Exception]:
    try:
        return orjson.dumps(builder.many(rows))
    except (TypeError, orjson.JSONEncodeError) as exc:
        return type(exc)


def _writable(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not ESCAPED.search(value))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes(), st.sampled_from(["CaseHistory__c", "Case", 'Odd"Name%s']))
def test_fast_records_are_the_dict_paths_bytes(shape: Any, sobject: str) -> None:
    items, id_col, rows = shape
    builder = RecordBuilder(tuple(items), sobject, id_col, BASE, {})
    plain = all(isinstance(it, FieldOut) and not it.boolean for it in items)
    assert (builder.json is not None) == plain
    if builder.json is None:
        return
    text = builder.json.encode(rows)
    expected = _dict_path(builder, rows)
    if text is not None:
        assert ("[" + text + "]").encode() == expected
    # every page of ids and verbatim text or nulls is written by the fast path (it is not silently unused)
    if all(isinstance(r[id_col], str) and all(_writable(v) for v in r) for r in rows):
        assert text is not None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(keys, st.booleans()), min_size=1, max_size=4, unique_by=lambda kb: kb[0].lower()),
    st.data(),
)
def test_fast_aggregate_records_are_the_dict_paths_bytes(columns: list[tuple[str, bool]], data: Any) -> None:
    cols = tuple(AggColumn(k, i, boolean=b) for i, (k, b) in enumerate(columns))
    plan = Plan("aggregate", "Case", "", {}, columns=cols)
    rows = data.draw(st.lists(st.tuples(*[values] * len(cols)), max_size=6))
    writer = JsonRecords.for_aggregate(cols)
    assert (writer is None) == any(b for _, b in columns)
    if writer is None:
        return
    text = writer.encode(rows)
    expected = orjson.dumps([LocalOrg.aggregate_record(plan, r) for r in rows])
    if text is not None:
        assert ("[" + text + "]").encode() == expected
    if all(_writable(v) for r in rows for v in r):
        assert text is not None


def test_golden_record() -> None:
    """One record written out by hand from Salesforce's REST shape."""
    items = (FieldOut("NewValue__c", 1), FieldOut("CreatedDate", 2))
    builder = RecordBuilder(items, "CaseHistory__c", 0, BASE, {})
    assert builder.json is not None
    rows = [("a1N000000000001AAA", "005000000000001AAA", "2024-03-01T10:00:00.000+0000"), ("a1N2", None, "é")]
    assert builder.json.encode(rows) == (
        '{"attributes":{"type":"CaseHistory__c","url":"/services/data/v59.0/sobjects/CaseHistory__c/'
        'a1N000000000001AAA"},"NewValue__c":"005000000000001AAA","CreatedDate":"2024-03-01T10:00:00.000+0000"},'
        '{"attributes":{"type":"CaseHistory__c","url":"/services/data/v59.0/sobjects/CaseHistory__c/a1N2"},'
        '"NewValue__c":null,"CreatedDate":"é"}'
    )
    assert builder.json.encode([("a1N3", 'say "hi"', "x")]) is None  # escaped: left to the dict path
    assert builder.json.encode([("a1N3", 7, "x")]) is None  # a number: left to the dict path


# The SOQL of CRMArena's tools (reference crmarena.md §9) and shapes the fast path leaves to the dict path
QUERIES = [
    "SELECT NewValue__c, CreatedDate FROM CaseHistory__c WHERE CreatedDate >= 2019-01-01T00:00:00Z "
    "AND CreatedDate <= 2030-01-01T00:00:00Z AND Field__c = 'Owner Assignment'",
    "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' AND CreatedDate >= "
    "2019-01-01T00:00:00Z AND CreatedDate <= 2030-01-01T00:00:00Z GROUP BY CaseId__c HAVING COUNT(Id) = 1",
    "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
    "AND OldValue__c != NULL AND CreatedDate >= 2019-01-01T00:00:00Z AND CreatedDate <= 2030-01-01T00:00:00Z",
    "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE CreatedDate >= 2019-01-01T00:00:00Z",
    "SELECT Id FROM OrderItem",
    "SELECT Id, Name FROM Issue__c",
    "SELECT IssueId__c, COUNT(Id) IssueCount FROM Case GROUP BY IssueId__c ORDER BY COUNT(Id) DESC",
    "SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage LIMIT 300",
    "SELECT Id, Subject, Description, Account.Name FROM Case LIMIT 300",
    "SELECT Id, Name, (SELECT Id, LastName FROM Contacts) FROM Account LIMIT 50",
    "SELECT Id, IsClosed, Status FROM Case LIMIT 300",
    "SELECT Id, UnitPrice, Quantity FROM OrderItem LIMIT 300",
    "SELECT COUNT() FROM Case",
    "SELECT Id FROM Case WHERE Id = '000000000000000AAA'",
]
_LOCATOR = re.compile(
    rb'"nextRecordsUrl":"(/services/data/v[0-9.]+/(?:query|queryAll)/)(01g[A-Za-z0-9]{15})-'
)


def _pages(org: LocalOrg, soql: str, fast: bool, batch: int | None) -> list[bytes]:
    """Every page of `soql` as JSON bytes, by `query_json`/`query_more_json` (fast) or orjson over
    `query`/`query_more`; cursor ids (random) replaced by a fixed one."""
    first = org.query_json(soql, batch=batch) if fast else orjson.dumps(org.query(soql, batch=batch))
    pages = [first]
    while m := _LOCATOR.search(pages[-1]):
        locator = pages[-1][m.end(1) :].split(b'"', 1)[0].decode()
        nxt = org.query_more_json(locator) if fast else orjson.dumps(org.query_more(locator))
        pages.append(nxt)
    return [_LOCATOR.sub(rb'"nextRecordsUrl":"\1CURSOR-', p) for p in pages]


@pytest.mark.parametrize("soql", QUERIES)
@pytest.mark.parametrize("batch", [None, 200])
def test_served_pages_are_the_dict_paths_bytes(server: LocalServer, soql: str, batch: int | None) -> None:
    org = server.org
    fast = _pages(org, soql, True, batch)
    assert fast == _pages(org, soql, False, batch)
    records = sum(len(orjson.loads(p)["records"]) for p in fast)
    assert records == (0 if "COUNT()" in soql else orjson.loads(fast[0])["totalSize"])


def test_the_window_tools_take_the_fast_path(server: LocalServer) -> None:
    """The CRMArena window tools' pages are written by JsonRecords (so the property above covers them)."""
    org = server.org
    for soql in QUERIES[:3]:
        plan, rows = org.run_soql(soql)
        assert rows
        if plan.kind == "aggregate":
            writer = org.builders.aggregate(plan.columns)
            assert writer is not None and writer.encode(rows) is not None
        else:
            assert plan.shape is not None
            assert org.shape_json(rows[:2000], plan.shape, "59.0") is not None
