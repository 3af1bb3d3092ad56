"""`WritableOrg`: an empty org with state (`state.py`) served by the same engine as a bundle.

It is a `LocalOrg` whose store is the state database, whose model is what the API user sees now
(`catalog.py`: features on, custom fields granted by an assigned permission set), and which adds the writes
(`dml.py`), Bulk API 2.0 ingest (`ingest.py`), metadata deploys (`metadata.py`), the Knowledge publish
action, and `limits` that follow data storage and API use.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from orgs.local.engine import LocalOrg
from orgs.local.errors import OrgApiError
from orgs.local.limits import DEFAULT_LIMITS, ServeLimits
from orgs.local.records import Builders
from orgs.local.store import Store, StoreInfo
from orgs.local.writable.dml import RecordError, SaveResult, Writer
from orgs.local.writable.ingest import BATCH_ROWS, IngestJobs
from orgs.local.writable.state import StateDir, now_wire, update_rows
from schemas.model import OrgModel


class StateStore(Store):
    """The state database read through the store's per-thread read-only connections."""

    def __init__(self, path: Path, model: OrgModel, org_id: str) -> None:
        super().__init__(None, model, StoreInfo(path, False, 0.0, org_id))  # type: ignore[arg-type]


class WritableOrg(LocalOrg):
    writable = True

    def __init__(
        self,
        state_dir: Path | str,
        *,
        edition: str | None = None,
        limits: ServeLimits = DEFAULT_LIMITS,
        today: date | None = None,
        batch_rows: int = BATCH_ROWS,
        **knobs: Any,
    ) -> None:
        self.state = StateDir.open(state_dir, edition, **knobs)
        self.serve_limits = limits
        self.root = Path(state_dir)
        self.bundle = None  # type: ignore[assignment]
        self.manifest = {"data_sha256": self.state.org_id}
        self.org_id = self.state.org_id
        self.api_user_id = self.state.api_user
        if today is None:
            self.today, self.today_source = datetime.now(UTC).date(), "clock"
        else:
            self.today, self.today_source = today, "given"
        self._plans = OrderedDict()
        self._cursors = OrderedDict()
        self._lock = threading.Lock()
        self.builders = Builders()
        self.model = self._visible()
        self.store = StateStore(self.state.path, self.model, self.org_id)
        self.writer = Writer(self.state, lambda: self.model, on_change=self.refresh)
        self.requests_today = 0
        self.ingest = IngestJobs(self, batch_rows=batch_rows)

    def _visible(self) -> OrgModel:
        s = self.state.settings
        return self.state.catalog.visible({"knowledge": s.knowledge, "chat": s.chat}, self.state.granted())

    def refresh(self) -> None:
        """The schema, settings or permissions changed: describe and queries see the org as it is now."""
        model = self._visible()
        with self._lock:
            self.model = model
            self.store.model = model
            self._plans.clear()
        self.builders = Builders()
        self.writer.invalidate()

    # -- writes, as the REST layer calls them -----------------------------------------------------------------

    def create(self, sobject: str, record: dict[str, Any], allow_save: bool = False) -> SaveResult:
        (result,) = self.writer.insert(sobject, [record], allow_save=allow_save)
        return result

    def publish_articles(self, ids: list[str]) -> list[SaveResult]:
        """The publish action: Draft article versions go Online (the only way they do)."""
        results = []
        with self.state.transaction() as conn:
            spec = self.model.get("Knowledge__kav")
            for rid in ids:
                row = conn.execute(
                    'SELECT "PublishStatus" FROM "Knowledge__kav" WHERE "Id" = ?', (rid,)
                ).fetchone()
                if row is None:
                    results.append(
                        SaveResult(
                            rid, [RecordError("INVALID_ID_FIELD", f"Invalid article version id: {rid}")]
                        )
                    )
                    continue
                if row[0] != "Draft":
                    results.append(
                        SaveResult(
                            rid,
                            [
                                RecordError(
                                    "INVALID_OPERATION", "Only a draft article version can be published."
                                )
                            ],
                        )
                    )
                    continue
                stamp = now_wire()
                update_rows(
                    conn,
                    spec,
                    [(rid, {"PublishStatus": "Online", "LastModifiedDate": stamp, "SystemModstamp": stamp})],
                )
                results.append(SaveResult(rid))
        return results

    # -- limits ----------------------------------------------------------------------------------------------------

    def limits(self, requests: int) -> dict[str, dict[str, int]]:
        ed = self.state.edition
        data_max = int(ed.data_storage_mb)
        used_mb = self.state.storage_used() / (1024 * 1024)
        out = {
            "DailyApiRequests": {
                "Max": ed.daily_api_requests,
                "Remaining": max(0, ed.daily_api_requests - requests),
            },
            "DailyBulkApiBatches": {"Max": 15000, "Remaining": 15000},
            "DailyBulkV2QueryFileStorageMB": {"Max": 976562, "Remaining": 976562},
            "DailyBulkV2QueryJobs": {"Max": 10000, "Remaining": 10000},
            "DataStorageMB": {"Max": data_max, "Remaining": max(0, int(data_max - used_mb))},
            "FileStorageMB": {
                "Max": 20 if ed.name == "developer" else 50,
                "Remaining": 20 if ed.name == "developer" else 50,
            },
            "SingleEmail": {"Max": 15, "Remaining": 15},
            "MassEmail": {"Max": 10, "Remaining": 10},
        }
        return out

    def check_requests(self, requests: int) -> None:
        if requests > self.state.edition.daily_api_requests:
            raise OrgApiError(
                "TotalRequests Limit exceeded.", error_code="REQUEST_LIMIT_EXCEEDED", status=403
            )

    def close(self) -> None:
        self.ingest.close()
        super().close()
        self.state.close()
