"""`orgseed upload`, `teardown` and `scratch-def` as a user runs them, against `orgseed serve --empty`'s org over
HTTPS (the server in a thread of the test; the CLI in-process, or as a process of its own to be killed)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from flows.cli import app
from orgs.local.serve import LocalServer
from orgs.local.writable.org import WritableOrg
from tests.conftest import REPO, copy_bundle
from tests.orgs.readback import EXT, bundle_rows, differences


class Org:
    def __init__(self, root: Path, **knobs: Any) -> None:
        self.org = WritableOrg(root, **knobs)
        self.server = LocalServer(root, org=self.org).start()
        self.sf = self.server.client()
        self.flags = ["--instance-url", self.server.url, "--session-id", self.server.token]

    def close(self) -> None:
        self.server.stop()
        self.org.close()


@pytest.fixture
def empty_org(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Org]]:
    made: list[Org] = []

    def make(**knobs: Any) -> Org:
        o = Org(tmp_path / f"org{len(made)}", **knobs)
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(o.server.cert_path))
        made.append(o)
        return o

    monkeypatch.chdir(tmp_path)  # no stray .env
    for var in ("SF_INSTANCE_URL", "SF_ACCESS_TOKEN", "SF_USERNAME", "SF_PASSWORD"):
        monkeypatch.delenv(var, raising=False)
    yield make
    for o in made:
        o.close()


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_upload_end_to_end_then_teardown(
    small_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    o = empty_org(edition="enterprise", person_accounts=True)
    fresh = {
        s: o.sf.query(f"SELECT COUNT() FROM {s}")["totalSize"] for s in ("User", "Pricebook2", "Account")
    }
    book = o.sf.query("SELECT Id, Name, Description FROM Pricebook2 WHERE IsStandard = true")["records"][0]
    res = _run("upload", str(bundle), *o.flags)  # the Prefect engine: a task run per object
    assert res.exit_code == 0, res.output
    assert "0 disagree" in res.output and "missing" in res.output
    assert differences(o.sf, bundle) == []
    folder = bundle / "uploads" / o.org.org_id
    report = json.loads((folder / "report.json").read_text())
    assert (
        report["ok"] is True and report["verify"]["instances"] > 0 and report["verify"]["disagreements"] == []
    )
    assert {r["object"]: r["org"] for r in report["objects"]} == {
        r["object"]: len(bundle_rows(bundle, r["object"])) for r in report["objects"]
    }
    # the task files with org ids: every id the ground truth names is an id of the org
    ids = {}
    with (folder / "id_map.csv").open() as fh:
        next(fh)
        for line in fh:
            _, b, org_id = line.strip().split(",")
            ids[b] = org_id
    original = [json.loads(x) for x in (bundle / "tasks" / "ground_truth.jsonl").read_text().splitlines()]
    rekeyed = [json.loads(x) for x in (folder / "tasks" / "ground_truth.jsonl").read_text().splitlines()]
    assert len(rekeyed) == len(original)
    changed = [(a, b) for a, b in zip(original, rekeyed, strict=True) if a["answer"] in ids]
    assert changed and all(b["answer"] == ids[a["answer"]] for a, b in changed)
    assert (folder / "tasks" / "tasks.json").exists() and (folder / "tasks" / "schema.json").exists()
    # the bundle's hashed files are untouched
    assert _run("validate", str(bundle)).exit_code == 0
    # a second upload without --resume is refused: it would duplicate nothing but must be meant
    again = _run("upload", str(bundle), *o.flags, "--no-prefect")
    assert again.exit_code == 2 and "--resume" in again.output
    down = _run("teardown", str(bundle), *o.flags)
    assert down.exit_code == 0, down.output
    after = {
        s: o.sf.query(f"SELECT COUNT() FROM {s}")["totalSize"] for s in ("User", "Pricebook2", "Account")
    }
    assert after["Pricebook2"] == fresh["Pricebook2"] and after["Account"] == 0
    users = o.sf.query("SELECT COUNT() FROM User WHERE IsActive = true")["totalSize"]
    assert users == 1  # the agents are deactivated (users cannot be deleted); the admin stays
    assert (
        o.sf.query("SELECT Id, Name, Description FROM Pricebook2 WHERE IsStandard = true")["records"][0]
        == book
    )
    assert EXT not in {f["name"] for f in o.sf.Account.describe()["fields"]}
    assert "Issue__c" not in {s["name"] for s in o.sf.describe()["sobjects"]}
    assert not (folder / "id_map.csv").exists()
    torn = json.loads((folder / "teardown.json").read_text())
    active_agents = sum(1 for u in bundle_rows(bundle, "User") if u["IsActive"] == "true")
    assert torn["hard_delete"] is True and torn["failed"] == {} and torn["users_deactivated"] == active_agents


def test_preflight_refuses_a_developer_org_with_the_numbers(
    default_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    bundle = copy_bundle(default_bundle, tmp_path / "bundle")
    users = bundle_rows(bundle, "User")
    active = sum(1 for u in users if u["IsActive"] == "true")
    o = empty_org(edition="developer")  # 5 MB, 2 licences, no Person Accounts
    res = _run("upload", str(bundle), *o.flags, "--no-prefect")
    assert res.exit_code == 1, res.output
    text = " ".join(res.output.split())
    assert "nothing was written" in text
    assert "Data storage: the bundle needs" in text and "MB, the org has 5.0 MB free" in text
    assert f"User licences: {active} agents to create as active users, 1 licences free" in text
    assert "Person Accounts" in text
    assert o.sf.query("SELECT COUNT() FROM Account")["totalSize"] == 0
    assert "Orgseed_Id__c" not in {f["name"] for f in o.sf.Account.describe()["fields"]}
    assert not (bundle / "uploads").exists()
    dry = _run("upload", str(bundle), *o.flags, "--no-prefect", "--dry-run")
    assert dry.exit_code == 1 and "dry run: nothing was written" in dry.output


def test_dry_run_plans_and_writes_nothing(
    small_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    o = empty_org(edition="enterprise", person_accounts=True)
    res = _run("upload", str(bundle), *o.flags, "--no-prefect", "--dry-run")
    assert res.exit_code == 0, res.output
    assert "the preflight passed" in res.output and "CaseHistory__c" in res.output
    assert o.sf.query("SELECT COUNT() FROM Account")["totalSize"] == 0 and not (bundle / "uploads").exists()


def test_bad_org_options_are_usage_errors(small_bundle: Path, empty_org: Callable[..., Org]) -> None:
    empty_org()
    res = _run("upload", str(small_bundle), "--instance-url", "https://127.0.0.1:1")
    assert res.exit_code == 2 and "--session-id" in " ".join(res.output.split())
    res = _run("upload", str(small_bundle), "--instance-url", "http://x", "--session-id", "t")
    assert res.exit_code == 2 and "https://" in res.output


def test_scratch_def(small_bundle: Path, tmp_path: Path) -> None:
    out = tmp_path / "scratch.json"
    res = _run("scratch-def", str(small_bundle), "--out", str(out))
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert {"PersonAccounts", "Knowledge", "LiveAgent"} <= set(doc["features"])
    assert doc["settings"]["securitySettings"]["enableAuditFieldsInactiveOwner"] is True
    assert doc["settings"]["orderSettings"]["enableOrders"] is True


def _upload_process(bundle: Path, o: Org) -> subprocess.Popen[str]:
    env = {**os.environ, "REQUESTS_CA_BUNDLE": str(o.server.cert_path), "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "flows.cli", "upload", str(bundle), *o.flags, "--no-prefect", "--resume"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_killed_ten_times_and_resumed_ends_with_every_record_once(
    default_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    # the default org (40k records, about 20 s to load) so that ten kills land all through the load
    bundle = copy_bundle(default_bundle, tmp_path / "bundle")
    o = empty_org(edition="enterprise", person_accounts=True, salesforce_licenses=1000, batch_rows=2000)
    rng = random.Random(11)
    kills = 0
    while kills < 10:
        proc = _upload_process(bundle, o)
        time.sleep(rng.uniform(1.5, 4.0))  # interpreter start-up is about a second
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"the upload finished before kill {kills + 1}; kill earlier\n{out}\n{err}")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        kills += 1
    final = _upload_process(bundle, o)
    out, err = final.communicate(timeout=600)
    assert final.returncode == 0, out + err
    assert differences(o.sf, bundle) == []  # zero duplicates, zero missing, every field as in the bundle
    report = json.loads((bundle / "uploads" / o.org.org_id / "report.json").read_text())
    assert report["ok"] is True


def test_row_lock_contention_is_retried_not_lost(
    small_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    o = empty_org(edition="enterprise", person_accounts=True, lock_contention=True, batch_rows=100)
    res = _run("upload", str(bundle), *o.flags, "--no-prefect")
    assert res.exit_code == 0, res.output
    report = json.loads((bundle / "uploads" / o.org.org_id / "report.json").read_text())
    assert sum(r["retried"] for r in report["objects"]) > 0  # locks were met, and the rows sent again
    assert all(r["failed"] == 0 for r in report["objects"])
    assert differences(o.sf, bundle) == []


def test_an_active_duplicate_rule_meeting_shared_emails_is_refused_up_front(
    small_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    import csv

    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    path = bundle / "data" / "Contact.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    rows[1]["Email"] = rows[0]["Email"]  # two people with one address, as happens
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    o = empty_org(edition="enterprise", person_accounts=True, duplicate_rule="block")
    res = _run("upload", str(bundle), *o.flags, "--no-prefect")
    text = " ".join(res.output.split())
    assert (
        res.exit_code == 1
        and "Duplicate rule Standard_Contact_Duplicate_Rule on Contact is active and 1" in text
    )
    assert o.sf.query("SELECT COUNT() FROM Contact")["totalSize"] == 0


def test_validation_rules_and_triggers_are_listed_through_the_tooling_api(
    empty_org: Callable[..., Org],
) -> None:
    from flows.upload import automation

    o = empty_org()
    assert automation(o.sf, ["Account", "Case"]) == []  # the embedded org has none; the queries are answered

    class Refusing:
        def toolingexecute(self, action: str) -> Any:
            raise PermissionError("no Tooling API access")

    class WithRules:
        def toolingexecute(self, action: str) -> Any:
            if "ValidationRule" in action:
                return {
                    "records": [
                        {
                            "EntityDefinition": {"QualifiedApiName": "Case"},
                            "ValidationName": "Reason_Required",
                        }
                    ]
                }
            return {"records": [{"Name": "StampOwner", "TableEnumOrId": "Lead"}]}

    assert all("could not be listed" in n for n in automation(Refusing(), ["Case"]))
    notes = automation(WithRules(), ["Case", "Account"])
    assert notes == [
        "Active validation rule Reason_Required on Case may refuse or rewrite rows; failures are reported per record."
    ]


def test_a_row_the_org_refuses_is_reported_with_its_error_never_dropped(
    small_bundle: Path, tmp_path: Path, empty_org: Callable[..., Org]
) -> None:
    import csv

    bundle = copy_bundle(small_bundle, tmp_path / "bundle")
    path = bundle / "data" / "Case.csv"
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    bad_id = rows[3]["Id"]
    rows[3]["Subject"] = "x" * 300  # Case.Subject holds 255 characters
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    o = empty_org(edition="enterprise", person_accounts=True)
    res = _run("upload", str(bundle), *o.flags, "--no-prefect")
    assert res.exit_code == 1, res.output
    report = json.loads((bundle / "uploads" / o.org.org_id / "report.json").read_text())
    case = next(r for r in report["objects"] if r["object"] == "Case")
    assert (case["failed"], case["missing"], case["org"]) == (1, 1, len(rows) - 1)
    assert case["failures"] == [
        {
            "bundle_id": bad_id,
            "error": f"STRING_TOO_LONG:Subject: data value too large: {'x' * 300} (max length=255):Subject --",
        }
    ]
    assert report["ok"] is False and f"Case {bad_id}" in " ".join(res.output.split())
    # its children that name it are refused in turn, each reported, none silently
    children = [
        r
        for r in report["objects"]
        if r["object"] in ("EmailMessage", "CaseHistory__c", "LiveChatTranscript")
    ]
    for r in children:
        assert r["org"] + r["failed"] == r["bundle"]
