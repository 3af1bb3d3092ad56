"""What objects and fields an empty org has, which of them the API user sees, and how that is kept.

An empty org starts with the *standard* objects and fields of the CRMArena org model (no custom object, no
custom field: those arrive by a metadata deploy, `metadata.py`), the setup objects every org has
(`Organization`, `Profile`, `PermissionSet`, `PermissionSetAssignment`, `UserLicense`), and the system fields
of `orgs/local/computed.py` on every object. Two kinds of things are hidden although they exist:
- objects behind a feature that is off (`Knowledge__kav` without Knowledge, `LiveChatTranscript` without Chat);
- custom fields no permission set assigned to the API user grants (field-level security): a deployed field is
  invisible to describe, to queries and to writes until then, as in a real org.

`Catalog` is the org's list of objects and fields as stored in `orgseed_objects` (one JSON document per
object); `Catalog.visible(...)` is the `OrgModel` the query engine, describe and the writers use.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from orgs.local.computed import local_model
from schemas.model import FieldSpec, ObjectSpec, OrgModel, load_model

SETUP_PATH = Path("<org setup>")
FEATURE_OBJECTS = {"Knowledge__kav": "knowledge", "LiveChatTranscript": "chat", "LiveChatVisitor": "chat"}
# fields of a person account that a business-account org does not have (Account.Name is then stored)
PERSON_FIELDS = ("FirstName", "LastName", "PersonEmail", "RecordTypeId")
_FIELD_KEYS = tuple(k for k in FieldSpec.__dataclass_fields__ if k not in ("rule", "json_schema"))


def _f(name: str, type_: str, label: str, *, nillable: bool = True, **kw: Any) -> FieldSpec:
    return FieldSpec(name=name, type=type_, label=label, description=label, nillable=nillable, **kw)


def _setup(name: str, label: str, plural: str, prefix: str, fields: list[FieldSpec]) -> ObjectSpec:
    return ObjectSpec(
        name=name,
        label=label,
        label_plural=plural,
        key_prefix=prefix,
        custom=False,
        description=label,
        external_id_field="Id",
        name_field="Name" if any(f.name == "Name" for f in fields) else None,
        fields=(_f("Id", "id", f"{label} ID", nillable=False, createable=False), *fields),
        path=SETUP_PATH,
        json_schema={},
    )


def setup_objects() -> list[ObjectSpec]:
    """The setup objects an empty org holds (read through the API; PermissionSetAssignment is writable)."""
    ro = {"createable": False}
    return [
        _setup(
            "Organization",
            "Organization",
            "Organizations",
            "00D",
            [
                _f("Name", "string", "Name", nillable=False, length=80, **ro),
                _f("OrganizationType", "string", "Edition", length=40, **ro),
                _f("IsSandbox", "boolean", "Is Sandbox", nillable=False, **ro),
                _f("InstanceName", "string", "Instance Name", length=5, **ro),
                _f("LanguageLocaleKey", "string", "Language", length=40, **ro),
                _f("TimeZoneSidKey", "string", "Time Zone", length=40, **ro),
            ],
        ),
        _setup(
            "UserLicense",
            "User License",
            "User Licenses",
            "100",
            [
                _f("Name", "string", "Name", nillable=False, length=40, **ro),
                _f("LicenseDefinitionKey", "string", "License Definition Key", length=40, **ro),
                _f("TotalLicenses", "int", "Total Licenses", nillable=False, **ro),
                _f("UsedLicenses", "int", "Used Licenses", nillable=False, **ro),
                _f("Status", "string", "Status", length=40, **ro),
            ],
        ),
        _setup(
            "Profile",
            "Profile",
            "Profiles",
            "00e",
            [
                _f("Name", "string", "Name", nillable=False, length=255, **ro),
                _f(
                    "UserLicenseId",
                    "reference",
                    "User License ID",
                    reference_to=("UserLicense",),
                    relationship_name="UserLicense",
                    **ro,
                ),
                _f("PermissionsModifyAllData", "boolean", "Modify All Data", nillable=False, **ro),
            ],
        ),
        _setup(
            "PermissionSet",
            "Permission Set",
            "Permission Sets",
            "0PS",
            [
                _f("Name", "string", "Name", nillable=False, length=80, **ro),
                _f("Label", "string", "Label", nillable=False, length=80, **ro),
                _f("IsOwnedByProfile", "boolean", "Is Owned By Profile", nillable=False, **ro),
                _f("PermissionsCreateAuditFields", "boolean", "Set Audit Fields upon Record Creation", **ro),
                _f("PermissionsBulkApiHardDelete", "boolean", "Bulk API Hard Delete", **ro),
            ],
        ),
        _setup(
            "RecordType",
            "Record Type",
            "Record Types",
            "012",
            [
                _f("Name", "string", "Name", nillable=False, length=80, **ro),
                _f("DeveloperName", "string", "Record Type Name", nillable=False, length=80, **ro),
                _f("SobjectType", "string", "Sobject Type Name", nillable=False, length=40, **ro),
                _f("IsPersonType", "boolean", "Is Person Type", nillable=False, **ro),
                _f("IsActive", "boolean", "Active", nillable=False, **ro),
            ],
        ),
        _setup(
            "DuplicateRule",
            "Duplicate Rule",
            "Duplicate Rules",
            "0Bm",
            [
                _f("DeveloperName", "string", "Rule Name", nillable=False, length=80, **ro),
                _f("SobjectType", "string", "Object", nillable=False, length=40, **ro),
                _f("IsActive", "boolean", "Active", nillable=False, **ro),
            ],
        ),
        _setup(
            "ProductCatalog",
            "Catalog",
            "Catalogs",
            "0ZS",
            [_f("Name", "string", "Name", nillable=False, length=255)],
        ),
        _setup(
            "LiveChatVisitor",
            "Chat Visitor",
            "Chat Visitors",
            "571",
            [_f("Name", "string", "Session Key", length=255, createable=False)],
        ),
        _setup(
            "PermissionSetAssignment",
            "Permission Set Assignment",
            "Permission Set Assignments",
            "0Pa",
            [
                _f(
                    "AssigneeId",
                    "reference",
                    "Assignee ID",
                    nillable=False,
                    reference_to=("User",),
                    relationship_name="Assignee",
                ),
                _f(
                    "PermissionSetId",
                    "reference",
                    "Permission Set ID",
                    nillable=False,
                    reference_to=("PermissionSet",),
                    relationship_name="PermissionSet",
                ),
            ],
        ),
    ]


def _business_account(spec: ObjectSpec) -> ObjectSpec:
    """Account as an org without Person Accounts has it: a stored, required Name and no person fields."""
    fields = []
    for f in spec.fields:
        if f.name in PERSON_FIELDS:
            continue
        if f.name == "Name":
            f = replace(f, computed=False, createable=True, length=255, label="Account Name")
        fields.append(f)
    return replace(spec, fields=tuple(fields))


def field_doc(f: FieldSpec, hidden: bool) -> dict[str, Any]:
    doc = {k: v for k, v in asdict(f).items() if k in _FIELD_KEYS}
    doc["hidden"] = hidden
    return doc


def field_from_doc(doc: dict[str, Any]) -> FieldSpec:
    kw = {k: doc[k] for k in _FIELD_KEYS if k in doc}
    for key in ("picklist", "reference_to"):
        kw[key] = tuple(kw.get(key) or ())
    return FieldSpec(**kw)


@dataclass
class Entry:
    """One object of the org as stored: its spec (every field, hidden or not) and which fields are hidden
    until a permission set grants them."""

    spec: ObjectSpec
    hidden: set[str] = field(default_factory=set)
    feature: str | None = None

    def to_json(self) -> str:
        s = self.spec
        return json.dumps(
            {
                "name": s.name,
                "label": s.label,
                "label_plural": s.label_plural,
                "key_prefix": s.key_prefix,
                "custom": s.custom,
                "description": s.description,
                "external_id_field": s.external_id_field,
                "name_field": s.name_field,
                "feature": self.feature,
                "fields": [field_doc(f, f.name in self.hidden) for f in s.fields],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> Entry:
        doc = json.loads(text)
        fields = tuple(field_from_doc(d) for d in doc["fields"])
        spec = ObjectSpec(
            name=doc["name"],
            label=doc["label"],
            label_plural=doc["label_plural"],
            key_prefix=doc["key_prefix"],
            custom=doc["custom"],
            description=doc["description"],
            external_id_field=doc["external_id_field"],
            name_field=doc["name_field"],
            fields=fields,
            path=SETUP_PATH,
            json_schema={},
        )
        return cls(spec, {d["name"] for d in doc["fields"] if d.get("hidden")}, doc.get("feature"))


def standard_entries(person_accounts: bool) -> list[Entry]:
    """The objects of a new org: the org model's standard objects with their standard fields (and the
    system fields), then the setup objects."""
    model = local_model(load_model())
    out: list[Entry] = []
    for spec in model:
        if spec.custom:
            continue
        std = replace(spec, fields=tuple(f for f in spec.fields if not f.custom))
        if spec.name == "Account" and not person_accounts:
            std = _business_account(std)
        out.append(Entry(std, set(), FEATURE_OBJECTS.get(spec.name)))
    out.extend(Entry(s, set(), FEATURE_OBJECTS.get(s.name)) for s in setup_objects())
    return out


def model_template(name: str) -> ObjectSpec | None:
    """The CRMArena org model's definition of `name` (with system fields), if it has one: a deploy of an
    object or field the model knows takes the model's prefix, labels and relationship names."""
    model = local_model(load_model())
    return model.get(name) if model.has(name) else None


class Catalog:
    """The org's objects by name, in creation order."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries: dict[str, Entry] = {e.spec.name: e for e in entries}

    def visible(self, features: dict[str, bool], granted: set[tuple[str, str]]) -> OrgModel:
        """The org as the API user sees it: objects whose feature is on; custom fields only where a
        permission set assigned to the user grants read access (`granted`: (object, field) pairs); lookups
        only to objects it sees."""
        shown = [e for e in self.entries.values() if not e.feature or features.get(e.feature, False)]
        names = {e.spec.name for e in shown}
        objects = []
        for e in shown:
            fields = tuple(
                replace(f, org_provided=False) if f.org_provided else f
                for f in e.spec.fields
                if (f.name not in e.hidden or (e.spec.name, f.name) in granted)
                and all(r in names for r in f.reference_to)
            )
            objects.append(replace(e.spec, fields=fields))
        return OrgModel(objects, [], SETUP_PATH)
