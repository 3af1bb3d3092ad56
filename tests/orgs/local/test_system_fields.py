"""System fields on a served bundle (issue 11 item 6): CreatedById, CreatedDate, LastModifiedById,
LastModifiedDate, SystemModstamp, IsDeleted, CaseNumber and OrderNumber, through the unmodified
simple-salesforce client over HTTPS.

Expected values are derived here from the bundle's CSVs by the rule the README states ("System fields"), with
plain csv/datetime code, never by calling orgs/local/computed.py."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orgs.local import connect, disconnect

DATE_COLUMNS = {  # the date and date-time columns of each object's CSV (the org model's types)
    "Case": ("CreatedDate", "ClosedDate"),
    "CaseHistory__c": ("CreatedDate",),
    "EmailMessage": ("MessageDate",),
    "LiveChatTranscript": ("StartTime", "EndTime"),
    "Order": ("EffectiveDate",),
    "Pricebook2": ("ValidFrom", "ValidTo"),
}


def rows(root: Path, sobject: str) -> list[dict[str, str]]:
    with (root / "data" / f"{sobject}.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def as_wire(value: str) -> str:
    return value + "T00:00:00.000+0000" if len(value) == 10 else value


def expected(root: Path, sobject: str) -> dict[str, dict[str, Any]]:
    """Id → the system fields the README's rule gives."""
    go_live = json.loads((root / "manifest.json").read_text())["profile"]["start"] + "T00:00:00.000+0000"
    api_user = rows(root, "User")[0]["Id"]
    out: dict[str, dict[str, Any]] = {}
    recs = rows(root, sobject)
    for r in recs:
        dates = sorted(as_wire(r[c]) for c in DATE_COLUMNS.get(sobject, ()) if r[c])
        created = as_wire(r["CreatedDate"]) if r.get("CreatedDate") else (dates[0] if dates else go_live)
        modified = max([created, *dates])
        creator = r.get("OwnerId") or api_user
        out[r["Id"]] = {
            "CreatedById": creator,
            "LastModifiedById": creator,
            "CreatedDate": created,
            "LastModifiedDate": modified,
            "SystemModstamp": modified,
            "IsDeleted": False,
        }
    number = {"Case": "CaseNumber", "Order": "OrderNumber"}.get(sobject)
    if number:
        ordered = sorted(recs, key=lambda r: (out[r["Id"]]["CreatedDate"], r["Id"]))
        for n, r in enumerate(ordered, start=1):
            out[r["Id"]][number] = str(n).rjust(8, "0")
    return out


@pytest.fixture(scope="module")
def sf(small_bundle: Path) -> Iterator[Any]:
    yield connect(small_bundle)
    disconnect(small_bundle)


SYSTEM = ["CreatedById", "CreatedDate", "LastModifiedById", "LastModifiedDate", "SystemModstamp", "IsDeleted"]


@pytest.mark.parametrize("sobject", ["Case", "Order", "Product2", "LiveChatTranscript", "Contact", "User"])
def test_system_fields_follow_the_documented_rule(sobject: str, sf: Any, small_bundle: Path) -> None:
    want = expected(small_bundle, sobject)
    fields = SYSTEM + [f for f in ("CaseNumber", "OrderNumber") if f in next(iter(want.values()))]
    got = sf.query_all(f"SELECT Id, {', '.join(fields)} FROM {sobject}")["records"]
    assert len(got) == len(want) > 0
    for rec in got:
        assert {f: rec[f] for f in fields} == want[rec["Id"]], rec["Id"]


def test_system_fields_filter_sort_and_follow_relationships(sf: Any, small_bundle: Path) -> None:
    want = expected(small_bundle, "Case")
    users = {u["Id"]: f"{u['FirstName']} {u['LastName']}".strip() for u in rows(small_bundle, "User")}
    first = sf.query(
        "SELECT Id, CaseNumber, CreatedBy.Name, LastModifiedBy.Name FROM Case ORDER BY CaseNumber LIMIT 3"
    )
    by_number = sorted(want, key=lambda i: want[i]["CaseNumber"])[:3]
    assert [r["Id"] for r in first["records"]] == by_number
    for r in first["records"]:
        assert r["CreatedBy"]["Name"] == users[want[r["Id"]]["CreatedById"]] == r["LastModifiedBy"]["Name"]
    cut = sorted(v["LastModifiedDate"] for v in want.values())[len(want) // 2]
    soql_cut = cut.replace(".000+0000", "Z")
    n = sf.query(f"SELECT COUNT() FROM Case WHERE LastModifiedDate > {soql_cut} AND IsDeleted = false")[
        "totalSize"
    ]
    assert n == sum(v["LastModifiedDate"] > cut for v in want.values())
    one = next(iter(want))
    assert sf.Case.get(one)["SystemModstamp"] == want[one]["SystemModstamp"]  # REST record GET has them too


def test_describe_marks_system_fields_read_only_and_numbers_as_auto_numbers(sf: Any) -> None:
    fields = {f["name"]: f for f in sf.Case.describe()["fields"]}
    for name in (
        "CreatedById",
        "LastModifiedById",
        "LastModifiedDate",
        "SystemModstamp",
        "IsDeleted",
        "CaseNumber",
    ):
        assert fields[name]["createable"] is False and fields[name]["updateable"] is False, name
    assert fields["CaseNumber"]["autoNumber"] is True and fields["Subject"]["autoNumber"] is False
    assert fields["CreatedById"]["type"] == "reference" and fields["CreatedById"]["referenceTo"] == ["User"]
    assert fields["CreatedById"]["relationshipName"] == "CreatedBy"
    assert fields["LastModifiedDate"]["type"] == "datetime" and fields["IsDeleted"]["type"] == "boolean"
    order = {f["name"]: f for f in sf.Order.describe()["fields"]}
    assert order["OrderNumber"]["autoNumber"] is True and "CaseNumber" not in order


def test_system_fields_leave_the_bundle_unchanged(small_bundle: Path, sf: Any) -> None:
    for sobject in ("Case", "Order", "Product2"):
        header = (small_bundle / "data" / f"{sobject}.csv").read_text(encoding="utf-8").splitlines()[0]
        assert "SystemModstamp" not in header and "CaseNumber" not in header
