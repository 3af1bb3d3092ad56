"""The org model: loading, metadata, and one located error per kind of broken schema."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemas.errors import ModelError
from schemas.model import SCHEMA_DIR, load_model

CRMARENA_ORDER = [
    "User", "Account", "Contact", "Case", "Knowledge__kav", "ProductCategory", "Product2", "ProductCategoryProduct",
    "Pricebook2", "PricebookEntry", "Order", "OrderItem", "EmailMessage", "LiveChatTranscript", "Issue__c",
    "CaseHistory__c",
]  # fmt: skip

# Fields the CRMArena reference (crmarena.md §2.1) lists per object; orgseed may add more, never fewer.
# Case's channel is the standard `Origin` field (documented departure).
REFERENCE_FIELDS = {
    "User": ["FirstName", "LastName", "Email", "Phone", "Username", "Alias", "ProfileId", "LanguageLocaleKey",
             "EmailEncodingKey", "TimeZoneSidKey", "LocaleSidKey"],
    "Account": ["FirstName", "LastName", "PersonEmail", "Phone", "RecordTypeId", "ShippingCity", "ShippingState"],
    "Contact": ["FirstName", "LastName", "Email", "AccountId", "OwnerId"],
    "Case": ["Priority", "Subject", "Description", "Status", "Origin", "ContactId", "AccountId", "OwnerId",
             "CreatedDate", "ClosedDate", "OrderItemId__c", "IssueId__c"],
    "Knowledge__kav": ["Title", "FAQ_Answer__c", "Summary", "UrlName", "PublishStatus", "Language"],
    "ProductCategory": ["Name", "CatalogId"],
    "Product2": ["Name", "Description", "IsActive", "External_ID__c"],
    "ProductCategoryProduct": ["ProductCategoryId", "ProductId"],
    "Pricebook2": ["Name", "Description", "IsActive", "ValidFrom", "ValidTo"],
    "PricebookEntry": ["Pricebook2Id", "Product2Id", "UnitPrice"],
    "Order": ["AccountId", "Status", "EffectiveDate", "Pricebook2Id"],
    "OrderItem": ["OrderId", "Product2Id", "Quantity", "UnitPrice", "PricebookEntryId"],
    "EmailMessage": ["Subject", "TextBody", "ParentId", "FromAddress", "ToIds", "MessageDate", "ToAddress"],
    "LiveChatTranscript": ["CaseId", "AccountId", "ContactId", "OwnerId", "Body", "EndTime", "LiveChatVisitorId"],
    "Issue__c": ["Name", "Description__c"],
    "CaseHistory__c": ["CaseId__c", "Field__c", "OldValue__c", "NewValue__c", "CreatedDate"],
}  # fmt: skip

# Key prefixes CRMArena's task data shows (crmarena.md §2) and Salesforce's standard ones.
PREFIXES = {"User": "005", "Contact": "003", "Case": "500", "Product2": "01t", "Issue__c": "a1M",
            "Knowledge__kav": "ka0", "Account": "001", "Order": "801", "OrderItem": "802", "Pricebook2": "01s",
            "PricebookEntry": "01u", "EmailMessage": "02s", "LiveChatTranscript": "570"}  # fmt: skip


def test_sixteen_objects_in_schema_config_order() -> None:
    assert load_model().names == CRMARENA_ORDER


@pytest.mark.parametrize("sobject", CRMARENA_ORDER)
def test_every_reference_field_is_modelled(sobject: str) -> None:
    spec = load_model().get(sobject)
    missing = [f for f in REFERENCE_FIELDS[sobject] if not spec.has_field(f)]
    assert missing == []
    assert spec.field_names[0] == "Id"


def test_key_prefixes() -> None:
    model = load_model()
    for name, prefix in PREFIXES.items():
        assert model.get(name).key_prefix == prefix


def test_lookups_carry_reference_and_relationship() -> None:
    case = load_model().get("Case")
    owner = case.field("OwnerId")
    assert owner.reference_to == ("User",) and owner.relationship_name == "Owner" and owner.required
    item = case.field("OrderItemId__c")
    assert item.reference_to == ("OrderItem",) and item.relationship_name == "OrderItemId__r" and item.custom
    history = load_model().get("CaseHistory__c")
    assert history.field("Field__c").picklist == ("Case Creation", "Owner Assignment", "Case Closed")


def test_names_are_case_insensitive_and_unknown_names_suggest() -> None:
    model = load_model()
    assert model.get("case").name == "Case"
    assert model.get("Case").field("ownerid").name == "OwnerId"
    with pytest.raises(ModelError, match="Did you mean `Contact`"):
        model.get("Contacts")
    with pytest.raises(ModelError, match="Did you mean `Subject`"):
        model.get("Case").field("Subjct")


def test_child_relationships_for_subqueries() -> None:
    names = {(c.child, c.name) for c in load_model().child_relationships("Case")}
    assert ("EmailMessage", "EmailMessages") in names
    assert ("CaseHistory__c", "CaseHistories__r") in names


# -- a corpus of broken schemas: (file, mutation, what the error must name) -----------------------------------


def _set(doc: dict[str, Any], path: list[str], value: object) -> None:
    for key in path[:-1]:
        doc = doc[key]
    doc[path[-1]] = value


def _drop(doc: dict[str, Any], path: list[str]) -> None:
    for key in path[:-1]:
        doc = doc[key]
    del doc[path[-1]]


BROKEN: list[tuple[str, Callable[[dict[str, Any]], None], str, str]] = [
    ("Case", lambda d: _set(d, ["properties", "OwnerId", "x-sf", "referenceTo"], ["Usr"]),
     "/properties/OwnerId/x-sf/referenceTo", "Did you mean `User`"),
    ("Case", lambda d: _set(d, ["properties", "Status", "x-sf", "type"], "pickilst"), "/properties/Status/x-sf/type", ""),
    ("Case", lambda d: _drop(d, ["properties", "Subject", "x-sf", "length"]), "/properties/Subject/x-sf", "length"),
    ("Order", lambda d: _set(d, ["x-sf", "keyPrefix"], "500"), "/x-sf/keyPrefix", "already used"),
    ("Order", lambda d: _set(d, ["x-sf", "name"], "Orders"), "/x-sf/name", "must match"),
    ("User", lambda d: _drop(d, ["x-sf"]), "/", "x-sf"),
    ("User", lambda d: _set(d, ["properties", "ProfileId", "x-sf", "orgProvided"], False), "/properties/ProfileId/x-sf/referenceTo", "orgProvided"),
    ("Contact", lambda d: _set(d, ["properties", "AccountId", "x-sf", "orgProvided"], True), "/properties/AccountId/x-sf/orgProvided", "remove orgProvided"),
    ("Issue__c", lambda d: _set(d, ["type"], "array"), "/type", "object"),
    ("Product2", lambda d: _set(d, ["properties", "Name", "maxLength"], "long"), "/properties/Name/maxLength", "JSON Schema"),
]  # fmt: skip


@pytest.mark.parametrize(("sobject", "mutate", "pointer", "hint"), BROKEN)
def test_broken_schema_is_located(
    tmp_path: Path, sobject: str, mutate: Callable[[dict[str, Any]], None], pointer: str, hint: str
) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(SCHEMA_DIR, root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = root / "objects" / f"{sobject}.json"
    doc = json.loads(path.read_text())
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(ModelError) as err:
        load_model(root)
    message = str(err.value)
    assert f"{sobject}.json" in message
    assert pointer in message
    assert hint in message


def test_invalid_json_names_line(tmp_path: Path) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(SCHEMA_DIR, root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    path = root / "objects" / "Account.json"
    lines = path.read_text().splitlines()
    lines[4] = lines[4] + ","  # a trailing comma after "type": "object",
    path.write_text("\n".join(lines))
    with pytest.raises(ModelError, match=r"Account\.json:\d+:\d+: invalid JSON"):
        load_model(root)


def test_unlisted_object_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "schemas"
    shutil.copytree(SCHEMA_DIR, root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    shutil.copy(root / "objects" / "Issue__c.json", root / "objects" / "Extra__c.json")
    with pytest.raises(ModelError, match=r"Extra__c\.json is not listed"):
        load_model(root)
