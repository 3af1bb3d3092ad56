"""Metadata API deploy packages for seeding: custom objects and fields, a permission set that grants them,
and the org settings a load needs, written as the zip `simple_salesforce.Salesforce.deploy` sends.

`deploy_package(...)` returns the zip's bytes; `field_xml` maps an org-model field onto a `CustomField`.
The same package deploys to a real org and to the local empty org (`orgs/local/writable/metadata.py`).
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

from schemas.model import FieldSpec, ObjectSpec

MD_NS = "http://soap.sforce.com/2006/04/metadata"
API_VERSION = "59.0"
# fixed zip member times: the same package is the same bytes
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


@dataclass
class CustomObjectDef:
    name: str
    label: str
    plural: str
    name_label: str = "Name"
    auto_number: bool = False


@dataclass
class Package:
    """What to deploy: new custom objects, custom fields per object, a permission set, org settings."""

    objects: list[CustomObjectDef] = field(default_factory=list)
    fields: dict[str, list[FieldSpec]] = field(default_factory=dict)
    permission_set: str | None = None
    permission_label: str = "orgseed loader"
    grant_audit_fields: bool = False
    grant_hard_delete: bool = False
    settings: dict[str, dict[str, bool]] = field(default_factory=dict)


def _el(tag: str, value: object) -> str:
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"<{tag}>{escape(text)}</{tag}>"


def field_xml(f: FieldSpec) -> str:
    """A `<fields>` element for one custom field of the org model."""
    parts = [_el("fullName", f.name), _el("label", f.label[:40])]
    t = f.type
    if t == "reference":
        parts += [_el("type", "Lookup"), _el("referenceTo", f.reference_to[0])]
        child = (f.child_relationship_name or f.name.removesuffix("__c") + "s").removesuffix("__r")
        parts.append(_el("relationshipName", child))
        parts.append(_el("deleteConstraint", "SetNull"))
    elif t == "textarea":
        length = f.length or 32768
        if length <= 255:
            parts.append(_el("type", "TextArea"))
        else:
            parts += [_el("type", "LongTextArea"), _el("length", length), _el("visibleLines", 5)]
    elif t in ("string", "id"):
        parts += [_el("type", "Text"), _el("length", min(f.length or 255, 255))]
    elif t == "email":
        parts.append(_el("type", "Email"))
    elif t == "phone":
        parts.append(_el("type", "Phone"))
    elif t == "url":
        parts.append(_el("type", "Url"))
    elif t == "boolean":
        parts += [_el("type", "Checkbox"), _el("defaultValue", False)]
    elif t == "date":
        parts.append(_el("type", "Date"))
    elif t == "datetime":
        parts.append(_el("type", "DateTime"))
    elif t in ("double", "int", "currency", "percent"):
        kind = {"currency": "Currency", "percent": "Percent"}.get(t, "Number")
        parts += [
            _el("type", kind),
            _el("precision", f.precision or 18),
            _el("scale", f.scale or 0 if t == "int" else f.scale or 2),
        ]
    elif t == "picklist":
        values = "".join(
            f"<value>{_el('fullName', v)}{_el('default', False)}{_el('label', v)}</value>" for v in f.picklist
        )
        parts += [
            _el("type", "Picklist"),
            f"<valueSet><restricted>true</restricted><valueSetDefinition>{values}</valueSetDefinition></valueSet>",
        ]
    else:
        raise ValueError(f"{f.name}: no Metadata API type for field type {t!r}")
    if f.external_id:
        parts.append(_el("externalId", True))
    if f.unique:
        parts.append(_el("unique", True))
    return "<fields>" + "".join(parts) + "</fields>"


def external_id_field(name: str = "Orgseed_Id__c") -> FieldSpec:
    """The external-id field a load keys every object on (unique, so reruns find what is there)."""
    return FieldSpec(
        name=name,
        type="string",
        label="orgseed Id",
        description="The record's id in the orgseed bundle it was loaded from",
        nillable=True,
        length=18,
        external_id=True,
        unique=True,
        custom=True,
    )


def deploy_package(pkg: Package) -> bytes:
    """The deploy zip for `pkg` (deterministic bytes)."""
    members: dict[str, str] = {}
    names = sorted({*(o.name for o in pkg.objects), *pkg.fields})
    defs = {o.name: o for o in pkg.objects}
    for name in names:
        body = []
        o = defs.get(name)
        if o is not None:
            name_type = "AutoNumber" if o.auto_number else "Text"
            body += [
                _el("label", o.label),
                _el("pluralLabel", o.plural),
                f"<nameField>{_el('label', o.name_label)}{_el('type', name_type)}</nameField>",
                _el("deploymentStatus", "Deployed"),
                _el("sharingModel", "ReadWrite"),
            ]
        body += [field_xml(f) for f in pkg.fields.get(name, [])]
        members[f"objects/{name}.object"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><CustomObject xmlns="{MD_NS}">{"".join(body)}</CustomObject>'
        )
    if pkg.permission_set:
        perms = []
        for name in names:
            for f in pkg.fields.get(name, []):
                perms.append(
                    f"<fieldPermissions>{_el('editable', True)}{_el('field', f'{name}.{f.name}')}{_el('readable', True)}</fieldPermissions>"
                )
        for perm, on in (
            ("CreateAuditFields", pkg.grant_audit_fields),
            ("BulkApiHardDelete", pkg.grant_hard_delete),
        ):
            if on:
                perms.append(f"<userPermissions>{_el('enabled', True)}{_el('name', perm)}</userPermissions>")
        members[f"permissionsets/{pkg.permission_set}.permissionset"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><PermissionSet xmlns="{MD_NS}">{_el("label", pkg.permission_label)}'
            f"{''.join(perms)}</PermissionSet>"
        )
    for kind, values in sorted(pkg.settings.items()):
        inner = "".join(_el(k, v) for k, v in sorted(values.items()))
        members[f"settings/{kind}.settings"] = (
            f'<?xml version="1.0" encoding="UTF-8"?><{kind}Settings xmlns="{MD_NS}">{inner}</{kind}Settings>'
        )
    members["package.xml"] = _package_xml(members)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, members[name])
    return buf.getvalue()


def _package_xml(members: Iterable[str]) -> str:
    by_type: dict[str, list[str]] = {}
    for m in members:
        folder, _, rest = m.partition("/")
        kind = {"objects": "CustomObject", "permissionsets": "PermissionSet", "settings": "Settings"}.get(
            folder
        )
        if kind:
            by_type.setdefault(kind, []).append(rest.rsplit(".", 1)[0])
    types = "".join(
        "<types>" + "".join(_el("members", n) for n in sorted(names)) + _el("name", kind) + "</types>"
        for kind, names in sorted(by_type.items())
    )
    return f'<?xml version="1.0" encoding="UTF-8"?><Package xmlns="{MD_NS}">{types}{_el("version", API_VERSION)}</Package>'


def custom_object_def(spec: ObjectSpec) -> CustomObjectDef:
    return CustomObjectDef(spec.name, spec.label, spec.label_plural)
