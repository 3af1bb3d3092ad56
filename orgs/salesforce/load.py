"""Load a bundle into a Salesforce org (a real one, or the local empty org) through its public APIs.

The steps, each idempotent so a rerun after any interruption finishes the job without duplicates:
1. `prepare`: one Metadata API deploy (`metadata.py`) of the bundle's custom objects and fields, an external
   id `Orgseed_Id__c` on every loaded object, a permission set granting all of them (and "Set Audit Fields upon
   Record Creation"), the audit-field preference and the features the bundle needs (Knowledge, Chat); then the
   permission set is assigned to the API user.
2. `load_object`, per object in the dependency order of the org model (`schemas.graph.load_plan`): the
   bundle's rows as CSV for a Bulk API 2.0 `insert` (audit dates are writable on insert only, seeding.md B1),
   parents referenced by their external id (`Account.Orgseed_Id__c`), minus the rows already in the org (found
   by external id), children grouped by parent (B10). Results are matched by external id, never by position.
   Standard price entries go before the others; the bundle's standard price book is the org's own.
   Objects the org provides are mapped, never invented: profiles (`Standard User`), the Person Account record
   type, catalogs and chat visitors (created, one per bundle id).
3. `finish`: orders inserted as Draft are activated once their products are in; Knowledge drafts that are
   Online in the bundle are published through the publish action.

Every row that fails is kept with its error (`ObjectLoad.failed`); nothing is dropped silently: a column the
org cannot take is listed in `ObjectLoad.dropped` with the reason.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgs.bundle import Bundle
from orgs.salesforce.metadata import CustomObjectDef, Package, deploy_package, external_id_field
from schemas.graph import load_plan
from schemas.model import ObjectSpec, OrgModel

EXT = "Orgseed_Id__c"
PERMISSION_SET = "Orgseed_Loader"
DRAFT = "Draft"
ACTIVATED = "Activated"
ONLINE = "Online"
Progress = Callable[[str, int, int], None]


class LoadError(Exception):
    """The load cannot go on (a deploy failed, a job failed as a whole)."""


@dataclass
class ObjectLoad:
    sobject: str
    bundle: int = 0
    existing: int = 0
    loaded: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)  # {bundle_id, error}
    dropped: dict[str, str] = field(default_factory=dict)  # column -> why
    jobs: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "object": self.sobject,
            "bundle": self.bundle,
            "existing": self.existing,
            "loaded": self.loaded,
            "failed": len(self.failed),
            "failures": self.failed,
            "dropped_columns": self.dropped,
            "jobs": self.jobs,
        }


@dataclass
class OrgFacts:
    org_id: str
    user_id: str
    objects: set[str]
    standard_pricebook: str | None
    person_record_type: str | None
    standard_profile: str | None


def org_facts(sf: Any) -> OrgFacts:
    me = _userinfo(sf)
    names = {s["name"] for s in sf.describe()["sobjects"]}

    def one(soql: str) -> str | None:
        rows = sf.query(soql)["records"]
        return rows[0]["Id"] if rows else None

    return OrgFacts(
        org_id=me["organization_id"],
        user_id=me["user_id"],
        objects=names,
        standard_pricebook=one("SELECT Id FROM Pricebook2 WHERE IsStandard = true"),
        person_record_type=one(
            "SELECT Id FROM RecordType WHERE SobjectType = 'Account' AND IsPersonType = true"
        )
        if "RecordType" in names
        else None,
        standard_profile=one("SELECT Id FROM Profile WHERE Name = 'Standard User'"),
    )


def _userinfo(sf: Any) -> dict[str, Any]:
    """The API user and org (`/services/oauth2/userinfo`, as OpenID Connect gives them)."""
    url = f"https://{sf.sf_instance}/services/oauth2/userinfo"
    r = sf.session.get(url, headers=sf.headers)
    if r.status_code != 200:
        raise LoadError(f"{url} answered {r.status_code}: {r.text[:200]}")
    data: dict[str, Any] = r.json()
    return data


def metadata_for(
    model: OrgModel, objects: Iterable[str], needs: set[str], audit_fields: bool = True
) -> Package:
    """The deploy a bundle needs: custom objects and fields of the model, an external id on every loaded
    object, a permission set granting them and (`audit_fields`) the audit-field permission, and the settings."""
    pkg = Package(
        permission_set=PERMISSION_SET,
        permission_label="orgseed loader",
        grant_audit_fields=audit_fields,
        grant_hard_delete=True,
    )
    for name in objects:
        spec = model.get(name)
        if spec.custom:
            # an object without a name field of its own gets an auto-number Name, as CRMArena's CaseHistory__c
            auto = spec.name_field is None or not spec.has_field("Name")
            pkg.objects.append(CustomObjectDef(spec.name, spec.label, spec.label_plural, auto_number=auto))
        fields = [f for f in spec.fields if f.custom and not f.computed and f.name != EXT]
        pkg.fields[spec.name] = [*fields, external_id_field(EXT)]
    pkg.settings["Security"] = {"enableAuditFieldsInactiveOwner": audit_fields}
    if "knowledge" in needs:
        pkg.settings["Knowledge"] = {"enableKnowledge": True}
    if "chat" in needs:
        pkg.settings["LiveAgent"] = {"enableLiveAgent": True}
    return pkg


class Loader:
    """One load of `bundle` into the org behind `sf` (simple-salesforce)."""

    def __init__(
        self,
        sf: Any,
        bundle: Path | str,
        model: OrgModel,
        *,
        work_dir: Path,
        wait: float = 1.0,
        username_suffix: str = "",
        audit_fields: bool = True,
        progress: Progress | None = None,
    ) -> None:
        self.audit_fields = audit_fields
        self.sf = sf
        self.bundle = Bundle(bundle)
        self.model = model
        self.work = work_dir
        self.wait = wait
        self.username_suffix = username_suffix
        self.progress = progress or (lambda name, done, total: None)
        self.order = [n for n in load_plan(model).order]
        self.ids: dict[str, dict[str, str]] = {}  # object -> bundle id -> org id
        self.facts: OrgFacts | None = None

    # -- 1. metadata ---------------------------------------------------------------------------------------------

    def prepare(self) -> OrgFacts:
        needs = set()
        if "Knowledge__kav" in self.model.objects:
            needs.add("knowledge")
        if "LiveChatTranscript" in self.model.objects:
            needs.add("chat")
        pkg = metadata_for(self.model, self.order, needs, self.audit_fields)
        started = self.sf.deploy(io.BytesIO(deploy_package(pkg)), sandbox=False)
        status = self.sf.checkDeployStatus(started["asyncId"])
        if status["state"] != "Succeeded":
            errors = status["deployment_detail"]["errors"]
            raise LoadError(f"The metadata deploy failed: {errors}")
        facts = org_facts(self.sf)
        assigned = (
            self.sf.query(
                f"SELECT Id FROM PermissionSetAssignment WHERE AssigneeId = '{facts.user_id}' "
                f"AND PermissionSet.Name = '{PERMISSION_SET}'"
            )["records"]
            if "PermissionSetAssignment" in facts.objects
            else []
        )
        if not assigned:
            ps = self.sf.query(f"SELECT Id FROM PermissionSet WHERE Name = '{PERMISSION_SET}'")["records"][0][
                "Id"
            ]
            self.sf.PermissionSetAssignment.create({"AssigneeId": facts.user_id, "PermissionSetId": ps})
        self.facts = org_facts(self.sf)
        return self.facts

    # -- 2. records ------------------------------------------------------------------------------------------------

    def existing(self, sobject: str) -> dict[str, str]:
        """bundle id -> org id of the rows already in the org (by external id)."""
        out: dict[str, str] = {}
        for r in self.sf.query_all_iter(f"SELECT Id, {EXT} FROM {sobject} WHERE {EXT} != null"):
            out[r[EXT]] = r["Id"]
        return out

    def rows(self, spec: ObjectSpec) -> tuple[list[str], list[list[str]], dict[str, str]]:
        """(header, rows, dropped columns) of `spec`'s bundle data as the org takes it."""
        from orgs.local.computed import stored_spec

        raw = self.bundle.read_raw(spec.name, stored_spec(spec))
        facts = self.facts
        assert facts is not None
        columns: list[tuple[str, Callable[[Any], str]]] = []
        dropped: dict[str, str] = {}
        described = {f["name"]: f for f in getattr(self.sf, spec.name).describe()["fields"]}
        for f in stored_spec(spec).fields:
            name = f.name
            if name == "Id":
                columns.append((EXT, _text))
                continue
            if f.is_lookup:
                target = f.reference_to[0]
                if target in self.model.objects:
                    rel = f.relationship_name or name.removesuffix("Id")
                    columns.append((f"{rel}.{EXT}", _col(name)))
                    continue
                mapped = self._provided(target)
                if mapped is None:
                    dropped[name] = f"the org has no {target} to point at"
                    continue
                columns.append((name, mapped(name)))
                continue
            if (spec.name, name) in (("Knowledge__kav", "PublishStatus"), ("Pricebook2", "IsStandard")):
                continue  # set through the publish action / the org's own standard price book
            if name not in described:
                dropped[name] = "not in the org's describe"
                continue
            if spec.name == "Order" and name == "Status":
                columns.append((name, lambda r: DRAFT))
                continue
            if spec.name == "User" and name == "Username" and self.username_suffix:
                columns.append((name, _suffixed(self.username_suffix)))
                continue
            columns.append((name, _col(name)))
        records = raw.to_dict("records")
        if spec.name == "Pricebook2":
            records = [r for r in records if str(r.get("IsStandard", "")).lower() != "true"]
        if spec.name == "PricebookEntry":
            std = self._bundle_standard_book()
            records.sort(key=lambda r: (r["Pricebook2Id"] != std,))
        parent = _group_key(spec)
        if parent:
            records.sort(key=lambda r: str(r.get(parent) or ""))
        header = [c for c, _ in columns]
        out = [[fn(r) for _, fn in columns] for r in records]
        return header, out, dropped

    def _bundle_standard_book(self) -> str | None:
        books = self.bundle.read_raw("Pricebook2")
        std = books[books["IsStandard"].astype(str).str.lower() == "true"]
        return str(std["Id"].iat[0]) if len(std) else None

    def _provided(self, target: str) -> Callable[[str], Callable[[Any], str]] | None:
        facts = self.facts
        assert facts is not None
        if target == "Profile" and facts.standard_profile:
            return lambda name: lambda r: facts.standard_profile or ""
        if target == "RecordType" and facts.person_record_type:
            return lambda name: lambda r: facts.person_record_type or "" if r.get(name) else ""
        if target in ("ProductCatalog", "LiveChatVisitor") and target in facts.objects:
            return lambda name: lambda r: self._made(target, r.get(name))
        return None

    def _made(self, target: str, bundle_id: Any) -> str:
        """The org record standing for a bundle id of an org-provided object (created on first use)."""
        if not bundle_id:
            return ""
        known = self.ids.setdefault(target, {})
        key = str(bundle_id)
        if key not in known:
            body = {"Name": f"orgseed {key}"} if target == "ProductCatalog" else {}
            known[key] = getattr(self.sf, target).create(body)["id"]
        return known[key]

    def load_object(self, sobject: str) -> ObjectLoad:
        spec = self.model.get(sobject)
        result = ObjectLoad(sobject)
        if spec.name == "Pricebook2":
            self._key_standard_book()
        header, rows, dropped = self.rows(spec)
        result.dropped = dropped
        result.bundle = len(rows) + (1 if spec.name == "Pricebook2" and self._bundle_standard_book() else 0)
        have = self.existing(spec.name)
        ext_col = header.index(EXT)
        todo = [r for r in rows if r[ext_col] not in have]
        result.existing = (
            len(rows) - len(todo) + (1 if spec.name == "Pricebook2" and self._bundle_standard_book() else 0)
        )
        self.ids.setdefault(sobject, {}).update(have)
        self.progress(sobject, 0, len(todo))
        if todo:
            path = self.work / f"{sobject}.csv"
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", newline="", encoding="utf-8") as fh:
                w = csv.writer(fh, lineterminator="\n")
                w.writerow(header)
                w.writerows(todo)
            jobs = getattr(self.sf.bulk2, sobject).insert(str(path), wait=self.wait)
            for job in jobs:
                result.jobs.append(job["job_id"])
                ok = getattr(self.sf.bulk2, sobject).get_successful_records(job["job_id"])
                for r in csv.DictReader(io.StringIO(ok)):
                    self.ids[sobject][r[EXT]] = r["sf__Id"]
                    result.loaded += 1
                bad = getattr(self.sf.bulk2, sobject).get_failed_records(job["job_id"])
                for r in csv.DictReader(io.StringIO(bad)):
                    result.failed.append({"bundle_id": r.get(EXT, ""), "error": r["sf__Error"]})
        self.progress(sobject, result.loaded, len(todo))
        return result

    def _key_standard_book(self) -> None:
        """The bundle's standard price book is the org's: give the org's the bundle id as external id."""
        std = self._bundle_standard_book()
        facts = self.facts
        if std is None or facts is None or facts.standard_pricebook is None:
            return
        books = self.bundle.read_raw("Pricebook2")
        row = books[books["Id"] == std].iloc[0].to_dict()
        values: dict[str, Any] = {EXT: std}
        for k, v in row.items():
            if k not in ("Id", "IsStandard") and not str(k).startswith("_"):
                values[k] = None if v is None else str(v)
        # the org's standard price book takes the bundle's name, description and state (it is never inserted)
        self.sf.Pricebook2.update(facts.standard_pricebook, values)

    # -- 3. finishing --------------------------------------------------------------------------------------------

    def finish(self) -> dict[str, int]:
        done = {"orders_activated": 0, "articles_published": 0}
        if "Order" in self.model.objects:
            orders = self.bundle.read_raw("Order")
            want = [str(i) for i, s in zip(orders["Id"], orders["Status"], strict=True) if s == ACTIVATED]
            current = {
                r[EXT]: r
                for r in self.sf.query_all_iter(f"SELECT Id, Status, {EXT} FROM Order WHERE {EXT} != null")
            }
            updates = [
                {"Id": current[b]["Id"], "Status": ACTIVATED}
                for b in want
                if b in current and current[b]["Status"] != ACTIVATED
            ]
            if updates:
                path = self.work / "Order-activate.csv"
                _write_csv(path, ["Id", "Status"], [[u["Id"], u["Status"]] for u in updates])
                for job in self.sf.bulk2.Order.update(str(path), wait=self.wait):
                    done["orders_activated"] += job["numberRecordsProcessed"] - job["numberRecordsFailed"]
        if "Knowledge__kav" in self.model.objects:
            arts = self.bundle.read_raw("Knowledge__kav")
            online = {str(i) for i, s in zip(arts["Id"], arts["PublishStatus"], strict=True) if s == ONLINE}
            drafts = [
                r["Id"]
                for r in self.sf.query_all_iter(
                    f"SELECT Id, {EXT}, PublishStatus FROM Knowledge__kav WHERE {EXT} != null"
                )
                if r[EXT] in online and r["PublishStatus"] == DRAFT
            ]
            for k in range(0, len(drafts), 200):
                chunk = drafts[k : k + 200]
                out = self.sf.restful(
                    "actions/standard/publishKnowledgeArticles",
                    method="POST",
                    json={"inputs": [{"articleVersionIdList": chunk, "pubAction": "PUBLISH_ARTICLE"}]},
                )
                if out and out[0].get("isSuccess"):
                    done["articles_published"] += len(chunk)
        return done

    def id_map(self) -> dict[str, str]:
        """Every bundle id -> org id known so far (all objects)."""
        return {b: o for per in self.ids.values() for b, o in per.items()}

    def run(self, objects: Iterable[str] | None = None) -> list[ObjectLoad]:
        self.prepare()
        wanted = set(objects) if objects else None
        out = [self.load_object(n) for n in self.order if wanted is None or n in wanted]
        self.finish()
        return out


def _text(r: Any) -> str:
    return str(r["Id"])


def _col(name: str) -> Callable[[Any], str]:
    def value(r: Any) -> str:
        v = r.get(name)
        return "" if v is None else str(v)

    return value


def _suffixed(suffix: str) -> Callable[[Any], str]:
    """Usernames are unique across every Salesforce org (B6): a load into a real org suffixes them."""

    def value(r: Any) -> str:
        return f"{r['Username']}{suffix}"

    return value


def _group_key(spec: ObjectSpec) -> str | None:
    """The parent to group a child's rows by, against row locks (B10): its first required lookup."""
    for f in spec.lookups:
        if not f.nillable and "User" not in f.reference_to:
            return f.name
    return None


def _write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
