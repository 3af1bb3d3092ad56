"""CRMArena's tool functions (orgs/crmarena_tools.py) and the ground truth's params as their arguments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orgs import crmarena_tools as ct
from orgs.local import connect


class _NoOrg:
    """Pure tools never touch the org."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"a pure tool used the org ({name})")


CONN = ct.Connector(_NoOrg())


def test_get_start_date_takes_day_week_month_quarter_and_refuses_year() -> None:
    end = "2024-03-31T00:00:00Z"
    assert ct.get_start_date(CONN, end, "month", 1) == "2024-02-29T00:00:00Z"  # calendar months
    assert ct.get_start_date(CONN, end, "quarter", 4) == ct.get_start_date(CONN, end, "month", 12)
    assert ct.get_start_date(CONN, end, "week", 2) == "2024-03-17T00:00:00Z"
    assert str(ct.get_start_date(CONN, end, "year", 1)).startswith("Error")
    assert str(ct.get_start_date(CONN, "2024-03-31", "day", 1)).startswith("Error")


def test_get_period_winter_starts_in_december_of_the_year() -> None:
    assert ct.get_period(CONN, "Winter", 2021) == {
        "start_date": "2021-12-01T00:00:00Z",
        "end_date": "2022-03-01T00:00:00Z",
    }
    assert ct.get_period(CONN, "Q3", 2022) == {
        "start_date": "2022-07-01T00:00:00Z",
        "end_date": "2022-10-01T00:00:00Z",
    }
    assert str(ct.get_period(CONN, "Autumn", 2022)).startswith("Error")


def test_pure_tools_by_hand() -> None:
    cases = [
        {
            "OwnerId": "A",
            "CreatedDate": "2024-01-01T00:00:00.000+0000",
            "ClosedDate": "2024-01-01T01:00:00.000+0000",
        },
        {
            "OwnerId": "A",
            "CreatedDate": "2024-02-01T00:00:00.000+0000",
            "ClosedDate": "2024-02-01T03:00:00.000+0000",
        },
        {
            "OwnerId": "B",
            "CreatedDate": "2024-02-05T00:00:00.000+0000",
            "ClosedDate": "2024-02-05T00:30:00.000+0000",
        },
    ]
    assert ct.calculate_average_handle_time(CONN, cases) == {"A": 120.0, "B": 30.0}
    assert ct.get_month_to_case_count(CONN, cases) == {"January": 1, "February": 2}
    assert ct.get_agents_with_max_cases(CONN, cases) == ["A"]
    assert ct.find_id_with_min_value(CONN, {"A": 2, "B": 1, "C": 1}) == ["B", "C"]
    assert ct.find_id_with_max_value(CONN, {}) is None
    assert ct.get_qualified_agent_ids_by_case_count(CONN, {"A": 2, "B": 1}, 1) == ["A"]
    assert ct.call(CONN, "get_everything", {}) == "Unknown action get_everything"
    assert "unexpected keyword argument" in ct.call(CONN, "get_period", {"name": "Q1", "year": 2020})


def test_query_tools_send_crmarenas_queries_and_tidy_rows(eval_bundle: Path) -> None:
    conn = ct.Connector(connect(eval_bundle))
    conn.log = []
    ids = ct.get_issues(conn)
    assert ids and all(set(r) == {"Id", "Name"} for r in ids)  # no `attributes`
    assert conn.log == ["SELECT Id, Name FROM Issue__c"]
    refused = ct.issue_soql_query(conn, "SELECT Nope FROM Case")
    assert isinstance(refused, str) and refused.startswith("INVALID_FIELD: ")
    assert ct.get_cases(conn) == "Error: give at least one filter"
    one = ct.get_cases(conn, issue_ids=[ids[0]["Id"]], statuses=["Closed"])
    assert conn.log[-1].endswith(f"WHERE IssueId__c = '{ids[0]['Id']}' AND Status = 'Closed'")
    assert (
        isinstance(one, list) and one and set(one[0]) <= {"OwnerId", "CreatedDate", "ClosedDate", "AccountId"}
    )


def test_every_relative_window_of_the_ground_truth_is_a_valid_get_start_date_call(small_bundle: Path) -> None:
    rows = [
        json.loads(line) for line in (small_bundle / "tasks" / "ground_truth.jsonl").read_text().splitlines()
    ]
    relative = [g["params"] for g in rows if "interval_count" in g["params"]]
    assert relative, "the small bundle has relative windows"
    for p in relative:
        end = p.get("end_date") or p["today_date"]
        got = ct.get_start_date(CONN, end, p["period"], p["interval_count"])
        assert not str(got).startswith("Error"), (p, got)


def test_a_past_year_question_records_twelve_months() -> None:
    from datetime import date

    import pytest

    from generator.tasks.common import relative_window
    from validators.task_solver import ParamError, window

    w = relative_window(date(2022, 7, 2), "year", 1)
    assert w.phrase == "over the past year"
    assert w.params == {"end_date": "2022-07-02T00:00:00Z", "period": "month", "interval_count": 12}
    assert window(w.params) == (w.start, w.end)
    with pytest.raises(ParamError, match="interval_count 12"):
        window({"end_date": "2022-07-02T00:00:00Z", "period": "year", "interval_count": 1})


class _CountingOrg:
    """A client whose query `SELECT Id FROM X LIMIT n` answers n rows; counts what reaches it."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def query_all(self, soql: str) -> dict[str, Any]:
        self.sent.append(soql)
        n = int(soql.rsplit(" ", 1)[1])
        return {"records": [{"attributes": {"type": "X"}, "Id": f"{soql[-1]}{k}"} for k in range(n)]}


def test_cache_keeps_at_most_cache_rows_forgetting_the_least_recently_asked() -> None:
    org = _CountingOrg()
    conn = ct.Connector(org, cache=True, cache_rows=5)
    a, b, c = "SELECT Id FROM X LIMIT 2", "SELECT Id FROM X LIMIT 3", "SELECT Id FROM X LIMIT 1"
    assert conn.run_query(a)[0] == [{"Id": "20"}, {"Id": "21"}]
    conn.run_query(b)  # 5 rows cached: a and b
    conn.run_query(a)  # from the cache; a is now the most recently asked
    assert org.sent == [a, b]
    conn.run_query(c)  # 6 rows: b, the least recently asked, is forgotten
    conn.run_query(a)
    conn.run_query(b)  # asked again: sent again
    assert org.sent == [a, b, c, b]
    assert conn.queries == 4
    # unbounded (the default): nothing is ever sent twice
    org2 = _CountingOrg()
    unbounded = ct.Connector(org2, cache=True)
    for q in [a, b, c, a, b, c]:
        unbounded.run_query(q)
    assert org2.sent == [a, b, c]
