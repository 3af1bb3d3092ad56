"""Bulk API 2.0 query jobs on the local org, as simple-salesforce's `bulk2` client drives them.

```
POST   /services/data/vXX.X/jobs/query                 create a query job ({"operation", "query", ...})
GET    /services/data/vXX.X/jobs/query                 list this session's query jobs
GET    /services/data/vXX.X/jobs/query/<id>            job info (state, numberRecordsProcessed, ...)
GET    /services/data/vXX.X/jobs/query/<id>/results    a page of CSV (?maxRecords=n&locator=L)
PATCH  /services/data/vXX.X/jobs/query/<id>            {"state": "Aborted"}
DELETE /services/data/vXX.X/jobs/query/<id>            forget the job (204)
*      /services/data/vXX.X/jobs/ingest[/...]          refused: the local org is read-only (405)
```

Semantics follow reference salesforce-api.md §6.3. A job runs its query when it is created, so its
first poll already says `JobComplete` (the create reply says `UploadComplete`, as Salesforce's does).
Result pages are CSV with the header row on every page, columns in SELECT order, parent fields under
dotted headers (`Account.ShippingState`), every value quoted, null as an empty cell, booleans `true` /
`false`, datetimes `2024-01-05T10:00:00.000Z`; the `Sforce-NumberOfRecords` header counts the page's
records and `Sforce-Locator` names the next page (`null` after the last). What Bulk API 2.0 refuses
(aggregate functions and COUNT(), GROUP BY, OFFSET, parent-to-child subqueries) is refused here with a
located message, as are malformed queries (the same errors `/query` answers).
"""

from __future__ import annotations

import csv
import io
import secrets
import string
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NoReturn

from orgs.local.engine import LocalOrg
from orgs.local.errors import NotFound, OrgApiError, QueryError
from orgs.local.soql import parse
from orgs.local.soql.ast import SubQuery
from orgs.local.soql.filters import to18
from orgs.local.soql.plan import ChildOut, FieldOut, ParentOut, Plan, RecordShape

JOB_PREFIX = "750"
ADMIN_USER_ID = "005000000000001AAA"
# jobs keep their result rows in memory; the oldest are forgotten beyond this many jobs or rows in all
# (the newest job is always kept)
MAX_JOBS = 100
MAX_ROWS = 2_000_000
DEFAULT_MAX_RECORDS = 50_000
DELIMITERS = {"COMMA": ",", "TAB": "\t", "PIPE": "|", "SEMICOLON": ";", "CARET": "^", "BACKQUOTE": "`"}
LINE_ENDINGS = {"LF": "\n", "CRLF": "\r\n"}
OPERATIONS = ("query", "queryAll")
_ALPHABET = string.ascii_letters + string.digits


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")


def _job_error(message: str) -> OrgApiError:
    return OrgApiError(message, error_code="INVALIDJOB")


@dataclass
class QueryJob:
    id: str
    operation: str
    sobject: str
    query: str
    column_delimiter: str
    line_ending: str
    api_version: str
    created: str
    header: list[str]
    rows: list[list[str]]
    state: str = "JobComplete"
    locators: dict[str, int] = field(default_factory=dict)

    def info(self, state: str | None = None) -> dict[str, Any]:
        return {
            "id": self.id,
            "operation": self.operation,
            "object": self.sobject,
            "createdById": ADMIN_USER_ID,
            "createdDate": self.created,
            "systemModstamp": self.created,
            "state": state or self.state,
            "concurrencyMode": "Parallel",
            "contentType": "CSV",
            "apiVersion": float(self.api_version),
            "jobType": "V2Query",
            "lineEnding": self.line_ending,
            "columnDelimiter": self.column_delimiter,
            "numberRecordsProcessed": len(self.rows),
            "retries": 0,
            "totalProcessingTime": 0,
            "isPkChunkingSupported": False,
        }


Cell = Callable[[Any], str]


def _plain(value: Any) -> str:
    return "" if value is None else str(value)


def _boolean(value: Any) -> str:
    return "" if value is None else ("true" if value else "false")


def _datetime(value: Any) -> str:
    # the store keeps Salesforce's REST form (…+0000); Bulk CSV writes UTC with Z
    return "" if value is None else str(value).replace("+0000", "Z")


class BulkQueries:
    """The query jobs of one local org, in memory: the most recent `MAX_JOBS`, within `MAX_ROWS` rows."""

    def __init__(self, org: LocalOrg) -> None:
        self.org = org
        self._jobs: OrderedDict[str, QueryJob] = OrderedDict()
        self._lock = threading.Lock()

    # -- jobs

    def create(self, body: Any, version: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _job_error("The request body must be a JSON object with operation and query.")
        operation = body.get("operation")
        if operation not in OPERATIONS:
            raise _job_error(
                f"operation must be one of {', '.join(OPERATIONS)} for a query job (got {operation!r}); "
                "ingest jobs go to jobs/ingest."
            )
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise _job_error("A query job needs a SOQL query in the query property.")
        delimiter = body.get("columnDelimiter", "COMMA")
        if delimiter not in DELIMITERS:
            raise _job_error(f"columnDelimiter must be one of {', '.join(DELIMITERS)} (got {delimiter!r}).")
        line_ending = body.get("lineEnding", "LF")
        if line_ending not in LINE_ENDINGS:
            raise _job_error(f"lineEnding must be LF or CRLF (got {line_ending!r}).")
        plan = self.check(query)
        assert plan.shape is not None
        header, cells = self.columns(plan.shape)
        rows = self.org.store.connection().execute(plan.sql, plan.params).fetchall()
        job = QueryJob(
            id=to18(JOB_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(12))),
            operation=operation,
            sobject=plan.sobject,
            query=query,
            column_delimiter=delimiter,
            line_ending=line_ending,
            api_version=version,
            created=_now(),
            header=header,
            rows=[[cell(row[col]) for col, cell in cells] for row in rows],
        )
        with self._lock:
            self._jobs[job.id] = job
            held = sum(len(j.rows) for j in self._jobs.values())
            while len(self._jobs) > 1 and (len(self._jobs) > MAX_JOBS or held > MAX_ROWS):
                _, old = self._jobs.popitem(last=False)
                held -= len(old.rows)
        return job.info(state="UploadComplete")

    def check(self, query: str) -> Plan:
        """The query's plan, once the query is one Bulk API 2.0 runs (errors as `/query` answers them)."""
        plan = self.org.plan(query)  # malformed or unknown names: MALFORMED_QUERY, INVALID_FIELD, ...
        tree = parse(query)
        if tree.offset is not None:
            raise QueryError(
                "Bulk API 2.0 query does not support OFFSET.", query, tree.offset.pos, error_code="INVALIDJOB"
            )
        if plan.kind != "records" or tree.group_by:
            at = tree.group_by_pos if tree.group_by and tree.group_by_pos is not None else tree.select[0].pos
            raise QueryError(
                "Bulk API 2.0 query does not support aggregate functions, COUNT() or GROUP BY; "
                "run this query through the REST query resource instead.",
                query,
                at,
                error_code="INVALIDJOB",
            )
        assert plan.shape is not None
        child = next((it for it in plan.shape.items if isinstance(it, ChildOut)), None)
        if child is not None:
            raise QueryError(
                f"Bulk API 2.0 query does not support parent-to-child subqueries ({child.key}); "
                "query the child object with a filter on its lookup instead.",
                query,
                next((item.pos for item in tree.select if isinstance(item.expr, SubQuery)), tree.pos),
                error_code="INVALIDJOB",
            )
        return plan

    def columns(self, shape: RecordShape, prefix: str = "") -> tuple[list[str], list[tuple[int, Cell]]]:
        """CSV headers (dotted for parent fields) and, per column, its SQL column and cell writer."""
        spec = self.org.model.get(shape.sobject)
        header: list[str] = []
        cells: list[tuple[int, Cell]] = []
        for it in shape.items:
            if isinstance(it, FieldOut):
                kind = spec.field(it.key).type
                cell = _boolean if it.boolean else _datetime if kind == "datetime" else _plain
                header.append(prefix + it.key)
                cells.append((it.col, cell))
            elif isinstance(it, ParentOut):
                sub = RecordShape(it.sobject, it.id_col, it.items)
                more_header, more_cells = self.columns(sub, f"{prefix}{it.key}.")
                header += more_header
                cells += more_cells
        return header, cells

    def job(self, job_id: str) -> QueryJob:
        with self._lock:
            found = self._jobs.get(job_id)
        if found is None:
            raise NotFound(
                f"Query job {job_id} does not exist (never created, deleted, or forgotten among the oldest "
                f"jobs beyond {MAX_JOBS} jobs or {MAX_ROWS:,} rows); create it again with POST jobs/query."
            )
        return found

    def info(self, job_id: str) -> dict[str, Any]:
        return self.job(job_id).info()

    def all(self) -> dict[str, Any]:
        with self._lock:
            jobs = list(self._jobs.values())
        return {"done": True, "records": [j.info() for j in jobs], "nextRecordsUrl": None}

    def set_state(self, job_id: str, body: Any) -> NoReturn:
        """PATCH: only `Aborted` is a state a client may set, and a job here is complete from the start."""
        job = self.job(job_id)
        state = body.get("state") if isinstance(body, dict) else None
        if state != "Aborted":
            raise OrgApiError(
                f"A query job's state can only be set to Aborted (got {state!r}).",
                error_code="INVALIDJOBSTATE",
            )
        raise OrgApiError(
            f"Query job {job.id} is already complete ({len(job.rows)} records) and cannot be aborted; "
            "delete it instead.",
            error_code="INVALIDJOBSTATE",
        )

    def delete(self, job_id: str) -> None:
        self.job(job_id)
        with self._lock:
            self._jobs.pop(job_id, None)

    # -- results

    def results(
        self, job_id: str, version: str, max_records: str | None, locator: str | None
    ) -> tuple[bytes, int, str]:
        """(CSV page, its number of records, the next locator or "null")."""
        job = self.job(job_id)
        if version != job.api_version:
            raise OrgApiError(
                f"Query job {job_id} was created with API version {job.api_version}; "
                f"read its results with the same version (not {version}).",
                error_code="INVALIDJOB",
                status=409,
            )
        size = DEFAULT_MAX_RECORDS
        if max_records is not None:
            if not max_records.isdigit() or int(max_records) < 1:
                raise _job_error(f"maxRecords must be a positive whole number (got {max_records!r}).")
            size = int(max_records)
        start = 0
        if locator:
            with self._lock:
                found = job.locators.get(locator)
            if found is None:
                raise OrgApiError(
                    f"Invalid locator {locator!r} for query job {job_id}: pass the Sforce-Locator header of "
                    "the previous results page, or no locator for the first page.",
                    error_code="INVALID_QUERY_LOCATOR",
                )
            start = found
        page = job.rows[start : start + size]
        buffer = io.StringIO()
        writer = csv.writer(
            buffer,
            delimiter=DELIMITERS[job.column_delimiter],
            lineterminator=LINE_ENDINGS[job.line_ending],
            quoting=csv.QUOTE_ALL,
        )
        writer.writerow(job.header)
        writer.writerows(page)
        nxt = start + size
        next_locator = "null"
        if nxt < len(job.rows):
            next_locator = "".join(secrets.choice(_ALPHABET) for _ in range(12))
            with self._lock:
                job.locators[next_locator] = nxt
        return buffer.getvalue().encode("utf-8"), len(page), next_locator
