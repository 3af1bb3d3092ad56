"""orgseed audit (issue 13): figures checked against independent counts, planted defects flagged, --against,
bad input refused, the report valid against its JSON Schema."""

from __future__ import annotations

import csv
import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import pandas as pd
import pytest

from tests.conftest import copy_bundle
from tests.flows.test_cli import orgseed
from validators.audit import load_schema, run_audit


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, header, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


def _flags(report: dict[str, Any], section: str) -> list[str]:
    return [f["what"] for f in report["sections"][section]["flags"]]


@pytest.fixture(scope="module")
def clean(default_bundle: Path) -> dict[str, Any]:
    return run_audit(default_bundle)


def test_report_is_valid_and_its_counts_match_the_csvs(clean: dict[str, Any], default_bundle: Path) -> None:
    jsonschema.Draft202012Validator(load_schema()).validate(clean)
    counts = clean["sections"]["distributions"]["figures"]["counts"]
    for name, n in counts.items():
        assert n == len(_rows(default_bundle / "data" / f"{name}.csv")[1]), name
    # tasks: None and majority shares re-counted from ground_truth.jsonl
    truth = [
        json.loads(line)
        for line in (default_bundle / "tasks" / "ground_truth.jsonl").read_text().splitlines()
    ]
    for t in clean["sections"]["tasks"]["figures"]["tasks"]:
        answers = [r["answer"] for r in truth if r["task"] == t["task"]]
        assert t["instances"] == len(answers)
        assert t["none_share"] == round(sum(a is None for a in answers) / len(answers), 4)
        top = Counter(str(a) for a in answers if a is not None).most_common(1)[0][1]
        assert t["majority_share"] == round(top / len(answers), 4)
    # a clean org: no broken references, every hidden variable shows, no degenerate task, no copied texts
    assert clean["sections"]["integrity"]["verdict"] == "ok"
    effects = clean["sections"]["latent"]["figures"]["effects"]
    assert len(effects) == 6 and all(e["shows"] for e in effects), [(e["name"], e["ci95"]) for e in effects]
    assert clean["sections"]["tasks"]["flags"] == []
    assert not any("word for word" in f for f in _flags(clean, "text"))
    span = clean["sections"]["distributions"]["figures"]["span"]
    assert span["cases_outside"] == 0 and span["profile_start"] <= span["first_case"]


# Hidden variables must show at least as strongly as before issue 16 (issue 16, "What must hold"). The floors are
# the audit's Spearman rho on the default org (crmarena profile, seed 0, scale 1) built from commit 6f7dbc6, the
# main branch just before issue 16 merged (e930227), and audited with today's `orgseed audit`:
#   agent speed -> mean handle time of the agent's closed cases      +0.5319  (n = 76 agents)
#   agent skill -> share of first assignments transferred away       -0.8334  (n = 88 agents)
# The issue quotes 0.61 and 0.84 for these; the 0.61 is not what the pre-issue-16 code gives at seed 0 (0.53; over
# seeds 0-5 it averages 0.46), so the floor is the measured one. The wider catalog (f790e2a) had brought the
# transfer figure to -0.73 at seed 0 and -0.70 averaged over seeds 0-5 (pre-issue-16: -0.72); a steeper
# transfer_skill_slope (2.4 -> 3.2 in the crmarena profile) gives -0.87 at seed 0 and -0.79 over seeds 0-5.
SPEED_RHO_FLOOR = 0.5319
TRANSFER_RHO_CEILING = -0.8334


def test_hidden_variables_show_as_strongly_as_before_issue_16(clean: dict[str, Any]) -> None:
    effects = {e["name"]: e for e in clean["sections"]["latent"]["figures"]["effects"]}
    speed, transfers = effects["agent speed → handle time"], effects["agent skill → transfers"]
    for e in (speed, transfers):  # the audit's rho re-derived from its own points: Pearson of pandas' ranks
        ranks = pd.DataFrame(e["points"], columns=["x", "y"]).rank()
        assert len(ranks) == e["n"] and abs(ranks["x"].corr(ranks["y"]) - e["rho"]) < 1e-3
    assert speed["rho"] >= SPEED_RHO_FLOOR, speed["rho"]
    assert transfers["rho"] <= TRANSFER_RHO_CEILING, transfers["rho"]


def test_planted_defects_are_each_flagged(
    default_bundle: Path, tmp_path: Path, clean: dict[str, Any]
) -> None:
    root = copy_bundle(default_bundle, tmp_path / "b")
    rng = random.Random(7)
    # 1. a skewed distribution: every case High priority (the profile asks 20%)
    header, cases = _rows(root / "data" / "Case.csv")
    for r in cases:
        r["Priority"] = "High"
    # 2. a broken latent effect: case owners shuffled, so handle time no longer follows the owner's speed
    owners = [r["OwnerId"] for r in cases]
    rng.shuffle(owners)
    for r, o in zip(cases, owners, strict=True):
        r["OwnerId"] = o
    _write(root / "data" / "Case.csv", header, cases)
    # 3. duplicated texts: a third of the emails carry one body
    header, emails = _rows(root / "data" / "EmailMessage.csv")
    for r in emails[: len(emails) // 3]:
        r["TextBody"] = emails[0]["TextBody"]
    _write(root / "data" / "EmailMessage.csv", header, emails)
    # 4. a degenerate task: every transfer_count instance has the same answer
    path = root / "tasks" / "ground_truth.jsonl"
    truth = [json.loads(line) for line in path.read_text().splitlines()]
    same = next(r["answer"] for r in truth if r["task"] == "transfer_count" and r["answer"])
    for r in truth:
        if r["task"] == "transfer_count":
            r["answer"] = same
    path.write_text("".join(json.dumps(r) + "\n" for r in truth))

    report = run_audit(root)
    assert any(f.startswith("Case.Priority:") for f in _flags(report, "distributions"))
    assert not any(f.startswith("Case.Priority:") for f in _flags(clean, "distributions"))
    speed = next(
        e for e in report["sections"]["latent"]["figures"]["effects"] if e["name"].startswith("agent speed")
    )
    assert speed["shows"] is False and any(f.startswith("agent speed") for f in _flags(report, "latent"))
    assert any(f.startswith("EmailMessage.TextBody:") for f in _flags(report, "text"))
    assert any(f.startswith("transfer_count:") for f in _flags(report, "tasks"))
    assert report["verdict"] == "warn" and clean["sections"]["tasks"]["verdict"] == "ok"


def test_orphans_fail_the_integrity_section(small_bundle: Path, tmp_path: Path) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    header, rows = _rows(root / "data" / "Case.csv")
    rows[0]["AccountId"] = "001Ws0000000000AAA"
    _write(root / "data" / "Case.csv", header, rows)
    report = run_audit(root)
    assert report["sections"]["integrity"]["verdict"] == "fail" and report["verdict"] == "fail"
    assert _flags(report, "integrity") == ["Case.AccountId: 1 value(s) point at no Account"]


def test_against_puts_every_figure_side_by_side(default_bundle: Path, small_bundle: Path) -> None:
    report = run_audit(small_bundle, against=default_bundle)
    jsonschema.Draft202012Validator(load_schema()).validate(report)
    rows = {r["figure"]: r for r in report["against"]["figures"]}
    case = rows["/distributions/counts/Case"]
    small_cases = len(_rows(small_bundle / "data" / "Case.csv")[1])
    default_cases = len(_rows(default_bundle / "data" / "Case.csv")[1])
    assert (case["this"], case["other"], case["difference"]) == (
        small_cases,
        default_cases,
        small_cases - default_cases,
    )
    assert all(
        r["difference"] is None or r["difference"] == pytest.approx(r["this"] - r["other"])
        for r in rows.values()
    )


def test_cli_writes_both_files_and_refuses_bad_input(small_bundle: Path, tmp_path: Path) -> None:
    root = copy_bundle(small_bundle, tmp_path / "b")
    res = orgseed("audit", str(root))
    assert res.returncode == 0, res.stderr
    doc = json.loads((root / "reports" / "audit.json").read_text())
    jsonschema.Draft202012Validator(load_schema()).validate(doc)
    assert (root / "reports" / "audit.html").read_text().startswith("<!doctype html>")
    assert "Latent → observed" in res.stdout
    # not a bundle
    res = orgseed("audit", str(tmp_path))
    assert res.returncode == 2 and "not an orgseed bundle" in res.stderr and "Traceback" not in res.stderr
    # an unfinished bundle
    unfinished = tmp_path / "u"
    shutil.copytree(small_bundle, unfinished)
    manifest = json.loads((unfinished / "manifest.json").read_text())
    manifest["status"] = "in_progress"
    (unfinished / "manifest.json").write_text(json.dumps(manifest))
    res = orgseed("audit", str(unfinished))
    assert res.returncode == 2 and "/status" in res.stderr
    res = orgseed("audit", str(root), "--against", str(unfinished))
    assert res.returncode == 2 and "/status" in res.stderr


# -- the live-org section (--instance-url / --session-id) -------------------------------------------------


def test_a_served_org_matches_its_own_bundle(small_bundle: Path, tmp_path: Path) -> None:
    from orgs.local import server_for

    root = copy_bundle(small_bundle, tmp_path / "b")
    server = server_for(root)
    report = run_audit(root, org=server.client())
    jsonschema.Draft202012Validator(load_schema()).validate(report)
    section = report["sections"]["org"]
    assert section["verdict"] == "ok" and section["flags"] == [], section["flags"]
    for o in section["figures"]["objects"]:
        assert o["org"] == o["bundle"] == len(_rows(root / "data" / f"{o['object']}.csv")[1])
        assert o["sampled"] == min(25, o["bundle"]) and o["missing_in_org"] == 0

    # the same org against a bundle that has drifted from it: edited subjects, removed cases
    drifted = copy_bundle(small_bundle, tmp_path / "d")
    header, cases = _rows(drifted / "data" / "Case.csv")
    for r in cases:
        r["Subject"] = r["Subject"] + " (edited)"
    _write(drifted / "data" / "Case.csv", header, cases[:-3])
    report = run_audit(drifted, org=server.client())
    flags = _flags(report, "org")
    assert f"Case: {len(cases) - 3:,} in the bundle, {len(cases):,} in the org" in flags
    assert any(f.startswith("Case.Subject: 25 of 25 sampled records differ") for f in flags)
    assert report["sections"]["org"]["verdict"] == "fail" and report["verdict"] == "fail"


def test_cli_audits_a_live_org_over_https_and_refuses_an_unreachable_one(
    small_bundle: Path, tmp_path: Path
) -> None:
    import os

    from orgs.local import server_for

    root = copy_bundle(small_bundle, tmp_path / "b")
    server = server_for(root)
    assert server.certificate is not None
    env = {**os.environ, "REQUESTS_CA_BUNDLE": str(server.certificate.cert)}
    url = f"https://{server.host}:{server.port}"
    res = orgseed(
        "audit", str(root), "--org", env={**env, "SF_INSTANCE_URL": url, "SF_ACCESS_TOKEN": server.token}
    )
    assert res.returncode == 0, res.stderr
    doc = json.loads((root / "reports" / "audit.json").read_text())
    assert doc["sections"]["org"]["figures"]["instance_url"].startswith(url)
    assert server.token not in (root / "reports" / "audit.json").read_text()  # the secret is never written
    assert server.token not in (root / "reports" / "audit.html").read_text()
    res = orgseed("audit", str(root), "--instance-url", url, "--session-id", "wrong-token", env=env)
    assert res.returncode == 2 and "refused the session" in res.stderr and "wrong-token" not in res.stderr
    res = orgseed("audit", str(root), "--instance-url", "https://127.0.0.1:9", "--session-id", "x", env=env)
    assert res.returncode == 2 and "cannot be reached" in res.stderr and "Traceback" not in res.stderr
    res = orgseed("audit", str(root), "--instance-url", url, env={**env, "SF_ACCESS_TOKEN": ""})
    assert res.returncode == 2 and "--session-id" in res.stderr
    res = orgseed("audit", str(root), "--org", env={**env, "SF_INSTANCE_URL": "", "SF_ACCESS_TOKEN": ""})
    assert res.returncode == 2 and "--instance-url" in res.stderr


def test_a_skewed_regional_mix_is_flagged(
    default_bundle: Path, tmp_path: Path, clean: dict[str, Any]
) -> None:
    root = copy_bundle(default_bundle, tmp_path / "b")
    header, accounts = _rows(root / "data" / "Account.csv")
    for r in accounts[: len(accounts) * 2 // 3]:
        r["ShippingState"] = (
            "WY"  # two thirds of the customers in a state the profile weights lightly or not at all
        )
    _write(root / "data" / "Account.csv", header, accounts)
    report = run_audit(root)
    assert any(f.startswith("Account.ShippingState:") for f in _flags(report, "distributions"))
    assert not any(f.startswith("Account.ShippingState:") for f in _flags(clean, "distributions"))


def test_hostile_bundle_files_are_refused_not_read(small_bundle: Path, tmp_path: Path) -> None:
    """A FIFO where a latent table should be, a link out of the bundle, broken JSON: exit 2 naming the file,
    never a hang or a traceback."""
    import os

    root = copy_bundle(small_bundle, tmp_path / "fifo")
    agents = root / "latent" / "world" / "agents.csv"
    agents.unlink()
    os.mkfifo(agents)
    res = orgseed("audit", str(root))
    assert res.returncode == 2 and "agents.csv" in res.stderr and "Traceback" not in res.stderr
    root = copy_bundle(small_bundle, tmp_path / "link")
    policies = root / "latent" / "world" / "policies.json"
    policies.unlink()
    policies.symlink_to("/etc/hostname")
    res = orgseed("audit", str(root))
    assert res.returncode == 2 and "policies.json" in res.stderr and "Traceback" not in res.stderr
    root = copy_bundle(small_bundle, tmp_path / "json")
    truth = root / "tasks" / "ground_truth.jsonl"
    truth.write_text(truth.read_text() + "{not json\n")
    res = orgseed("audit", str(root))
    assert res.returncode == 2 and "ground_truth.jsonl:" in res.stderr and "Traceback" not in res.stderr
