"""`orgseed serve --empty` as a user runs it: a real process, the real client, and a kill -9 mid-job."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from simple_salesforce import Salesforce

from orgs.local.writable.org import WritableOrg
from tests.orgs.local.cli import read_snippet, serve_cli


def _serve(*args: str) -> subprocess.Popen[str]:
    return serve_cli(*args)


def _connect(proc: subprocess.Popen[str]) -> tuple[Any, requests.Session, str, list[str]]:
    url, ca, lines = read_snippet(proc)
    session = requests.Session()
    session.verify = ca
    session.trust_env = False
    return Salesforce(instance_url=url, session_id="cli-token", session=session), session, url, lines


def _stop(proc: subprocess.Popen[str]) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - a hang is the failure
        proc.kill()
        raise
    return err


def test_serve_empty_end_to_end_and_reopen(tmp_path: Path) -> None:
    state = tmp_path / "state"
    proc = _serve("--empty", str(state), "--edition", "scratch", "--token", "cli-token")
    try:
        sf, session, _, lines = _connect(proc)
        assert any("orgseed empty org" in line and "(scratch)" in line for line in lines)
        made = sf.Account.create({"Name": "Persisted"})
        assert made["success"]
        # a second server on the same state is refused, naming the holder
        second = _serve("--empty", str(state), "--token", "x")
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2 and "in use by another orgseed server" in err
        session.close()
    finally:
        err = _stop(proc)
    assert proc.returncode == 0 and "stopped" in err
    proc = _serve("--empty", str(state), "--token", "cli-token")
    try:
        sf, session, _, _ = _connect(proc)
        assert [r["Name"] for r in sf.query("SELECT Name FROM Account")["records"]] == ["Persisted"]
        session.close()
    finally:
        _stop(proc)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--edition", "platinum"], "--edition must be one of developer, scratch, enterprise"),
        (["--duplicate-rule", "sometimes"], "--duplicate-rule must be off, alert or block"),
        (["--bulk-batch-rows", "0"], "--bulk-batch-rows must be at least 1"),
    ],
)
def test_serve_empty_bad_input(tmp_path: Path, args: list[str], message: str) -> None:
    proc = _serve("--empty", str(tmp_path / "state"), *args)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and message in " ".join(err.split())


def test_bundle_and_empty_are_exclusive(tmp_path: Path) -> None:
    proc = _serve(str(tmp_path), "--empty", str(tmp_path / "state"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "either a BUNDLE" in err
    proc = _serve(str(tmp_path), "--edition", "scratch")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "add --empty STATE_DIR" in err


def test_a_killed_server_reopens_with_committed_writes_and_no_half_written_job(tmp_path: Path) -> None:
    state = tmp_path / "state"
    rows = 6000
    proc = _serve(
        "--empty", str(state), "--edition", "enterprise", "--token", "cli-token", "--bulk-batch-rows", "200"
    )
    try:
        sf, session, url, _ = _connect(proc)
        kept = sf.Account.create({"Name": "Before the kill"})["id"]
        api = f"{url}/services/data/v59.0/jobs/ingest"
        headers = {"Authorization": "Bearer cli-token"}
        job = session.post(
            api, json={"object": "Account", "operation": "insert", "lineEnding": "LF"}, headers=headers
        ).json()
        body = "Name,Phone\n" + "".join(f"Bulk {n:05d},555-{n:04d}\n" for n in range(rows))
        up = session.put(
            f"{api}/{job['id']}/batches", data=body.encode(), headers={**headers, "Content-Type": "text/csv"}
        )
        assert up.status_code == 201
        session.patch(f"{api}/{job['id']}", json={"state": "UploadComplete"}, headers=headers)
        deadline = time.monotonic() + 60
        info: dict[str, Any] = {}
        while time.monotonic() < deadline:
            info = session.get(f"{api}/{job['id']}", headers=headers).json()
            if info["state"] == "InProgress" and info["numberRecordsProcessed"] >= 400:
                break
            time.sleep(0.01)
        assert info["state"] == "InProgress", info  # killed while the job runs
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
    killed_at = info["numberRecordsProcessed"]
    assert killed_at % 200 == 0  # counts move by whole batches: nothing half-written was ever visible
    org = WritableOrg(state)  # the lock died with the process; the job resumes where it stopped
    try:
        deadline = time.monotonic() + 120
        while org.ingest.info(job["id"])["state"] != "JobComplete" and time.monotonic() < deadline:
            time.sleep(0.05)
        final = org.ingest.info(job["id"])
        assert final["state"] == "JobComplete" and final["numberRecordsProcessed"] == rows
        names = [
            r["Name"]
            for r in org.query("SELECT Name FROM Account WHERE Name LIKE 'Bulk %'", batch=2000)["records"]
        ]
        total = org.query("SELECT COUNT() FROM Account WHERE Name LIKE 'Bulk %'")["totalSize"]
        assert total == rows and len(set(names)) == len(names)  # every row once: none lost, none twice
        assert org.record("Account", kept, ["Name"], "59.0")["Name"] == "Before the kill"
        ok = org.ingest.results(job["id"], "successfulResults").splitlines()
        assert len(ok) == rows + 1 and len(set(ok)) == rows + 1
    finally:
        org.close()
