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

import re
import secrets
import string
import threading
import time
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
DEFAULT_MAX_RECORDS = 50_000
_MAX_RECORDS = re.compile(r"[0-9]{1,9}")
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
    """A query job and its results: the CSV header line and one encoded CSV line per record (in the job's
    delimiter and line ending), so a page is a join and the memory held is what `size` says."""

    id: str
    operation: str
    sobject: str
    query: str
    column_delimiter: str
    line_ending: str
    api_version: str
    created: str
    header: bytes
    lines: list[bytes]
    size: int
    state: str = "JobComplete"
    locators: dict[str, int] = field(default_factory=dict)
    touched: float = field(default_factory=time.monotonic)

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
            "numberRecordsProcessed": len(self.lines),
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


def _csv_line(cells: list[str], delimiter: str, line_ending: str) -> bytes:
    """One CSV line with every value quoted (quotes inside doubled), as csv.QUOTE_ALL writes it."""
    return (delimiter.join('"' + cell.replace('"', '""') + '"' for cell in cells) + line_ending).encode(
        "utf-8", "surrogatepass"
    )


def _choice(body: dict[str, Any], key: str, allowed: dict[str, str] | tuple[str, ...], default: str) -> str:
    value = body.get(key, default)
    if not isinstance(value, str) or value not in allowed:
        raise _job_error(f"{key} must be one of {', '.join(allowed)} (got {_shown(value)}).")
    return value


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class BulkQueries:
    """The query jobs of one local org, in memory, with their results: forgotten when deleted, unread for
    `limits.bulk_ttl` seconds, or (the oldest first) beyond `limits.max_bulk_jobs` jobs or
    `limits.max_bulk_bytes` of results (the newest job is always kept)."""

    def __init__(self, org: LocalOrg) -> None:
        self.org = org
        self.limits = org.serve_limits
        self._jobs: OrderedDict[str, QueryJob] = OrderedDict()
        self._lock = threading.Lock()

    # -- jobs

    def create(self, body: Any, version: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise _job_error("The request body must be a JSON object with operation and query.")
        operation = body.get("operation")
        if not isinstance(operation, str) or operation not in OPERATIONS:
            raise _job_error(
                f"operation must be one of {', '.join(OPERATIONS)} for a query job (got {_shown(operation)}); "
                "ingest jobs go to jobs/ingest."
            )
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            raise _job_error("A query job needs a SOQL query (a string) in the query property.")
        delimiter = _choice(body, "columnDelimiter", DELIMITERS, "COMMA")
        line_ending = _choice(body, "lineEnding", LINE_ENDINGS, "LF")
        plan = self.check(query)
        assert plan.shape is not None
        header, cells = self.columns(plan.shape)
        rows = self.org.execute(plan.sql, plan.params)
        sep, end = DELIMITERS[delimiter], LINE_ENDINGS[line_ending]
        lines = [_csv_line([cell(row[col]) for col, cell in cells], sep, end) for row in rows]
        job = QueryJob(
            id=to18(JOB_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(12))),
            operation=operation,
            sobject=plan.sobject,
            query=query,
            column_delimiter=delimiter,
            line_ending=line_ending,
            api_version=version,
            created=_now(),
            header=_csv_line(header, sep, end),
            lines=lines,
            size=sum(map(len, lines)) + 40 * len(lines),  # the bytes and each bytes object's own
        )
        with self._lock:
            self._expire()
            self._jobs[job.id] = job
            held = sum(j.size for j in self._jobs.values())
            while len(self._jobs) > 1 and (
                len(self._jobs) > self.limits.max_bulk_jobs or held > self.limits.max_bulk_bytes
            ):
                _, old = self._jobs.popitem(last=False)
                held -= old.size
        return job.info(state="UploadComplete")

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, j in self._jobs.items() if now - j.touched > self.limits.bulk_ttl]:
            del self._jobs[key]

    def held(self) -> tuple[int, int]:
        """How many jobs are held, and the bytes of their results."""
        with self._lock:
            return len(self._jobs), sum(j.size for j in self._jobs.values())

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
            self._expire()
            found = self._jobs.get(job_id)
            if found is not None:
                found.touched = time.monotonic()
        if found is None:
            limits = self.limits
            raise NotFound(
                f"Query job {job_id} does not exist (never created, deleted, unread for "
                f"{limits.bulk_ttl / 60:g} minutes, or forgotten among the oldest jobs beyond "
                f"{limits.max_bulk_jobs} jobs or {limits.max_bulk_bytes / 2**20:g} MB of results); create it "
                "again with POST jobs/query."
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
            f"Query job {job.id} is already complete ({len(job.lines)} records) and cannot be aborted; "
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
            if not _MAX_RECORDS.fullmatch(max_records) or int(max_records) < 1:
                raise _job_error(
                    f"maxRecords must be a whole number from 1 to 999,999,999 (got {_shown(max_records)})."
                )
            size = int(max_records)
        start = 0
        if locator:
            with self._lock:
                found = job.locators.get(locator)
            if found is None:
                raise OrgApiError(
                    f"Invalid locator {_shown(locator)} for query job {job_id}: pass the Sforce-Locator header "
                    "of the previous results page, or no locator for the first page.",
                    error_code="INVALID_QUERY_LOCATOR",
                )
            start = found
        page = job.lines[start : start + size]
        nxt = start + size
        next_locator = "null"
        if nxt < len(job.lines):
            next_locator = "".join(secrets.choice(_ALPHABET) for _ in range(12))
            with self._lock:
                job.locators[next_locator] = nxt
        return job.header + b"".join(page), len(page), next_locator
