"""Describe results (global and per object) derived from the org model, in Salesforce's REST shapes."""

from __future__ import annotations

from typing import Any

from orgs.local.soql.scope import is_groupable, is_long_text
from orgs.local.store import searchable_fields
from schemas.model import FieldSpec, ObjectSpec, OrgModel

SOAP_TYPES = {
    "id": "tns:ID",
    "reference": "tns:ID",
    "boolean": "xsd:boolean",
    "currency": "xsd:double",
    "double": "xsd:double",
    "int": "xsd:int",
    "date": "xsd:date",
    "datetime": "xsd:dateTime",
}
TEXT_TYPES = frozenset({"string", "textarea", "email", "phone", "url", "picklist"})


def _urls(spec: ObjectSpec, version: str) -> dict[str, str]:
    base = f"/services/data/v{version}/sobjects/{spec.name}"
    return {"sobject": base, "describe": f"{base}/describe", "rowTemplate": f"{base}/{{ID}}"}


def global_entry(spec: ObjectSpec, version: str) -> dict[str, Any]:
    return {
        "activateable": False,
        "associateEntityType": None,
        "associateParentEntity": None,
        "createable": True,
        "custom": spec.custom,
        "customSetting": False,
        "deepCloneable": False,
        "deletable": True,
        "deprecatedAndHidden": False,
        "feedEnabled": False,
        "hasSubtypes": False,
        "isInterface": False,
        "isSubtype": False,
        "keyPrefix": spec.key_prefix,
        "label": spec.label,
        "labelPlural": spec.label_plural,
        "layoutable": True,
        "mergeable": False,
        "mruEnabled": False,
        "name": spec.name,
        "queryable": True,
        "replicateable": True,
        "retrieveable": True,
        "searchable": bool(searchable_fields(spec)),
        "triggerable": True,
        "undeletable": True,
        "updateable": True,
        "urls": _urls(spec, version),
    }


def describe_global(model: OrgModel, version: str) -> dict[str, Any]:
    return {"encoding": "UTF-8", "maxBatchSize": 200, "sobjects": [global_entry(s, version) for s in model]}


def describe_basic(spec: ObjectSpec, version: str) -> dict[str, Any]:
    """GET sobjects/<Obj>/: the object's global entry and (always empty here) recent items."""
    return {"objectDescribe": global_entry(spec, version), "recentItems": []}


def _length(f: FieldSpec) -> int:
    if f.type in ("id", "reference"):
        return 18
    if f.type == "picklist":
        return 255
    if f.type in TEXT_TYPES:
        return f.length or 255
    return 0


def describe_field(spec: ObjectSpec, f: FieldSpec) -> dict[str, Any]:
    length = _length(f)
    is_id = f.type == "id"
    long_text = is_long_text(f)
    return {
        "aggregatable": f.type != "boolean" and not long_text,
        "autoNumber": f.auto_number,
        "byteLength": 18 if f.type in ("id", "reference") else length * 3,
        "calculated": False,
        "calculatedFormula": None,
        "cascadeDelete": False,
        "caseSensitive": False,
        "compoundFieldName": None,
        "controllerName": None,
        "createable": f.createable and not is_id,
        "custom": f.custom,
        "defaultValue": None,
        "defaultValueFormula": None,
        "defaultedOnCreate": is_id or f.type == "boolean",
        "dependentPicklist": False,
        "deprecatedAndHidden": False,
        "digits": 9 if f.type == "int" else 0,
        "displayLocationInDecimal": False,
        "encrypted": False,
        "externalId": f.external_id,
        "extraTypeInfo": "plaintextarea" if f.type == "textarea" else None,
        "filterable": not long_text,
        "filteredLookupInfo": None,
        "groupable": is_groupable(f),
        "highScaleNumber": False,
        "htmlFormatted": False,
        "idLookup": is_id or f.external_id or (f.unique and f.type in TEXT_TYPES),
        "inlineHelpText": None,
        "label": f.label,
        "length": length,
        "mask": None,
        "maskType": None,
        "name": f.name,
        "nameField": f.name == spec.name_field,
        "namePointing": False,
        "nillable": f.nillable and f.type != "boolean",
        "permissionable": f.nillable and not is_id,
        "picklistValues": [
            {"active": True, "defaultValue": False, "label": v, "validFor": None, "value": v}
            for v in f.picklist
        ],
        "polymorphicForeignKey": len(f.reference_to) > 1,
        "precision": (f.precision or 18) if f.type in ("currency", "double") else 0,
        "queryByDistance": False,
        "referenceTargetField": None,
        "referenceTo": list(f.reference_to),
        "relationshipName": f.relationship_name,
        "relationshipOrder": None,
        "restrictedDelete": False,
        "restrictedPicklist": f.type == "picklist",
        "scale": (f.scale if f.scale is not None else 2) if f.type in ("currency", "double") else 0,
        "searchPrefilterable": False,
        "soapType": SOAP_TYPES.get(f.type, "xsd:string"),
        "sortable": not long_text,
        "type": f.type,
        "unique": f.unique,
        "updateable": f.createable and not is_id and not f.audit,
        "writeRequiresMasterRead": False,
        "description": f.description,
    }


def describe_object(model: OrgModel, spec: ObjectSpec, version: str) -> dict[str, Any]:
    out = global_entry(spec, version)
    children = []
    for child in model:
        for f in child.lookups:
            if spec.name in f.reference_to:
                children.append(
                    {
                        "cascadeDelete": False,
                        "childSObject": child.name,
                        "deprecatedAndHidden": False,
                        "field": f.name,
                        "junctionIdListNames": [],
                        "junctionReferenceTo": [],
                        "relationshipName": f.child_relationship_name,
                        "restrictedDelete": False,
                    }
                )
    out.update(
        {
            "actionOverrides": [],
            "childRelationships": children,
            "compactLayoutable": True,
            "fields": [describe_field(spec, f) for f in spec.fields],
            "listviewable": None,
            "lookupLayoutable": None,
            "namedLayoutInfos": [],
            "networkScopeFieldName": None,
            "recordTypeInfos": [],
            "searchLayoutable": bool(searchable_fields(spec)),
            "supportedScopes": [{"label": "All records", "name": "everything"}],
        }
    )
    return out
