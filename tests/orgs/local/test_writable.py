"""The empty, writable org (`orgseed serve --empty`), driven by the unmodified simple-salesforce client over
HTTPS. Each refusal of seeding.md Part B is triggered the way a loader would meet it, and checked against
the code and message Salesforce sends (salesforce-api.md §4.2, seeding.md B1-B10)."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from simple_salesforce.exceptions import (
    SalesforceMalformedRequest,
    SalesforceRefusedRequest,
    SalesforceResourceNotFound,
)

from orgs.local.serve import LocalServer
from orgs.local.writable.dml import Rejected, convert, wire
from orgs.local.writable.org import WritableOrg
from orgs.local.writable.state import StateLocked
from orgs.salesforce.metadata import CustomObjectDef, Package, deploy_package, external_id_field
from schemas.model import FieldSpec

EXT = "Orgseed_Id__c"


class EmptyOrg:
    def __init__(self, root: Path, **knobs: Any) -> None:
        batch_rows = knobs.pop("batch_rows", 10_000)
        self.org = WritableOrg(root, batch_rows=batch_rows, **knobs)
        self.server = LocalServer(root, org=self.org).start()
        self.sf = self.server.client()

    def close(self) -> None:
        self.server.stop()
        self.org.close()

    def deploy(self, pkg: Package) -> dict[str, Any]:
        started = self.sf.deploy(io.BytesIO(deploy_package(pkg)), sandbox=False)
        status: dict[str, Any] = self.sf.checkDeployStatus(started["asyncId"])
        return status

    def grant(self, permission_set: str = "Loader") -> None:
        ps = self.sf.query(f"SELECT Id FROM PermissionSet WHERE Name = '{permission_set}'")["records"][0][
            "Id"
        ]
        self.sf.PermissionSetAssignment.create({"AssigneeId": self.org.api_user_id, "PermissionSetId": ps})

    def loader_setup(self, objects: list[str], audit: bool = True, **settings_: dict[str, bool]) -> None:
        """What a loader deploys first: an external id on `objects`, a permission set granting it (and the
        audit-field permission), assigned to the API user; the audit preference on."""
        settings = {"Security": {"enableAuditFieldsInactiveOwner": audit}, **settings_}
        pkg = Package(
            fields={o: [external_id_field(EXT)] for o in objects},
            permission_set="Loader",
            grant_audit_fields=audit,
            settings=settings,
        )
        status = self.deploy(pkg)
        assert status["state"] == "Succeeded", status
        self.grant()

    def bulk(
        self, sobject: str, rows: list[dict[str, Any]], op: str = "insert", **kw: Any
    ) -> list[dict[str, Any]]:
        """Run one ingest job from `rows` (CSV written here, columns in the given order)."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        path = self.server.root / f"in-{sobject}-{op}.csv"
        path.write_text(buf.getvalue())
        fn = getattr(getattr(self.sf.bulk2, sobject), op)
        out: list[dict[str, Any]] = fn(str(path), wait=0.05, **kw)
        return out

    def results(self, job_id: str, kind: str) -> list[dict[str, str]]:
        url = f"{self.server.url}/services/data/v59.0/jobs/ingest/{job_id}/{kind}"
        r = self.server.session().get(url, headers={"Authorization": f"Bearer {self.server.token}"})
        r.raise_for_status()
        return list(csv.DictReader(io.StringIO(r.text)))


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[Callable[..., EmptyOrg]]:
    made: list[EmptyOrg] = []

    def make(**knobs: Any) -> EmptyOrg:
        org = EmptyOrg(tmp_path / f"org{len(made)}", **knobs)
        made.append(org)
        return org

    yield make
    for o in made:
        o.close()


def _error(exc: Exception) -> dict[str, Any]:
    content = exc.content  # type: ignore[attr-defined]
    assert isinstance(content, list) and content, content
    first: dict[str, Any] = content[0]
    return first


# -- what a new org holds ----------------------------------------------------------------------------------


def test_new_org_holds_standard_objects_admin_and_standard_price_book(empty: Callable[..., EmptyOrg]) -> None:
    o = empty(edition="developer")
    names = {s["name"] for s in o.sf.describe()["sobjects"]}
    assert {
        "Account",
        "Contact",
        "Case",
        "Order",
        "PricebookEntry",
        "User",
        "UserLicense",
        "Organization",
    } <= names
    # custom objects and feature objects are absent until deployed / switched on
    assert not names & {"Issue__c", "CaseHistory__c", "Knowledge__kav", "LiveChatTranscript"}
    case_fields = {f["name"] for f in o.sf.Case.describe()["fields"]}
    assert "IssueId__c" not in case_fields and "CaseNumber" in case_fields
    books = o.sf.query("SELECT Name, IsStandard, IsActive FROM Pricebook2")["records"]
    assert [(b["Name"], b["IsStandard"], b["IsActive"]) for b in books] == [
        ("Standard Price Book", True, True)
    ]
    users = o.sf.query("SELECT Id, IsActive, Profile.Name FROM User")["records"]
    assert len(users) == 1 and users[0]["IsActive"] and users[0]["Profile"]["Name"] == "System Administrator"
    lic = o.sf.query("SELECT TotalLicenses, UsedLicenses FROM UserLicense WHERE Name = 'Salesforce'")[
        "records"
    ][0]
    assert (lic["TotalLicenses"], lic["UsedLicenses"]) == (2, 1)  # Developer Edition: 2 (seeding.md B6)
    assert o.sf.limits()["DataStorageMB"]["Max"] == 5  # Developer Edition: 5 MB (seeding.md B8)


def test_create_read_update_delete_with_system_fields(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    before = datetime.now(UTC).replace(microsecond=0)
    created = o.sf.Account.create({"Name": "Acme", "Phone": "555-0100"})
    assert created["success"] and created["errors"] == [] and created["id"].startswith("001")
    rec = o.sf.Account.get(created["id"])
    assert rec["Name"] == "Acme" and rec["CreatedById"] == o.org.api_user_id and rec["IsDeleted"] is False
    stamp = datetime.strptime(rec["CreatedDate"], "%Y-%m-%dT%H:%M:%S.%f%z")
    assert stamp >= before
    assert o.sf.Account.update(created["id"], {"Phone": "555-0199"}) == 204
    again = o.sf.Account.get(created["id"])
    assert again["Phone"] == "555-0199" and again["LastModifiedDate"] >= rec["LastModifiedDate"]
    # auto-numbers in creation order
    c1 = o.sf.Case.create({"Subject": "one", "AccountId": created["id"]})
    c2 = o.sf.Case.create({"Subject": "two", "Status": "Closed"})
    numbers = {
        r["Subject"]: r
        for r in o.sf.query("SELECT Subject, CaseNumber, Status, IsClosed, ClosedDate, OwnerId FROM Case")[
            "records"
        ]
    }
    assert numbers["one"]["CaseNumber"] == "00000001" and numbers["two"]["CaseNumber"] == "00000002"
    assert numbers["one"]["Status"] == "New" and numbers["one"]["OwnerId"] == o.org.api_user_id
    assert numbers["two"]["IsClosed"] is True and numbers["two"]["ClosedDate"] is not None
    assert o.sf.Case.delete(c1["id"]) == 204
    assert o.sf.Case.delete(c2["id"]) == 204
    # deleting the account with no required children left works; a deleted record is gone
    assert o.sf.Account.delete(created["id"]) == 204
    with pytest.raises(SalesforceResourceNotFound):
        o.sf.Account.get(created["id"])


@pytest.mark.parametrize(
    ("record", "code", "message"),
    [
        ({"Phone": "1"}, "REQUIRED_FIELD_MISSING", "Required fields are missing: [Name]"),
        (
            {"Name": "x", "Bogus__c": 1},
            "INVALID_FIELD",
            "No such column 'Bogus__c' on sobject of type Account",
        ),
        (
            {"Name": "x" * 256},
            "STRING_TOO_LONG",
            "Account Name: data value too large: " + "x" * 256 + " (max length=255)",
        ),
        (
            {"Name": "x", "CreatedDate": "2020-01-01T00:00:00Z"},
            "INVALID_FIELD_FOR_INSERT_UPDATE",
            "Unable to create/update fields: CreatedDate. Please check the security settings of this field and "
            "verify that it is read/write for your profile or permission set.",
        ),
        ({"Name": "x", "SystemModstamp": "2020-01-01T00:00:00Z"}, "INVALID_FIELD_FOR_INSERT_UPDATE", None),
    ],
)
def test_account_refusals(
    empty: Callable[..., EmptyOrg], record: dict[str, Any], code: str, message: str | None
) -> None:
    o = empty()
    with pytest.raises(SalesforceMalformedRequest) as exc:
        o.sf.Account.create(record)
    err = _error(exc.value)
    assert err["errorCode"] == code
    if message is not None:
        assert err["message"] == message
    assert o.sf.query("SELECT COUNT() FROM Account")["totalSize"] == 0  # nothing half-written


def test_reference_and_picklist_refusals(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    acct = o.sf.Account.create({"Name": "A"})["id"]
    cases = [
        ({"Subject": "s", "AccountId": "not-an-id"}, "MALFORMED_ID"),
        ({"Subject": "s", "AccountId": "001000000000000AAA"}, "INVALID_CROSS_REFERENCE_KEY"),
        ({"Subject": "s", "AccountId": o.org.api_user_id}, "FIELD_INTEGRITY_EXCEPTION"),
        ({"Subject": "s", "Status": "Bogus"}, "INVALID_OR_NULL_FOR_RESTRICTED_PICKLIST"),
    ]
    for record, code in cases:
        with pytest.raises(SalesforceMalformedRequest) as exc:
            o.sf.Case.create(record)
        assert _error(exc.value)["errorCode"] == code, record
    bad = _error(_raises(lambda: o.sf.Case.create({"Subject": "s", "Status": "Bogus"})))
    assert bad["message"] == "Status: bad value for restricted picklist field: Bogus"
    assert o.sf.Case.create({"Subject": "ok", "AccountId": acct})["success"]


def _raises(fn: Callable[[], Any]) -> Exception:
    try:
        fn()
    except Exception as exc:
        return exc
    raise AssertionError("no error raised")


# -- audit fields (seeding.md B1) ---------------------------------------------------------------------------------


def test_audit_fields_need_preference_and_permission_and_are_insert_only(
    empty: Callable[..., EmptyOrg],
) -> None:
    o = empty()
    old = {"Name": "Old", "CreatedDate": "2020-03-04T05:06:07.000+0000", EXT: "A-1"}
    o.loader_setup(["Account"], audit=False)
    assert _error(_raises(lambda: o.sf.Account.create(old)))["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    # preference on but no permission: still refused
    status = o.deploy(Package(settings={"Security": {"enableAuditFieldsInactiveOwner": True}}))
    assert status["state"] == "Succeeded"
    assert _error(_raises(lambda: o.sf.Account.create(old)))["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    # the permission set that grants it, assigned
    o.deploy(
        Package(
            fields={"Account": [external_id_field(EXT)]}, permission_set="Loader", grant_audit_fields=True
        )
    )
    made = o.sf.Account.create(old)
    rec = o.sf.Account.get(made["id"])
    assert rec["CreatedDate"] == "2020-03-04T05:06:07.000+0000"
    # never on update, never on upsert (seeding.md B1)
    err = _error(_raises(lambda: o.sf.Account.update(made["id"], {"CreatedDate": "2021-01-01T00:00:00Z"})))
    assert err["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    up = _raises(
        lambda: o.sf.Account.upsert(f"{EXT}/A-2", {"Name": "New", "CreatedDate": "2020-01-01T00:00:00Z"})
    )
    assert _error(up)["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"


# -- field-level security and metadata (B11) ----------------------------------------------------------------------


def test_deployed_field_is_invisible_until_a_permission_set_grants_it(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    status = o.deploy(Package(fields={"Account": [external_id_field(EXT)]}, permission_set="Loader"))
    assert status["state"] == "Succeeded" and status["deployment_detail"]["failed_count"] == "0"
    assert EXT not in {f["name"] for f in o.sf.Account.describe()["fields"]}
    with pytest.raises(SalesforceMalformedRequest) as exc:
        o.sf.query(f"SELECT {EXT} FROM Account")
    assert _error(exc.value)["errorCode"] == "INVALID_FIELD"
    assert (
        _error(_raises(lambda: o.sf.Account.create({"Name": "a", EXT: "1"})))["errorCode"] == "INVALID_FIELD"
    )
    o.grant()
    described = {f["name"]: f for f in o.sf.Account.describe()["fields"]}
    assert described[EXT]["externalId"] is True and described[EXT]["custom"] is True
    o.sf.Account.create({"Name": "a", EXT: "1"})
    assert o.sf.query(f"SELECT Name FROM Account WHERE {EXT} = '1'")["totalSize"] == 1
    # a unique external id refuses a second record with the same value
    dup = _error(_raises(lambda: o.sf.Account.create({"Name": "b", EXT: "1"})))
    assert dup["errorCode"] == "DUPLICATE_VALUE" and dup["message"].startswith(
        f"duplicate value found: {EXT} duplicates value on record with id: 001"
    )
    # upsert by the external id: update (200, created false), then insert (201, created true)
    assert o.sf.Account.upsert(f"{EXT}/1", {"Name": "a2"}) == 200
    assert o.sf.Account.upsert(f"{EXT}/2", {"Name": "b"}) == 201


def test_custom_objects_deploy_and_a_failed_deploy_changes_nothing(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    bad = FieldSpec(
        name="Weird__c", type="string", label="Weird", description="", nillable=True, length=10, custom=True
    )
    pkg = Package(
        objects=[CustomObjectDef("Issue__c", "Issue", "Issues")],
        fields={"Issue__c": [external_id_field(EXT)], "Nope__x": [bad]},
    )
    status = o.deploy(pkg)
    assert status["state"] == "Failed" and status["deployment_detail"]["errors"]
    assert "Issue__c" not in {s["name"] for s in o.sf.describe()["sobjects"]}  # rolled back whole
    pkg.fields.pop("Nope__x")
    pkg.permission_set = "Loader"
    assert o.deploy(pkg)["state"] == "Succeeded"
    o.grant()
    issue = o.sf.Issue__c.create({"Name": "Late delivery", EXT: "I-1"})
    assert issue["id"][:3] == "a1M"  # the model's prefix for Issue__c
    # a custom lookup to it on Case, deployed later: describe changes after the deploy
    lookup = FieldSpec(
        name="IssueId__c",
        type="reference",
        label="Issue",
        description="",
        nillable=True,
        reference_to=("Issue__c",),
        relationship_name="IssueId__r",
        child_relationship_name="Cases__r",
        custom=True,
    )
    assert o.deploy(Package(fields={"Case": [lookup]}, permission_set="Loader2"))["state"] == "Succeeded"
    o.grant("Loader2")
    o.sf.Case.create({"Subject": "late", "IssueId__c": issue["id"]})
    rows = o.sf.query("SELECT IssueId__r.Name FROM Case")["records"]
    assert rows[0]["IssueId__r"]["Name"] == "Late delivery"


# -- price books and orders (B2) ------------------------------------------------------------------------------------


def test_price_books_orders_and_activation(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    std = o.sf.query("SELECT Id FROM Pricebook2 WHERE IsStandard = true")["records"][0]["Id"]
    custom = o.sf.Pricebook2.create({"Name": "Retail", "IsActive": True})["id"]
    other = o.sf.Pricebook2.create({"Name": "Other", "IsActive": True})["id"]
    prod = o.sf.Product2.create({"Name": "Trail Jacket", "IsActive": True})["id"]
    entry = {"Pricebook2Id": custom, "Product2Id": prod, "UnitPrice": 90, "IsActive": True}
    err = _error(_raises(lambda: o.sf.PricebookEntry.create(entry)))
    assert (err["errorCode"], err["message"]) == (
        "STANDARD_PRICE_NOT_DEFINED",
        "No standard price defined for this product",
    )
    o.sf.PricebookEntry.create({**entry, "Pricebook2Id": std, "UnitPrice": 100})
    retail = o.sf.PricebookEntry.create(entry)["id"]
    assert _error(_raises(lambda: o.sf.PricebookEntry.create(entry)))["errorCode"] == "DUPLICATE_VALUE"
    o.sf.PricebookEntry.create({**entry, "Pricebook2Id": other})
    elsewhere = o.sf.query(f"SELECT Id FROM PricebookEntry WHERE Pricebook2Id = '{other}'")["records"][0][
        "Id"
    ]
    acct = o.sf.Account.create({"Name": "Buyer"})["id"]
    order_rec = {"AccountId": acct, "EffectiveDate": "2021-05-01", "Pricebook2Id": custom}
    assert (
        _error(_raises(lambda: o.sf.Order.create({**order_rec, "Status": "Activated"})))["errorCode"]
        == "FIELD_INTEGRITY_EXCEPTION"
    )
    order = o.sf.Order.create(order_rec)["id"]
    assert o.sf.Order.get(order)["Status"] == "Draft" and o.sf.Order.get(order)["OrderNumber"] == "00000001"
    # activating an order without products is refused
    assert (
        _error(_raises(lambda: o.sf.Order.update(order, {"Status": "Activated"})))["errorCode"]
        == "FIELD_INTEGRITY_EXCEPTION"
    )
    wrong = _error(
        _raises(
            lambda: o.sf.OrderItem.create(
                {"OrderId": order, "PricebookEntryId": elsewhere, "Quantity": 1, "UnitPrice": 90}
            )
        )
    )
    assert wrong["errorCode"] == "FIELD_INTEGRITY_EXCEPTION" and wrong["fields"] == ["PricebookEntryId"]
    item = o.sf.OrderItem.create(
        {"OrderId": order, "PricebookEntryId": retail, "Quantity": 1, "UnitPrice": 90}
    )
    assert o.sf.OrderItem.get(item["id"])["Product2Id"] == prod  # from the entry
    assert o.sf.Order.update(order, {"Status": "Activated"}) == 204
    # an activated order is locked: no edits, no new products, no deletes
    assert (
        _error(_raises(lambda: o.sf.Order.update(order, {"EffectiveDate": "2021-06-01"})))["errorCode"]
        == "FIELD_INTEGRITY_EXCEPTION"
    )
    extra = {"OrderId": order, "PricebookEntryId": retail, "Quantity": 2, "UnitPrice": 90}
    assert _error(_raises(lambda: o.sf.OrderItem.create(extra)))["errorCode"] == "FIELD_INTEGRITY_EXCEPTION"
    assert _error(_raises(lambda: o.sf.Order.delete(order)))["errorCode"] == "FIELD_INTEGRITY_EXCEPTION"
    # back to Draft, then it can change again
    assert o.sf.Order.update(order, {"Status": "Draft"}) == 204
    assert o.sf.OrderItem.create(extra)["success"]


# -- Knowledge (B3) ---------------------------------------------------------------------------------------------------


def test_knowledge_is_drafts_until_published_through_the_action(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    with pytest.raises(SalesforceResourceNotFound):
        o.sf.Knowledge__kav.describe()  # Knowledge off in a new org
    assert o.deploy(Package(settings={"Knowledge": {"enableKnowledge": True}}))["state"] == "Succeeded"
    article = {"Title": "Returns", "UrlName": "returns", "Language": "en_US", "Summary": "How returns work"}
    err = _error(_raises(lambda: o.sf.Knowledge__kav.create({**article, "PublishStatus": "Online"})))
    assert err["errorCode"] == "INVALID_FIELD_FOR_INSERT_UPDATE"
    # CRMArena's lesson: without Language nothing is created
    no_lang = {k: v for k, v in article.items() if k != "Language"}
    assert (
        _error(_raises(lambda: o.sf.Knowledge__kav.create(no_lang)))["errorCode"] == "REQUIRED_FIELD_MISSING"
    )
    kav = o.sf.Knowledge__kav.create(article)["id"]
    assert o.sf.Knowledge__kav.get(kav)["PublishStatus"] == "Draft"
    assert o.sf.Knowledge__kav.update(kav, {"Summary": "Edited while a draft"}) == 204
    r = o.server.session().post(
        f"{o.server.url}/services/data/v59.0/actions/standard/publishKnowledgeArticles",
        json={"inputs": [{"articleVersionIdList": [kav], "pubAction": "PUBLISH_ARTICLE"}]},
        headers={"Authorization": f"Bearer {o.server.token}"},
    )
    assert r.status_code == 200 and r.json()[0]["isSuccess"] is True
    assert o.sf.Knowledge__kav.get(kav)["PublishStatus"] == "Online"
    assert (
        _error(_raises(lambda: o.sf.Knowledge__kav.update(kav, {"Summary": "x"})))["errorCode"]
        == "INVALID_OPERATION"
    )
    dup = _error(_raises(lambda: o.sf.Knowledge__kav.create({**article, "Title": "Again"})))
    assert dup["errorCode"] == "DUPLICATE_VALUE"  # UrlName is unique


# -- users, licences, storage, requests (B6, B8) -------------------------------------------------------------------------


def _user(n: int, profile: str, active: bool = True) -> dict[str, Any]:
    return {
        "LastName": f"Agent{n}",
        "Email": f"agent{n}@example.com",
        "Username": f"agent{n}@example.com.orgseed",
        "Alias": f"ag{n}",
        "ProfileId": profile,
        "IsActive": active,
        "LanguageLocaleKey": "en_US",
        "EmailEncodingKey": "UTF-8",
        "TimeZoneSidKey": "America/New_York",
        "LocaleSidKey": "en_US",
    }


def test_user_licences_and_usernames(empty: Callable[..., EmptyOrg]) -> None:
    o = empty(edition="developer")  # 2 licences, the admin holds one
    profile = o.sf.query("SELECT Id FROM Profile WHERE Name = 'Standard User'")["records"][0]["Id"]
    o.sf.User.create(_user(1, profile))
    err = _error(_raises(lambda: o.sf.User.create(_user(2, profile))))
    assert (err["errorCode"], err["message"]) == ("LICENSE_LIMIT_EXCEEDED", "License Limit Exceeded")
    inactive = o.sf.User.create(_user(3, profile, active=False))  # inactive users hold no licence (B6)
    assert (
        _error(_raises(lambda: o.sf.User.update(inactive["id"], {"IsActive": True})))["errorCode"]
        == "LICENSE_LIMIT_EXCEEDED"
    )
    dup = _error(
        _raises(
            lambda: o.sf.User.create(
                {**_user(4, profile, active=False), "Username": "agent1@example.com.orgseed"}
            )
        )
    )
    assert (
        dup["errorCode"] == "DUPLICATE_USERNAME"
        and "already exists in this or another Salesforce organization" in dup["message"]
    )
    used = o.sf.query("SELECT UsedLicenses FROM UserLicense WHERE Name = 'Salesforce'")["records"][0][
        "UsedLicenses"
    ]
    assert used == 2


def test_data_storage_fills_up_by_salesforce_per_record_rules(empty: Callable[..., EmptyOrg]) -> None:
    # 10 KB: five 2 KB records (B8); price books and products count nothing
    o = empty(data_storage_mb=10 / 1024)
    for n in range(5):
        o.sf.Account.create({"Name": f"A{n}"})
    o.sf.Product2.create({"Name": "Free", "IsActive": True})
    err = _error(_raises(lambda: o.sf.Account.create({"Name": "one too many"})))
    assert (err["errorCode"], err["message"]) == ("STORAGE_LIMIT_EXCEEDED", "storage limit exceeded")
    lim = o.sf.limits()["DataStorageMB"]
    assert lim["Max"] == 0 and lim["Remaining"] == 0  # whole MB, as Salesforce reports them


def test_daily_api_requests_run_out(empty: Callable[..., EmptyOrg]) -> None:
    o = empty(daily_api_requests=3)
    for _ in range(3):
        o.sf.query("SELECT Id FROM Account")
    with pytest.raises(SalesforceRefusedRequest) as exc:
        o.sf.query("SELECT Id FROM Account")
    assert _error(exc.value) == {
        "message": "TotalRequests Limit exceeded.",
        "errorCode": "REQUEST_LIMIT_EXCEEDED",
    }


# -- duplicate rule (B7) -------------------------------------------------------------------------------------------------


def test_duplicate_rule_on_contact_email(empty: Callable[..., EmptyOrg]) -> None:
    o = empty(duplicate_rule="alert")
    o.sf.Contact.create({"LastName": "One", "Email": "same@example.com"})
    err = _error(_raises(lambda: o.sf.Contact.create({"LastName": "Two", "Email": "same@example.com"})))
    assert (err["errorCode"], err["message"]) == ("DUPLICATES_DETECTED", "Use one of these records?")
    # an Alert rule lets the save through with the header (B7)
    allow = {"Sforce-Duplicate-Rule-Header": "allowSave=true"}
    assert o.sf.Contact.create({"LastName": "Two", "Email": "same@example.com"}, headers=allow)["success"]
    blocked = empty(duplicate_rule="block")
    blocked.sf.Contact.create({"LastName": "One", "Email": "same@example.com"})
    blocked.sf.headers["Sforce-Duplicate-Rule-Header"] = "allowSave=true"
    assert (
        _error(_raises(lambda: blocked.sf.Contact.create({"LastName": "Two", "Email": "same@example.com"})))[
            "errorCode"
        ]
        == "DUPLICATES_DETECTED"
    )


# -- sObject Collections -----------------------------------------------------------------------------------------------


def test_collections_all_or_none(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    records = [
        {"attributes": {"type": "Account"}, "Name": "Good"},
        {"attributes": {"type": "Account"}},
        {"attributes": {"type": "Contact"}, "LastName": "Also good"},
    ]
    out = o.sf.restful("composite/sobjects", method="POST", json={"allOrNone": True, "records": records})
    assert [r["success"] for r in out] == [False, False, False]
    assert out[0]["errors"][0]["statusCode"] == "ALL_OR_NONE_OPERATION_ROLLED_BACK"
    assert out[1]["errors"][0]["statusCode"] == "REQUIRED_FIELD_MISSING"
    assert o.sf.query("SELECT COUNT() FROM Account")["totalSize"] == 0
    out = o.sf.restful("composite/sobjects", method="POST", json={"allOrNone": False, "records": records})
    assert [r["success"] for r in out] == [True, False, True]
    ids = [r["id"] for r in out if r["success"]]
    upd = o.sf.restful(
        "composite/sobjects",
        method="PATCH",
        json={"records": [{"attributes": {"type": "Account"}, "id": ids[0], "Phone": "1"}]},
    )
    assert upd[0]["success"] and o.sf.Account.get(ids[0])["Phone"] == "1"
    gone = o.sf.restful("composite/sobjects", method="DELETE", params={"ids": ",".join(ids)})
    assert all(r["success"] for r in gone)
    too_many = [{"attributes": {"type": "Account"}, "Name": str(n)} for n in range(201)]
    with pytest.raises(SalesforceMalformedRequest):
        o.sf.restful("composite/sobjects", method="POST", json={"records": too_many})


# -- Bulk API 2.0 ingest (B9, B10) ------------------------------------------------------------------------------------------


def test_bulk_insert_with_relationship_columns_and_per_row_results(empty: Callable[..., EmptyOrg]) -> None:
    o = empty(batch_rows=3)
    o.loader_setup(["Account", "Contact"])
    accounts = [
        {EXT: f"A{n}", "Name": f"Account {n}", "CreatedDate": f"2020-0{n + 1}-01T00:00:00.000Z"}
        for n in range(5)
    ]
    (res,) = o.bulk("Account", accounts)
    assert (res["numberRecordsProcessed"], res["numberRecordsFailed"]) == (5, 0)
    ok = o.results(res["job_id"], "successfulResults")
    assert sorted(r[EXT] for r in ok) == [f"A{n}" for n in range(5)]
    assert [r[EXT] for r in ok] != [f"A{n}" for n in range(5)]  # not in input order, as Salesforce's are not
    assert all(r["sf__Created"] == "true" and r["sf__Id"].startswith("001") for r in ok)
    contacts = [
        {EXT: "C1", "LastName": "Ok", "Account.Orgseed_Id__c": "A1"},
        {EXT: "C2", "LastName": "No parent", "Account.Orgseed_Id__c": "ZZZ"},
        {EXT: "C3", "LastName": "", "Account.Orgseed_Id__c": "A2"},
        {EXT: "C4", "LastName": "Ok too", "Account.Orgseed_Id__c": "A2"},
    ]
    (res,) = o.bulk("Contact", contacts)
    assert (res["numberRecordsProcessed"], res["numberRecordsFailed"]) == (4, 2)
    failed = {r[EXT]: r["sf__Error"] for r in o.results(res["job_id"], "failedResults")}
    assert (
        failed["C2"]
        == f"INVALID_FIELD:Foreign key external ID: ZZZ not found for field {EXT} in entity Account:AccountId --"
    )
    assert failed["C3"] == "REQUIRED_FIELD_MISSING:Required fields are missing: [LastName]:LastName --"
    rows = o.sf.query(f"SELECT {EXT}, Account.{EXT} FROM Contact ORDER BY {EXT}")["records"]
    assert [(r[EXT], r["Account"][EXT]) for r in rows] == [("C1", "A1"), ("C4", "A2")]
    created = {
        r[EXT]: r["CreatedDate"] for r in o.sf.query(f"SELECT {EXT}, CreatedDate FROM Account")["records"]
    }
    assert created["A3"] == "2020-04-01T00:00:00.000+0000"


def test_bulk_upsert_update_delete_and_job_failures(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    o.loader_setup(["Account"])
    o.bulk("Account", [{EXT: "A1", "Name": "One"}])
    (res,) = o.bulk(
        "Account",
        [{EXT: "A1", "Name": "One again"}, {EXT: "A2", "Name": "Two"}],
        op="upsert",
        external_id_field=EXT,
    )
    created = {r[EXT]: r["sf__Created"] for r in o.results(res["job_id"], "successfulResults")}
    assert created == {"A1": "false", "A2": "true"}
    ids = {r[EXT]: r["Id"] for r in o.sf.query(f"SELECT Id, {EXT} FROM Account")["records"]}
    o.bulk("Account", [{"Id": ids["A1"], "Name": "Renamed", "Phone": ""}], op="update")
    assert o.sf.Account.get(ids["A1"])["Name"] == "Renamed"
    o.bulk("Account", [{"Id": ids["A2"]}], op="delete")
    assert o.sf.query("SELECT COUNT() FROM Account")["totalSize"] == 1
    # hard delete needs its own permission (B12)
    with pytest.raises(Exception, match="Bulk API Hard Delete"):
        o.bulk("Account", [{"Id": ids["A1"]}], op="hard_delete")
    # a column the object does not have fails the whole job, naming the first bad column
    from simple_salesforce.exceptions import SalesforceOperationError

    with pytest.raises(SalesforceOperationError, match="InvalidBatch : Field name not found : Nope__c"):
        o.bulk("Account", [{"Name": "x", "Nope__c": "y"}])


def test_unable_to_lock_row_when_children_of_one_parent_span_batches(empty: Callable[..., EmptyOrg]) -> None:
    o = empty(lock_contention=True, batch_rows=2)
    o.loader_setup(["Account", "Contact"])
    o.bulk("Account", [{EXT: "P1", "Name": "Parent 1"}, {EXT: "P2", "Name": "Parent 2"}])
    mixed = [
        {"LastName": f"c{n}", "Account.Orgseed_Id__c": p} for n, p in enumerate(["P1", "P2", "P1", "P2"])
    ]
    (res,) = o.bulk("Contact", mixed)
    errors = [r["sf__Error"] for r in o.results(res["job_id"], "failedResults")]
    assert res["numberRecordsFailed"] == 2
    assert (
        errors == ["UNABLE_TO_LOCK_ROW:unable to obtain exclusive access to this record or 1 records: --"] * 2
    )
    grouped = sorted(mixed, key=lambda r: r["Account.Orgseed_Id__c"])  # the fix: children grouped by parent
    (res,) = o.bulk("Contact", grouped)
    assert res["numberRecordsFailed"] == 0


# -- state: restarts, one server per state, kill and resume -------------------------------------------------------------------


def test_state_survives_restart_and_one_server_per_state(tmp_path: Path) -> None:
    root = tmp_path / "state"
    org = WritableOrg(root, edition="scratch")
    try:
        with pytest.raises(StateLocked, match="in use by another orgseed server"):
            WritableOrg(root)
        made = org.create("Account", {"Name": "Kept"})
        assert made.success
    finally:
        org.close()
    again = WritableOrg(root)
    try:
        assert again.state.edition.name == "scratch"
        assert [r["Name"] for r in again.query("SELECT Name FROM Account")["records"]] == ["Kept"]
        second = again.create("Account", {"Name": "Second"})
        assert second.id is not None and second.id != made.id and second.id.startswith("001")
    finally:
        again.close()
    from schemas.errors import UsageError

    with pytest.raises(UsageError, match="its edition cannot change"):
        WritableOrg(root, edition="enterprise")


def test_serving_a_bundle_stays_read_only(sf: Any) -> None:
    with pytest.raises(Exception) as exc:
        sf.Account.create({"Name": "x"})
    assert getattr(exc.value, "status", None) == 405


# -- parsers (Hypothesis) -------------------------------------------------------------------------------------------------


@given(
    st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2100, 1, 1)),
    st.sampled_from(["Z", "+00:00", "+0000", ""]),
)
@settings(max_examples=200, deadline=None)
def test_datetime_forms_all_land_on_the_same_wire_value(moment: datetime, tz: str) -> None:
    text = moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond // 1000:03d}" + tz
    assert wire(text) == moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}+0000"


@given(st.text(max_size=40))
@settings(max_examples=300, deadline=None)
def test_convert_never_crashes_on_any_text(value: str) -> None:
    for t in ("boolean", "int", "double", "date", "datetime", "reference", "picklist", "email"):
        f = FieldSpec(name="F", type=t, label="F", description="", nillable=True, length=10, picklist=("A",))
        try:
            convert(f, value)
        except Rejected as exc:
            assert exc.error.code and exc.error.fields == ["F"]


def test_ingest_route_refuses_a_served_bundle_with_405(server: LocalServer) -> None:
    resp = server.session().post(
        f"{server.url}/services/data/v59.0/jobs/ingest",
        json={"object": "Account", "operation": "insert"},
        headers={"Authorization": f"Bearer {server.token}"},
    )
    assert resp.status_code == 405 and resp.json()[0]["errorCode"] == "METHOD_NOT_ALLOWED"


def test_an_aborted_job_leaves_its_rows_unprocessed(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    s = o.server.session()
    s.headers["Authorization"] = f"Bearer {o.server.token}"
    api = f"{o.server.url}/services/data/v59.0/jobs/ingest"
    job = s.post(api, json={"object": "Account", "operation": "insert"}).json()
    assert job["state"] == "Open"
    body = "Name,Phone\nOne,1\nTwo,2\n"
    assert (
        s.put(
            f"{api}/{job['id']}/batches", data=body.encode(), headers={"Content-Type": "text/csv"}
        ).status_code
        == 201
    )
    # Bulk API 2.0 takes one upload per job
    again = s.put(f"{api}/{job['id']}/batches", data=body.encode(), headers={"Content-Type": "text/csv"})
    assert again.status_code == 409
    aborted = s.patch(f"{api}/{job['id']}", json={"state": "Aborted"}).json()
    assert aborted["state"] == "Aborted"
    assert s.get(f"{api}/{job['id']}/unprocessedrecords/").text.splitlines() == [
        "Name,Phone",
        "One,1",
        "Two,2",
    ]
    assert s.get(f"{api}/{job['id']}/successfulResults").text.splitlines() == [
        "sf__Id,sf__Created,Name,Phone"
    ]
    assert o.sf.query("SELECT COUNT() FROM Account")["totalSize"] == 0
    # an aborted job cannot be completed; it can be deleted
    assert s.patch(f"{api}/{job['id']}", json={"state": "UploadComplete"}).status_code == 409
    assert s.delete(f"{api}/{job['id']}").status_code == 204
    assert s.get(f"{api}/{job['id']}").status_code == 404
    listed = s.get(api).json()
    assert listed["done"] is True and listed["records"] == []


def test_upsert_all_or_none_leaves_nothing_behind(empty: Callable[..., EmptyOrg]) -> None:
    o = empty()
    o.loader_setup(["Account"])
    o.sf.Account.create({"Name": "Old", EXT: "A1"})
    records = [
        {"attributes": {"type": "Account"}, EXT: "A2", "Name": "New"},  # an insert
        {"attributes": {"type": "Account"}, EXT: "A1", "Name": "x" * 300},  # an update that is refused
    ]
    out = o.sf.restful(
        f"composite/sobjects/Account/{EXT}", method="PATCH", json={"allOrNone": True, "records": records}
    )
    assert [r["success"] for r in out] == [False, False]
    assert out[0]["errors"][0]["statusCode"] == "ALL_OR_NONE_OPERATION_ROLLED_BACK" and out[0]["id"] is None
    assert out[1]["errors"][0]["statusCode"] == "STRING_TOO_LONG"
    assert [r["Name"] for r in o.sf.query("SELECT Name FROM Account")["records"]] == [
        "Old"
    ]  # the insert undone


def test_a_state_directory_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    from schemas.errors import UsageError

    root = tmp_path / "state"
    root.mkdir()
    (root / "org.sqlite").write_bytes(b"this is not SQLite" * 100)
    with pytest.raises(UsageError, match=r"org\.sqlite cannot be read as an orgseed org's state"):
        WritableOrg(root)
    (root / "org.sqlite").unlink()
    WritableOrg(root).close()  # the lock was let go: the directory opens once the file is gone
