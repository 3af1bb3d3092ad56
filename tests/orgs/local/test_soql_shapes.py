"""Plans by query shape (orgs/local/soql/shapes.py): a query whose shape was met before gets, through
`LocalOrg.plan`, exactly the plan (or the error) compiling it alone gives, whatever its ids, lists of ids,
dates and datetimes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orgs.local.engine import LocalOrg
from orgs.local.soql import compile_soql
from orgs.local.soql.errors import SoqlError
from orgs.local.soql.shapes import ShapePlan, shape_of


@pytest.fixture(scope="module")
def org(default_bundle: Path) -> Iterator[LocalOrg]:
    org = LocalOrg(default_bundle)
    yield org
    org.close()


# {id}: a quoted id; {ids}: a list of quoted ids; {dt}: a datetime literal; {d}: a date literal
SHAPES = [
    "SELECT Id, Subject FROM Case WHERE Id = {id}",
    "SELECT OwnerId, CreatedDate FROM Case WHERE CreatedDate >= {dt} AND CreatedDate < {dt} AND "
    "OwnerId IN ({ids}) AND Status = 'Closed'",
    "SELECT IssueId__c, COUNT(Id) n FROM Case WHERE OrderItemId__c IN ({ids}) AND CreatedDate <= {dt} "
    "GROUP BY IssueId__c ORDER BY COUNT(Id) DESC",
    "SELECT Product2Id FROM OrderItem WHERE OrderItem.Order.AccountId = {id} AND "
    "OrderItem.Order.EffectiveDate = {d} AND Product2Id IN ({ids})",
    "SELECT Id FROM Case WHERE Subject = {id} OR Subject LIKE {id} OR Subject != {id}",
    "SELECT Id FROM Case WHERE Id NOT IN ({ids}, null) AND OwnerId IN ({ids}, 'x')",
    "SELECT Id FROM Case WHERE Id IN (SELECT CaseId__c FROM CaseHistory__c WHERE CreatedDate > {dt}) "
    "AND ClosedDate != {dt}",
    "SELECT Id, (SELECT Id FROM Cases WHERE CreatedDate > {dt}) FROM Account WHERE Id = {id}",
    "SELECT Id FROM Case WHERE CreatedDate IN ({dt}, {dt}) OR NOT (CreatedDate = {dt})",
    "SELECT CALENDAR_MONTH(CreatedDate) m, MAX(CreatedDate) FROM Case WHERE AccountId = {id} "
    "GROUP BY CALENDAR_MONTH(CreatedDate) HAVING MAX(CreatedDate) > {dt}",
    "SELECT Id FROM Case WHERE ClosedDate = {d}",  # a date for a datetime field: refused
    "SELECT Id FROM Case WHERE Subject = {dt}",  # refused
    "SELECT Id FROM Case WHERE Id = {id} LIMIT 5 OFFSET 1",
]

_ID_CHARS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ID = st.one_of(
    st.text(alphabet=_ID_CHARS, min_size=18, max_size=18),  # lifted
    st.text(alphabet=_ID_CHARS, min_size=15, max_size=15),  # written into the shape
    st.sampled_from(["bad!", "a\\'b", "x" * 18]),
)
_DT = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2030, 1, 1))
_ZONE = st.sampled_from(["Z", "+02:00", "-0530"])


def _dt(value: datetime, zone: str) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S") + zone


def _fill(template: str, ids: list[str], lists: list[list[str]], dts: list[str], ds: list[str]) -> str:
    out = template
    for n, slot in enumerate(("{id}", "{ids}", "{dt}", "{d}")):
        values = (ids, [", ".join(f"'{i}'" for i in ids_) for ids_ in lists], dts, ds)[n]
        k = 0
        while slot in out:
            v = values[k % len(values)]
            out = out.replace(slot, v if n else f"'{v}'", 1)
            k += 1
    return out


def _outcome(fn: Any, soql: str) -> Any:
    try:
        return fn(soql)
    except SoqlError as exc:
        return (type(exc).__name__, str(exc))


_QUERY = st.builds(
    _fill,
    st.sampled_from(SHAPES),
    st.lists(_ID, min_size=1, max_size=3),
    st.lists(st.lists(_ID, min_size=1, max_size=80), min_size=1, max_size=2),
    st.lists(st.builds(_dt, _DT, _ZONE), min_size=1, max_size=3),
    st.lists(st.dates().map(str), min_size=1, max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_QUERY, min_size=2, max_size=6))
def test_a_query_gets_the_plan_compiling_it_alone_gives(org: LocalOrg, queries: list[str]) -> None:
    """Queries of a few shapes, through one org (so most meet a shape learned from another query): each
    gets the plan, or the error, `compile_soql` gives it (its ids, id lists, dates and datetimes bound)."""
    for soql in queries:
        alone = _outcome(lambda q: compile_soql(q, org.model, org.today), soql)
        assert _outcome(org.plan, soql) == alone, soql


def test_the_answer_checks_shapes_are_bound_not_compiled(org: LocalOrg) -> None:
    """The shapes of CRMArena's window and id-list tools are learned from their first query."""
    start = datetime(2023, 1, 1, tzinfo=UTC)
    for shape in SHAPES[:4]:
        queries = [
            _fill(
                shape,
                [f"{n:03d}A{k:014d}" for k in range(3)],
                [[f"{n:03d}B{k:014d}" for k in range(50)]],
                [_dt(start + timedelta(days=n * 3 + k), "Z") for k in range(2)],
                [str(start.date())],
            )
            for n in range(3)
        ]
        first = shape_of(queries[0])
        assert first is not None
        learned = ShapePlan.learn(queries[0], first, org.plan(queries[0]), org.model, org.today)
        assert learned is not None, shape
        for soql in queries[1:]:
            other = shape_of(soql)
            assert other is not None and other.key == first.key
            assert learned.bind(other.lifted) == compile_soql(soql, org.model, org.today)


def test_a_shape_with_a_parent_to_child_subquery_is_not_learned(org: LocalOrg) -> None:
    """Its child plan holds the parameters too: such queries are compiled one by one."""
    soql = (
        "SELECT Id, (SELECT Id FROM Cases WHERE CreatedDate > 2023-01-01T00:00:00Z) FROM Account "
        "WHERE Id = '001000000000000AAA'"
    )
    shape = shape_of(soql)
    assert shape is not None
    assert (
        ShapePlan.learn(soql, shape, compile_soql(soql, org.model, org.today), org.model, org.today) is None
    )


def test_a_shape_whose_literals_are_not_whole_parameters_is_not_learned(org: LocalOrg) -> None:
    """Datetimes in a long IN list are one JSON array parameter, not one parameter each."""
    dts = (
        ", ".join(f"2023-01-{d:02d}T00:00:00Z" for d in range(1, 29))
        + ", "
        + ", ".join(f"2023-02-{d:02d}T00:00:00Z" for d in range(1, 29))
    )
    soql = f"SELECT Id FROM Case WHERE CreatedDate IN ({dts})"
    shape = shape_of(soql)
    assert shape is not None and len(shape.lifted) == 56
    assert (
        ShapePlan.learn(soql, shape, compile_soql(soql, org.model, org.today), org.model, org.today) is None
    )


def test_what_is_lifted_and_what_stays_in_the_shape() -> None:
    ids = ", ".join(f"'{k:018d}'" for k in range(40))
    shape = shape_of(
        f"SELECT Id FROM Case WHERE Id IN ({ids}) AND OwnerId = '005000000000000AAA' AND "
        "Subject = 'it\\'s' AND AccountId = '001000000000000' AND CreatedDate > 2024-01-02T03:04:05+01:00 "
        "AND Id IN ('500000000000000AAA', '500000000000000AAB') AND ClosedDate = 2024-05-06 LIMIT 3"
    )
    assert shape is not None
    assert [lit.kind for lit in shape.lifted] == ["r", "i", "t", "d"]
    assert [lit.bound for lit in shape.lifted][1:] == [
        "005000000000000AAA",
        "2024-01-02T02:04:05.000+0000",
        "2024-05-06",
    ]
    assert shape.lifted[0].bound == "[" + ", ".join(f'"{k:018d}"' for k in range(40)) + "]"
    assert shape.key == (
        "SELECT Id FROM Case WHERE Id IN (\x00r) AND OwnerId = \x00i AND Subject = 'it\\'s' AND "
        "AccountId = '001000000000000' AND CreatedDate > \x00t AND Id IN ('500000000000000AAA', "
        "'500000000000000AAB') AND ClosedDate = \x00d LIMIT 3"
    )
    assert shape_of("SELECT Id FROM Case WHERE Status = 'New'") is None  # nothing to lift
    assert shape_of("SELECT Id FROM Case WHERE Id = '500000000000000AAA' AND #") is None  # refused


def test_a_learned_shape_still_refuses_a_bad_literal(org: LocalOrg) -> None:
    template = "SELECT Id FROM Case WHERE OwnerId = '{}' AND CreatedDate > {}"
    org.plan(template.format("005000000000000AAA", "2023-01-01T00:00:00Z"))
    org.plan(template.format("005000000000000AAB", "2023-01-02T00:00:00Z"))
    with pytest.raises(SoqlError, match="Invalid date"):
        org.plan(template.format("005000000000000AAC", "2023-02-30T00:00:00Z"))
    with pytest.raises(SoqlError, match="Invalid datetime"):
        org.plan(template.format("005000000000000AAC", "2023-02-03T25:00:00Z"))
