"""The preflight's capacity arithmetic against hand-computed figures (seeding.md B8's per-record rules)."""

from __future__ import annotations

from orgs.salesforce.preflight import check_capacity, storage_needed_bytes

# the developer edition: 5 MB of data storage, 2 full licences (seeding.md B6, B8)
DEVELOPER = {"DataStorageMB": {"Max": 5, "Remaining": 5}}


def test_per_record_rules_by_hand() -> None:
    counts = {
        "Account": 10,
        "Case": 100,
        "Knowledge__kav": 5,
        "OrderItem": 999,
        "Product2": 50,
        "EmailMessage": 3,
    }
    # 110 records at 2 KB, 5 articles at 4 KB, 3 emails at their real 30,000 bytes, items and products free
    assert storage_needed_bytes(counts, email_bytes=30_000) == 110 * 2048 + 5 * 4096 + 30_000
    # without real sizes, emails count 2 KB each; 4 person accounts add 2 KB each
    assert storage_needed_bytes(counts, person_accounts=4) == 113 * 2048 + 5 * 4096 + 4 * 2048


def test_a_developer_org_is_refused_with_the_numbers() -> None:
    needed = storage_needed_bytes({"Case": 3000})  # 3,000 x 2 KB = 5.86 MB
    findings = check_capacity(needed, DEVELOPER, agents=20, licences_free=2)
    assert [f.check for f in findings] == ["storage", "licences"]
    assert "needs 5.9 MB, the org has 5.0 MB free (of 5 MB)" in findings[0].message
    assert "20 agents to create as active users, 2 licences free" in findings[1].message
    assert (findings[1].needed, findings[1].available) == (20, 2)


def test_a_bundle_that_fits_has_no_findings() -> None:
    assert check_capacity(storage_needed_bytes({"Case": 2560}), DEVELOPER, agents=2, licences_free=2) == []


def test_unreadable_limits_are_a_finding() -> None:
    (finding,) = check_capacity(0, {}, agents=0, licences_free=0)
    assert "Manage Users" in finding.message
