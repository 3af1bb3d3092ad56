"""The rules that read a record's case (validators/rules.py `_emails`, `_history`) against a restatement in
plain Python, one record at a time, on small random frames: case ids repeated (the first case of an id is
its case), records pointing at no case, missing and malformed dates, CSV lines shared between rows.

The rules look their rows' cases up without joining every row (`_case_span`) and join only the rows they
report; the restatement finds each record's case by scanning the cases, and says which records fall outside
their case's lifetime and, for history rows, which `Case Creation` and `Case Closed` rows are not at their
case's creation and closing times."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import pandas as pd
from hypothesis import example, given, settings
from hypothesis import strategies as st

from validators import rules

CASE_IDS = ["500A", "500B", "500C"]
SPAN_END = pd.Timestamp("2020-01-03")
T1, T2 = "2020-01-01T00:00:00.000+0000", "2020-01-02T01:00:00.000+0000"


def _when(text: str | None) -> datetime | None:
    """A Salesforce datetime as naive UTC, None when empty or malformed (as the rules parse them)."""
    try:
        return datetime.strptime(text or "", "%Y-%m-%dT%H:%M:%S.%f%z").astimezone(UTC).replace(tzinfo=None)
    except ValueError:
        return None


datetimes = st.one_of(
    st.none(),
    st.just("not a date"),
    st.builds(lambda d, h: f"2020-01-0{d}T0{h}:00:00.000+0000", st.integers(1, 3), st.integers(0, 1)),
)
case_rows = st.lists(
    st.fixed_dictionaries(
        {
            "Id": st.sampled_from(CASE_IDS),
            "CreatedDate": datetimes,
            "ClosedDate": datetimes,
            "Status": st.sampled_from(["Closed", "New"]),
        }
    ),
    max_size=5,
)
history_rows = st.lists(
    st.fixed_dictionaries(
        {
            "CaseId__c": st.sampled_from([*CASE_IDS, "500Z"]),
            "Field__c": st.sampled_from(["Case Creation", "Owner Assignment", "Case Closed"]),
            "CreatedDate": datetimes,
            "_line": st.integers(2, 4),
        }
    ),
    max_size=12,
)


def _cases(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["Id", "CreatedDate", "ClosedDate", "Status"], dtype=object).assign(
        AccountId=None, ContactId=None, OwnerId=None, OrderItemId__c=None, _line=range(2, len(rows) + 2)
    )
    return rules._cases(frame, SPAN_END, rules._Emit())


def _case_of(cases: list[dict[str, Any]], case_id: str) -> dict[str, Any] | None:
    return next((c for c in cases if c["Id"] == case_id), None)


def _lifetime(case: dict[str, Any]) -> tuple[datetime | None, datetime | None]:
    created = _when(case["CreatedDate"])
    closed = _when(case["ClosedDate"])
    return created, closed if closed is not None else SPAN_END.to_pydatetime()


def _outside(when: datetime | None, case: dict[str, Any]) -> bool:
    start, end = _lifetime(case)
    return when is not None and ((start is not None and when < start) or (end is not None and when > end))


@settings(max_examples=300, deadline=None)
@given(case_rows, history_rows)
def test_emails_outside_their_case_as_restated(
    cases: list[dict[str, Any]], history: list[dict[str, Any]]
) -> None:
    emails = pd.DataFrame(
        {
            "Id": [f"02s{i}" for i in range(len(history))],
            "ParentId": [h["CaseId__c"] for h in history],
            "MessageDate": [h["CreatedDate"] for h in history],
            "_line": [h["_line"] for h in history],
        },
        dtype=object,
    )
    emit = rules._Emit()
    rules._emails(emails, _cases(cases), emit)
    got = [(f.record, f.message) for f in emit.out]
    want = []
    for i, h in enumerate(history):
        case = _case_of(cases, h["CaseId__c"])
        if case is not None and _outside(_when(h["CreatedDate"]), case):
            want.append(f"02s{i}")
    assert [r for r, _ in got] == want
    for (_record, message), i in zip(got, [int(w[3:]) for w in want], strict=True):
        case = _case_of(cases, history[i]["CaseId__c"])
        assert case is not None
        assert f"its case {case['Id']} lives from {case['CreatedDate']} to " in message, message


@settings(max_examples=300, deadline=None)
@given(case_rows, history_rows)
@example(  # the first creation row by time is at the case's creation; the other, on an earlier line, is not
    [{"Id": "500A", "CreatedDate": T1, "ClosedDate": None, "Status": "New"}],
    [
        {"CaseId__c": "500A", "Field__c": "Case Creation", "CreatedDate": T2, "_line": 2},
        {"CaseId__c": "500A", "Field__c": "Case Creation", "CreatedDate": T1, "_line": 3},
    ],
)
def test_history_rows_against_their_case_as_restated(
    cases: list[dict[str, Any]], history: list[dict[str, Any]]
) -> None:
    hist = pd.DataFrame(
        {
            "Id": [f"a1N{i}" for i in range(len(history))],
            "CaseId__c": [h["CaseId__c"] for h in history],
            "Field__c": [h["Field__c"] for h in history],
            "OldValue__c": None,
            "NewValue__c": [None if h["Field__c"] != "Owner Assignment" else "005A" for h in history],
            "CreatedDate": [h["CreatedDate"] for h in history],
        },
        dtype=object,
    ).assign(_line=[h["_line"] for h in history])
    emit = rules._Emit()
    rules._history(hist, _cases(cases), emit)
    got = {(f.rule, f.record) for f in emit.out if f.object == "CaseHistory__c"}

    # each case's rows in order of time (unparsable last), then line, then their own order
    def order(i: int) -> tuple[Any, ...]:
        when = _when(history[i]["CreatedDate"])
        return (history[i]["CaseId__c"], when is None, when or datetime.min, history[i]["_line"], i)

    rows = sorted((i for i in range(len(history)) if _case_of(cases, history[i]["CaseId__c"])), key=order)
    want: set[tuple[str, str]] = set()
    seen: dict[tuple[str, str], int] = {}
    for i in rows:
        h, case = history[i], _case_of(cases, history[i]["CaseId__c"])
        assert case is not None
        record, when = f"a1N{i}", _when(h["CreatedDate"])
        if _outside(when, case):
            want.add(("rules.history-outside-case", record))
        key = (h["CaseId__c"], h["Field__c"])
        nth = seen[key] = seen.get(key, -1) + 1  # the row's rank among its case's rows of its kind
        created, closed = _when(case["CreatedDate"]), _when(case["ClosedDate"])
        # a second creation row; the first not at the case's creation (unparsable never equals)
        if h["Field__c"] == "Case Creation" and (nth > 0 or None in (when, created) or when != created):
            want.add(("rules.history-creation", record))
        # a closing row of a case not Closed, a second one, or the first not at a ClosedDate there is
        if h["Field__c"] == "Case Closed" and (
            case["Status"] != "Closed" or nth > 0 or (closed is not None and when != closed)
        ):
            want.add(("rules.history-closed", record))
    kinds = {"rules.history-outside-case", "rules.history-creation", "rules.history-closed"}
    assert {(rule, record) for rule, record in got if rule in kinds} == want


USERS = [None, "005A", "005B"]
assignment_rows = st.lists(
    st.fixed_dictionaries(
        {
            "CaseId__c": st.sampled_from([None, *CASE_IDS, "500Z"]),
            "NewValue__c": st.sampled_from(USERS),
            "CreatedDate": datetimes,
            "_line": st.integers(2, 4),
        }
    ),
    max_size=10,
)


@settings(max_examples=300, deadline=None)
@given(case_rows, st.lists(st.sampled_from(USERS), min_size=5, max_size=5), assignment_rows)
@example(  # two assignments at one time: the later line is the last, whatever their order in the file
    [{"Id": "500A", "CreatedDate": T1, "ClosedDate": None, "Status": "New"}],
    ["005A", None, None, None, None],
    [
        {"CaseId__c": "500A", "NewValue__c": "005A", "CreatedDate": T2, "_line": 4},
        {"CaseId__c": "500A", "NewValue__c": "005B", "CreatedDate": T2, "_line": 3},
    ],
)
def test_cases_owned_by_their_last_assignee_as_restated(
    cases: list[dict[str, Any]], owners: list[Any], history: list[dict[str, Any]]
) -> None:
    """`rules.history-owner`: a case row whose OwnerId is not the NewValue__c of the last `Owner Assignment` row
    of its case id (by time, unparsable last, then line, then file order), when it has one with a value."""
    frame = pd.DataFrame(cases, columns=["Id", "CreatedDate", "ClosedDate", "Status"], dtype=object).assign(
        AccountId=None,
        ContactId=None,
        OwnerId=pd.Series(owners[: len(cases)], dtype=object),
        OrderItemId__c=None,
    )
    frame["_line"] = range(2, len(cases) + 2)
    hist = pd.DataFrame(
        {
            "Id": [f"a1N{i}" for i in range(len(history))],
            "CaseId__c": [h["CaseId__c"] for h in history],
            "Field__c": "Owner Assignment",
            "OldValue__c": None,
            "NewValue__c": [h["NewValue__c"] for h in history],
            "CreatedDate": [h["CreatedDate"] for h in history],
        },
        dtype=object,
    ).assign(_line=[h["_line"] for h in history])
    emit = rules._Emit()
    rules._history(hist, rules._cases(frame, SPAN_END, rules._Emit()), emit)
    got = sorted((f.line, f.message) for f in emit.out if f.rule == "rules.history-owner")

    def order(i: int) -> tuple[Any, ...]:
        when = _when(history[i]["CreatedDate"])
        return (when is None, when or datetime.min, history[i]["_line"], i)

    want = []
    for k, case in enumerate(cases):
        mine = sorted((i for i, h in enumerate(history) if h["CaseId__c"] == case["Id"]), key=order)
        last = history[mine[-1]]["NewValue__c"] if mine else None
        owner = owners[k]
        if last is not None and owner != last:
            want.append(
                (
                    k + 2,
                    f"Case {case['Id']} is owned by {owner or '(nobody)'}, but its last `Owner Assignment` in CaseHistory__c gives it to {last}; OwnerId must be the last assignee.",
                )
            )
    assert got == sorted(want)


ITEM_IDS = ["802A", "802B", "802C", "802D"]
ORDER_IDS = ["801A", "801B", "801C"]
ACCOUNTS = [None, "001A", "001B"]
order_rows = st.lists(
    st.fixed_dictionaries(
        {
            "Id": st.sampled_from(ORDER_IDS),
            "AccountId": st.sampled_from(ACCOUNTS),
            "EffectiveDate": st.sampled_from([None, "2020-01-01", "2020-01-02", "2020-01-03", "soon"]),
        }
    ),
    max_size=6,
)
item_rows = st.lists(
    st.fixed_dictionaries(
        {"Id": st.sampled_from(ITEM_IDS), "OrderId": st.sampled_from([None, *ORDER_IDS, "801Z"])}
    ),
    max_size=8,
)
case_item_rows = st.lists(
    st.fixed_dictionaries(
        {
            "Id": st.sampled_from(CASE_IDS),
            "CreatedDate": datetimes,
            "AccountId": st.sampled_from(ACCOUNTS),
            "OrderItemId__c": st.sampled_from([None, *ITEM_IDS, "802Z"]),
        }
    ),
    max_size=6,
)


@settings(max_examples=300, deadline=None)
@given(case_item_rows, item_rows, order_rows)
@example(  # the second case's item is of another order, placed by another account and after the case
    [
        {"Id": "500A", "CreatedDate": T1, "AccountId": "001A", "OrderItemId__c": "802A"},
        {"Id": "500B", "CreatedDate": T1, "AccountId": "001A", "OrderItemId__c": "802B"},
    ],
    [{"Id": "802A", "OrderId": "801A"}, {"Id": "802B", "OrderId": "801B"}, {"Id": "802B", "OrderId": "801A"}],
    [
        {"Id": "801A", "AccountId": "001A", "EffectiveDate": "2020-01-01"},
        {"Id": "801B", "AccountId": "001B", "EffectiveDate": "2020-01-02"},
    ],
)
def test_cases_against_their_orders_customer_and_date_as_restated(
    cases: list[dict[str, Any]], items: list[dict[str, Any]], orders: list[dict[str, Any]]
) -> None:
    # a case's order item is the first item row of its id, that item's order the first order row of its id
    frame = pd.DataFrame(
        cases, columns=["Id", "CreatedDate", "AccountId", "OrderItemId__c"], dtype=object
    ).assign(ClosedDate=None, Status="New", ContactId=None, OwnerId=None, _line=range(2, len(cases) + 2))
    raw = {
        "OrderItem": pd.DataFrame(items, columns=["Id", "OrderId"], dtype=object),
        "Order": pd.DataFrame(orders, columns=["Id", "AccountId", "EffectiveDate"], dtype=object),
    }
    emit = rules._Emit()
    rules._case_customer(raw, rules._cases(frame, SPAN_END, rules._Emit()), emit)
    got = [(f.rule, f.record, f.line) for f in emit.out]
    first_item = {i: next(r for r in items if r["Id"] == i) for i in {r["Id"] for r in items}}
    first_order = {o: next(r for r in orders if r["Id"] == o) for o in {r["Id"] for r in orders}}
    other, late = [], []
    for line, case in enumerate(cases, start=2):
        item = first_item.get(case["OrderItemId__c"])
        order = first_order.get(item["OrderId"]) if item is not None else None
        if order is None:
            continue
        if None not in (order["AccountId"], case["AccountId"]) and order["AccountId"] != case["AccountId"]:
            other.append(("rules.case-customer", case["Id"], line))
        created = _when(case["CreatedDate"])
        try:
            day = datetime.strptime(order["EffectiveDate"] or "", "%Y-%m-%d")
        except ValueError:
            continue
        if created is not None and day > created.replace(hour=0, minute=0, second=0, microsecond=0):
            late.append(("rules.order-after-case", case["Id"], line))
    assert got == other + late


keys = st.sampled_from(["500B", "500A", "500C", None, "500AA"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(keys, st.sampled_from([None, 1, 2, 3]), st.integers(0, 3)), max_size=12))
def test_the_history_order_is_a_stable_sort_of_key_time_and_line(drawn: list[tuple[Any, Any, int]]) -> None:
    """`_sorted_order` (from the ranks of the rows' case ids among the cases, `CaseSpans.ranks`) is the order
    pandas' stable sort of the three columns gives, a missing key or time after the others."""
    k = pd.Series([d[0] for d in drawn], dtype=object).to_numpy()
    t = pd.to_datetime([f"2020-01-0{d[1]}" if d[1] else None for d in drawn]).to_numpy()
    lines = pd.Series([d[2] for d in drawn], dtype="int64").to_numpy()
    want = pd.DataFrame({"k": k, "t": t, "l": lines}).sort_values(["k", "t", "l"], kind="stable").index
    # every key drawn is a case's, the cases in an order of their own (the case without an id in the middle)
    spans = rules.CaseSpans(
        _cases(
            [
                {"Id": i, "CreatedDate": None, "ClosedDate": None, "Status": "New"}
                for i in ["500C", None, "500AA", "500A", "500B"]
            ]
        )
    )
    ranks = spans.ranks()[spans.at(k)]
    assert rules._sorted_order(ranks, t, lines).tolist() == want.tolist()


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(keys, st.integers(0, 5)), max_size=6), st.lists(keys, max_size=8))
def test_each_rows_case_span_is_a_left_joins(cases: list[tuple[Any, int]], named: list[Any]) -> None:
    """`_case_span` (a lookup in an index of the case ids) gives what a left join of the rows' keys on the
    cases' first row per id gives, a row without a key joined to a case without an id as pandas joins them."""
    frame = pd.DataFrame({"k": pd.Series(named, dtype=object)})
    c = pd.DataFrame(
        {
            "Id": pd.Series([i for i, _ in cases], dtype=object),
            "_created": pd.to_datetime([f"2020-01-0{d + 1}" if d < 4 else None for _, d in cases]),
            "_end": pd.to_datetime([f"2020-02-0{d + 1}" for _, d in cases]),
        }
    ).assign(_closed=pd.NaT, _closed_flag=False)
    first = c[["Id", "_created", "_end"]].drop_duplicates("Id").add_prefix("c_")
    m = frame.merge(first, left_on="k", right_on="c_Id", how="left", indicator=True)
    joined, created, end = rules._case_span(frame, "k", c)
    assert joined.tolist() == (m["_merge"] == "both").tolist()
    assert pd.Series(created).equals(pd.Series(m["c__created"].to_numpy()))
    assert pd.Series(end).equals(pd.Series(m["c__end"].to_numpy()))


valued_history_rows = st.lists(
    st.fixed_dictionaries(
        {
            "CaseId__c": st.sampled_from([None, *CASE_IDS, "500Z"]),
            "Field__c": st.sampled_from(["Case Creation", "Owner Assignment", "Case Closed", None]),
            "OldValue__c": st.sampled_from(USERS),
            "NewValue__c": st.sampled_from(USERS),
            "CreatedDate": datetimes,
            "_line": st.integers(2, 4),
        }
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=300, deadline=None)
@given(case_rows, valued_history_rows, st.lists(st.integers(1, 13), max_size=4))
def test_the_history_fed_in_blocks_cut_anywhere_is_reported_as_fed_at_once(
    cases: list[dict[str, Any]], history: list[dict[str, Any]], cuts: list[int]
) -> None:
    """`HistoryRows` numbers each block's values as it comes (one numbering for all blocks): the findings are
    the same whatever the blocks, and every reported history row is one of the frame's, read back whole."""
    hist = pd.DataFrame(history, dtype=object)
    hist.insert(0, "Id", [f"a1N{i}" for i in range(len(history))])
    hist["_line"] = hist["_line"].astype("int64")
    c = _cases(cases)
    whole = rules._Emit()
    rules._history(hist, c, whole)
    rows = rules.HistoryRows(rules.CaseSpans(c))
    bounds = sorted({0, len(hist), *(k for k in cuts if k < len(hist))})
    for lo, hi in itertools.pairwise(bounds):
        rows.feed(hist.iloc[lo:hi])
    fetched: list[list[int]] = []

    def fetch(at: Any) -> pd.DataFrame:
        fetched.append(at.tolist())
        return hist.take(at)

    got = rules._Emit()
    rules.history_findings(rows, c, got, fetch)
    assert [f.to_json() for f in got.out] == [f.to_json() for f in whole.out]
    # the rows reported are fetched once, in file order, and are those the findings name
    reported = {f.record for f in got.out if f.object == "CaseHistory__c"}
    assert len(fetched) == (1 if reported else 0)
    assert {f"a1N{i}" for at in fetched for i in at} == reported
    assert all(at == sorted(set(at)) for at in fetched)
