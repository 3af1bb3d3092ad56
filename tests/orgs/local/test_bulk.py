"""Bulk API 2.0 query jobs on the local org, through simple-salesforce's `bulk2` client (and plain requests
for the job resources the client has no call for). Expected rows come from the bundle's CSVs via pandas."""

from __future__ import annotations

import csv
import io
import math
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from simple_salesforce.exceptions import SalesforceError, SalesforceGeneralError, SalesforceMalformedRequest

from orgs.local.limits import ServeLimits
from orgs.local.serve import LocalServer
from orgs.local.soql.filters import to18
from tests.orgs.local.oracle import Frames

HIGH_CASES = (
    "SELECT Id, Subject, CreatedDate, Account.ShippingState, IsClosed FROM Case WHERE Priority = 'High'"
)


def parse_pages(pages: list[str], delimiter: str = ",") -> tuple[list[str], list[list[str]]]:
    header: list[str] | None = None
    rows: list[list[str]] = []
    for page in pages:
        got = list(csv.reader(io.StringIO(page, newline=""), delimiter=delimiter))
        assert header is None or got[0] == header, "every page starts with the same header row"
        header = got[0]
        rows += got[1:]
    assert header is not None
    return header, rows


def wire_datetime(value: str | None) -> str:
    """The bundle keeps `…T10:00:00.000+0000`; Bulk CSV writes `…T10:00:00.000Z`."""
    if value is None:
        return ""
    assert value.endswith("+0000"), value
    return value[: -len("+0000")] + "Z"


def expected_high_cases(frames: Frames) -> list[list[str]]:
    cases = frames.frame("Case")
    states = frames.resolve("Case", "Account.ShippingState")
    out = []
    for i, row in cases.iterrows():
        if row["Priority"] != "High":
            continue
        closed = row["Status"] == "Closed"  # what a real org derives IsClosed from
        out.append(
            [
                row["Id"],
                row["Subject"] or "",
                wire_datetime(row["CreatedDate"]),
                states[int(str(i))] or "",
                "true" if closed else "false",
            ]
        )
    return out


def test_query_pages_match_the_csvs(sf: Any, frames: Frames) -> None:
    want = expected_high_cases(frames)
    assert len(want) > 80
    pages = list(sf.bulk2.Case.query(HIGH_CASES, max_records=37, wait=0))
    assert len(pages) == math.ceil(len(want) / 37)
    header, rows = parse_pages(pages)
    assert header == ["Id", "Subject", "CreatedDate", "Account.ShippingState", "IsClosed"]
    assert rows == want
    # every value is quoted, the header too
    assert pages[0].startswith('"Id","Subject","CreatedDate","Account.ShippingState","IsClosed"\n')


def test_query_all_with_pipes_and_crlf(sf: Any, frames: Frames) -> None:
    pages = list(
        sf.bulk2.Case.query_all(
            HIGH_CASES, max_records=1000, column_delimiter="PIPE", line_ending="CRLF", wait=0
        )
    )
    assert len(pages) == 1 and pages[0].endswith("\r\n") and "\n" not in pages[0].replace("\r\n", "")
    _, rows = parse_pages(pages, delimiter="|")
    assert rows == expected_high_cases(frames)


def test_nulls_are_empty_cells(sf: Any, frames: Frames) -> None:
    cases = frames.frame("Case")
    open_ids = [r["Id"] for _, r in cases.iterrows() if r["Status"] != "Closed"]
    assert open_ids
    pages = list(sf.bulk2.Case.query("SELECT Id, ClosedDate FROM Case WHERE Status != 'Closed'", wait=0))
    _, rows = parse_pages(pages)
    assert rows == [[i, ""] for i in open_ids]
    assert f'"{open_ids[0]}",""' in pages[0]


def test_download_writes_every_page(sf: Any, frames: Frames, tmp_path: Path) -> None:
    contacts = frames.frame("Contact")
    results = sf.bulk2.Contact.download("SELECT Id, Name FROM Contact", str(tmp_path), max_records=60, wait=0)
    assert len(results) == math.ceil(len(contacts) / 60)
    assert sum(r["number_of_records"] for r in results) == len(contacts)
    rows: list[list[str]] = []
    for r in results:
        got = list(csv.reader(Path(r["file"]).read_text(encoding="utf-8").splitlines()))
        assert got[0] == ["Id", "Name"]
        rows += got[1:]
    want = [[r["Id"], f"{r['FirstName']} {r['LastName']}".strip()] for _, r in contacts.iterrows()]
    assert rows == want


def soql_error(exc: SalesforceError) -> dict[str, Any]:
    content = exc.content
    assert isinstance(content, list) and isinstance(content[0], dict), content
    return content[0]


@pytest.mark.parametrize(
    ("soql", "code", "at"),
    [
        ("SELECT COUNT() FROM Case", "INVALIDJOB", "COUNT"),
        ("SELECT Priority, COUNT(Id) FROM Case GROUP BY Priority", "INVALIDJOB", "GROUP BY"),
        ("SELECT Id FROM Case ORDER BY Id LIMIT 5 OFFSET 10", "INVALIDJOB", "10"),
        ("SELECT Id, (SELECT Id FROM Cases) FROM Contact", "INVALIDJOB", "(SELECT"),
        ("SELECT Id, Nope__c FROM Case", "INVALID_FIELD", "Nope__c"),
        ("SELECT Id FROM Case WHERE", "MALFORMED_QUERY", None),
    ],
)
def test_refused_queries(sf: Any, soql: str, code: str, at: str | None) -> None:
    with pytest.raises(SalesforceMalformedRequest) as caught:
        list(sf.bulk2.Case.query(soql, wait=0))
    error = soql_error(caught.value)
    assert error["errorCode"] == code
    if at is not None:
        assert f"ERROR at Row:1:Column:{soql.index(at) + 1}\n" in error["message"]


def jobs_url(server: LocalServer, version: str = "59.0") -> str:
    return f"{server.url}/services/data/v{version}/jobs/query"


def call(server: LocalServer, method: str, url: str, **kw: Any) -> requests.Response:
    headers = {"Authorization": f"Bearer {server.token}", **kw.pop("headers", {})}
    return server.session().request(method, url, headers=headers, timeout=10, **kw)


def test_job_lifecycle(server: LocalServer, frames: Frames) -> None:
    high = len(expected_high_cases(frames))
    created = call(server, "POST", jobs_url(server), json={"operation": "query", "query": HIGH_CASES})
    assert created.status_code == 200
    job = created.json()
    assert job["id"].startswith("750") and len(job["id"]) == 18
    assert to18(job["id"][:15]) == job["id"]  # a well-formed id: its case-safe suffix checks out
    assert job["state"] == "UploadComplete" and job["object"] == "Case" and job["apiVersion"] == 59.0
    info = call(server, "GET", f"{jobs_url(server)}/{job['id']}").json()
    assert info["state"] == "JobComplete" and info["numberRecordsProcessed"] == high
    listed = call(server, "GET", jobs_url(server)).json()
    assert job["id"] in [j["id"] for j in listed["records"]] and listed["done"] is True

    first = call(server, "GET", f"{jobs_url(server)}/{job['id']}/results", params={"maxRecords": 10})
    assert first.headers["Sforce-NumberOfRecords"] == "10" and first.headers["Sforce-Locator"] != "null"
    assert first.headers["content-type"].startswith("text/csv")
    rest = call(
        server,
        "GET",
        f"{jobs_url(server)}/{job['id']}/results",
        params={"maxRecords": 10_000, "locator": first.headers["Sforce-Locator"]},
    )
    assert (
        rest.headers["Sforce-NumberOfRecords"] == str(high - 10) and rest.headers["Sforce-Locator"] == "null"
    )

    def refused(response: requests.Response, status: int, code: str) -> None:
        assert response.status_code == status, response.text
        assert response.json()[0]["errorCode"] == code

    results = f"{jobs_url(server)}/{job['id']}/results"
    refused(call(server, "GET", results, params={"locator": "nope"}), 400, "INVALID_QUERY_LOCATOR")
    refused(call(server, "GET", results, params={"maxRecords": "0"}), 400, "INVALIDJOB")
    refused(call(server, "GET", f"{jobs_url(server, '60.0')}/{job['id']}/results"), 409, "INVALIDJOB")
    refused(
        call(server, "PATCH", f"{jobs_url(server)}/{job['id']}", json={"state": "Aborted"}),
        400,
        "INVALIDJOBSTATE",
    )
    assert call(server, "DELETE", f"{jobs_url(server)}/{job['id']}").status_code == 204
    refused(call(server, "GET", f"{jobs_url(server)}/{job['id']}"), 404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", "JSON_PARSER_ERROR"),
        (b'{"operation": "insert", "query": "SELECT Id FROM Case"}', "INVALIDJOB"),
        (b'{"operation": "query"}', "INVALIDJOB"),
        (b'{"operation": "query", "query": "SELECT Id FROM Case", "columnDelimiter": "SPACE"}', "INVALIDJOB"),
        (b'{"operation": "query", "query": "SELECT Id FROM Case", "lineEnding": "CR"}', "INVALIDJOB"),
    ],
)
def test_bad_job_requests(server: LocalServer, body: bytes, code: str) -> None:
    r = call(server, "POST", jobs_url(server), data=body, headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json()[0]["errorCode"] == code


def test_jobs_need_a_session(server: LocalServer) -> None:
    r = server.session().post(jobs_url(server), json={"operation": "query", "query": "SELECT Id FROM Case"})
    assert r.status_code == 401 and r.json()[0]["errorCode"] == "INVALID_SESSION_ID"


def test_ingest_is_refused_the_org_being_read_only(sf: Any) -> None:
    with pytest.raises(SalesforceGeneralError) as caught:
        sf.bulk2.Case.insert(records=[{"Subject": "x"}], wait=0)
    assert caught.value.status == 405 and soql_error(caught.value)["errorCode"] == "METHOD_NOT_ALLOWED"


def test_old_jobs_are_forgotten_within_the_byte_budget(served_bundle: Path) -> None:
    body = {"operation": "query", "query": "SELECT Id FROM Case ORDER BY Id LIMIT 10"}
    with LocalServer(served_bundle, tls=False, token="t") as fresh:
        first = call(fresh, "POST", jobs_url(fresh), json=body).json()["id"]
        page = call(fresh, "GET", f"{jobs_url(fresh)}/{first}/results").content
        count, size = fresh.app.state.org.served.current.bulk.held()
    assert count == 1 and size >= len(page) - len(page.splitlines(keepends=True)[0])  # the CSV lines held
    # a budget of two and a half such jobs: the first of three goes, the newest is kept even alone over it
    limits = ServeLimits(max_bulk_bytes=int(size * 2.5))
    with LocalServer(served_bundle, tls=False, token="t", limits=limits) as small:
        ids = [call(small, "POST", jobs_url(small), json=body).json()["id"] for _ in range(3)]
        assert call(small, "GET", f"{jobs_url(small)}/{ids[0]}").status_code == 404
        for kept in ids[1:]:
            assert call(small, "GET", f"{jobs_url(small)}/{kept}").json()["numberRecordsProcessed"] == 10
        big = {"operation": "query", "query": "SELECT Id FROM Case LIMIT 100"}
        newest = call(small, "POST", jobs_url(small), json=big).json()["id"]  # over budget alone: kept
        assert call(small, "GET", f"{jobs_url(small)}/{newest}").json()["numberRecordsProcessed"] == 100
        assert call(small, "GET", f"{jobs_url(small)}/{ids[2]}").status_code == 404


def test_unread_jobs_expire(served_bundle: Path) -> None:
    with LocalServer(served_bundle, tls=False, token="t", limits=ServeLimits(bulk_ttl=0.3)) as quick:
        body = {"operation": "query", "query": "SELECT Id FROM Case LIMIT 3"}
        read, unread = (call(quick, "POST", jobs_url(quick), json=body).json()["id"] for _ in range(2))
        for _ in range(3):
            time.sleep(0.15)
            assert call(quick, "GET", f"{jobs_url(quick)}/{read}").status_code == 200  # reading keeps it
        r = call(quick, "GET", f"{jobs_url(quick)}/{unread}")
        assert r.status_code == 404 and "unread for" in r.json()[0]["message"]
