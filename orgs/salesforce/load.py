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
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orgs.bundle import Bundle, csv_text
from orgs.local.computed import stored_spec
from orgs.salesforce.metadata import CustomObjectDef, Package, deploy_package, external_id_field
from orgs.salesforce.state import IdMap
from schemas.graph import load_plan
from schemas.model import ObjectSpec, OrgModel

EXT = "Orgseed_Id__c"
PERMISSION_SET = "Orgseed_Loader"
DRAFT = "Draft"
ACTIVATED = "Activated"
ONLINE = "Online"
# progress(object, records done, records to do): called with total -1 when an object starts, after every job
# it runs, and once more when it is done
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
    retried: int = 0  # rows sent again after a transient failure

    def as_dict(self) -> dict[str, Any]:
        return {
            "object": self.sobject,
            "bundle": self.bundle,
            "existing": self.existing,
            "loaded": self.loaded,
            "failed": len(self.failed),
            "failures": self.failed,
            "dropped_columns": self.dropped,
            "retried": self.retried,
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
    me = userinfo(sf)
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


def userinfo(sf: Any) -> dict[str, Any]:
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


MAX_UPLOAD_BYTES = 100_000_000  # one Bulk API 2.0 upload (simple-salesforce's cap; Salesforce takes 150 MB)
TERMINAL = ("JobComplete", "Failed", "Aborted")
ROWS_PER_SECOND = 4000.0
# failures that pass: a row lock held by another batch, a busy org; such rows are sent again in a job of
# their own, as long as each round loads some of them
TRANSIENT = frozenset({"UNABLE_TO_LOCK_ROW", "SERVER_UNAVAILABLE"})
MAX_ATTEMPTS = 100


@dataclass
class JobOutcome:
    job_id: str
    state: str
    processed: int
    failed: int
    successes: list[dict[str, str]]
    failures: list[dict[str, str]]
    error: str | None = None


class BulkIngest:
    """Bulk API 2.0 ingest driven with as few calls as the protocol allows: create, upload, close, poll
    (first after `wait` seconds), successful results, and failed results only when rows failed."""

    def __init__(self, sf: Any, wait: float = 0.2, timeout: float = 3600.0) -> None:
        self.sf = sf
        self.wait = wait
        self.timeout = timeout
        self.base = f"https://{sf.sf_instance}/services/data/v{sf.sf_version}/jobs/ingest"

    def _call(self, method: str, url: str, **kw: Any) -> Any:
        headers = {**self.sf.headers, **kw.pop("headers", {})}
        r = self.sf.session.request(method, url, headers=headers, **kw)
        if r.status_code >= 300:
            raise LoadError(f"{method} {url} answered {r.status_code}: {r.text[:500]}")
        return r

    def run(self, sobject: str, operation: str, data: bytes, external_id: str | None = None) -> JobOutcome:
        body: dict[str, Any] = {
            "object": sobject,
            "operation": operation,
            "contentType": "CSV",
            "lineEnding": "LF",
        }
        if external_id:
            body["externalIdFieldName"] = external_id
        job = self._call("POST", self.base, json=body).json()
        job_id = job["id"]
        self._call("PUT", f"{self.base}/{job_id}/batches", data=data, headers={"Content-Type": "text/csv"})
        self._call("PATCH", f"{self.base}/{job_id}", json={"state": "UploadComplete"})
        # the first look after about the time the org needs for the rows (a few thousand a second), so a job
        # usually takes one poll
        info = self.until_done(job_id, first=max(self.wait, data.count(b"\n") / ROWS_PER_SECOND))
        successes = self._results(job_id, "successfulResults")
        failures = self._results(job_id, "failedResults") if int(info["numberRecordsFailed"]) else []
        return JobOutcome(
            job_id,
            info["state"],
            int(info["numberRecordsProcessed"]),
            int(info["numberRecordsFailed"]),
            successes,
            failures,
            info.get("errorMessage"),
        )

    def until_done(self, job_id: str, first: float | None = None) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout
        delay = self.wait if first is None else first
        while True:
            time.sleep(delay)
            info: dict[str, Any] = self._call("GET", f"{self.base}/{job_id}").json()
            if info["state"] in TERMINAL:
                return info
            if time.monotonic() > deadline:
                raise LoadError(
                    f"Bulk job {job_id} did not finish in {self.timeout:.0f} s (state {info['state']})."
                )
            delay = min(delay * 1.5, 5.0)

    def _results(self, job_id: str, kind: str) -> list[dict[str, str]]:
        text = self._call("GET", f"{self.base}/{job_id}/{kind}").text
        return list(csv.DictReader(io.StringIO(text, newline="")))

    def settle(self, sobject: str) -> list[str]:
        """Jobs on `sobject` left by an interrupted run: Open ones aborted (their data never arrived whole),
        running ones waited for, so what they wrote is in the org before it is looked at. Their ids."""
        listed = self._call("GET", self.base).json()
        touched = []
        for job in listed.get("records", []):
            if job.get("object") != sobject or job.get("state") in TERMINAL:
                continue
            if job["state"] == "Open":
                self._call("PATCH", f"{self.base}/{job['id']}", json={"state": "Aborted"})
            else:
                self.until_done(job["id"])
            touched.append(job["id"])
        return touched


def csv_bytes(header: list[str], rows: list[list[str]]) -> bytes:
    """The upload job's CSV: `header` (none when empty), then `rows`, written as a bundle's CSV is (a carriage
    return quoted, which Python's csv writer leaves bare)."""
    return csv_text([header, *rows] if header else rows).encode("utf-8")


def chunks(header: list[str], rows: list[list[str]], limit: int = MAX_UPLOAD_BYTES) -> list[list[list[str]]]:
    """Rows split so that each job's CSV stays within one upload."""
    head = len(csv_bytes(header, []))
    out: list[list[list[str]]] = [[]]
    size = head
    for r in rows:
        n = (
            len(csv_bytes([], [r]))
            if any("\n" in c or "\r" in c or "," in c or '"' in c for c in r) or r == [""]
            else sum(len(c.encode()) for c in r) + len(r)
        )
        if out[-1] and size + n > limit:
            out.append([])
            size = head
        out[-1].append(r)
        size += n
    return out


class Loader:
    """One load of `bundle` into the org behind `sf` (simple-salesforce)."""

    def __init__(
        self,
        sf: Any,
        bundle: Path | str,
        model: OrgModel,
        *,
        id_map: IdMap | None = None,
        wait: float = 0.2,
        username_suffix: str = "",
        audit_fields: bool = True,
        inactive_agents: bool = False,
        resume: bool = True,
        progress: Progress | None = None,
    ) -> None:
        self.sf = sf
        self.bundle = Bundle(bundle)
        self.model = model
        self.id_map = id_map
        self.bulk = BulkIngest(sf, wait=wait)
        self.username_suffix = username_suffix
        self.audit_fields = audit_fields
        self.inactive_agents = inactive_agents
        self.resume = resume
        self.progress = progress or (lambda name, done, total: None)
        self.order = list(load_plan(model).order)
        self.ids: dict[str, dict[str, str]] = {}  # object -> bundle id -> org id
        self.facts: OrgFacts | None = None
        self.described: dict[str, set[str]] = {}  # object -> its fields in the org's describe

    # -- 1. metadata ---------------------------------------------------------------------------------------------

    def package(self) -> Package:
        needs = set()
        if "Knowledge__kav" in self.model.objects:
            needs.add("knowledge")
        if "LiveChatTranscript" in self.model.objects:
            needs.add("chat")
        return metadata_for(self.model, self.order, needs, self.audit_fields)

    def prepare(self) -> OrgFacts:
        started = self.sf.deploy(io.BytesIO(deploy_package(self.package())), sandbox=False)
        status = self.sf.checkDeployStatus(started["asyncId"])
        if status["state"] != "Succeeded":
            errors = status["deployment_detail"]["errors"]
            raise LoadError(f"The metadata deploy failed: {errors}")
        facts = org_facts(self.sf)
        assigned = self.sf.query(
            f"SELECT Id FROM PermissionSetAssignment WHERE AssigneeId = '{facts.user_id}' "
            f"AND PermissionSet.Name = '{PERMISSION_SET}'"
        )["records"]
        if not assigned:
            ps = self.sf.query(f"SELECT Id FROM PermissionSet WHERE Name = '{PERMISSION_SET}'")["records"]
            if not ps:
                raise LoadError(f"The deploy succeeded but the org has no permission set {PERMISSION_SET}.")
            self.sf.PermissionSetAssignment.create(
                {"AssigneeId": facts.user_id, "PermissionSetId": ps[0]["Id"]}
            )
        self.facts = facts
        return facts

    # -- 2. records ------------------------------------------------------------------------------------------------

    def existing(self, sobject: str) -> dict[str, str]:
        """bundle id -> org id of the rows already in the org (by external id)."""
        out: dict[str, str] = {}
        for r in self.sf.query_all_iter(f"SELECT Id, {EXT} FROM {sobject} WHERE {EXT} != null"):
            out[r[EXT]] = r["Id"]
        return out

    def fields_of(self, spec: ObjectSpec) -> set[str]:
        """The field names the org's describe has for `spec` (a custom object: what the deploy made). Describes
        the preflight made are reused (`self.described`), so a load stage does not describe again."""
        if spec.custom:
            return {f.name for f in spec.fields} | {EXT}
        if spec.name not in self.described:
            self.described[spec.name] = {f["name"] for f in getattr(self.sf, spec.name).describe()["fields"]}
        return self.described[spec.name]

    def _visitors(self, keys: list[str]) -> None:
        """Chat visitors for `keys` not made yet, 200 per sObject Collections call, recorded as they come."""
        known = self.ids.setdefault("LiveChatVisitor", {})
        if self.id_map is not None:
            known.update(self.id_map.ids("LiveChatVisitor"))
        todo = [k for k in dict.fromkeys(keys) if k not in known]
        for k in range(0, len(todo), 200):
            chunk = todo[k : k + 200]
            res = self.sf.restful(
                "composite/sobjects",
                method="POST",
                json={
                    "allOrNone": True,
                    "records": [{"attributes": {"type": "LiveChatVisitor"}} for _ in chunk],
                },
            )
            pairs = [(key, r["id"]) for key, r in zip(chunk, res, strict=True) if r.get("success")]
            if len(pairs) != len(chunk):
                raise LoadError(f"LiveChatVisitor: {res[0].get('errors')}")
            known.update(pairs)
            if self.id_map is not None:
                self.id_map.record("LiveChatVisitor", pairs)
        self.progress("LiveChatVisitor", len(known), len(known))

    def rows(self, spec: ObjectSpec) -> tuple[list[str], list[list[str]], dict[str, str]]:
        """(header, rows, dropped columns) of `spec`'s bundle data as the org takes it."""
        spec = stored_spec(spec)
        raw = self.bundle.read_raw(spec.name, spec)
        facts = self.facts
        assert facts is not None
        columns: list[tuple[str, Callable[[Any], str]]] = []
        dropped: dict[str, str] = {}
        described = self.fields_of(spec)
        for f in spec.fields:
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
            if name not in described and not f.custom:  # custom fields are the deploy's, so they are there
                dropped[name] = "not in the org's describe"
                continue
            if spec.name == "Order" and name == "Status":
                columns.append((name, _const(DRAFT)))  # activated once its products are in (finish)
                continue
            if spec.name == "User" and name == "Username" and self.username_suffix:
                columns.append((name, _suffixed(self.username_suffix)))
                continue
            if spec.name == "User" and name == "IsActive" and self.inactive_agents:
                columns.append((name, _const("false")))
                dropped[name] = "agents are loaded inactive (--inactive-agents): they hold no licence"
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
            profile = facts.standard_profile
            return lambda name: _const(profile)
        if target == "RecordType" and facts.person_record_type:
            record_type = facts.person_record_type
            return lambda name: lambda r: record_type if r.get(name) else ""
        if target == "LiveChatVisitor" and target in facts.objects:
            # every transcript needs a visitor (REQUIRED_FIELD_MISSING otherwise, seeding.md B4); a bundle
            # without visitor ids gets one per transcript
            return lambda name: lambda r: self._made(target, r.get(name) or f"for-{r['Id']}")
        if target == "ProductCatalog" and target in facts.objects:
            return lambda name: lambda r: self._made(target, r.get(name))
        return None

    def _made(self, target: str, bundle_id: Any) -> str:
        """The org record standing for a bundle id of an org-provided object (made on first use; found
        again by its name on a rerun)."""
        if not bundle_id:
            return ""
        known = self.ids.setdefault(target, {})
        key = str(bundle_id)
        if key not in known:
            name = f"orgseed {key}"
            again = (
                self.sf.query(f"SELECT Id FROM ProductCatalog WHERE Name = '{name}'")["records"]
                if target == "ProductCatalog" and self.resume
                else []
            )
            if self.id_map is not None and (found := self.id_map.get(target, key)):
                known[key] = found
            elif again:  # made by an interrupted run that did not get to record it
                known[key] = again[0]["Id"]
                if self.id_map is not None:
                    self.id_map.record(target, [(key, known[key])])
            else:
                body = {"Name": name} if target == "ProductCatalog" else {}
                known[key] = getattr(self.sf, target).create(body)["id"]
                if self.id_map is not None:
                    self.id_map.record(target, [(key, known[key])])
        return known[key]

    def load_object(self, sobject: str) -> ObjectLoad:
        spec = self.model.get(sobject)
        result = ObjectLoad(sobject)
        if spec.has_field("LiveChatVisitorId") and self.facts and "LiveChatVisitor" in self.facts.objects:
            # every chat needs a visitor (another object): made first, reported as their own object
            self.progress("LiveChatVisitor", 0, -1)
            raw = self.bundle.read_raw(spec.name, stored_spec(spec))
            self._visitors(
                [str(v or f"for-{i}") for i, v in zip(raw["Id"], raw["LiveChatVisitorId"], strict=True)]
            )
        self.progress(sobject, 0, -1)
        standard = self._bundle_standard_book() if spec.name == "Pricebook2" else None
        if standard is not None:
            self._key_standard_book(standard)
        header, rows, dropped = self.rows(spec)
        result.dropped = dropped
        result.bundle = len(rows) + (1 if standard else 0)
        have: dict[str, str] = {}
        if self.resume:
            self.bulk.settle(sobject)
            have = self.existing(sobject)
        elif standard and self.facts and self.facts.standard_pricebook:
            have = {standard: self.facts.standard_pricebook}
        ext_col = header.index(EXT)
        todo = [r for r in rows if r[ext_col] not in have]
        result.existing = len(rows) - len(todo) + (1 if standard else 0)
        self.ids.setdefault(sobject, {}).update(have)
        if self.id_map is not None and have:
            self.id_map.record(sobject, have.items())
        pending = todo
        attempt = 0
        while pending:
            attempt += 1
            retry: list[list[str]] = []
            before = result.loaded
            for chunk in chunks(header, pending):
                outcome = self.bulk.run(sobject, "insert", csv_bytes(header, chunk))
                result.jobs.append(outcome.job_id)
                if outcome.state != "JobComplete":
                    raise LoadError(
                        f"{sobject}: Bulk job {outcome.job_id} ended {outcome.state}: {outcome.error}"
                    )
                pairs = [(r[EXT], r["sf__Id"]) for r in outcome.successes]
                self.ids[sobject].update(pairs)
                if self.id_map is not None:
                    self.id_map.record(sobject, pairs)
                result.loaded += len(pairs)
                by_ext = {r[ext_col]: r for r in chunk}
                for r in outcome.failures:
                    if r["sf__Error"].split(":", 1)[0] in TRANSIENT and r.get(EXT) in by_ext:
                        retry.append(by_ext[r[EXT]])
                    else:
                        result.failed.append({"bundle_id": r.get(EXT, ""), "error": r["sf__Error"]})
                self.progress(sobject, result.loaded, len(todo))
            stuck = result.loaded == before or attempt >= MAX_ATTEMPTS
            if retry and stuck:  # no progress: the failure is not passing; report the rows
                result.failed += [
                    {"bundle_id": r[ext_col], "error": "UNABLE_TO_LOCK_ROW: retried without progress"}
                    for r in retry
                ]
                break
            # rows a parallel batch held a lock for go again, in a job of their own, while each round loads some
            result.retried += len(retry)
            pending = retry
        self.progress(sobject, result.loaded, len(todo))  # done
        return result

    def _key_standard_book(self, std: str) -> None:
        """The bundle's standard price book is the org's own: it takes the bundle id as external id and the
        bundle's name, description and state (it is never inserted)."""
        facts = self.facts
        if facts is None or facts.standard_pricebook is None:
            return
        books = self.bundle.read_raw("Pricebook2")
        row = books[books["Id"] == std].iloc[0].to_dict()
        values: dict[str, Any] = {EXT: std}
        for k, v in row.items():
            if k not in ("Id", "IsStandard") and not str(k).startswith("_"):
                values[k] = None if v is None else str(v)
        self.sf.Pricebook2.update(facts.standard_pricebook, values)

    # -- 3. finishing --------------------------------------------------------------------------------------------

    def finish(self) -> dict[str, int]:
        done = {"orders_activated": 0, "articles_published": 0}
        if "Order" in self.model.objects:
            orders = self.bundle.read_raw("Order")
            want = {str(i) for i, s in zip(orders["Id"], orders["Status"], strict=True) if s == ACTIVATED}
            current = self.sf.query_all_iter(
                f"SELECT Id, Status, {EXT} FROM Order WHERE Status = '{DRAFT}' AND {EXT} != null"
            )
            updates = [[r["Id"], ACTIVATED] for r in current if r[EXT] in want]
            for chunk in chunks(["Id", "Status"], updates) if updates else []:
                outcome = self.bulk.run("Order", "update", csv_bytes(["Id", "Status"], chunk))
                done["orders_activated"] += outcome.processed - outcome.failed
                if outcome.failures:
                    raise LoadError(
                        f"Order: {outcome.failed} orders could not be activated: {outcome.failures[0]['sf__Error']}"
                    )
        if "Knowledge__kav" in self.model.objects:
            arts = self.bundle.read_raw("Knowledge__kav")
            online = {str(i) for i, s in zip(arts["Id"], arts["PublishStatus"], strict=True) if s == ONLINE}
            drafts = [
                r["Id"]
                for r in self.sf.query_all_iter(
                    f"SELECT Id, {EXT} FROM Knowledge__kav WHERE PublishStatus = '{DRAFT}' AND {EXT} != null"
                )
                if r[EXT] in online
            ]
            for k in range(0, len(drafts), 200):
                chunk = drafts[k : k + 200]
                out = self.sf.restful(
                    "actions/standard/publishKnowledgeArticles",
                    method="POST",
                    json={"inputs": [{"articleVersionIdList": chunk, "pubAction": "PUBLISH_ARTICLE"}]},
                )
                if not (out and out[0].get("isSuccess")):
                    raise LoadError(f"Knowledge: publishing failed: {out}")
                done["articles_published"] += len(chunk)
        return done

    def id_map_all(self) -> dict[str, str]:
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


def _const(value: str) -> Callable[[Any], str]:
    def constant(r: Any) -> str:
        return value

    return constant


def _suffixed(suffix: str) -> Callable[[Any], str]:
    """Usernames are unique across every Salesforce org (B6): a load into a real org suffixes them."""

    def value(r: Any) -> str:
        return f"{r['Username']}{suffix}"

    return value


def _group_key(spec: ObjectSpec) -> str | None:
    """The parent to group a child's rows by, against row locks (B10): its first required lookup, else its
    first lookup (owners aside: an owner's row is not locked by its records)."""
    lookups = [f for f in spec.lookups if "User" not in f.reference_to]
    ranked = [f for f in lookups if not f.nillable] + [f for f in lookups if f.nillable]
    return ranked[0].name if ranked else None
