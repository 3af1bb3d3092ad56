"""The REST surface, exercised through the real simple-salesforce client (and plain requests where the
client has no call for it)."""

from __future__ import annotations

import ast as pyast
import re
from pathlib import Path
from typing import Any

import pytest
import requests
from simple_salesforce import Salesforce
from simple_salesforce.exceptions import (
    SalesforceAuthenticationFailed,
    SalesforceError,
    SalesforceExpiredSession,
    SalesforceGeneralError,
    SalesforceMalformedRequest,
    SalesforceResourceNotFound,
)

from orgs.local import connect
from orgs.local.serve import LocalServer
from schemas.model import load_model
from tests.orgs.local.oracle import Frames

WIRE_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}\+0000$")


def get(server: LocalServer, path: str, token: str | None = None, **kw: Any) -> requests.Response:
    headers = {"Authorization": f"Bearer {token or server.token}"} if token != "" else {}
    return server.session().get(server.url + path, headers=headers, timeout=10, **kw)


def error_content(exc: SalesforceError) -> object:
    """The parsed JSON body of an error response: simple-salesforce stores it in `content` although it
    annotates that attribute as bytes (typed as object here so mypy checks what follows a comparison)."""
    return exc.content


def error_code(exc: SalesforceError) -> object:
    """The errorCode of the first entry of an error response."""
    content = error_content(exc)
    assert isinstance(content, list) and content, content
    assert isinstance(content[0], dict), content
    return content[0]["errorCode"]


# -- sessions and login --------------------------------------------------------------------------------------


def test_versions_need_no_session(server: LocalServer) -> None:
    r = get(server, "/services/data/", token="")
    assert r.status_code == 200
    assert {"label": "v59.0", "url": "/services/data/v59.0", "version": "59.0"} in r.json()


def test_wrong_token_is_an_expired_session(server: LocalServer) -> None:
    sf = Salesforce(instance_url=server.url, session_id="not-the-token", session=server.session())
    with pytest.raises(SalesforceExpiredSession) as caught:
        sf.query("SELECT Id FROM Case LIMIT 1")
    assert caught.value.status == 401
    assert error_content(caught.value) == [
        {"message": "Session expired or invalid", "errorCode": "INVALID_SESSION_ID"}
    ]
    assert get(server, "/services/data/v59.0/limits/", token="").status_code == 401


def soap_domain(server: LocalServer) -> str:
    # simple-salesforce logs in at https://{domain}.salesforce.com/services/Soap/u/{v}; this domain points
    # it at the local org (the rest of the URL becomes a query string the server ignores)
    return f"127.0.0.1:{server.port}/services/Soap/u/59.0?x="


def test_soap_login_with_username_password_token(server: LocalServer) -> None:
    token = server.token
    sf = Salesforce(
        username="admin@orgseed.local",
        password=token[:10],
        security_token=token[10:],
        domain=soap_domain(server),
        version="59.0",
        session=server.session(),
    )
    assert sf.session_id == server.token
    assert sf.sf_instance == f"127.0.0.1:{server.port}"
    assert sf.query("SELECT COUNT() FROM Issue__c")["totalSize"] > 0


def test_soap_login_refused(server: LocalServer) -> None:
    with pytest.raises(SalesforceAuthenticationFailed) as caught:
        Salesforce(
            username="admin@orgseed.local",
            password="wrong",
            security_token="",
            domain=soap_domain(server),
            session=server.session(),
        )
    assert caught.value.code == "INVALID_LOGIN"
    assert "Invalid username, password, security token" in caught.value.auth_message


def test_expired_session_logs_in_again(server: LocalServer) -> None:
    """Password-mode clients re-login on 401 INVALID_SESSION_ID, as against a real org."""
    sf = Salesforce(
        username="admin@orgseed.local",
        password=server.token,
        security_token="",
        domain=soap_domain(server),
        session=server.session(),
    )
    sf.session_id = "stale"
    sf.headers["Authorization"] = "Bearer stale"
    assert sf.query("SELECT COUNT() FROM Issue__c")["totalSize"] > 0
    assert sf.session_id == server.token


def test_connect_reuses_the_running_server(server: LocalServer, served_bundle: Path) -> None:
    sf = connect(served_bundle)
    assert sf.sf_instance == f"127.0.0.1:{server.port}"
    assert sf.query("SELECT COUNT() FROM Case")["totalSize"] > 0


# -- query paging ------------------------------------------------------------------------------------------


def test_query_pages_with_locators(sf: Any, frames: Frames) -> None:
    total = len(frames.frame("PricebookEntry"))
    first = sf.query("SELECT Id FROM PricebookEntry")
    assert first["totalSize"] == total and first["done"] is False and len(first["records"]) == 2000
    assert re.fullmatch(r"/services/data/v59\.0/query/01g[0-9A-Za-z]{15}-2000", first["nextRecordsUrl"])
    second = sf.query_more(first["nextRecordsUrl"], identifier_is_url=True)
    again = sf.query_more(
        first["nextRecordsUrl"].rsplit("/", 1)[1]
    )  # by locator id, as query_more(id) sends it
    assert second["records"] == again["records"]
    ids = [r["Id"] for r in first["records"] + second["records"]]
    assert len(set(ids)) == 4000
    assert ids == list(frames.frame("PricebookEntry")["Id"][:4000])
    everything = sf.query_all("SELECT Id FROM PricebookEntry")
    assert everything["totalSize"] == total and len(everything["records"]) == total


def test_last_page_is_done_and_locator_is_then_gone(sf: Any) -> None:
    page = sf.query("SELECT Id FROM PricebookEntry WHERE UnitPrice > 20")
    pages = 1
    locator = None
    while not page["done"]:
        locator = page["nextRecordsUrl"]
        page = sf.query_more(locator, identifier_is_url=True)
        pages += 1
    assert "nextRecordsUrl" not in page and pages > 1
    with pytest.raises(SalesforceMalformedRequest) as caught:
        sf.query_more(locator, identifier_is_url=True)
    assert error_code(caught.value) == "INVALID_QUERY_LOCATOR"


def test_unknown_locator(sf: Any) -> None:
    with pytest.raises(SalesforceMalformedRequest) as caught:
        sf.query_more("01gAAAAAAAAAAAAAAA-2000")
    assert error_content(caught.value) == [
        {"message": "invalid query locator", "errorCode": "INVALID_QUERY_LOCATOR"}
    ]


def test_batch_size_header(sf: Any) -> None:
    page = sf.query("SELECT Id FROM OrderItem", headers={"Sforce-Query-Options": "batchSize=500"})
    assert len(page["records"]) == 500 and page["nextRecordsUrl"].endswith("-500")
    small = sf.query("SELECT Id FROM OrderItem", headers={"Sforce-Query-Options": "batchSize=10"})
    assert len(small["records"]) == 200  # Salesforce's minimum batch


def test_query_all_include_deleted_uses_query_all_locators(sf: Any) -> None:
    page = sf.query("SELECT Id FROM PricebookEntry", include_deleted=True)
    assert "/queryAll/" in page["nextRecordsUrl"]
    assert (
        sf.query_all("SELECT Id FROM Order", include_deleted=True)["totalSize"]
        == sf.query("SELECT COUNT() FROM Order")["totalSize"]
    )


def test_missing_query_parameter(server: LocalServer) -> None:
    r = get(server, "/services/data/v59.0/query/")
    assert r.status_code == 400 and r.json()[0]["errorCode"] == "MALFORMED_QUERY"


def test_query_string_is_read_as_utf8_and_the_last_value_wins(server: LocalServer) -> None:
    # the error message quotes the query line, so the text the server decoded can be read back from it
    soql = "SELECT Id FROM Case WHERE Subject = 'Zoë ★ 100%+1' AND Nope__c = 1"
    r = get(server, "/services/data/v59.0/query/", params=[("q", "SELECT Id FROM Case"), ("q", soql)])
    assert r.status_code == 400 and r.json()[0]["errorCode"] == "INVALID_FIELD"
    message = r.json()[0]["message"]
    assert soql in message
    # the caret column counts characters, not UTF-8 bytes
    assert f"Row:1:Column:{soql.index('Nope__c') + 1}" in message


def test_head_is_get_without_a_body(server: LocalServer) -> None:
    params = {"q": "SELECT Id FROM Issue__c"}
    full = get(server, "/services/data/v59.0/query/", params=params)
    head = server.session().head(
        server.url + "/services/data/v59.0/query/",
        params=params,
        headers={"Authorization": f"Bearer {server.token}"},
        timeout=10,
    )
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == str(len(full.content))
    assert head.headers["content-type"] == full.headers["content-type"]


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        # trailing slashes are accepted where Salesforce accepts them
        ("/services/data/v59.0", 200, None),
        ("/services/data/v59.0/sobjects/Case/", 200, None),
        ("/services/data/v59.0/sobjects/Case/describe/", 200, None),
        ("/services/data/v59.0/limits", 200, None),
        ("/services/data/v59.0/limits/recordCount?sObjects=Case", 200, None),
        # a version must look like vNN.N; objects must exist
        ("/services/data/59.0/limits/", 404, "NOT_FOUND"),
        ("/services/data/v59.0/sobjects/Nope__c/describe", 404, "NOT_FOUND"),
        ("/services/data/v59.0/query/not-a-locator", 400, "INVALID_QUERY_LOCATOR"),
        ("/services/data/v59.0/sobjects/Case/describe/extra/parts", 404, "NOT_FOUND"),
        ("/services/data/v59.0/jobs/nothing", 404, "NOT_FOUND"),
        ("/services/data/v59.0/jobs/ingest", 405, "METHOD_NOT_ALLOWED"),
    ],
)
def test_rest_paths(server: LocalServer, path: str, status: int, code: str | None) -> None:
    r = get(server, path)
    assert r.status_code == status, r.text
    if code is not None:
        assert r.json()[0]["errorCode"] == code
    assert r.headers["content-type"] == "application/json;charset=UTF-8"


def test_no_session_before_not_found(server: LocalServer) -> None:
    # as Salesforce: a bad session is refused before the path's version or object is looked at
    for path in ("/services/data/vX/limits/", "/services/data/v59.0/sobjects/Nope__c"):
        r = get(server, path, token="wrong")
        assert r.status_code == 401 and r.json()[0]["errorCode"] == "INVALID_SESSION_ID"


# -- value formats -----------------------------------------------------------------------------------------


def test_value_formats(sf: Any) -> None:
    rec = sf.query(
        "SELECT Id, CreatedDate, ClosedDate, OrderItemId__r.UnitPrice, OrderItemId__r.Order.EffectiveDate, "
        "Contact.Owner.IsActive FROM Case WHERE ClosedDate != null LIMIT 1"
    )["records"][0]
    assert WIRE_DATETIME.match(rec["CreatedDate"]) and WIRE_DATETIME.match(rec["ClosedDate"])
    assert isinstance(rec["OrderItemId__r"]["UnitPrice"], float)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", rec["OrderItemId__r"]["Order"]["EffectiveDate"])
    assert isinstance(rec["Contact"]["Owner"]["IsActive"], bool)
    assert rec["Contact"]["Owner"]["attributes"]["type"] == "User"
    nulls = sf.query("SELECT Id, ClosedDate FROM Case WHERE ClosedDate = null LIMIT 1")["records"][0]
    assert "ClosedDate" in nulls and nulls["ClosedDate"] is None


def test_null_parent_is_null(sf: Any) -> None:
    rec = sf.query("SELECT Id, OldValue__r.LastName FROM CaseHistory__c WHERE OldValue__c = null LIMIT 1")
    assert rec["records"][0]["OldValue__r"] is None


def test_empty_child_result_is_null(sf: Any) -> None:
    rec = sf.query("SELECT Id, (SELECT Id FROM Cases WHERE Status = 'Nope') FROM Account LIMIT 1")["records"][
        0
    ]
    assert rec["Cases"] is None


def test_sosl_empty_and_quick_search(sf: Any) -> None:
    assert sf.search("FIND {zzyzx} RETURNING Product2(Id)") == {"searchRecords": []}
    found = sf.quick_search("Windbreaker")["searchRecords"]
    assert found and {r["attributes"]["type"] for r in found} >= {"Product2"}
    assert all(set(r) == {"attributes", "Id"} for r in found)


# -- describe and records ----------------------------------------------------------------------------------


def test_global_describe(sf: Any) -> None:
    result = sf.describe()
    model = load_model()
    assert result["encoding"] == "UTF-8"
    by_name = {o["name"]: o for o in result["sobjects"]}
    assert set(by_name) == set(model.names)
    for spec in model:
        entry = by_name[spec.name]
        assert entry["keyPrefix"] == spec.key_prefix and entry["label"] == spec.label
        assert entry["urls"]["describe"] == f"/services/data/v59.0/sobjects/{spec.name}/describe"


# the fields a real org computes that the local org adds after the model's own (orgs/local/computed.py)
# after the model's fields: what the org computes (a person's Name, Case.IsClosed) and the system fields
# every record has (CreatedDate only where the model has none), then the auto-number
SYSTEM = ["CreatedById", "CreatedDate", "LastModifiedById", "LastModifiedDate", "SystemModstamp", "IsDeleted"]
ORG_COMPUTED = {
    "Case": ["IsClosed", *(f for f in SYSTEM if f != "CreatedDate"), "CaseNumber"],
    "Knowledge__kav": SYSTEM,
    "OrderItem": SYSTEM,
    "User": ["Name", *SYSTEM],
}


@pytest.mark.parametrize("name", sorted(ORG_COMPUTED))
def test_object_describe_matches_the_model(sf: Any, name: str) -> None:
    spec = load_model().get(name)
    result = getattr(sf, name).describe()
    assert result["name"] == spec.name and result["custom"] == spec.custom
    fields = {f["name"]: f for f in result["fields"]}
    assert list(fields) == spec.field_names + ORG_COMPUTED[name]
    for extra in ORG_COMPUTED[name]:
        assert not fields[extra]["createable"] and not fields[extra]["updateable"]
        assert not fields[extra]["nillable"] and not fields[extra]["custom"]
    for f in spec.fields:
        d = fields[f.name]
        assert d["type"] == f.type
        assert d["referenceTo"] == list(f.reference_to)
        assert d["relationshipName"] == f.relationship_name
        assert [p["value"] for p in d["picklistValues"]] == list(f.picklist)
        if f.type in ("string", "textarea", "email", "phone", "url"):
            assert d["length"] == f.length
        assert d["nameField"] == (f.name == spec.name_field)
        assert d["nillable"] == (f.nillable and f.type != "boolean")


def test_child_relationships_in_describe(sf: Any) -> None:
    rels = {
        (c["childSObject"], c["field"]): c["relationshipName"]
        for c in sf.Account.describe()["childRelationships"]
    }
    assert rels[("Case", "AccountId")] == "Cases"
    assert rels[("Contact", "AccountId")] == "Contacts"
    assert sf.Case.metadata()["objectDescribe"]["name"] == "Case"


def test_unknown_object(sf: Any) -> None:
    with pytest.raises(SalesforceResourceNotFound) as caught:
        sf.Opportunity.describe()
    assert error_code(caught.value) == "NOT_FOUND"


def test_record_get(sf: Any, frames: Frames) -> None:
    case_id = frames.value("Case", "Id", 3)
    rec = sf.Case.get(case_id)
    assert rec["attributes"] == {"type": "Case", "url": f"/services/data/v59.0/sobjects/Case/{case_id}"}
    assert rec["Subject"] == frames.value("Case", "Subject", 3)
    assert list(rec)[1:] == load_model().get("Case").field_names + ORG_COMPUTED["Case"]
    assert rec["IsClosed"] == (rec["Status"] == "Closed")
    assert sf.case.get(case_id[:15])["Id"] == case_id  # any casing of the object, 15-char ids
    some = sf.restful(f"sobjects/Case/{case_id}", params={"fields": "Subject,status"})
    assert list(some) == ["attributes", "Subject", "Status"]
    with pytest.raises(SalesforceResourceNotFound):
        sf.Case.get("500Ws0000000000AAA")
    with pytest.raises(SalesforceMalformedRequest) as caught:
        sf.restful(f"sobjects/Case/{case_id}", params={"fields": "Nope"})
    assert error_code(caught.value) == "INVALID_FIELD"


def test_record_by_external_id(sf: Any, frames: Frames) -> None:
    ext = frames.value("Product2", "External_ID__c", 7)
    rec = sf.Product2.get_by_custom_id("External_ID__c", ext)
    assert rec["Id"] == frames.value("Product2", "Id", 7)
    with pytest.raises(SalesforceResourceNotFound):
        sf.Product2.get_by_custom_id("Name", "x")


def test_limits_and_usage_header(sf: Any) -> None:
    limits = sf.limits()
    assert {"DailyApiRequests", "DataStorageMB", "DailyBulkV2QueryJobs"} <= set(limits)
    assert set(limits["DailyApiRequests"]) == {"Max", "Remaining"}
    sf.query("SELECT COUNT() FROM Case")
    assert sf.api_usage["api-usage"].total == 15000
    counts = sf.restful("limits/recordCount", params={"sObjects": "Case,Issue__c"})
    assert {c["name"] for c in counts["sObjects"]} == {"Case", "Issue__c"}


def test_read_only_and_unknown_paths(sf: Any, server: LocalServer) -> None:
    with pytest.raises(SalesforceGeneralError) as caught:
        sf.Case.create({"Subject": "x"})
    assert caught.value.status == 405 and error_code(caught.value) == "METHOD_NOT_ALLOWED"
    r = get(server, "/services/data/v59.0/nothing/here")
    assert r.status_code == 404 and r.json() == [
        {"message": "The requested resource does not exist", "errorCode": "NOT_FOUND"}
    ]
    assert get(server, "/services/data/vX/query/?q=SELECT+Id+FROM+Case").status_code == 404


# -- the CRMArena harness, as it calls the org ---------------------------------------------------------------


def crmarena_run_query(sf: Any, query: str) -> tuple[Any, int]:
    """The CRMArena connector's run_query (reference crmarena.md §8.1), reproduced."""
    try:
        if query.startswith("FIND"):
            records = sf.search(query)["searchRecords"]
        else:
            query = query.replace("```sql", "").replace("```soql", "").replace("```", "").strip()
            records = sf.query_all(query)["records"]
        if not records:
            return [], 1
        for r in records:
            r.pop("attributes", None)
        drop = [k for k in records[0] if all(r.get(k) is None for r in records)]
        return [{k: v for k, v in r.items() if k not in drop} for r in records], 1
    except Exception as exc:
        content = pyast.literal_eval(str(exc).split("Response content: ", 1)[1])
        return f"{content[0]['errorCode']}: {content[0]['message']}", 0


def test_crmarena_harness_round_trip(sf: Any, frames: Frames) -> None:
    product = frames.resolve("Case", "OrderItemId__r.Product2Id")[0]
    items, ok = crmarena_run_query(
        sf, f"```soql\nSELECT Id FROM OrderItem WHERE Product2Id = '{product}'\n```"
    )
    assert ok == 1 and items and set(items[0]) == {"Id"}
    ids = ", ".join(f"'{i['Id']}'" for i in items)
    counts, ok = crmarena_run_query(
        sf,
        f"SELECT IssueId__c, COUNT(Id) IssueCount FROM Case WHERE OrderItemId__c IN ({ids}) AND CreatedDate >= "
        "2019-01-01T00:00:00Z AND CreatedDate <= 2024-06-01T00:00:00Z GROUP BY IssueId__c ORDER BY COUNT(Id) DESC",
    )
    assert ok == 1 and counts[0]["IssueCount"] >= counts[-1]["IssueCount"] >= 1
    found, ok = crmarena_run_query(
        sf,
        "FIND {store credit} IN ALL FIELDS RETURNING Knowledge__kav(Id, Title, "
        "FAQ_Answer__c WHERE PublishStatus='Online' AND Language='en_US')",
    )
    assert ok == 1 and found and set(found[0]) == {"Id", "Title", "FAQ_Answer__c"}
    message, ok = crmarena_run_query(sf, "SELECT Nope FROM Case")
    assert ok == 0 and message.startswith(
        "INVALID_FIELD: \nSELECT Nope FROM Case\n       ^\nERROR at Row:1:Column:8"
    )
    empty, ok = crmarena_run_query(sf, "SELECT Id FROM Case WHERE Subject = 'no such subject'")
    assert (empty, ok) == ([], 1)
