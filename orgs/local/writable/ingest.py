"""Bulk API 2.0 ingest jobs of an empty org, as `simple_salesforce/bulk2.py` drives them.

A job is created `Open`, takes one CSV upload (`PUT .../batches`, 201), and is closed with
`{"state": "UploadComplete"}`; a background thread then processes it in batches of `batch_rows` records
(Salesforce: 10,000), each batch one transaction that writes its records, their results and the job's counts
together. The job goes `InProgress` and then `JobComplete` (or `Failed`, e.g. when the CSV names a field the
object does not have: `InvalidBatch : Field name not found : X`); `Aborted` when the client aborts it.
Results come back as CSV: `successfulResults` (`sf__Id`, `sf__Created`, the original columns),
`failedResults` (`sf__Id`, `sf__Error` as `CODE:message:fields --`, the original columns) and
`unprocessedrecords` (rows never attempted) — not in input order, as Salesforce's are not.

With the edition's `lock_contention` knob on, the batches of one job are treated as running in parallel, as
Salesforce runs them: a row whose parent record also has children in an earlier batch of the same job fails
with `UNABLE_TO_LOCK_ROW` (seeding.md B10); grouping children by parent avoids it.

A job that was running when the server died resumes from its last committed batch when the org reopens.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from orgs.bundle import csv_text
from orgs.local.errors import NotFound, OrgApiError
from orgs.local.writable.dml import RecordError, SaveResult
from orgs.local.writable.state import now_wire

if TYPE_CHECKING:
    from orgs.local.writable.org import WritableOrg

OPERATIONS = ("insert", "upsert", "update", "delete", "hardDelete")
DELIMITERS = {"COMMA": ",", "TAB": "\t", "PIPE": "|", "SEMICOLON": ";", "CARET": "^", "BACKQUOTE": "`"}
LINE_ENDINGS = {"LF": "\n", "CRLF": "\r\n"}
TERMINAL = ("JobComplete", "Failed", "Aborted")
BATCH_ROWS = 10_000
MAX_FIELD_CHARS = 32_000  # Bulk API 2.0: characters per field


class JobError(OrgApiError):
    default_code = "INVALIDJOB"


def _csv_line(values: list[Any]) -> str:
    return csv_text([values])


class IngestJobs:
    """The org's ingest jobs (kept in the state database) and the thread that processes them."""

    def __init__(self, org: WritableOrg, batch_rows: int = BATCH_ROWS) -> None:
        self.org = org
        self.state = org.state
        self.batch_rows = batch_rows
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="orgseed-ingest", daemon=True)
        self._thread.start()
        self._wake.set()  # jobs left running by a previous server resume now

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=30)

    # -- the job resource -------------------------------------------------------------------------------------

    def create(self, body: Any, version: str) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise JobError("InvalidJob : the request body must be a JSON object.")
        op = body.get("operation")
        if op not in OPERATIONS:
            raise JobError(f"InvalidJob : Invalid operation: {op}. Use one of {', '.join(OPERATIONS)}.")
        name = body.get("object")
        if not isinstance(name, str) or not self.org.model.has(name):
            raise JobError(f"InvalidJob : Unable to find object: {name}")
        spec = self.org.model.get(name)
        ext = body.get("externalIdFieldName")
        if op == "upsert":
            if not isinstance(ext, str) or not spec.has_field(ext):
                raise JobError(
                    f"InvalidJob : Field name provided, {ext} does not match an External ID for {spec.name}"
                )
            f = spec.field(ext)
            if not (f.external_id or f.name == "Id"):
                raise JobError(
                    f"InvalidJob : Field name provided, {ext} does not match an External ID for {spec.name}"
                )
            ext = f.name
        if op == "hardDelete" and not self.state.user_permission("BulkApiHardDelete"):
            raise JobError(
                "InvalidJob : hardDelete needs the Bulk API Hard Delete permission; assign a permission set "
                "that grants it.",
                error_code="INSUFFICIENT_ACCESS_OR_READONLY",
            )
        delim = body.get("columnDelimiter", "COMMA")
        ending = body.get("lineEnding", "LF")
        if delim not in DELIMITERS:
            raise JobError(f"InvalidJob : Invalid column delimiter: {delim}")
        if ending not in LINE_ENDINGS:
            raise JobError(f"InvalidJob : Invalid line ending: {ending}")
        if body.get("contentType", "CSV") != "CSV":
            raise JobError(f"InvalidJob : Invalid content type: {body.get('contentType')}")
        job_id = self._new_id()
        stamp = now_wire()
        info = {
            "id": job_id,
            "operation": op,
            "object": spec.name,
            "createdById": self.state.api_user,
            "createdDate": stamp,
            "systemModstamp": stamp,
            "state": "Open",
            "externalIdFieldName": ext if op == "upsert" else None,
            "concurrencyMode": "Parallel",
            "contentType": "CSV",
            "apiVersion": float(version),
            "jobType": "V2Ingest",
            "contentUrl": f"services/data/v{version}/jobs/ingest/{job_id}/batches",
            "lineEnding": ending,
            "columnDelimiter": delim,
            "numberRecordsProcessed": 0,
            "numberRecordsFailed": 0,
            "retries": 0,
            "totalProcessingTime": 0,
            "apiActiveProcessingTime": 0,
            "apexProcessingTime": 0,
        }
        with self.state.transaction() as conn:
            conn.execute(
                "INSERT INTO orgseed_jobs (id, info, state, batch_rows) VALUES (?, ?, 'Open', ?)",
                (job_id, json.dumps(info), self.batch_rows),
            )
        return info

    def _new_id(self) -> str:
        with self.state.transaction() as conn:
            return self.state.next_ids(conn, "750", 1)[0]

    def _load(self, job_id: str) -> dict[str, Any]:
        row = self.state.conn.execute("SELECT info FROM orgseed_jobs WHERE id = ?", (job_id,)).fetchone()
        if row is None:
            raise NotFound(f"Job not found: {job_id}")
        info: dict[str, Any] = json.loads(row[0])
        return info

    def info(self, job_id: str) -> dict[str, Any]:
        with self.state.lock:
            return self._load(job_id)

    def all(self) -> dict[str, Any]:
        with self.state.lock:
            rows = self.state.conn.execute("SELECT info FROM orgseed_jobs ORDER BY rowid").fetchall()
        return {"done": True, "records": [json.loads(r[0]) for r in rows], "nextRecordsUrl": None}

    def upload(self, job_id: str, data: bytes) -> None:
        with self.state.transaction() as conn:
            info = self._load(job_id)
            if info["state"] != "Open":
                raise JobError(
                    f"InvalidJobState : Job {job_id} is {info['state']}; data can only be uploaded to an Open job.",
                    error_code="INVALIDJOBSTATE",
                    status=409,
                )
            has = conn.execute("SELECT csv IS NOT NULL FROM orgseed_jobs WHERE id = ?", (job_id,)).fetchone()[
                0
            ]
            if has:
                raise JobError(
                    f"InvalidJobState : Job {job_id} already has its data; Bulk API 2.0 takes one upload per job.",
                    error_code="INVALIDJOBSTATE",
                    status=409,
                )
            conn.execute("UPDATE orgseed_jobs SET csv = ? WHERE id = ?", (data, job_id))

    def set_state(self, job_id: str, body: Any) -> dict[str, Any]:
        wanted = body.get("state") if isinstance(body, dict) else None
        with self.state.transaction() as conn:
            info = self._load(job_id)
            if wanted == "UploadComplete":
                if info["state"] != "Open":
                    raise JobError(
                        f"InvalidJobState : Job {job_id} is {info['state']}, not Open.",
                        error_code="INVALIDJOBSTATE",
                        status=409,
                    )
            elif wanted == "Aborted":
                if info["state"] in TERMINAL:
                    raise JobError(
                        f"InvalidJobState : Job {job_id} is already {info['state']}.",
                        error_code="INVALIDJOBSTATE",
                        status=409,
                    )
            else:
                raise JobError(f"InvalidJobState : Invalid state: {wanted}", error_code="INVALIDJOBSTATE")
            info["state"] = wanted
            info["systemModstamp"] = now_wire()
            self._save(conn, job_id, info)
        if wanted == "UploadComplete":
            self._wake.set()
        return info

    def delete(self, job_id: str) -> None:
        with self.state.transaction() as conn:
            info = self._load(job_id)
            if info["state"] not in (*TERMINAL, "Open"):
                raise JobError(
                    f"InvalidJobState : Job {job_id} is {info['state']}; abort it or wait for it to finish.",
                    error_code="INVALIDJOBSTATE",
                    status=409,
                )
            conn.execute("DELETE FROM orgseed_jobs WHERE id = ?", (job_id,))
            conn.execute("DELETE FROM orgseed_job_results WHERE job = ?", (job_id,))

    def results(self, job_id: str, kind: str) -> str:
        """successfulResults | failedResults | unprocessedrecords, as CSV text."""
        with self.state.lock:
            info = self._load(job_id)
            if kind == "unprocessedrecords":
                return self._unprocessed(job_id, info)
            header = self._header(job_id, info)
            first = ["sf__Id", "sf__Created"] if kind == "successfulResults" else ["sf__Id", "sf__Error"]
            rows = self.state.conn.execute(
                "SELECT line FROM orgseed_job_results WHERE job = ? AND kind = ? ORDER BY seq", (job_id, kind)
            ).fetchall()
            return _csv_line([*first, *header]) + "".join(r[0] for r in rows)

    # -- processing ---------------------------------------------------------------------------------------------

    def _save(self, conn: Any, job_id: str, info: dict[str, Any], batches_done: int | None = None) -> None:
        if batches_done is None:
            conn.execute(
                "UPDATE orgseed_jobs SET info = ?, state = ? WHERE id = ?",
                (json.dumps(info), info["state"], job_id),
            )
        else:
            conn.execute(
                "UPDATE orgseed_jobs SET info = ?, state = ?, batches_done = ? WHERE id = ?",
                (json.dumps(info), info["state"], batches_done, job_id),
            )

    def _rows(self, job_id: str, info: dict[str, Any]) -> Iterator[list[str]]:
        """The uploaded CSV's rows (the header first), read as they are asked for."""
        row = self.state.conn.execute("SELECT csv FROM orgseed_jobs WHERE id = ?", (job_id,)).fetchone()
        text = bytes(row[0] or b"").decode("utf-8-sig")
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=DELIMITERS[info["columnDelimiter"]])
        return (r for r in reader if r)

    def _parse(self, job_id: str, info: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
        rows = self._rows(job_id, info)
        return next(rows, []), list(rows)

    def _header(self, job_id: str, info: dict[str, Any]) -> list[str]:
        """The header alone (result pages repeat it; the rows need not be parsed for that)."""
        return next(self._rows(job_id, info), [])

    def _progress(self, job_id: str) -> tuple[int, int]:
        """(batches done, rows per batch) of a job: the batch size is the one it was created with."""
        done, size = self.state.conn.execute(
            "SELECT batches_done, batch_rows FROM orgseed_jobs WHERE id = ?", (job_id,)
        ).fetchone()
        return int(done), int(size)

    def _unprocessed(self, job_id: str, info: dict[str, Any]) -> str:
        """The rows never attempted (after an abort or a failure), under the header."""
        header, rows = self._parse(job_id, info)
        done, size = self._progress(job_id)
        left = [] if info["state"] == "JobComplete" else rows[done * size :]
        return "".join(_csv_line(r) for r in ([header] if header else []) + left)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(timeout=1.0)
            self._wake.clear()
            while not self._stop.is_set():
                with self.state.lock:
                    row = self.state.conn.execute(
                        "SELECT id FROM orgseed_jobs WHERE state IN ('UploadComplete', 'InProgress') ORDER BY rowid LIMIT 1"
                    ).fetchone()
                if row is None:
                    break
                try:
                    self._process(row[0])
                except Exception as exc:  # a job must never stay InProgress for ever
                    self._fail_job(row[0], f"InternalError : {type(exc).__name__}: {exc}")

    def _fail_job(self, job_id: str, message: str) -> None:
        with self.state.transaction() as conn:
            info = self._load(job_id)
            info["state"] = "Failed"
            info["errorMessage"] = message
            self._save(conn, job_id, info)

    def _process(self, job_id: str) -> None:
        started = time.perf_counter()
        with self.state.lock:
            info = self._load(job_id)
            done, size = self._progress(job_id)
        header, rows = self._parse(job_id, info)
        problem = self._check_header(info, header)
        if problem:
            self._fail_job(job_id, problem)
            return
        if info["state"] == "UploadComplete":
            with self.state.transaction() as conn:
                info = self._load(job_id)
                if info["state"] != "UploadComplete":
                    return
                info["state"] = "InProgress"
                self._save(conn, job_id, info)
        batches = [rows[k : k + size] for k in range(0, len(rows), size)]
        locks = ParentLocks()
        for number, batch in enumerate(batches):
            if number < done:
                continue
            if self._stop.is_set():
                return
            with self.state.lock:
                if self._load(job_id)["state"] == "Aborted":
                    return
            locked = locks if self.state.edition.lock_contention else None
            with self.state.transaction() as conn:
                results = self._apply(info, header, batch, locked)
                succeeded = [(r, raw) for r, raw in zip(results, batch, strict=True) if r.success]
                failed = [(r, raw) for r, raw in zip(results, batch, strict=True) if not r.success]
                seq0 = number * size
                # Salesforce does not keep input order in results: each batch's rows come back last first
                conn.executemany(
                    "INSERT INTO orgseed_job_results (job, kind, seq, line) VALUES (?, 'successfulResults', ?, ?)",
                    [
                        (job_id, seq0 + n, _csv_line([r.id, "true" if r.created else "false", *raw]))
                        for n, (r, raw) in enumerate(reversed(succeeded))
                    ],
                )
                conn.executemany(
                    "INSERT INTO orgseed_job_results (job, kind, seq, line) VALUES (?, 'failedResults', ?, ?)",
                    [
                        (job_id, seq0 + n, _csv_line([r.id or "", _error_cell(r.errors), *raw]))
                        for n, (r, raw) in enumerate(reversed(failed))
                    ],
                )
                info = self._load(job_id)
                info["numberRecordsProcessed"] += len(batch)
                info["numberRecordsFailed"] += len(failed)
                info["systemModstamp"] = now_wire()
                elapsed = int((time.perf_counter() - started) * 1000)
                info["totalProcessingTime"] = elapsed
                info["apiActiveProcessingTime"] = elapsed
                self._save(conn, job_id, info, batches_done=number + 1)
            locks.next_batch()
        with self.state.transaction() as conn:
            info = self._load(job_id)
            if info["state"] == "InProgress":
                info["state"] = "JobComplete"
                info["systemModstamp"] = now_wire()
                self._save(conn, job_id, info)

    def _check_header(self, info: dict[str, Any], header: list[str]) -> str | None:
        spec = self.org.model.get(info["object"])
        if info["operation"] in ("delete", "hardDelete"):
            if [h.strip() for h in header] != ["Id"]:
                return "InvalidBatch : The Id field should be the only field in delete and hardDelete jobs"
            return None
        seen: set[str] = set()
        for name in header:
            key = name.lower()
            if key in seen:
                return f"InvalidBatch : Duplicate field name: {name}"
            seen.add(key)
            if spec.has_field(name):
                continue
            if ":" in name:
                return "InvalidBatch : type is not needed for non polymorphic foreign key reference"
            rel, dot, _ext = name.partition(".")
            if dot and any((f.relationship_name or "").lower() == rel.lower() for f in spec.lookups):
                continue
            return f"InvalidBatch : Field name not found : {name}"
        if info["operation"] == "update" and "id" not in seen:
            return "InvalidBatch : Id is required for the update operation"
        return None

    def _apply(
        self, info: dict[str, Any], header: list[str], batch: list[list[str]], locked: Any
    ) -> list[SaveResult]:
        op = info["operation"]
        writer = self.org.writer
        if op in ("delete", "hardDelete"):
            return writer.delete([r[0] if r else "" for r in batch], hard=op == "hardDelete")
        records: list[dict[str, Any]] = []
        bad: dict[int, RecordError] = {}
        for n, row in enumerate(batch):
            if len(row) != len(header):
                bad[n] = RecordError(
                    "INVALID_FIELD",
                    f"The row has {len(row)} values; the header names {len(header)} fields.",
                    [],
                )
                records.append({})
                continue
            long = next((h for h, v in zip(header, row, strict=True) if len(v) > MAX_FIELD_CHARS), None)
            if long:
                bad[n] = RecordError(
                    "STRING_TOO_LONG", f"{long}: data value too large (max length={MAX_FIELD_CHARS})", [long]
                )
            records.append(dict(zip(header, row, strict=True)))
        good = [n for n in range(len(batch)) if n not in bad]
        subset = [records[n] for n in good]
        if op == "insert":
            out = writer.insert(info["object"], subset, locked=locked)
        elif op == "update":
            out = writer.update(info["object"], subset, locked=locked)
        else:
            out = writer.upsert(info["object"], info["externalIdFieldName"], subset, locked=locked)
        results = [SaveResult(None, [bad[n]]) if n in bad else SaveResult(None) for n in range(len(batch))]
        for n, r in zip(good, out, strict=True):
            results[n] = r
        return results


class ParentLocks:
    """The parent rows the batches of one job lock. Salesforce runs a job's batches in parallel; here a
    batch counts as running beside every earlier one, so a row whose parent an earlier batch of the same job
    touched cannot lock it (`UNABLE_TO_LOCK_ROW`). A job resumed after a restart starts with no locks held."""

    def __init__(self) -> None:
        self.held: set[str] = set()
        self.current: set[str] = set()

    def __call__(self, parent_id: str) -> bool:
        self.current.add(parent_id)
        return parent_id in self.held

    def next_batch(self) -> None:
        self.held |= self.current
        self.current = set()


def _error_cell(errors: list[RecordError]) -> str:
    return "".join(e.as_csv() for e in errors)
