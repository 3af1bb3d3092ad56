"""The preflight's storage and licence arithmetic (issue 12 item 2), pure functions over numbers the caller reads
from the bundle and the org (`/limits`, `UserLicense`), so the verdict can be checked by hand.

Salesforce's per-record storage rules (seeding.md B8, from help article 000193871): most records 2 KB whatever
their fields; Person Accounts and Knowledge articles 4 KB; EmailMessage its real size; order line items free;
products, price books and price book entries not counted. An email's real size is estimated from its bytes in
the bundle's CSV row (at least 2 KB), the caller summing them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

KB = 1024
DEFAULT_KB = 2
PER_RECORD_KB: dict[str, int] = {"Knowledge__kav": 4, "PersonAccount": 4, "Campaign": 8, "CampaignMember": 1}
FREE = frozenset({"OrderItem", "Product2", "Pricebook2", "PricebookEntry"})


@dataclass(frozen=True)
class Finding:
    """One thing to fix before an upload can succeed (needed vs available, and what to do)."""

    check: str
    needed: float
    available: float
    message: str


def storage_needed_bytes(counts: Mapping[str, int], email_bytes: int = 0, person_accounts: int = 0) -> int:
    """Data storage the bundle will use, in bytes. `counts`: records per object (the manifest's); `email_bytes`:
    the summed real sizes of the EmailMessage records (replaces their per-record charge); `person_accounts`: how
    many of the Accounts are Person Accounts (4 KB instead of 2)."""
    total = 0
    for name, n in counts.items():
        if name in FREE or n <= 0:
            continue
        if name == "EmailMessage" and email_bytes:
            total += email_bytes
            continue
        total += n * PER_RECORD_KB.get(name, DEFAULT_KB) * KB
    return total + person_accounts * (PER_RECORD_KB["PersonAccount"] - DEFAULT_KB) * KB


def check_capacity(
    needed_bytes: int, limits: Mapping[str, Any], agents: int, licences_free: int
) -> list[Finding]:
    """Everything too small in the org: data storage against `/limits`' `DataStorageMB.Remaining`, and the agents
    to create as users against the free user licences. Empty when the bundle fits."""
    findings: list[Finding] = []
    storage = limits.get("DataStorageMB")
    if not isinstance(storage, Mapping) or "Remaining" not in storage:
        findings.append(
            Finding(
                "storage",
                needed_bytes / KB / KB,
                0,
                "The org's /limits gave no DataStorageMB (the API user needs the Manage Users permission to read "
                "it); grant it so the preflight can check storage.",
            )
        )
    else:
        need_mb = needed_bytes / KB / KB
        remaining = float(storage["Remaining"])
        if need_mb > remaining:
            findings.append(
                Finding(
                    "storage",
                    need_mb,
                    remaining,
                    f"Data storage: the bundle needs {need_mb:.1f} MB, the org has {remaining:.1f} MB free "
                    f"(of {storage.get('Max', '?')} MB). Use a scratch org (200 MB) or a sandbox, or build a "
                    "smaller bundle (--scale).",
                )
            )
    if agents > licences_free:
        findings.append(
            Finding(
                "licences",
                agents,
                licences_free,
                f"User licences: {agents} agents to create as active users, {licences_free} licences free. Add "
                "licences, or upload with --inactive-agents (inactive users hold no licence).",
            )
        )
    return findings
