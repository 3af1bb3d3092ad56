"""The empty org's answers against Salesforce's documented response shapes (tests/fixtures/sfdocs)."""

from __future__ import annotations

import csv
import io
import json
import time
from pathlib import Path
from typing import Any

from orgs.local.serve import LocalServer
from orgs.local.writable.org import WritableOrg

GOLDEN = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "sfdocs" / "shapes.json").read_text())


def _same_shape(ours: Any, theirs: Any, where: str = "") -> None:
    """Same keys (recursively) and the same JSON types; values may differ (ids, dates)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and set(ours) == set(theirs), (where, sorted(ours), sorted(theirs))
        for k in theirs:
            if theirs[k] is not None:
                _same_shape(ours[k], theirs[k], f"{where}/{k}")
    elif isinstance(theirs, list):
        assert isinstance(ours, list), where
        if theirs and ours:
            _same_shape(ours[0], theirs[0], f"{where}/0")
    else:
        assert isinstance(ours, type(theirs)) or (
            isinstance(theirs, float) and isinstance(ours, (int, float))
        ), (
            where,
            ours,
            theirs,
        )


def test_responses_have_the_documented_shapes(tmp_path: Path) -> None:
    org = WritableOrg(tmp_path / "state")
    server = LocalServer(tmp_path / "state", org=org).start()
    try:
        s = server.session()
        s.headers["Authorization"] = f"Bearer {server.token}"
        v = f"{server.url}/services/data/v59.0"
        made = s.post(f"{v}/sobjects/Account", json={"Name": "A"})
        assert made.status_code == 201
        _same_shape(made.json(), GOLDEN["create"])
        bad = s.post(f"{v}/sobjects/Account", json={"Phone": "1"})
        assert bad.status_code == 400
        assert bad.json() == GOLDEN["dml_error"]  # this one is fully determined: the documented example
        out = s.post(
            f"{v}/composite/sobjects",
            json={
                "allOrNone": True,
                "records": [
                    {"attributes": {"type": "Account"}},
                    {"attributes": {"type": "Account"}, "Name": "B"},
                ],
            },
        ).json()
        assert out[0] == GOLDEN["collection_item_failed"]
        assert out[1]["errors"] == [GOLDEN["rolled_back"]] and out[1]["success"] is False
        job = s.post(
            f"{v}/jobs/ingest", json={"object": "Account", "operation": "insert", "lineEnding": "LF"}
        ).json()
        _same_shape(job, GOLDEN["ingest_job"])
        assert (
            s.put(
                f"{v}/jobs/ingest/{job['id']}/batches",
                data=b"Name\nok\n\n",
                headers={"Content-Type": "text/csv"},
            ).status_code
            == 201
        )
        s.patch(f"{v}/jobs/ingest/{job['id']}", json={"state": "UploadComplete"})
        deadline = time.monotonic() + 30
        while (
            s.get(f"{v}/jobs/ingest/{job['id']}").json()["state"] != "JobComplete"
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        ok = list(csv.reader(io.StringIO(s.get(f"{v}/jobs/ingest/{job['id']}/successfulResults").text)))
        assert ok[0][:2] == GOLDEN["successful_header"] and ok[0][2:] == ["Name"]
        job2 = s.post(f"{v}/jobs/ingest", json={"object": "Account", "operation": "insert"}).json()
        s.put(
            f"{v}/jobs/ingest/{job2['id']}/batches",
            data=b"Name,Phone\n,1\n",
            headers={"Content-Type": "text/csv"},
        )
        s.patch(f"{v}/jobs/ingest/{job2['id']}", json={"state": "UploadComplete"})
        deadline = time.monotonic() + 30
        while (
            s.get(f"{v}/jobs/ingest/{job2['id']}").json()["state"] != "JobComplete"
            and time.monotonic() < deadline
        ):
            time.sleep(0.02)
        failed = list(csv.reader(io.StringIO(s.get(f"{v}/jobs/ingest/{job2['id']}/failedResults/").text)))
        assert failed[0][:2] == GOLDEN["failed_header"]
        assert failed[1][1] == GOLDEN["failed_cell"]
        up = s.patch(f"{v}/sobjects/Account/Id/{made.json()['id']}", json={"Phone": "2"})
        assert up.status_code == 200
        _same_shape(up.json(), GOLDEN["upsert_updated"])
    finally:
        server.stop()
        org.close()
