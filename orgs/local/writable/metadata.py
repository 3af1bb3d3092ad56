"""Metadata API deploys to an empty org: custom objects, custom fields, permission sets, org settings.

The path is the zip `deploy` simple-salesforce offers (`sf.deploy(zip, sandbox=False)` then
`sf.checkDeployStatus(id)`), chosen over `sf.mdapi` CRUD because one deploy carries the objects, the fields,
the permission set that grants them and the settings together, and applies them all or none
(`rollbackOnError`), which is what a loader needs to be idempotent; the CRUD calls go through zeep's WSDL
client one component type at a time.

A zip holds `package.xml` and Metadata API source files:
- `objects/<Object>.object` (`CustomObject`): a new custom object (`label`, `pluralLabel`, `nameField`) and/or
  `fields` added to it or to a standard object (`Text`, `TextArea`, `LongTextArea`, `Email`, `Phone`, `Url`,
  `Number`, `Currency`, `Percent`, `Checkbox`, `Date`, `DateTime`, `Picklist`, `Lookup`, `MasterDetail`;
  `externalId`, `unique`, `required`, `length`, `referenceTo`, `relationshipName`);
- `permissionsets/<Name>.permissionset`: `fieldPermissions` (`field` Object.Field, `readable`, `editable`)
  and `userPermissions` (`CreateAuditFields`, `BulkApiHardDelete`);
- `settings/Knowledge.settings` (`enableKnowledge`), `settings/LiveAgent.settings` (`enableLiveAgent`),
  `settings/Security.settings` or `settings/UserInterface.settings` (`enableAuditFieldsInactiveOwner`: the
  "Set Audit Fields upon Record Creation" preference).

Field-level security holds as in a real org: a deployed custom field exists but neither describe nor SOQL
nor a write sees it until a permission set granting it is assigned to the API user (insert a
`PermissionSetAssignment`).
"""

from __future__ import annotations

import base64
import io
import sqlite3
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass, field, replace
from html import escape
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from orgs.local.api import session, writable_org
from orgs.local.computed import RULES, rule_field
from orgs.local.errors import OrgApiError
from orgs.local.store import column_sql, quote, searchable_fields
from orgs.local.writable.catalog import SETUP_PATH, Entry, model_template
from orgs.local.writable.state import (
    add_index,
    counter,
    create_fts,
    create_table,
    delete_rows,
    insert_rows,
    now_wire,
)
from schemas.model import FieldSpec, ObjectSpec

if TYPE_CHECKING:
    from orgs.local.writable.org import WritableOrg

MD = "http://soap.sforce.com/2006/04/metadata"
SOAP = "http://schemas.xmlsoap.org/soap/envelope/"
MAX_ZIP_BYTES = 50 * 1024 * 1024  # uncompressed, all members together
TYPES = {
    "Text": "string",
    "TextArea": "textarea",
    "LongTextArea": "textarea",
    "Html": "textarea",
    "Email": "email",
    "Phone": "phone",
    "Url": "url",
    "Number": "double",
    "Currency": "currency",
    "Percent": "double",
    "Checkbox": "boolean",
    "Date": "date",
    "DateTime": "datetime",
    "Picklist": "picklist",
    "Lookup": "reference",
    "MasterDetail": "reference",
}
DEFAULT_LENGTH = {
    "Text": 255,
    "TextArea": 255,
    "LongTextArea": 32768,
    "Html": 32768,
    "Email": 80,
    "Phone": 40,
    "Url": 255,
}


@dataclass
class Failure:
    component_type: str
    file_name: str
    full_name: str
    problem: str


@dataclass
class DeployResult:
    id: str
    failures: list[Failure] = field(default_factory=list)
    deployed: int = 0
    total: int = 0

    @property
    def success(self) -> bool:
        return not self.failures


class DeployError(Exception):
    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.problem)
        self.failure = failure


def _text(el: ET.Element | None, tag: str, default: str | None = None) -> str | None:
    if el is None:
        return default
    found = el.find(f"{{{MD}}}{tag}")
    if found is None:
        found = el.find(tag)
    return found.text.strip() if found is not None and found.text is not None else default


def _all(el: ET.Element, tag: str) -> list[ET.Element]:
    return el.findall(f"{{{MD}}}{tag}") + el.findall(tag)


def _parse_xml(name: str, data: bytes) -> ET.Element:
    if b"<!DOCTYPE" in data.upper() or b"<!ENTITY" in data.upper():
        raise DeployError(
            Failure("", name, name, "Document type declarations are not allowed in metadata files.")
        )
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        raise DeployError(Failure("", name, name, f"Error parsing file: {exc}")) from None


def read_zip(raw: bytes) -> dict[str, bytes]:
    """The members of a deploy zip, bounded in size; DeployError when it is not one."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile:
        raise DeployError(Failure("", "", "", "The deploy package is not a zip file.")) from None
    total = sum(i.file_size for i in zf.infolist())
    if total > MAX_ZIP_BYTES:
        raise DeployError(
            Failure("", "", "", f"The deploy package unpacks to {total} bytes (limit {MAX_ZIP_BYTES}).")
        )
    members = {}
    for info in zf.infolist():
        if info.is_dir():
            continue
        name = info.filename
        # packages are often zipped with a top folder (unpackaged/...): strip it
        parts = name.split("/")
        if len(parts) > 1 and parts[0] not in ("objects", "permissionsets", "settings"):
            name = "/".join(parts[1:])
        members[name] = zf.read(info)
    if "package.xml" not in members:
        raise DeployError(Failure("", "package.xml", "package.xml", "No package.xml found"))
    return members


def _field_spec(org: WritableOrg, sobject: str, el: ET.Element, file_name: str) -> FieldSpec:
    name = _text(el, "fullName") or ""
    if not name.endswith("__c"):
        raise DeployError(
            Failure(
                "CustomField", file_name, f"{sobject}.{name}", f"Custom field names must end in __c: {name}"
            )
        )
    kind = _text(el, "type") or ""
    if kind not in TYPES:
        raise DeployError(
            Failure("CustomField", file_name, f"{sobject}.{name}", f"Unknown field type: {kind}")
        )
    label = _text(el, "label") or name
    length = _text(el, "length")
    picklist = tuple(
        v
        for value_set in _all(el, "valueSet")
        for definition in _all(value_set, "valueSetDefinition")
        for value in _all(definition, "value")
        if (v := _text(value, "fullName"))
    )
    reference_to: tuple[str, ...] = ()
    relationship = child = None
    if kind in ("Lookup", "MasterDetail"):
        target = _text(el, "referenceTo") or ""
        if target not in org.state.catalog.entries:
            raise DeployError(
                Failure(
                    "CustomField",
                    file_name,
                    f"{sobject}.{name}",
                    f"referenceTo value of '{target}' does not resolve to a valid sObject type",
                )
            )
        reference_to = (target,)
        relationship = name[:-3] + "__r"
        given = _text(el, "relationshipName")
        child = f"{given}__r" if given else None
    template = model_template(sobject)
    known = template.field(name) if template is not None and template.has_field(name) else None
    if known is not None and known.is_lookup:
        relationship, child = known.relationship_name, known.child_relationship_name
    return FieldSpec(
        name=name,
        type=TYPES[kind],
        label=label,
        description=_text(el, "description") or label,
        nillable=(_text(el, "required") or "false").lower() != "true" and kind != "MasterDetail",
        length=int(length) if length else DEFAULT_LENGTH.get(kind),
        precision=int(p) if (p := _text(el, "precision")) else None,
        scale=int(s) if (s := _text(el, "scale")) else None,
        picklist=picklist,
        reference_to=reference_to,
        relationship_name=relationship,
        child_relationship_name=child,
        unique=(_text(el, "unique") or "false").lower() == "true",
        external_id=(_text(el, "externalId") or "false").lower() == "true",
        custom=True,
    )


def _system_fields() -> tuple[FieldSpec, ...]:
    """The system fields every record of a custom object has (orgs/local/computed.py)."""
    return tuple(rule_field(r) for r in RULES if r.objects is None and not r.requires)


def _new_prefix(org: WritableOrg, conn: sqlite3.Connection, name: str) -> str:
    template = model_template(name)
    used = {e.spec.key_prefix for e in org.state.catalog.entries.values()}
    if template is not None and template.key_prefix not in used:
        return template.key_prefix
    n = counter(conn, "custom-object-prefix", 1)
    alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    while True:
        prefix = "a" + alphabet[n // 62 % 62] + alphabet[n % 62]
        if prefix not in used:
            return prefix
        n += 1


def apply_deploy(org: WritableOrg, raw: bytes, deploy_id: str) -> DeployResult:
    """Apply a deploy zip to `org` all or none; the result lists each failed component."""
    result = DeployResult(deploy_id)
    try:
        members = read_zip(raw)
    except DeployError as exc:
        result.failures.append(exc.failure)
        return result
    state = org.state
    changed_tables: list[str] = []
    try:
        with state.transaction() as conn:
            objects = sorted(n for n in members if n.startswith("objects/") and n.endswith(".object"))
            # custom objects first (fields may look each other up), then fields
            parsed = {n: _parse_xml(n, members[n]) for n in objects}
            for n, root in parsed.items():
                sobject = n[len("objects/") : -len(".object")]
                if sobject.endswith("__c") and sobject not in state.catalog.entries:
                    _create_object(org, conn, sobject, root, n)
                    result.deployed += 1
                elif sobject not in state.catalog.entries:
                    raise DeployError(
                        Failure("CustomObject", n, sobject, f"Cannot create a standard object: {sobject}")
                    )
                result.total += 1
            for n, root in parsed.items():
                sobject = n[len("objects/") : -len(".object")]
                for el in _all(root, "fields"):
                    f = _field_spec(org, sobject, el, n)
                    _add_field(org, conn, sobject, f)
                    changed_tables.append(sobject)
                    result.total += 1
                    result.deployed += 1
            for n in ("destructiveChanges.xml", "destructiveChangesPost.xml"):
                if n in members:
                    result.total += _destroy(org, conn, _parse_xml(n, members[n]), n)
                    result.deployed = result.total
            for n in sorted(members):
                if n.startswith("permissionsets/") and n.endswith(".permissionset"):
                    _permission_set(
                        org,
                        conn,
                        n[len("permissionsets/") : -len(".permissionset")],
                        _parse_xml(n, members[n]),
                        n,
                    )
                    result.total += 1
                    result.deployed += 1
                elif n.startswith("settings/") and n.endswith(".settings"):
                    _settings(org, conn, n, _parse_xml(n, members[n]))
                    result.total += 1
                    result.deployed += 1
    except DeployError as exc:
        result.failures.append(exc.failure)
        result.deployed = 0
        state.reload()  # the catalogue and settings in memory follow the database, which rolled back
    org.refresh()
    return result


def _create_object(
    org: WritableOrg, conn: sqlite3.Connection, name: str, root: ET.Element, file_name: str
) -> None:
    label = _text(root, "label") or name[:-3]
    plural = _text(root, "pluralLabel") or label + "s"
    name_field = root.find(f"{{{MD}}}nameField") or root.find("nameField")
    name_type = _text(name_field, "type", "Text")
    name_spec = FieldSpec(
        name="Name",
        type="string",
        label=_text(name_field, "label") or f"{label} Name",
        description="The record's name",
        nillable=name_type == "AutoNumber",
        length=80,
        createable=name_type != "AutoNumber",
        auto_number=name_type == "AutoNumber",
    )
    spec = ObjectSpec(
        name=name,
        label=label,
        label_plural=plural,
        key_prefix=_new_prefix(org, conn, name),
        custom=True,
        description=_text(root, "description") or label,
        external_id_field="Id",
        name_field="Name",
        fields=(
            FieldSpec(
                name="Id",
                type="id",
                label=f"{label} ID",
                description="Record id",
                nillable=False,
                createable=False,
            ),
            name_spec,
            *_system_fields(),
        ),
        path=SETUP_PATH,
        json_schema={},
    )
    create_table(conn, spec)
    org.state.save_entry(conn, Entry(spec))


def _add_field(org: WritableOrg, conn: sqlite3.Connection, sobject: str, f: FieldSpec) -> None:
    entry = org.state.catalog.entries[sobject]
    spec = entry.spec
    if spec.has_field(f.name):
        old = spec.field(f.name)
        if old.type != f.type:
            raise DeployError(
                Failure(
                    "CustomField",
                    f"objects/{sobject}.object",
                    f"{sobject}.{f.name}",
                    f"Cannot change type of field {f.name} from {old.type} to {f.type}",
                )
            )
        fields = tuple(f if x.name == f.name else x for x in spec.fields)
        org.state.save_entry(conn, Entry(replace(spec, fields=fields), entry.hidden, entry.feature))
        return
    conn.execute(f"ALTER TABLE {quote(sobject)} ADD COLUMN {column_sql(f)}")
    new = replace(spec, fields=(*spec.fields, f))
    if f.is_lookup or f.external_id or f.unique or f.type in ("date", "datetime"):
        add_index(conn, sobject, f)
    if f in searchable_fields(new):
        create_fts(conn, new)
    org.state.save_entry(conn, Entry(new, entry.hidden | {f.name}, entry.feature))


def _permission_set(
    org: WritableOrg, conn: sqlite3.Connection, name: str, root: ET.Element, file_name: str
) -> None:
    label = _text(root, "label") or name
    perms = {
        _text(p, "name"): (_text(p, "enabled") or "false").lower() == "true"
        for p in _all(root, "userPermissions")
    }
    unknown = [
        p
        for p in perms
        if p not in ("CreateAuditFields", "BulkApiHardDelete", "ApiEnabled", "ModifyAllData", "ViewAllData")
    ]
    if unknown:
        raise DeployError(Failure("PermissionSet", file_name, name, f"Unknown user permission: {unknown[0]}"))
    grants = []
    for fp in _all(root, "fieldPermissions"):
        target = _text(fp, "field") or ""
        obj, _, fname = target.partition(".")
        entry = org.state.catalog.entries.get(obj)
        if entry is None or not entry.spec.has_field(fname):
            raise DeployError(
                Failure(
                    "PermissionSet", file_name, name, f"In field: field - no CustomField named {target} found"
                )
            )
        grants.append(
            (
                name,
                entry.spec.name,
                entry.spec.field(fname).name,
                int((_text(fp, "readable") or "false").lower() == "true"),
                int((_text(fp, "editable") or "false").lower() == "true"),
            )
        )
    spec = org.state.catalog.entries["PermissionSet"].spec
    row = conn.execute('SELECT "Id" FROM "PermissionSet" WHERE "Name" = ?', (name,)).fetchone()
    values = {
        "Label": label,
        "PermissionsCreateAuditFields": int(perms.get("CreateAuditFields", False)),
        "PermissionsBulkApiHardDelete": int(perms.get("BulkApiHardDelete", False)),
    }
    if row is None:
        stamp = now_wire()
        rid = org.state.next_ids(conn, "0PS", 1)[0]
        insert_rows(
            conn,
            spec,
            [
                {
                    "Id": rid,
                    "Name": name,
                    "IsOwnedByProfile": 0,
                    **values,
                    "CreatedById": org.state.api_user,
                    "LastModifiedById": org.state.api_user,
                    "CreatedDate": stamp,
                    "LastModifiedDate": stamp,
                    "SystemModstamp": stamp,
                    "IsDeleted": 0,
                }
            ],
        )
    else:
        sets = ", ".join(f"{quote(k)} = ?" for k in values)
        conn.execute(f'UPDATE "PermissionSet" SET {sets} WHERE "Id" = ?', (*values.values(), row[0]))
    conn.execute("DELETE FROM orgseed_permset_fields WHERE permset = ?", (name,))
    conn.executemany("INSERT INTO orgseed_permset_fields VALUES (?, ?, ?, ?, ?)", grants)


def _destroy(org: WritableOrg, conn: sqlite3.Connection, root: ET.Element, file_name: str) -> int:
    """destructiveChanges.xml: custom fields, custom objects and permission sets removed (data with them)."""
    done = 0
    entries = org.state.catalog.entries
    for types in _all(root, "types"):
        kind = _text(types, "name")
        for m in _all(types, "members"):
            member = (m.text or "").strip()
            if kind == "CustomField":
                obj, _, fname = member.partition(".")
                entry = entries.get(obj)
                if entry is None or not entry.spec.has_field(fname) or not entry.spec.field(fname).custom:
                    raise DeployError(
                        Failure("CustomField", file_name, member, f"No CustomField named {member} found")
                    )
                f = entry.spec.field(fname)
                conn.execute(f"DROP INDEX IF EXISTS {quote(f'ix_{obj}_{f.name}')}")
                new = replace(entry.spec, fields=tuple(x for x in entry.spec.fields if x.name != f.name))
                text = f in searchable_fields(entry.spec)
                if text:
                    conn.execute(f"DROP TABLE IF EXISTS {quote(f'fts_{obj}')}")
                conn.execute(f"ALTER TABLE {quote(obj)} DROP COLUMN {quote(f.name)}")
                if text:
                    create_fts(conn, new)
                conn.execute(
                    "DELETE FROM orgseed_permset_fields WHERE sobject = ? AND field = ?", (obj, f.name)
                )
                org.state.save_entry(conn, Entry(new, entry.hidden - {f.name}, entry.feature))
            elif kind == "CustomObject":
                entry = entries.get(member)
                if entry is None or not entry.spec.custom:
                    raise DeployError(
                        Failure("CustomObject", file_name, member, f"No CustomObject named {member} found")
                    )
                conn.execute(f"DROP TABLE {quote(member)}")
                conn.execute(f"DROP TABLE IF EXISTS {quote(f'fts_{member}')}")
                conn.execute("DELETE FROM orgseed_objects WHERE name = ?", (member,))
                conn.execute("DELETE FROM orgseed_permset_fields WHERE sobject = ?", (member,))
                conn.execute("DELETE FROM orgseed_storage WHERE sobject = ?", (member,))
                del entries[member]
            elif kind == "PermissionSet":
                row = conn.execute('SELECT "Id" FROM "PermissionSet" WHERE "Name" = ?', (member,)).fetchone()
                if row is None:
                    raise DeployError(
                        Failure("PermissionSet", file_name, member, f"No PermissionSet named {member} found")
                    )
                assigned = conn.execute(
                    'SELECT 1 FROM "PermissionSetAssignment" WHERE "PermissionSetId" = ? LIMIT 1', (row[0],)
                ).fetchone()
                if assigned:
                    raise DeployError(
                        Failure(
                            "PermissionSet",
                            file_name,
                            member,
                            "This permission set is assigned to users; remove the assignments first.",
                        )
                    )
                delete_rows(conn, entries["PermissionSet"].spec, [row[0]])
                conn.execute("DELETE FROM orgseed_permset_fields WHERE permset = ?", (member,))
            else:
                raise DeployError(
                    Failure(kind or "", file_name, member, f"Cannot delete components of type {kind} here.")
                )
            done += 1
    return done


def _settings(org: WritableOrg, conn: sqlite3.Connection, file_name: str, root: ET.Element) -> None:
    kind = file_name[len("settings/") : -len(".settings")]
    s = org.state.settings
    if kind == "Knowledge":
        s.knowledge = (_text(root, "enableKnowledge") or "false").lower() == "true"
    elif kind == "LiveAgent":
        s.chat = (_text(root, "enableLiveAgent") or "false").lower() == "true"
    elif kind in ("Security", "UserInterface"):
        value = _text(root, "enableAuditFieldsInactiveOwner")
        if value is not None:
            s.audit_fields = value.lower() == "true"
    else:
        raise DeployError(
            Failure("Settings", file_name, kind, f"Settings of type {kind} are not supported by this org.")
        )
    org.state.save_settings(conn)


# -- the SOAP routes --------------------------------------------------------------------------------------------

_ENVELOPE = (
    '<?xml version="1.0" encoding="UTF-8"?><soapenv:Envelope xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" '
    f'xmlns="{MD}"><soapenv:Body>{{body}}</soapenv:Body></soapenv:Envelope>'
)


def _result_xml(r: DeployResult) -> str:
    failures = "".join(
        "<componentFailures>"
        f"<componentType>{escape(f.component_type)}</componentType><fileName>{escape(f.file_name)}</fileName>"
        f"<fullName>{escape(f.full_name)}</fullName><problem>{escape(f.problem)}</problem>"
        "<problemType>Error</problemType><success>false</success></componentFailures>"
        for f in r.failures
    )
    status = "Succeeded" if r.success else "Failed"
    return (
        f"<checkDeployStatusResponse><result><checkOnly>false</checkOnly><done>true</done><id>{r.id}</id>"
        f"<numberComponentErrors>{len(r.failures)}</numberComponentErrors>"
        f"<numberComponentsDeployed>{r.deployed}</numberComponentsDeployed>"
        f"<numberComponentsTotal>{r.total + len(r.failures)}</numberComponentsTotal>"
        "<numberTestErrors>0</numberTestErrors><numberTestsCompleted>0</numberTestsCompleted>"
        f"<numberTestsTotal>0</numberTestsTotal><status>{status}</status>"
        f"<success>{'true' if r.success else 'false'}</success><details>{failures}</details></result>"
        "</checkDeployStatusResponse>"
    )


def metadata_routes() -> list[BaseRoute]:
    base = "/services/Soap/m/{version}"

    async def deploy(request: Request) -> Response:
        org = _soap_org(request)
        body = await request.body()
        try:
            root = ET.fromstring(body)
        except ET.ParseError:
            raise OrgApiError(
                "The deploy request is not well-formed XML.", error_code="soapenv:Client"
            ) from None
        zipped = root.find(f".//{{{MD}}}ZipFile")
        if zipped is None or not zipped.text:
            raise OrgApiError("The deploy request has no ZipFile.", error_code="soapenv:Client")
        try:
            raw = base64.b64decode(zipped.text, validate=False)
        except ValueError:
            raise OrgApiError("ZipFile is not base64.", error_code="soapenv:Client") from None
        state = request.app.state.org
        deploy_id = _deploy_id(org)
        result = await state.run(apply_deploy, org, raw, deploy_id)
        deploys(request)[deploy_id] = result
        text = _ENVELOPE.format(
            body=f"<deployResponse><result><done>false</done><id>{deploy_id}</id><state>Queued</state></result></deployResponse>"
        )
        return Response(text, media_type="text/xml;charset=UTF-8")

    async def check(request: Request) -> Response:
        _soap_org(request)
        deploy_id = request.path_params["deploy_id"]
        result = deploys(request).get(deploy_id)
        if result is None:
            raise OrgApiError(f"INVALID_ID_FIELD: Invalid id: {deploy_id}", error_code="sf:INVALID_ID_FIELD")
        return Response(_ENVELOPE.format(body=_result_xml(result)), media_type="text/xml;charset=UTF-8")

    return [
        Route(base + "/deployRequest", deploy, methods=["POST"], include_in_schema=False),
        Route(base + "/deployRequest/{deploy_id}", check, methods=["POST"], include_in_schema=False),
        Route(base + "/{org_id}/deployRequest", deploy, methods=["POST"], include_in_schema=False),
        Route(base + "/{org_id}/deployRequest/{deploy_id}", check, methods=["POST"], include_in_schema=False),
    ]


def deploys(request: Request) -> dict[str, DeployResult]:
    app_state = request.app.state
    if not hasattr(app_state, "deploys"):
        app_state.deploys = {}
    found: dict[str, DeployResult] = app_state.deploys
    return found


def _deploy_id(org: WritableOrg) -> str:
    with org.state.transaction() as conn:
        return org.state.next_ids(conn, "0Af", 1)[0]


def _soap_org(request: Request) -> Any:
    return writable_org(session(request).org, "Metadata API deploys")


__all__ = ["apply_deploy", "metadata_routes", "read_zip"]
