"""CRMArena's tool functions over any simple-salesforce client: the one definition orgseed has of them.

CRMArena's function-calling agents get 24 task functions plus `respond` (and, in its "flex" mode,
`issue_soql_query` / `issue_sosl_query`). This module re-implements them from their documented behaviour
(reference/crmarena.md §8.1 and §9): the same names, parameters, SOQL/SOSL and return values, and the same
way of failing — a tool never raises for bad arguments or a refused query, it returns a string starting
with `Error` (or, for a refused query, Salesforce's `ERRORCODE: message`), which the agent sees as the
observation. Dates go in as `YYYY-MM-DDTHH:MM:SSZ`; record datetimes come back as the org sends them
(`YYYY-MM-DDTHH:MM:SS.000+0000`).

Two users: the build's answer check (`validators/tasks_soql.py`, composing the tools like CRMArena's
reference solvers) and the agent harness (`evals/`, exposing them to models). Both pass a `Connector`
wrapping a `simple_salesforce.Salesforce` — the embedded org's or a seeded real org's; this module never
imports the org's implementation. `run_query` post-processes rows the way CRMArena's connector does:
`attributes` dropped, a key that is null in every row dropped, errors turned into `CODE: message`.

Two deliberate differences, both documented where they apply: counters come back as plain dicts (CRMArena
returns a `defaultdict` from get_agent_handled_cases_by_period), and a connection failure raises
`OrgUnreachable` instead of becoming an observation (it is the org's fault, not the agent's).
"""

from __future__ import annotations

import functools
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from dateutil.relativedelta import relativedelta

from schemas.errors import Transient

DATE_IN = "%Y-%m-%dT%H:%M:%SZ"  # how tools take dates
DATETIME_OUT = "%Y-%m-%dT%H:%M:%S.%f%z"  # how the org returns datetimes (what the tools parse)
PERIOD_UNITS = ("day", "week", "month", "quarter")  # get_start_date's units: there is no 'year'
MONTH_NAMES = tuple(datetime(2000, m, 1).strftime("%B") for m in range(1, 13))
PERIOD_NAMES = (*MONTH_NAMES, "Q1", "Q2", "Q3", "Q4", "Spring", "Summer", "Fall", "Winter")
SEASON_START = {"Spring": 3, "Summer": 6, "Fall": 9, "Winter": 12}
_FENCE = re.compile(r"```(?:sql|SQL|soql|SOQL)?([\s\S]+?)```")

Result = Any  # a tool's return value: a list, a dict, a string (an answer, a date or an error), or None


class OrgUnreachable(Transient):
    """The org did not answer (connection refused, timeout, TLS): not something an agent caused."""

    FIELDS: ClassVar[tuple[str, ...]] = ("query",)

    def __init__(self, message: str, *, query: str | None = None) -> None:
        super().__init__(message)
        self.query = query


# -- the connector -----------------------------------------------------------------------------------------


def salesforce_error(exc: BaseException) -> str | None:
    """`ERRORCODE: message` of a Salesforce error response carried by a simple-salesforce exception."""
    content = getattr(exc, "content", None)
    if isinstance(content, list) and content and isinstance(content[0], dict):
        first = content[0]
        return f"{first.get('errorCode', 'ERROR')}: {first.get('message', '')}"
    if isinstance(content, dict) and ("errorCode" in content or "message" in content):
        return f"{content.get('errorCode', 'ERROR')}: {content.get('message', '')}"
    return None


def strip_fences(query: str) -> str:
    """The query inside the first Markdown code fence (whitespace collapsed), else the query unchanged."""
    m = _FENCE.search(query)
    return " ".join(m.group(1).split()) if m else query


def tidy_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """CRMArena's post-processing: drop `attributes`; drop keys (of the first row) null in every row."""
    copies = []
    for r in rows:  # a copy less its `attributes` (faster than a filtering comprehension per row)
        c = dict(r)
        c.pop("attributes", None)
        copies.append(c)
    return _drop_null_keys(copies)


def _drop_null_keys(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`tidy_rows` of rows that have no `attributes` and are the caller's own: the keys (of the first row)
    null in every row are removed in place."""
    if not rows:
        return rows
    empty = [k for k in rows[0] if all(r.get(k) is None for r in rows)]
    for k in empty:
        for r in rows:
            r.pop(k, None)
    return rows


def _rows_in(value: Any) -> int:
    """What a cached reply counts against `Connector.cache_rows`: its rows, or 1 for an error message."""
    return len(value) if isinstance(value, list) else 1


class Connector:
    """One simple-salesforce client and CRMArena's `run_query` over it, with counters and an optional cache.

    `cache=True` answers a repeated query text from memory (the build's answer check asks the same
    questions many times); each caller gets its own copies of the rows, unless `copies=False`: then every
    caller of a query gets the cache's own rows, for callers that only read them (copying every row cost
    ~5% of the build's answer check, which asks 1,868 distinct queries out of 1,918 at scale 10).
    """

    def __init__(
        self, sf: Any, *, cache: bool = False, copies: bool = True, cache_rows: int | None = None
    ) -> None:
        self.sf = sf
        self.cache = cache
        self.copies = copies
        # at most this many rows kept (None: no bound); past it the least recently asked queries go first, so
        # the cache's memory is bounded whatever the org's size (a forgotten query is asked again if repeated)
        self.cache_rows = cache_rows
        self._cached_rows = 0
        self.queries = 0  # queries sent to the org
        self.errors = 0  # queries the org refused
        self.log: list[str] | None = None  # when a list, every query text run through here is appended
        self._memo: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        # a client answering in this process may give records without `attributes` (InProcessClient): looked
        # up on the class, since simple-salesforce's client answers any attribute name with an sObject type
        self._bare = callable(getattr(type(sf), "bare_records", None))
        self._lock = threading.Lock()

    def run_query(self, query: str) -> tuple[list[dict[str, Any]] | str, int]:
        """(rows, 1) or (`ERRORCODE: message`, 0). A query starting with `FIND` is SOSL, anything else SOQL."""
        if not isinstance(query, str):
            return f"Error: the query must be a string, got {type(query).__name__}", 0
        if self.log is not None:
            self.log.append(query)
        if self.cache:
            with self._lock:
                hit = self._memo.get(query)
                if hit is not None:
                    self._memo.move_to_end(query)
            if hit is not None:
                value, status = hit
                if isinstance(value, str) or not self.copies:
                    return value, status
                return [dict(r) for r in value], status
        value, status = self._send(query)
        if self.cache:
            with self._lock:
                self._remember(query, value, status)
            if status and not isinstance(value, str) and self.copies:
                return [dict(r) for r in value], status
        return value, status

    def _remember(self, query: str, value: Any, status: int) -> None:
        """Cache a reply (the lock held), then forget the least recently asked ones past `cache_rows`."""
        if query in self._memo:
            self._cached_rows -= _rows_in(self._memo.pop(query)[0])
        self._memo[query] = (value, status)
        self._cached_rows += _rows_in(value)
        while self.cache_rows is not None and self._cached_rows > self.cache_rows and len(self._memo) > 1:
            _, (old, _status) = self._memo.popitem(last=False)
            self._cached_rows -= _rows_in(old)

    def _send(self, query: str) -> tuple[list[dict[str, Any]] | str, int]:
        sosl = query.startswith("FIND")
        with self._lock:
            self.queries += 1
        try:
            if sosl:
                reply = self.sf.search(query) or {}
                rows = list(reply.get("searchRecords", []))
            elif self._bare:
                # the org's records already less `attributes`, in fresh dicts: only the null keys to drop
                return _drop_null_keys(self.sf.bare_records(strip_fences(query))), 1
            else:
                rows = list(self.sf.query_all(strip_fences(query))["records"])
        except Exception as exc:
            message = salesforce_error(exc)
            if message is None:
                raise OrgUnreachable(
                    f"The org did not answer a query ({type(exc).__name__}: {exc}). Check that it is served "
                    "(orgseed serve) or reachable, then rerun: finished instances are kept.",
                    query=query,
                ) from exc
            with self._lock:
                self.errors += 1
            return message, 0
        return tidy_rows(rows), 1

    def records(self, query: str) -> list[dict[str, Any]]:
        """Rows of a query that must succeed (for callers composing tools, not for agents)."""
        value, status = self.run_query(query)
        if not status or isinstance(value, str):
            raise ToolFailed(f"The org refused a query: {value}. Query: {query}", query=query)
        return value


class ToolFailed(Transient):
    """A composed tool call failed where it must not (the org's data or API disagrees with the tools)."""

    FIELDS: ClassVar[tuple[str, ...]] = ("query", "tool")

    def __init__(self, message: str, *, query: str | None = None, tool: str | None = None) -> None:
        super().__init__(message)
        self.query = query
        self.tool = tool


# -- helpers ------------------------------------------------------------------------------------------------


def _is_date(value: Any) -> bool:
    return isinstance(value, str) and _is_date_text(value)


@functools.lru_cache(maxsize=4096)
def _is_date_text(value: str) -> bool:
    """Whether `value` is a tool's date (`DATE_IN`): memoised, as the answer check gives each tool the same
    few window bounds many times (strptime is ~15 us a call)."""
    try:
        datetime.strptime(value, DATE_IN)
    except ValueError:
        return False
    return True


def _one_or_in(field: str, values: Sequence[Any]) -> str:
    """`Field = 'x'` for one value, else `Field IN ('a', 'b')` (the shape of a Python tuple's repr)."""
    if len(values) == 1:
        return f"{field} = '{values[0]}'"
    return f"{field} IN ({', '.join(repr(v) for v in values)})"


def _parse_record_dt(value: Any) -> datetime:
    return datetime.strptime(value, DATETIME_OUT)


def _count_by(rows: list[dict[str, Any]], key: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for r in rows:
        k = r.get(key)
        out[k] = out.get(k, 0) + 1
    return out


def _ids_of_max_or_min(values: Any, pick: Callable[[Any], Any]) -> Result:
    if not isinstance(values, dict):
        return "Error: values_by_id must be a dictionary"
    if not values:
        return None
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values.values()):
        return "Error: every value in values_by_id must be a number"
    best = pick(values.values())
    return [k for k, v in values.items() if v == best]


def _agents_by_case_count(cases: Any, pick: Callable[[Any], Any]) -> Result:
    if not isinstance(cases, list):
        return "Error: subset_cases must be a list"
    counts: dict[str, int] = {}
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            return f"Error: subset_cases[{i}] is not a dictionary"
        owner = case.get("OwnerId")
        if not isinstance(owner, str):
            return f"Error: subset_cases[{i}] has no string 'OwnerId'"
        counts[owner] = counts.get(owner, 0) + 1
    if not counts:
        return []
    best = pick(counts.values())
    return [a for a, c in counts.items() if c == best]


# -- the 24 task functions, respond, and the two free-form query tools ---------------------------------------


def get_agents_with_max_cases(conn: Connector, /, subset_cases: Any) -> Result:
    """Agent ids (OwnerId) owning the most cases in `subset_cases` (all of them when tied)."""
    return _agents_by_case_count(subset_cases, max)


def get_agents_with_min_cases(conn: Connector, /, subset_cases: Any) -> Result:
    """Agent ids (OwnerId) owning the fewest cases in `subset_cases` (all of them when tied)."""
    return _agents_by_case_count(subset_cases, min)


def calculate_average_handle_time(conn: Connector, /, cases: Any) -> Result:
    """Mean ClosedDate − CreatedDate per OwnerId, in minutes."""
    if not isinstance(cases, list):
        return "Error: cases must be a list"
    times: dict[str, list[float]] = {}
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            return f"Error: cases[{i}] is not a dictionary"
        for key in ("CreatedDate", "ClosedDate", "OwnerId"):
            if key not in case:
                return f"Error: cases[{i}] has no '{key}'"
        try:
            created, closed = _parse_record_dt(case["CreatedDate"]), _parse_record_dt(case["ClosedDate"])
        except (TypeError, ValueError):
            return f"Error: cases[{i}] has a date not in the format '{DATETIME_OUT}'"
        if closed < created:
            return f"Error: cases[{i}] was closed before it was created"
        times.setdefault(case["OwnerId"], []).append((closed - created).total_seconds() / 60)
    return {agent: sum(v) / len(v) for agent, v in times.items()}


def get_start_date(conn: Connector, /, end_date: Any, period: Any, interval_count: Any) -> Result:
    """`end_date` minus `interval_count` days, weeks, months or quarters (no 'year': say 12 months)."""
    if not isinstance(end_date, str):
        return "Error: end_date must be a string"
    if not isinstance(period, str):
        return "Error: period must be a string"
    if not isinstance(interval_count, int) or isinstance(interval_count, bool):
        return "Error: interval_count must be an integer"
    if period not in PERIOD_UNITS:
        return "Error: period must be one of 'day', 'week', 'month' or 'quarter'"
    if not _is_date(end_date):
        return "Error: end_date must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
    if interval_count < 0:
        return "Error: interval_count must not be negative"
    end = datetime.strptime(end_date, DATE_IN)
    delta = {
        "day": relativedelta(days=interval_count),
        "week": relativedelta(weeks=interval_count),
        "month": relativedelta(months=interval_count),
        "quarter": relativedelta(months=3 * interval_count),
    }[period]
    return (end - delta).strftime(DATE_IN)


def get_period(conn: Connector, /, period_name: Any, year: Any) -> Result:
    """{'start_date', 'end_date'} of a month, Q1..Q4 or season of `year` (Winter starts in December)."""
    if not isinstance(period_name, str):
        return "Error: period_name must be a string"
    if not isinstance(year, int) or isinstance(year, bool):
        return "Error: year must be an integer"
    if period_name not in PERIOD_NAMES:
        return f"Error: period_name must be one of {', '.join(PERIOD_NAMES)}"
    if not 1 <= year <= 9999:
        return "Error: year must be between 1 and 9999"
    if period_name.startswith("Q"):
        start, months = datetime(year, 3 * int(period_name[1]) - 2, 1), 3
    elif period_name in SEASON_START:
        start, months = datetime(year, SEASON_START[period_name], 1), 3
    else:
        start, months = datetime(year, MONTH_NAMES.index(period_name) + 1, 1), 1
    end = start + relativedelta(months=months)
    return {"start_date": start.strftime(DATE_IN), "end_date": end.strftime(DATE_IN)}


def get_agent_handled_cases_by_period(conn: Connector, /, start_date: Any, end_date: Any) -> Result:
    """Owner-Assignment rows of CaseHistory__c in [start, end] counted per NewValue__c (the new owner)."""
    if not isinstance(start_date, str) or not isinstance(end_date, str):
        return "Error: start_date and end_date must be strings"
    if not (_is_date(start_date) and _is_date(end_date)):
        return "Error: dates must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
    rows, ok = conn.run_query(
        "SELECT NewValue__c, CreatedDate FROM CaseHistory__c "
        f"WHERE CreatedDate >= {start_date} AND CreatedDate <= {end_date} AND Field__c = 'Owner Assignment'"
    )
    if not ok or isinstance(rows, str):
        return rows
    return _count_by(rows, "NewValue__c")


def get_qualified_agent_ids_by_case_count(
    conn: Connector, /, agent_handled_cases: Any, n_cases: Any
) -> Result:
    """Agent ids whose count in `agent_handled_cases` is greater than `n_cases`."""
    if not isinstance(agent_handled_cases, dict):
        return "Error: agent_handled_cases must be a dictionary"
    if not isinstance(n_cases, int) or isinstance(n_cases, bool):
        return "Error: n_cases must be an integer"
    try:
        return [a for a, c in agent_handled_cases.items() if c > n_cases]
    except TypeError:
        return "Error: every count in agent_handled_cases must be a number"


def get_cases(
    conn: Connector,
    /,
    start_date: Any = None,
    end_date: Any = None,
    agent_ids: Any = None,
    case_ids: Any = None,
    order_item_ids: Any = None,
    issue_ids: Any = None,
    statuses: Any = None,
) -> Result:
    """Cases (OwnerId, CreatedDate, ClosedDate, AccountId) matching every filter given: CreatedDate in
    [start, end), and owner / case / order item / issue / status in the lists. An empty list is no filter."""
    conditions: list[str] = []
    for name, value, op in (("start_date", start_date, ">="), ("end_date", end_date, "<")):
        if value:
            if not isinstance(value, str):
                return f"Error: {name} must be a string in the format 'YYYY-MM-DDTHH:MM:SSZ'"
            if not _is_date(value):
                return f"Error: {name} must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
            conditions.append(f"CreatedDate {op} {value}")
    for name, value, field in (
        ("agent_ids", agent_ids, "OwnerId"),
        ("case_ids", case_ids, "Id"),
        ("order_item_ids", order_item_ids, "OrderItemId__c"),
        ("issue_ids", issue_ids, "IssueId__c"),
        ("statuses", statuses, "Status"),
    ):
        if value:
            if not isinstance(value, list):
                return f"Error: {name} must be a list"
            conditions.append(_one_or_in(field, value))
    if not conditions:
        return "Error: give at least one filter"
    rows, _ = conn.run_query(
        "SELECT OwnerId, CreatedDate, ClosedDate, AccountId FROM Case WHERE " + " AND ".join(conditions)
    )
    return rows


def get_non_transferred_case_ids(conn: Connector, /, start_date: Any, end_date: Any) -> Result:
    """Ids of cases with exactly one Owner-Assignment row in [start, end] (never transferred there)."""
    if not isinstance(start_date, str) or not isinstance(end_date, str):
        return "Error: start_date and end_date must be strings"
    if not (_is_date(start_date) and _is_date(end_date)):
        return "Error: dates must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
    rows, ok = conn.run_query(
        "SELECT CaseId__c FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        f"AND CreatedDate >= {start_date} AND CreatedDate <= {end_date} GROUP BY CaseId__c HAVING COUNT(Id) = 1"
    )
    if not ok or isinstance(rows, str):
        return rows
    return [r["CaseId__c"] for r in rows]


def get_agent_transferred_cases_by_period(
    conn: Connector, /, start_date: Any, end_date: Any, qualified_agent_ids: Any = None
) -> Result:
    """Transfers in [start, end] counted per agent transferring away (OldValue__c), only for
    `qualified_agent_ids` when that list is not empty."""
    qualified = [] if qualified_agent_ids is None else qualified_agent_ids
    if not isinstance(start_date, str) or not isinstance(end_date, str):
        return "Error: start_date and end_date must be strings"
    if not isinstance(qualified, list):
        return "Error: qualified_agent_ids must be a list"
    if not (_is_date(start_date) and _is_date(end_date)):
        return "Error: dates must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
    rows, ok = conn.run_query(
        "SELECT OldValue__c, CreatedDate FROM CaseHistory__c WHERE Field__c = 'Owner Assignment' "
        f"AND OldValue__c != NULL AND CreatedDate >= {start_date} AND CreatedDate <= {end_date}"
    )
    if not ok or isinstance(rows, str):
        return rows
    keep = set(qualified)
    return _count_by(
        [r for r in rows if "OldValue__c" in r and (not keep or r["OldValue__c"] in keep)], "OldValue__c"
    )


def get_shipping_state(conn: Connector, /, cases: Any) -> Result:
    """`cases` with each case's account's ShippingState added (None when the account has none)."""
    if not isinstance(cases, list):
        return "Error: cases must be a list"
    if not cases:
        return cases
    for case in cases:
        if not isinstance(case, dict):
            return "Error: every case must be a dictionary"
        if "AccountId" not in case:
            return "Error: every case must have an 'AccountId'"
    rows, ok = conn.run_query(
        "SELECT Id, ShippingState FROM Account WHERE " + _one_or_in("Id", [c["AccountId"] for c in cases])
    )
    if not ok or isinstance(rows, str):
        return rows
    states = {r.get("Id"): r.get("ShippingState") for r in rows}
    for case in cases:
        case["ShippingState"] = states.get(case["AccountId"])
    return cases


def calculate_region_average_closure_times(conn: Connector, /, cases: Any) -> Result:
    """Mean ClosedDate − CreatedDate in seconds per ShippingState (cases without a state are skipped)."""
    if not isinstance(cases, list):
        return "Error: cases must be a list"
    if not cases:
        return "Error: cases is empty"
    per_state: dict[str, list[float]] = {}
    for case in cases:
        if not isinstance(case, dict):
            return "Error: every case must be a dictionary"
        if not all(k in case for k in ("ShippingState", "CreatedDate", "ClosedDate")):
            return "Error: every case must have 'ShippingState', 'CreatedDate' and 'ClosedDate'"
        state = case["ShippingState"]
        if not state:
            continue
        try:
            seconds = (
                _parse_record_dt(case["ClosedDate"]) - _parse_record_dt(case["CreatedDate"])
            ).total_seconds()
        except (TypeError, ValueError):
            return f"Error: a case has a date not in the format '{DATETIME_OUT}'"
        per_state.setdefault(state, []).append(seconds)
    return {s: sum(v) / len(v) for s, v in per_state.items()}


def get_order_item_ids_by_product(conn: Connector, /, product_id: Any) -> Result:
    """Ids of the order items of a product."""
    if not isinstance(product_id, str):
        return "Error: product_id must be a string"
    if not product_id:
        return "Error: product_id must not be empty"
    rows, ok = conn.run_query(f"SELECT Id FROM OrderItem WHERE Product2Id = '{product_id}'")
    if not ok or isinstance(rows, str):
        return rows
    return [r["Id"] for r in rows]


def get_issue_counts(conn: Connector, /, start_date: Any, end_date: Any, order_item_ids: Any) -> Result:
    """Cases of the order items created in [start, end] counted per IssueId__c."""
    if not isinstance(start_date, str) or not isinstance(end_date, str):
        return "Error: start_date and end_date must be strings"
    if not isinstance(order_item_ids, list) or not order_item_ids:
        return "Error: order_item_ids must be a non-empty list"
    ids = "','".join(str(i) for i in order_item_ids)
    rows, ok = conn.run_query(
        f"SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN ('{ids}') "
        f"AND CreatedDate >= {start_date} AND CreatedDate <= {end_date} GROUP BY IssueId__c ORDER BY COUNT(Id) DESC"
    )
    if not ok or isinstance(rows, str):
        return rows
    return {r.get("IssueId__c"): r.get("IssueCount") for r in rows}


def find_id_with_max_value(conn: Connector, /, values_by_id: Any) -> Result:
    """The keys of `values_by_id` with the largest value (a list; None for an empty dict)."""
    return _ids_of_max_or_min(values_by_id, max)


def find_id_with_min_value(conn: Connector, /, values_by_id: Any) -> Result:
    """The keys of `values_by_id` with the smallest value (a list; None for an empty dict)."""
    return _ids_of_max_or_min(values_by_id, min)


def get_account_id_by_contact_id(conn: Connector, /, contact_id: Any) -> Result:
    """The AccountId of a contact (an empty list when there is no such contact)."""
    if not isinstance(contact_id, str):
        return "Error: contact_id must be a string"
    if not contact_id:
        return "Error: contact_id must not be empty"
    rows, ok = conn.run_query(f"SELECT AccountId FROM Contact WHERE Id = '{contact_id}' LIMIT 1")
    if not ok or isinstance(rows, str):
        return rows
    return rows[0].get("AccountId") if rows else rows


def get_purchase_history(
    conn: Connector, /, account_id: Any, purchase_date: Any, related_product_ids: Any
) -> Result:
    """Order items ({'Product2Id'}) of the account's Activated orders effective on the purchase date's day,
    for the given products."""
    if not isinstance(account_id, str):
        return "Error: account_id must be a string"
    if not isinstance(purchase_date, str):
        return "Error: purchase_date must be a string"
    if not isinstance(related_product_ids, list):
        return "Error: related_product_ids must be a list"
    if not all(isinstance(p, str) for p in related_product_ids):
        return "Error: every id in related_product_ids must be a string"
    if not _is_date(purchase_date):
        return "Error: purchase_date must be in the format 'YYYY-MM-DDTHH:MM:SSZ'"
    ids = "','".join(related_product_ids)
    rows, _ = conn.run_query(
        f"SELECT Product2Id FROM OrderItem WHERE OrderItem.Order.AccountId = '{account_id}' "
        f"AND OrderItem.Order.EffectiveDate = {purchase_date.split('T')[0]} AND Product2Id IN ('{ids}') "
        "AND OrderItem.Order.Status = 'Activated'"
    )
    return rows


def get_month_to_case_count(conn: Connector, /, cases: Any) -> Result:
    """Cases counted per month name of their CreatedDate ('January', ...)."""
    if not isinstance(cases, list):
        return "Error: cases must be a list of dictionaries"
    counts: dict[str, int] = {}
    for case in cases:
        if not isinstance(case, dict):
            return "Error: every case must be a dictionary"
        if "CreatedDate" not in case:
            return "Error: every case must have a 'CreatedDate'"
        try:
            month = _parse_record_dt(case["CreatedDate"]).strftime("%B")
        except (TypeError, ValueError):
            return f"Error: a case has a CreatedDate not in the format '{DATETIME_OUT}'"
        counts[month] = counts.get(month, 0) + 1
    return counts


def search_knowledge_articles(conn: Connector, /, search_term: Any) -> Result:
    """Online English knowledge articles matching the term: [{'Id', 'Title', 'Content'}]."""
    if not isinstance(search_term, str):
        return "Error: search_term must be a string"
    if not search_term.strip():
        return "Error: search_term must not be empty"
    rows, ok = conn.run_query(
        f"FIND {{{search_term}}} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, FAQ_Answer__c "
        "WHERE PublishStatus='Online' AND Language='en_US')"
    )
    if not ok or isinstance(rows, str):
        return rows
    return [
        {"Id": r.get("Id", ""), "Title": r.get("Title", ""), "Content": r.get("FAQ_Answer__c", "")}
        for r in rows
    ]


def search_products(conn: Connector, /, search_term: Any) -> Result:
    """Ids of the products matching the term in any field."""
    if not isinstance(search_term, str):
        return "Error: search_term must be a string"
    if not search_term.strip():
        return "Error: search_term must not be empty"
    rows, ok = conn.run_query(
        f"FIND {{{search_term}}} IN ALL FIELDS RETURNING Product2(Id, Name, Description)"
    )
    if not ok or isinstance(rows, str):
        return rows
    return [r["Id"] for r in rows]


def get_issues(conn: Connector, /) -> Result:
    """Every issue: [{'Id', 'Name'}]."""
    rows, _ = conn.run_query("SELECT Id, Name FROM Issue__c")
    return rows


def respond(conn: Connector, /, content: Any) -> Result:
    """The final answer (ends the episode)."""
    return content


def get_email_messages_by_case_id(conn: Connector, /, case_id: Any) -> Result:
    """A case's emails: Subject, TextBody, FromAddress, ToAddress, MessageDate."""
    if not isinstance(case_id, str):
        return "Error: case_id must be a string"
    rows, _ = conn.run_query(
        f"SELECT Subject, TextBody, FromAddress, ToAddress, MessageDate FROM EmailMessage WHERE ParentId = '{case_id}'"
    )
    return rows


def get_livechat_transcript_by_case_id(conn: Connector, /, case_id: Any) -> Result:
    """A case's chat transcripts: Body, EndTime."""
    if not isinstance(case_id, str):
        return "Error: case_id must be a string"
    rows, _ = conn.run_query(f"SELECT Body, EndTime FROM LiveChatTranscript WHERE CaseId = '{case_id}'")
    return rows


def issue_soql_query(conn: Connector, /, query: Any) -> Result:
    """Any SOQL query (rows, or the org's error)."""
    rows, _ = conn.run_query(query)
    return rows


def issue_sosl_query(conn: Connector, /, query: Any) -> Result:
    """Any SOSL query (rows, or the org's error)."""
    rows, _ = conn.run_query(query)
    return rows


# -- the tool set as OpenAI tools ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    name: str
    fn: Callable[..., Result]
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    returns: str

    def openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


_DT = "a date-time 'YYYY-MM-DDTHH:MM:SSZ', e.g. '2023-01-01T00:00:00Z'"


def _s(description: str) -> dict[str, Any]:
    return {"type": "string", "description": description}


def _ids(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "description": description}


def _records(description: str, *keys: str) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {k: {"type": "string"} for k in keys},
            "required": list(keys),
        },
        "description": description,
    }


def _params(required: Sequence[str] = (), **props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required)}


_COUNTS = {"type": "object", "description": "A dictionary of id → number, e.g. from another tool."}

TOOLS: tuple[Tool, ...] = (
    Tool("get_agents_with_max_cases", get_agents_with_max_cases,
         "Agent ids (OwnerId) with the most cases in a list of case records.",
         _params(["subset_cases"], subset_cases=_records("Case records with an OwnerId.", "OwnerId")),
         "a list of agent ids"),
    Tool("get_agents_with_min_cases", get_agents_with_min_cases,
         "Agent ids (OwnerId) with the fewest cases in a list of case records.",
         _params(["subset_cases"], subset_cases=_records("Case records with an OwnerId.", "OwnerId")),
         "a list of agent ids"),
    Tool("calculate_average_handle_time", calculate_average_handle_time,
         "Average handle time (ClosedDate minus CreatedDate, in minutes) of each agent over a list of cases.",
         _params(["cases"], cases=_records("Case records with CreatedDate, ClosedDate and OwnerId.",
                                          "CreatedDate", "ClosedDate", "OwnerId")),
         "a dictionary agent id → average minutes"),
    Tool("get_start_date", get_start_date,
         "The start of a relative period: end_date minus interval_count periods.",
         _params(["end_date", "period", "interval_count"], end_date=_s(f"The end, {_DT}."),
                 period=_s("The unit: 'day', 'week', 'month' or 'quarter'."),
                 interval_count={"type": "integer", "description": "How many units to go back."}),
         "a date-time 'YYYY-MM-DDTHH:MM:SSZ'"),
    Tool("get_period", get_period,
         "Start and end of a named period of a year (a month name, Q1..Q4, Spring, Summer, Fall or Winter; "
         "Winter starts in December of that year).",
         _params(["period_name", "year"], period_name=_s("'January'..'December', 'Q1'..'Q4', 'Spring', 'Summer', "
                                                         "'Fall' or 'Winter'."),
                 year={"type": "integer", "description": "The year."}),
         "a dictionary with 'start_date' and 'end_date'"),
    Tool("get_agent_handled_cases_by_period", get_agent_handled_cases_by_period,
         "Number of cases assigned to each agent (Owner Assignment case-history rows) between two dates, inclusive.",
         _params(["start_date", "end_date"], start_date=_s(f"The start, {_DT}."), end_date=_s(f"The end, {_DT}.")),
         "a dictionary agent id → number of cases"),
    Tool("get_qualified_agent_ids_by_case_count", get_qualified_agent_ids_by_case_count,
         "Agent ids that handled more than n_cases cases.",
         _params(["agent_handled_cases", "n_cases"], agent_handled_cases=_COUNTS,
                 n_cases={"type": "integer", "description": "Agents need strictly more cases than this."}),
         "a list of agent ids"),
    Tool("get_cases", get_cases,
         "Case records (OwnerId, CreatedDate, ClosedDate, AccountId) matching every filter given; dates filter "
         "CreatedDate (start included, end excluded). Give at least one filter.",
         _params([], start_date=_s(f"Created on or after, {_DT}."), end_date=_s(f"Created before, {_DT}."),
                 agent_ids=_ids("Owner (User) ids."), case_ids=_ids("Case ids."),
                 order_item_ids=_ids("OrderItem ids."), issue_ids=_ids("Issue__c ids."),
                 statuses=_ids("Case statuses, e.g. ['Closed'].")),
         "a list of case records"),
    Tool("get_non_transferred_case_ids", get_non_transferred_case_ids,
         "Ids of cases assigned exactly once (never transferred) between two dates, inclusive.",
         _params(["start_date", "end_date"], start_date=_s(f"The start, {_DT}."), end_date=_s(f"The end, {_DT}.")),
         "a list of case ids"),
    Tool("get_agent_transferred_cases_by_period", get_agent_transferred_cases_by_period,
         "Number of transfers away from each agent between two dates, inclusive, optionally only for some agents.",
         _params(["start_date", "end_date"], start_date=_s(f"The start, {_DT}."), end_date=_s(f"The end, {_DT}."),
                 qualified_agent_ids=_ids("Only these agents (all when empty).")),
         "a dictionary agent id → number of transfers"),
    Tool("get_shipping_state", get_shipping_state,
         "Adds the ShippingState of each case's account to the case records.",
         _params(["cases"], cases=_records("Case records with an AccountId.", "AccountId")),
         "the case records with 'ShippingState'"),
    Tool("calculate_region_average_closure_times", calculate_region_average_closure_times,
         "Average closure time (ClosedDate minus CreatedDate, in seconds) per shipping state.",
         _params(["cases"], cases=_records("Case records with ShippingState, CreatedDate and ClosedDate.",
                                          "ShippingState", "CreatedDate", "ClosedDate")),
         "a dictionary state → average seconds"),
    Tool("get_order_item_ids_by_product", get_order_item_ids_by_product,
         "Ids of the order items of a product.",
         _params(["product_id"], product_id=_s("A Product2 id.")),
         "a list of OrderItem ids"),
    Tool("get_issue_counts", get_issue_counts,
         "Number of cases per issue for some order items, created between two dates, inclusive.",
         _params(["start_date", "end_date", "order_item_ids"], start_date=_s(f"The start, {_DT}."),
                 end_date=_s(f"The end, {_DT}."), order_item_ids=_ids("OrderItem ids (not empty).")),
         "a dictionary issue id → number of cases"),
    Tool("find_id_with_max_value", find_id_with_max_value,
         "The ids with the largest value in a dictionary.",
         _params(["values_by_id"], values_by_id=_COUNTS), "a list of ids"),
    Tool("find_id_with_min_value", find_id_with_min_value,
         "The ids with the smallest value in a dictionary.",
         _params(["values_by_id"], values_by_id=_COUNTS), "a list of ids"),
    Tool("get_account_id_by_contact_id", get_account_id_by_contact_id,
         "The Account id of a contact.",
         _params(["contact_id"], contact_id=_s("A Contact id.")), "an Account id"),
    Tool("get_purchase_history", get_purchase_history,
         "Order items of an account's activated orders on one day, restricted to some products.",
         _params(["account_id", "purchase_date", "related_product_ids"], account_id=_s("An Account id."),
                 purchase_date=_s(f"The day, {_DT}."), related_product_ids=_ids("Product2 ids.")),
         "a list of {'Product2Id'} records"),
    Tool("get_month_to_case_count", get_month_to_case_count,
         "Number of cases per month name of their CreatedDate.",
         _params(["cases"], cases=_records("Case records with a CreatedDate.", "CreatedDate")),
         "a dictionary month name → number of cases"),
    Tool("search_knowledge_articles", search_knowledge_articles,
         "Full-text search of the knowledge articles.",
         _params(["search_term"], search_term=_s("Words to search for.")),
         "a list of {'Id', 'Title', 'Content'}"),
    Tool("search_products", search_products,
         "Full-text search of the products.",
         _params(["search_term"], search_term=_s("Words to search for.")), "a list of Product2 ids"),
    Tool("get_issues", get_issues, "Every issue (Id and Name).", _params([]), "a list of {'Id', 'Name'}"),
    Tool("respond", respond, "Submit the final answer: only the answer, no sentence.",
         _params(["content"], content=_s("The answer, or 'None'.")), "the answer"),
    Tool("get_livechat_transcript_by_case_id", get_livechat_transcript_by_case_id,
         "The live chat transcripts of a case.",
         _params(["case_id"], case_id=_s("A Case id.")), "a list of {'Body', 'EndTime'}"),
    Tool("get_email_messages_by_case_id", get_email_messages_by_case_id,
         "The emails of a case.",
         _params(["case_id"], case_id=_s("A Case id.")),
         "a list of {'Subject', 'TextBody', 'FromAddress', 'ToAddress', 'MessageDate'}"),
)  # fmt: skip

RAW_QUERY_TOOLS: tuple[Tool, ...] = (
    Tool("issue_soql_query", issue_soql_query, "Run any SOQL query against the org.",
         _params(["query"], query=_s("A SOQL query.")), "the records, or the org's error"),
    Tool("issue_sosl_query", issue_sosl_query, "Run any SOSL search against the org.",
         _params(["query"], query=_s("A SOSL search (FIND {...} ...).")), "the records, or the org's error"),
)  # fmt: skip

TOOLS_BY_NAME: dict[str, Tool] = {t.name: t for t in (*TOOLS, *RAW_QUERY_TOOLS)}


def call(conn: Connector, name: str, arguments: dict[str, Any]) -> Result:
    """Run tool `name` with keyword `arguments` as CRMArena's environment does: an unknown tool, wrong
    argument names or a failure inside give an `Error...` / `Unknown action` observation, never an exception
    (except `OrgUnreachable`)."""
    tool = TOOLS_BY_NAME.get(name)
    if tool is None:
        return f"Unknown action {name}"
    try:
        return tool.fn(conn, **arguments)
    except OrgUnreachable:
        raise
    except Exception as exc:
        return f"Error: {exc}"
