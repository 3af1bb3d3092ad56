"""The build's SOQL answer check in process (the org's engine called directly) gives what HTTP gives."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flows.answer_check import check_answers_through_the_org, check_in_process, http_sample
from flows.build import TaskCheckFailed, check_tasks_through_the_org
from orgs.crmarena_tools import Connector
from orgs.local import connect, disconnect
from orgs.local.engine import LocalOrg
from orgs.local.inprocess import InProcessClient
from tests.conftest import copy_bundle
from validators.tasks_soql import check_tasks_via_api


def test_in_process_and_http_give_identical_outcomes_on_the_default_org(default_bundle: Path) -> None:
    local = check_in_process(default_bundle)
    same_chunks = check_tasks_via_api(default_bundle, InProcessClient(LocalOrg(default_bundle)))
    try:
        remote = check_tasks_via_api(default_bundle, connect(default_bundle))
    finally:
        disconnect(default_bundle)
    assert local.instances == remote.instances == 1170
    assert len(local.outcomes) == 1170
    assert local.outcomes == remote.outcomes == same_chunks.outcomes
    assert same_chunks.queries == remote.queries  # the same questions asked, only the transport differs
    assert local.disagreements == remote.disagreements == []
    # in process, id lists go 2,000 to a query instead of 150: the same rows in fewer queries
    assert 0 < local.queries < remote.queries


QUERIES = [
    "SELECT Id, OrderId, Order.EffectiveDate, UnitPrice FROM OrderItem ORDER BY Id",  # > a page of 2,000
    "SELECT COUNT() FROM Case",
    "SELECT OwnerId, COUNT(Id) n FROM Case GROUP BY OwnerId ORDER BY OwnerId",
    "SELECT Id, (SELECT Id FROM Cases) FROM Account ORDER BY Id LIMIT 5",
    "SELECT Nope FROM Case",  # refused: INVALID_FIELD
    "SELECT Id FROM Case WHERE",  # refused: MALFORMED_QUERY
    "FIND {Case} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title)",
    "FIND {x RETURNING Case",  # refused search
]


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_answers_the_same_in_process_and_over_http(default_bundle: Path, query: str) -> None:
    org = LocalOrg(default_bundle)
    try:
        here = Connector(InProcessClient(org)).run_query(query)
        there = Connector(connect(default_bundle)).run_query(query)
    finally:
        org.close()
    assert here == there
    value, status = here
    if status:
        assert isinstance(value, list)
    else:
        assert isinstance(value, str) and value.split(":")[0].isupper()


def test_paging_in_process_returns_every_row_once(default_bundle: Path) -> None:
    org = LocalOrg(default_bundle)
    try:
        client = InProcessClient(org)
        first = client.query("SELECT Id FROM OrderItem")
        whole = client.query_all("SELECT Id FROM OrderItem")
    finally:
        org.close()
    items = json.loads((default_bundle / "manifest.json").read_text())["counts"]["OrderItem"]
    assert not first["done"] and len(first["records"]) == 2000 < items
    ids = [r["Id"] for r in whole["records"]]
    assert whole["totalSize"] == len(ids) == len(set(ids)) == items


def test_two_workers_give_the_verdicts_of_one(tmp_path: Path, small_bundle: Path) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    path = root / "tasks" / "ground_truth.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    # two wrong answers in different tasks (so in different workers' parts)
    wrong = {}
    for task in ("handle_time", "top_issue_identification"):
        g = next(r for r in rows if r["task"] == task and r["answer"] is not None)
        g["answer"] = "not-an-answer"
        wrong[g["idx"]] = task
    path.write_text("".join(json.dumps(g) + "\n" for g in rows))
    one = check_answers_through_the_org(root, workers=1)
    two = check_answers_through_the_org(root, workers=2)
    assert (one.workers, two.workers) == (1, 2)
    assert [d.idx for d in one.disagreements] == [d.idx for d in two.disagreements] == sorted(wrong)
    assert [d.message for d in one.disagreements] == [d.message for d in two.disagreements]
    assert one.mismatches == two.mismatches == []
    assert one.http_sample == two.http_sample and len(one.http_sample) >= 10
    with pytest.raises(TaskCheckFailed) as caught:
        check_tasks_through_the_org(root, workers=2)
    assert caught.value.disagreements >= 2
    assert all(f"idx {i} ({task})" in str(caught.value) for i, task in wrong.items())


@given(st.sets(st.integers(min_value=0, max_value=100_000), max_size=400))
def test_the_http_sample_is_five_percent_at_least_ten_and_stable(idxs: set[int]) -> None:
    ordered = sorted(idxs)
    sample = http_sample(ordered)
    assert len(sample) == min(len(ordered), max(10, math.ceil(0.05 * len(ordered))))
    assert sample == sorted(set(sample)) and set(sample) <= idxs
    assert http_sample(list(reversed(ordered))) == sample  # the order given does not matter


def _typed(value: object) -> object:
    """`value` with the type of every node beside it (== alone takes True for 1 and 1.0 for 1)."""
    if isinstance(value, dict):
        return ("dict", [(type(k).__name__, k, _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()  # NaN and the infinities included: JSON gives them back as null
    | st.text()
    | st.dates()
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=30,
)


@given(_VALUES)
def test_the_in_process_client_decodes_what_orjson_gives_back(value: object) -> None:
    """What the client hands over is what a JSON round trip through the server's encoder gives, types and
    key order included, whether or not it takes the round trip."""
    import orjson

    from orgs.local.inprocess import _decoded

    try:
        expected = orjson.loads(orjson.dumps(value))
    except (TypeError, orjson.JSONEncodeError):
        return  # unencodable (a lone surrogate): the server would fail the same way
    assert _typed(_decoded(value)) == _typed(expected)


BARE_QUERIES = [
    *QUERIES[:4],
    "SELECT Id, Incoming, MessageDate FROM EmailMessage ORDER BY Id LIMIT 300",  # booleans
    "SELECT Id, IssueId__c, OrderItemId__r.Order.EffectiveDate FROM Case ORDER BY Id LIMIT 300",  # parents
    "SELECT Id, UnitPrice, Quantity FROM OrderItem LIMIT 300",  # floats: checked by value
    "SELECT Status, MAX(CreatedDate) latest FROM Case GROUP BY Status",
    "SELECT Id FROM Case WHERE Id = '500000000000000AAA'",  # no rows
]


@pytest.mark.parametrize("query", BARE_QUERIES)
def test_bare_records_are_query_alls_records_less_their_attributes(default_bundle: Path, query: str) -> None:
    """The in-process shortcut the answer check reads through (`bare_records`) against the paged REST
    shapes: the same records, key order and types, only the top-level `attributes` gone."""
    org = LocalOrg(default_bundle)
    try:
        client = InProcessClient(org)
        paged = client.query_all(query)["records"]
        bare = client.bare_records(query)
    finally:
        org.close()
    expected = [{k: v for k, v in r.items() if k != "attributes"} for r in paged]
    assert bare == expected
    assert [list(r) for r in bare] == [list(r) for r in expected]  # key order
    assert [[type(v) for v in r.values()] for r in bare] == [[type(v) for v in r.values()] for r in expected]
    assert all("attributes" in r for r in paged)


def test_bare_records_of_a_refused_query_raise_the_orgs_error(default_bundle: Path) -> None:
    org = LocalOrg(default_bundle)
    try:
        with pytest.raises(Exception) as caught:
            InProcessClient(org).bare_records("SELECT Nope FROM Case")
    finally:
        org.close()
    assert caught.value.content[0]["errorCode"] == "INVALID_FIELD"  # type: ignore[attr-defined]


def test_the_http_sample_reads_the_store_as_the_in_process_check_does(
    small_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the served org of the build's HTTP sample maps no pages of the store and keeps a small page cache (a
    # served org's mapped pages were ~200 MB of the building process at scale 100); its outcomes are the
    # in-process check's, over a real HTTPS socket
    from flows.answer_check import CHECK_CACHE_KIB, check_over_http
    from orgs.local.store import Store

    opened: list[tuple[int, int]] = []  # each connection's mapped bytes and cache size, as the queries ask
    connection = Store.connection

    def recording(self: Store) -> Any:
        conn = connection(self)
        mapped = conn.execute("PRAGMA mmap_size").fetchone()[0]
        cache = conn.execute("PRAGMA cache_size").fetchone()[0]
        opened.append((int(mapped), int(cache)))
        return conn

    monkeypatch.setattr(Store, "connection", recording)
    lines = [json.loads(x) for x in (small_bundle / "tasks/ground_truth.jsonl").read_text().splitlines()]
    sample = http_sample([int(g["idx"]) for g in lines])
    seconds: dict[str, float] = {}
    got = check_over_http(small_bundle, sample, seconds)
    assert opened and set(opened) == {(0, -CHECK_CACHE_KIB)}
    monkeypatch.setattr(Store, "connection", connection)
    local = check_in_process(small_bundle)
    assert got.idxs == sample and got.check.outcomes == {i: local.outcomes[i] for i in sample}
    assert "http_sample" in seconds
