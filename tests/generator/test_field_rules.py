"""Fields from data: fields added to a copy of the org model by JSON alone (one or more per rule kind, in
tests/fixtures/rules/added_fields.json) are built, validated and served with no code edit.

The copy is selected with $ORGSEED_MODEL, so every stage (generation, validation, the task checks through the
embedded org, describe and SOQL) reads the same model. Expected values are derived here from the CSVs and the
rules as written in the fixture, never from the generator's code.
"""

from __future__ import annotations

import asyncio
import csv
import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from flows.build import BuildOptions, build_bundle
from generator.ids import make_id
from generator.pipeline import LocalExecutor
from orgs.local import connect, disconnect
from schemas.model import MODEL_ENV, SCHEMA_DIR
from schemas.profile import load_profile
from tests.conftest import FIXTURES, SMALL_PROFILE
from tests.validators.corpus import corrupt
from validators.run import validate_bundle

ADDED = json.loads((FIXTURES / "rules" / "added_fields.json").read_text(encoding="utf-8"))
REQUIRED: dict[str, list[str]] = ADDED["required"]
FIELDS: dict[str, dict[str, Any]] = {k: v for k, v in ADDED.items() if k not in ("required", "$comment")}


def model_with_added_fields(dst: Path) -> Path:
    """A copy of the shipped model with the fixture's fields added: the one JSON edit a user makes."""
    root = dst / "schemas"
    shutil.copytree(SCHEMA_DIR, root, ignore=shutil.ignore_patterns("*.py", "__pycache__", "profiles"))
    for sobject, props in FIELDS.items():
        path = root / "objects" / f"{sobject}.json"
        doc = json.loads(path.read_text(encoding="utf-8"))
        doc["properties"].update(props)
        doc["required"] += REQUIRED.get(sobject, [])
        path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return root


def build(out: Path, shards: int, per_task: int | None = None) -> Path:
    opts = BuildOptions(
        profile=str(SMALL_PROFILE), out=str(out), shards=shards, force=True, engine="local", per_task=per_task
    )
    asyncio.run(build_bundle(opts, LocalExecutor()))
    return out


@dataclass(frozen=True)
class Builds:
    model: Path
    one: Path  # one shard, with tasks (checked through the embedded org)
    three: Path  # three shards, data only


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory, small_bundle: Path) -> Builds:
    base = tmp_path_factory.mktemp("field-rules")
    model = model_with_added_fields(base)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(MODEL_ENV, str(model))
        return Builds(model, build(base / "one", shards=1), build(base / "three", shards=3, per_task=0))


def rows(bundle: Path, sobject: str) -> list[dict[str, str]]:
    with (bundle / "data" / f"{sobject}.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def share(values: list[str], wanted: str) -> float:
    return sum(v == wanted for v in values) / len(values)


def test_the_build_writes_validates_and_checks_the_added_fields(builds: Builds) -> None:
    manifest = json.loads((builds.one / "manifest.json").read_text())
    assert manifest["status"] == "complete" and manifest["validated"] is True
    assert manifest["tasks"]["verified"] is True and manifest["tasks"]["api_check"]["queries"] > 0
    for sobject, props in FIELDS.items():
        header = next(csv.reader((builds.one / "data" / f"{sobject}.csv").open(encoding="utf-8")))
        shipped = list(json.loads((SCHEMA_DIR / "objects" / f"{sobject}.json").read_text())["properties"])
        assert header == [*shipped, *props]


def test_adding_fields_changes_no_other_value(builds: Builds, small_bundle: Path) -> None:
    for path in sorted((small_bundle / "data").glob("*.csv")):
        before = rows(small_bundle, path.stem)
        after = rows(builds.one, path.stem)
        assert [{k: r[k] for k in before[0]} for r in after] == before, path.stem


def test_shard_count_does_not_change_a_byte(builds: Builds) -> None:
    for path in sorted((builds.one / "data").glob("*.csv")):
        assert (builds.three / "data" / path.name).read_bytes() == path.read_bytes(), path.name


def test_constant_sequence_and_references_of_accounts(builds: Builds) -> None:
    accounts = rows(builds.one, "Account")
    contacts = {r["Id"] for r in rows(builds.one, "Contact")}
    assert {r["Segment__c"] for r in accounts} == {"Consumer"}
    assert [r["Loyalty_Number__c"] for r in accounts] == [f"L-{i:06d}" for i in range(1, len(accounts) + 1)]
    # A random self-lookup points at an earlier record (the first has none), so the hierarchy never loops.
    ids = [r["Id"] for r in accounts]
    assert accounts[0]["Referred_By__c"] == ""
    assert all(r["Referred_By__c"] in ids[:i] for i, r in enumerate(accounts) if i > 0)
    assert len({r["Referred_By__c"] for r in accounts}) > 5
    # Account ↔ Contact is a cycle of lookups; the rule's side is deferred and filled once contacts exist.
    assert all(r["Primary_Contact__c"] in contacts for r in accounts)
    assert len({r["Primary_Contact__c"] for r in accounts}) > 5


def test_faker_and_range_values_of_contacts(builds: Builds) -> None:
    contacts = rows(builds.one, "Contact")
    employers = [r["Employer__c"] for r in contacts]
    assert all(0 < len(e) <= 30 for e in employers) and len(set(employers)) > len(employers) // 2
    assert {r["Satisfaction__c"] for r in contacts} <= {"1", "2", "3", "4", "5"}
    assert len({r["Satisfaction__c"] for r in contacts}) >= 3
    span = load_profile(str(SMALL_PROFILE)).span
    surveys = [date.fromisoformat(r["Last_Survey__c"]) for r in contacts]
    assert all(span.start <= d <= span.end for d in surveys) and len(set(surveys)) > len(surveys) // 2


def test_choices_and_null_shares_of_order_items(builds: Builds) -> None:
    items = rows(builds.one, "OrderItem")
    fulfilment = [r["Fulfilment__c"] for r in items]
    # weights 6 : 3 : 1 over 900 items: each share within 4 standard deviations (≤ 0.065)
    for value, expected in (("Warehouse", 0.6), ("Store", 0.3), ("Dropship", 0.1)):
        assert abs(share(fulfilment, value) - expected) < 0.065, value
    gifts = [r["Gift__c"] for r in items]
    assert set(gifts) == {"true", "false"} and abs(share(gifts, "true") - 0.25) < 0.06
    discounts = [r["Discount__c"] for r in items]
    assert abs(share(discounts, "") - 0.4) < 0.07
    given = [d for d in discounts if d]
    assert all(re.fullmatch(r"\d+(\.\d{1,2})?", d) and 0 <= float(d) <= 30 for d in given)


def test_random_reference_and_copies_of_cases(builds: Builds) -> None:
    cases = rows(builds.one, "Case")
    users = {r["Id"] for r in rows(builds.one, "User")}
    account_of = {r["Id"]: r["AccountId"] for r in rows(builds.one, "Contact")}
    state_of = {r["Id"]: r["ShippingState"] for r in rows(builds.one, "Account")}
    reviewers = [r["Reviewer__c"] for r in cases]
    assert {r for r in reviewers if r} <= users and abs(share(reviewers, "") - 0.3) < 0.15
    for r in cases:
        assert r["Customer_Account__c"] == account_of[r["ContactId"]]
        assert r["Customer_State__c"] == state_of[r["Customer_Account__c"]]
        assert r["Opened__c"] == r["CreatedDate"]


def test_validation_checks_the_added_fields(
    builds: Builds, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, str(builds.model))
    users = rows(builds.one, "User")
    spec = {
        "select": {
            "item": {"object": "OrderItem", "nth": 4},
            "case": {"object": "Case", "where": {"Reviewer__c": {"not": None}}, "nth": 2},
        },
        "edits": [
            {"op": "set", "sel": "item", "field": "Fulfilment__c", "value": "Teleport"},
            {"op": "set", "sel": "case", "field": "Reviewer__c", "value": make_id("005", len(users) + 999)},
        ],
        "expect": [],
    }
    corrupted = corrupt(spec, builds.one, tmp_path / "bundle")
    report = validate_bundle(tmp_path / "bundle")
    found = {(f.rule, f.object, f.field, f.record) for f in report.findings}
    item, case = corrupted.refs["item"].row["Id"], corrupted.refs["case"].row["Id"]
    assert ("schema.picklist", "OrderItem", "Fulfilment__c", item) in found
    assert ("integrity.dangling-lookup", "Case", "Reviewer__c", case) in found
    assert report.exit_code == 1


def test_the_embedded_org_describes_and_queries_the_added_fields(
    builds: Builds, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MODEL_ENV, str(builds.model))
    try:
        sf = connect(builds.one)
        fields = {f["name"]: f for f in sf.OrderItem.describe()["fields"]}
        assert fields["Fulfilment__c"]["type"] == "picklist" and fields["Fulfilment__c"]["custom"] is True
        assert [p["value"] for p in fields["Fulfilment__c"]["picklistValues"]] == [
            "Warehouse",
            "Store",
            "Dropship",
        ]
        reviewer = {f["name"]: f for f in sf.Case.describe()["fields"]}["Reviewer__c"]
        assert reviewer["referenceTo"] == ["User"] and reviewer["relationshipName"] == "Reviewer__r"

        grouped = sf.query("SELECT Fulfilment__c, COUNT(Id) n FROM OrderItem GROUP BY Fulfilment__c")[
            "records"
        ]
        assert {r["Fulfilment__c"]: r["n"] for r in grouped} == dict(
            Counter(r["Fulfilment__c"] for r in rows(builds.one, "OrderItem"))
        )
        accounts = {r["Id"]: r for r in rows(builds.one, "Account")}
        cases = {r["Id"]: r for r in rows(builds.one, "Case")}
        served = sf.query_all("SELECT Id, Customer_Account__r.Name, Opened__c FROM Case")["records"]
        assert sorted(r["Id"] for r in served) == sorted(cases)
        for rec in served:
            account = accounts[cases[rec["Id"]]["Customer_Account__c"]]
            assert rec["Customer_Account__r"]["Name"] == f"{account['FirstName']} {account['LastName']}"
            assert rec["Opened__c"] == cases[rec["Id"]]["CreatedDate"]
        referred = sf.query(
            "SELECT COUNT() FROM Account WHERE Segment__c = 'Consumer' AND Referred_By__c != null"
        )
        assert referred["totalSize"] == len(accounts) - 1
    finally:
        disconnect(builds.one)
