"""`orgseed upload` and `orgseed teardown`: a bundle seeded into a Salesforce org, proven, and removed again.

The steps of an upload, each a stage (a Prefect task under the Prefect engine, `flows/prefect_flow.py`; a plain
call with `--no-prefect`):
1. connect (`orgs/salesforce/connect.py`) and **preflight**, which writes nothing and fails with one list of
   everything to fix: API access, data storage by Salesforce's per-record rules against `/limits`, user
   licences against the active agents, Person Accounts, standard fields the bundle fills that the org's describe
   lacks (they would be lost), the objects the bundle needs, active duplicate rules;
2. `deploy`: the metadata (`orgs/salesforce/load.py`), then one stage per object, in the dependency order of the
   org model (`load Account`, `load Contact`, ...), each a Bulk API 2.0 job (or more, one per 100 MB);
3. `finish`: orders activated, articles published;
4. `reconcile`: per object, bundle count vs org count (by external id) vs failed rows with their errors:
   `BUNDLE/uploads/<org id>/report.json` and a table;
5. `rekey`: the task files with org ids: `uploads/<org id>/tasks/{tasks.json, ground_truth.jsonl, schema.json}`;
6. `verify`: every task answer re-derived with CRMArena's tool queries against the org (the build's check,
   `validators/tasks_soql.py`); any difference fails the upload.

State and results live under `BUNDLE/uploads/<org id>/` (outside the hashed files): `id_map.csv` (bundle id ->
org id, appended as each job ends), `org_before.json` (what the upload changed in records it did not create:
the standard price book), `report.json`. A rerun with `--resume` picks up where an interrupted one stopped:
jobs left open are aborted, running ones waited for, rows already in the org (by external id) skipped.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flows.build import StageRunner, run_inline
from orgs.bundle import Bundle, require_complete
from orgs.salesforce.connect import OrgOptions, connect
from orgs.salesforce.load import (
    EXT,
    PERMISSION_SET,
    BulkIngest,
    Loader,
    LoadError,
    ObjectLoad,
    chunks,
    csv_bytes,
    userinfo,
)
from orgs.salesforce.metadata import MD_NS
from orgs.salesforce.preflight import Finding, check_capacity, storage_needed_bytes
from orgs.salesforce.state import IdMap, atomic_write, upload_dir
from schemas.errors import DataFindings, UsageError
from schemas.graph import load_plan
from schemas.model import OrgModel, load_model
from schemas.rekey import rekey

Progress = Callable[[str, int, int], None]


class PreflightFailed(DataFindings):
    """The org cannot take the bundle; every reason, with the numbers."""

    def __init__(self, findings: list[Finding]) -> None:
        lines = "\n".join(f"  - {f.message}" for f in findings)
        super().__init__(f"The org cannot take this bundle; nothing was written. Fix these first:\n{lines}")
        self.findings = findings


@dataclass(frozen=True)
class UploadOptions:
    bundle: str
    org: OrgOptions
    dry_run: bool = False
    resume: bool = False
    objects: tuple[str, ...] = ()
    inactive_agents: bool = False
    username_suffix: str = ""
    wait: float = 0.2
    verify: bool = True


@dataclass
class UploadResult:
    org_id: str
    folder: Path
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    objects: list[dict[str, Any]] = field(default_factory=list)
    finish: dict[str, int] = field(default_factory=dict)
    disagreements: list[str] = field(default_factory=list)
    instances: int = 0
    dry_run: bool = False
    plan: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return (
            not self.findings
            and not self.disagreements
            and all(o["failed"] == 0 and o["missing"] == 0 for o in self.objects)
        )


# -- preflight ---------------------------------------------------------------------------------------------------


def preflight(
    sf: Any,
    bundle: Bundle,
    model: OrgModel,
    opts: UploadOptions,
    described: dict[str, set[str]] | None = None,
) -> list[Finding]:
    """Everything that would make the upload fail or lose data, found with reads only. The describes it makes
    are left in `described` (object -> field names) for the load to reuse."""
    findings: list[Finding] = []
    described = {} if described is None else described

    def fields_of(name: str) -> set[str]:
        if name not in described:
            described[name] = {f["name"] for f in getattr(sf, name).describe()["fields"]}
        return described[name]

    counts = {k: int(v) for k, v in (bundle.read_manifest().get("counts") or {}).items()}
    wanted = set(opts.objects) or set(counts)
    names = {s["name"] for s in sf.describe()["sobjects"]}
    switchable = {"Knowledge__kav", "LiveChatTranscript"}  # the deploy switches Knowledge and Chat on
    for name in sorted(wanted):
        if (
            counts.get(name, 0)
            and name not in names
            and not model.get(name).custom
            and name not in switchable
        ):
            findings.append(
                Finding(
                    "object", 1, 0, f"{name}: the org has no {name} object; enable its feature (e.g. Orders)."
                )
            )
    person = 0
    if "Account" in counts and model.get("Account").has_field("LastName"):
        accounts = bundle.read_raw("Account")
        person = int((accounts["LastName"].fillna("") != "").sum())
        fields = fields_of("Account")
        if person and "LastName" not in fields:
            findings.append(
                Finding(
                    "person_accounts",
                    person,
                    0,
                    f"Person Accounts: the bundle's {person} accounts are people (FirstName, LastName, PersonEmail) "
                    "but the org has no Person Accounts; create the org with the PersonAccounts feature "
                    "(`orgseed scratch-def` includes it).",
                )
            )
    for name in sorted(wanted & names):
        spec = model.get(name)
        if spec.custom or not counts.get(name):
            continue
        fields = fields_of(name)
        if name == "Account" and "LastName" not in fields:
            continue  # reported above
        lost = [
            f.name
            for f in spec.fields
            if not f.custom
            and not f.is_lookup
            and f.name not in fields
            and f.name not in ("Id", "IsStandard", "PublishStatus")
        ]
        if lost:
            findings.append(
                Finding(
                    "fields",
                    len(lost),
                    0,
                    f"{name}: the org's describe has no {', '.join(lost)}; their values would be lost. Make the "
                    "fields visible to the API user (field-level security) or enable their feature.",
                )
            )
    email_bytes = 0
    if counts.get("EmailMessage"):
        emails = bundle.read_raw("EmailMessage")
        email_bytes = sum(
            max(2048, sum(len(str(v).encode()) for v in row if v is not None))
            for row in emails.itertuples(index=False)
        )
    needed = storage_needed_bytes({k: v for k, v in counts.items() if k in wanted}, email_bytes, person)
    limits = sf.limits()
    agents = 0
    if "User" in wanted and counts.get("User") and not opts.inactive_agents:
        users = bundle.read_raw("User")
        agents = int((users["IsActive"].astype(str).str.lower() == "true").sum())
    licence = sf.query("SELECT TotalLicenses, UsedLicenses FROM UserLicense WHERE Name = 'Salesforce'")[
        "records"
    ]
    free = int(licence[0]["TotalLicenses"]) - int(licence[0]["UsedLicenses"]) if licence else 0
    findings += check_capacity(needed, limits, agents, free)
    if "DuplicateRule" in names and counts.get("Contact"):
        rules = sf.query("SELECT DeveloperName, SobjectType FROM DuplicateRule WHERE IsActive = true")[
            "records"
        ]
        contacts = bundle.read_raw("Contact")
        emails = contacts["Email"].dropna().str.lower() if "Email" in contacts else []
        shared = int(len(emails) - len(set(emails))) if len(emails) else 0
        for r in rules:
            if r["SobjectType"] == "Contact" and shared:
                findings.append(
                    Finding(
                        "duplicate_rule",
                        shared,
                        0,
                        f"Duplicate rule {r['DeveloperName']} on Contact is active and {shared} of the bundle's "
                        "contacts share an email with another: Bulk API loads cannot bypass it. Deactivate it for "
                        "the load.",
                    )
                )
    return findings


AUTOMATION = (
    (
        "validation rule",
        "SELECT EntityDefinition.QualifiedApiName, ValidationName FROM ValidationRule WHERE Active = true",
    ),
    ("trigger", "SELECT Name, TableEnumOrId FROM ApexTrigger WHERE Status = 'Active'"),
)


def automation(sf: Any, objects: Iterable[str]) -> list[str]:
    """Active validation rules and triggers on the objects to load: they can refuse or rewrite rows, so
    they are reported (not refused: the load reports any row they refuse, and the read-back shows rewrites)."""
    from urllib.parse import quote_plus

    wanted = {o.lower() for o in objects}
    notes = []
    for kind, soql in AUTOMATION:
        try:
            res = sf.toolingexecute(f"query/?q={quote_plus(soql)}")
        except Exception as exc:  # an org (or user) without Tooling API access: say so, do not guess
            notes.append(
                f"Active {kind}s could not be listed through the Tooling API ({type(exc).__name__}); check them by hand."
            )
            continue
        for r in res.get("records", []):
            obj = (r.get("EntityDefinition") or {}).get("QualifiedApiName") or r.get("TableEnumOrId") or ""
            if obj.lower() in wanted:
                name = r.get("ValidationName") or r.get("Name")
                notes.append(
                    f"Active {kind} {name} on {obj} may refuse or rewrite rows; failures are reported per record."
                )
    return notes


# -- the upload --------------------------------------------------------------------------------------------------


def _org_id(sf: Any) -> tuple[str, str]:
    """(org id, API user id) of the org behind `sf`."""
    me = userinfo(sf)
    return str(me["organization_id"]), str(me["user_id"])


def plan(bundle: Bundle, model: OrgModel, objects: Iterable[str]) -> list[dict[str, Any]]:
    counts = bundle.read_manifest().get("counts") or {}
    wanted = set(objects)
    return [
        {"object": n, "records": int(counts.get(n, 0))}
        for n in load_plan(model).order
        if not wanted or n in wanted
    ]


async def upload_bundle(
    opts: UploadOptions,
    stage: StageRunner = run_inline,
    progress: Progress | None = None,
    session: Any = None,
) -> UploadResult:
    """Upload `opts.bundle` to the org of `opts.org` (see the module text)."""
    started = time.perf_counter()
    root = Path(opts.bundle)
    require_complete(root)
    bundle = Bundle(root)
    model = load_model()
    unknown = [o for o in opts.objects if not model.has(o)]
    if unknown:
        raise UsageError(
            f"--objects: {', '.join(unknown)} is not an object of the org model ({', '.join(model.names)})."
        )
    sf = connect(opts.org, session=session)
    org_id, _ = _org_id(sf)
    folder = upload_dir(root, org_id)
    result = UploadResult(org_id, folder, dry_run=opts.dry_run)
    result.plan = plan(bundle, model, opts.objects)
    ids = IdMap(folder / "id_map.csv")
    if len(ids) and not opts.resume and not opts.dry_run:
        raise UsageError(
            f"{folder / 'id_map.csv'} shows an upload of this bundle to org {org_id} already: rerun with --resume to "
            "finish it, or `orgseed teardown` it first."
        )
    described: dict[str, set[str]] = {}
    result.findings = await stage("preflight", preflight, sf, bundle, model, opts, described)
    result.notes = automation(sf, [p["object"] for p in result.plan])
    if result.findings:
        if opts.dry_run:
            return result
        raise PreflightFailed(result.findings)
    if opts.dry_run:
        return result
    loader = Loader(
        sf,
        root,
        model,
        id_map=ids,
        wait=opts.wait,
        username_suffix=opts.username_suffix,
        inactive_agents=opts.inactive_agents,
        resume=opts.resume,
        progress=progress,
    )
    loader.described.update(described)
    facts = await stage("deploy", loader.prepare)
    before = folder / "org_before.json"
    if facts.standard_pricebook and not before.exists():
        book = sf.Pricebook2.get(facts.standard_pricebook)
        keep = {k: v for k, v in book.items() if k in ("Id", "Name", "Description", "IsActive")}
        atomic_write(before, json.dumps({"Pricebook2": keep}, indent=2).encode())
    loads: list[ObjectLoad] = []
    for item in result.plan:
        loads.append(await stage(f"load {item['object']}", loader.load_object, item["object"]))
    result.finish = await stage("finish", loader.finish)
    result.objects = await stage("reconcile", reconcile, sf, loads)
    await stage("rekey", rekey_tasks, root, folder, ids)
    if opts.verify and not opts.objects:
        from validators.tasks_soql import check_tasks_via_api

        check = await stage("verify", check_tasks_via_api, root, sf, loader.id_map_all())
        result.instances = check.instances
        result.disagreements = [d.message for d in check.disagreements]
    result.seconds = time.perf_counter() - started
    write_report(result, bundle)
    return result


def reconcile(sf: Any, loads: list[ObjectLoad]) -> list[dict[str, Any]]:
    out = []
    for load in loads:
        in_org = sf.query(f"SELECT COUNT() FROM {load.sobject} WHERE {EXT} != null")["totalSize"]
        row = load.as_dict()
        row["org"] = int(in_org)
        row["missing"] = max(0, load.bundle - int(in_org))
        out.append(row)
    return out


def rekey_tasks(root: Path, folder: Path, ids: IdMap) -> list[Path]:
    """The bundle's task files with org ids, under `uploads/<org id>/tasks/`."""
    mapping = {b: o for s in ids.objects() for b, o in ids.ids(s).items()}
    out_dir = folder / "tasks"
    written = []
    for name in ("tasks.json", "schema.json"):
        src = root / "tasks" / name
        if src.exists():
            data = rekey(json.loads(src.read_text(encoding="utf-8")), mapping)
            atomic_write(out_dir / name, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
            written.append(out_dir / name)
    gt = root / "tasks" / "ground_truth.jsonl"
    if gt.exists():
        lines = [
            json.dumps(rekey(json.loads(line), mapping), ensure_ascii=False)
            for line in gt.read_text(encoding="utf-8").splitlines()
            if line
        ]
        atomic_write(out_dir / "ground_truth.jsonl", ("\n".join(lines) + "\n").encode())
        written.append(out_dir / "ground_truth.jsonl")
    return written


def write_report(result: UploadResult, bundle: Bundle) -> Path:
    path = result.folder / "report.json"
    doc = {
        "org_id": result.org_id,
        "bundle_data_sha256": bundle.read_manifest().get("data_sha256"),
        "ok": result.ok,
        "preflight_notes": result.notes,
        "seconds": round(result.seconds, 2),
        "objects": result.objects,
        "finish": result.finish,
        "verify": {"instances": result.instances, "disagreements": result.disagreements},
    }
    atomic_write(path, (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
    return path


# -- teardown -------------------------------------------------------------------------------------------------------


@dataclass
class TeardownResult:
    org_id: str
    deleted: dict[str, int] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)
    deactivated: int = 0
    hard: bool = True  # hard delete was permitted; else the deleted records wait in the recycle bin


def teardown_bundle(
    bundle_path: str, org: OrgOptions, wait: float = 0.2, session: Any = None
) -> TeardownResult:
    """Delete what the upload created, children first: records by external id (orders back to Draft
    first), the records it made for org-provided objects, then its metadata (a destructive deploy: the
    permission set, custom fields, custom objects); the standard price book gets its values back."""
    root = Path(bundle_path)
    model = load_model()
    sf = connect(org, session=session)
    org_id, user_id = _org_id(sf)
    folder = upload_dir(root, org_id)
    ids_path = folder / "id_map.csv"
    if not ids_path.exists():
        raise UsageError(
            f"{ids_path} does not exist: orgseed uploaded nothing from this bundle to org {org_id}."
        )
    ids = IdMap(ids_path)
    bulk = BulkIngest(sf, wait=wait)
    out = TeardownResult(org_id)
    names = {s["name"] for s in sf.describe()["sobjects"]}
    hard = _has_permission(sf, user_id, "PermissionsBulkApiHardDelete")
    out.hard = hard
    order = [n for n in reversed(load_plan(model).order) if n in names]
    if "Order" in order:  # activated orders lock their products: back to Draft before anything is deleted
        active = [
            [r["Id"], "Draft"]
            for r in sf.query_all_iter(f"SELECT Id FROM Order WHERE Status = 'Activated' AND {EXT} != null")
        ]
        for chunk in chunks(["Id", "Status"], active) if active else []:
            outcome = bulk.run("Order", "update", csv_bytes(["Id", "Status"], chunk))
            if outcome.failures:
                out.failed.setdefault("Order", []).extend(r["sf__Error"] for r in outcome.failures)
    for name in order:
        fields = {f["name"] for f in getattr(sf, name).describe()["fields"]}
        if EXT not in fields:
            continue
        if name == "User":
            # users cannot be deleted, only deactivated (and their usernames stay taken)
            users = [
                [r["Id"], "false"]
                for r in sf.query_all_iter(f"SELECT Id FROM User WHERE IsActive = true AND {EXT} != null")
            ]
            for chunk in chunks(["Id", "IsActive"], users) if users else []:
                outcome = bulk.run("User", "update", csv_bytes(["Id", "IsActive"], chunk))
                out.deactivated += outcome.processed - outcome.failed
            continue
        std = (
            sf.query("SELECT Id FROM Pricebook2 WHERE IsStandard = true")["records"]
            if name == "Pricebook2"
            else []
        )
        keep = {r["Id"] for r in std}
        rows = [
            [r["Id"]]
            for r in sf.query_all_iter(f"SELECT Id FROM {name} WHERE {EXT} != null")
            if r["Id"] not in keep
        ]
        out.deleted[name] = 0
        for chunk in chunks(["Id"], rows) if rows else []:
            outcome = bulk.run(name, "hardDelete" if hard else "delete", csv_bytes(["Id"], chunk))
            out.deleted[name] += outcome.processed - outcome.failed
            if outcome.failures:
                out.failed.setdefault(name, []).extend(r["sf__Error"] for r in outcome.failures)
    if out.failed:
        # the external ids are how a rerun finds what is left: keep them (and the metadata) until all is gone
        atomic_write(folder / "teardown.json", _teardown_doc(out))
        return out
    for provided in ("LiveChatVisitor", "ProductCatalog"):
        made = list(ids.ids(provided).values())
        if made and provided in names:
            res = sf.restful(
                "composite/sobjects",
                method="DELETE",
                params={"ids": ",".join(made[:200]), "allOrNone": "false"},
            )
            out.deleted[provided] = sum(1 for r in res if r.get("success"))
    before = folder / "org_before.json"
    if before.exists():
        book = json.loads(before.read_text())["Pricebook2"]
        sf.Pricebook2.update(book["Id"], {k: v for k, v in book.items() if k != "Id"})
    for a in sf.query(
        f"SELECT Id FROM PermissionSetAssignment WHERE AssigneeId = '{user_id}' AND PermissionSet.Name = '{PERMISSION_SET}'"
    )["records"]:
        sf.PermissionSetAssignment.delete(a["Id"])
    _destroy_metadata(sf, model, names)
    ids_path.replace(folder / "id_map.torn-down.csv")
    atomic_write(folder / "teardown.json", _teardown_doc(out))
    return out


def _teardown_doc(out: TeardownResult) -> bytes:
    doc = {
        "org_id": out.org_id,
        "deleted": out.deleted,
        "hard_delete": out.hard,
        "users_deactivated": out.deactivated,
        "failed": out.failed,
    }
    return (json.dumps(doc, indent=2) + "\n").encode()


def _has_permission(sf: Any, user_id: str, column: str) -> bool:
    rows = sf.query(
        f"SELECT PermissionSet.{column} FROM PermissionSetAssignment WHERE AssigneeId = '{user_id}'"
    )["records"]
    return any((r.get("PermissionSet") or {}).get(column) for r in rows)


def _destroy_metadata(sf: Any, model: OrgModel, names: set[str]) -> None:
    """A destructive deploy of what the upload deployed: the permission set, the custom fields, the
    custom objects."""
    fields = [f"{o.name}.{EXT}" for o in model if o.name in names and not o.custom]
    fields += [
        f"{o.name}.{f.name}" for o in model if not o.custom and o.name in names for f in o.fields if f.custom
    ]
    objects = [o.name for o in model if o.custom]
    destructive = (
        f'<?xml version="1.0" encoding="UTF-8"?><Package xmlns="{MD_NS}">'
        + "<types>"
        + "".join(f"<members>{m}</members>" for m in sorted(fields))
        + "<name>CustomField</name></types>"
        + "<types>"
        + "".join(f"<members>{m}</members>" for m in sorted(objects))
        + "<name>CustomObject</name></types>"
        + f"<types><members>{PERMISSION_SET}</members><name>PermissionSet</name></types>"
        + "<version>59.0</version></Package>"
    )
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            "package.xml",
            f'<?xml version="1.0" encoding="UTF-8"?><Package xmlns="{MD_NS}"><version>59.0</version></Package>',
        )
        zf.writestr("destructiveChanges.xml", destructive)
    started = sf.deploy(io.BytesIO(buf.getvalue()), sandbox=False)
    status = sf.checkDeployStatus(started["asyncId"])
    if status["state"] != "Succeeded":
        raise LoadError(f"The destructive deploy failed: {status['deployment_detail']['errors']}")


__all__ = [
    "PreflightFailed",
    "UploadOptions",
    "UploadResult",
    "preflight",
    "teardown_bundle",
    "upload_bundle",
]
