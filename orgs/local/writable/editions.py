"""Editions of an empty org: the limits and features a new org of each kind starts with.

Figures and their sources (`../shared/reference/seeding.md` Part B unless noted):
- data storage: Developer Edition 5 MB, scratch org 200 MB (B8); Enterprise Edition 10 GB (Salesforce's
  storage allocations page: 10 GB per org plus 20 MB per user licence; the per-user share is left out);
- Salesforce user licences: Developer Edition 2 (B6); scratch orgs about 3 to 5 usable users (B6, CRMArena's
  experience), so 5; Enterprise: as bought, 100 here;
- daily API requests: Developer Edition 15,000 (Salesforce's API request allocations); scratch orgs as
  Developer Edition; Enterprise 100,000 plus 1,000 per Salesforce licence;
- features: a new org has Knowledge, Chat and Person Accounts off; a scratch-org definition or the org's
  settings switch them on (`metadata.py` deploys `Knowledge.settings`, `LiveAgent.settings`); Person Accounts
  cannot be switched on once an org exists, so they are an edition option (`person_accounts`).

Storage is counted by Salesforce's per-record rules (B8): 2 KB per record, 4 KB per article and per Person
Account, an email message by its size; products, price books and price book entries count nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Literal

EditionName = Literal["developer", "scratch", "enterprise"]
EDITIONS: tuple[EditionName, ...] = ("developer", "scratch", "enterprise")
DuplicateRule = Literal["off", "alert", "block"]

RECORD_BYTES = 2048
ARTICLE_BYTES = 4096
PERSON_ACCOUNT_BYTES = 4096
FREE_OBJECTS = frozenset({"Product2", "Pricebook2", "PricebookEntry"})
# setup objects never count against data storage
SETUP_OBJECTS = frozenset(
    {"Organization", "Profile", "PermissionSet", "PermissionSetAssignment", "UserLicense"}
)


@dataclass(frozen=True)
class Edition:
    """What an empty org allows. Every knob can be overridden (`serve --empty ... --data-storage-mb`)."""

    name: EditionName
    data_storage_mb: float
    salesforce_licenses: int
    daily_api_requests: int
    knowledge: bool = False
    chat: bool = False
    person_accounts: bool = False
    # knobs a loader must cope with: an active duplicate rule on Contact email, and row-lock contention
    # between batches of one Bulk job that touch the same parent
    duplicate_rule: DuplicateRule = "off"
    lock_contention: bool = False

    def with_changes(self, **changes: Any) -> Edition:
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def edition(name: str) -> Edition:
    """The edition called `name` (one of EDITIONS)."""
    if name == "developer":
        return Edition("developer", data_storage_mb=5, salesforce_licenses=2, daily_api_requests=15_000)
    if name == "scratch":
        return Edition("scratch", data_storage_mb=200, salesforce_licenses=5, daily_api_requests=15_000)
    if name == "enterprise":
        return Edition(
            "enterprise", data_storage_mb=10_240, salesforce_licenses=100, daily_api_requests=200_000
        )
    raise ValueError(f"unknown edition {name!r}: use one of {', '.join(EDITIONS)}")


def record_bytes(sobject: str, record: dict[str, Any], person_accounts: bool = False) -> int:
    """The data storage one record takes, by Salesforce's per-record rules."""
    if sobject in FREE_OBJECTS or sobject in SETUP_OBJECTS:
        return 0
    if sobject == "Knowledge__kav":
        return ARTICLE_BYTES
    if sobject == "Account" and person_accounts:
        return PERSON_ACCOUNT_BYTES
    if sobject == "EmailMessage":
        size = sum(len(str(v).encode()) for v in record.values() if v is not None)
        return max(RECORD_BYTES, size)
    return RECORD_BYTES
