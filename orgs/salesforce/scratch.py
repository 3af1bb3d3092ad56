"""The scratch-org definition a bundle needs (`sf org create scratch --definition-file FILE`).

Built from the objects the bundle holds with records (its manifest's `counts`); each feature and setting comes
from the reference's checklist (`shared/reference/seeding.md` part B): Knowledge needs the `Knowledge` feature
and Lightning Knowledge on; chat transcripts need `LiveAgent`; orders need `orderSettings.enableOrders`; audit
dates (CreatedDate and the like) need `securitySettings.enableAuditFieldsInactiveOwner`. A pure function: the
CLI writes the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def scratch_definition(
    counts: Mapping[str, int], org_name: str = "orgseed benchmark org", person_accounts: bool = False
) -> dict[str, Any]:
    """The scratch-org definition (JSON-ready) for a bundle whose manifest counts are `counts`
    (`person_accounts`: its accounts are people, which needs the PersonAccounts feature, seeding.md B13)."""
    has = {name for name, n in counts.items() if n > 0}
    features: list[str] = ["PersonAccounts"] if person_accounts else []
    settings: dict[str, Any] = {
        # every loaded object keeps its historical dates: the audit-fields preference
        "securitySettings": {"enableAuditFieldsInactiveOwner": True},
    }
    if "Knowledge__kav" in has:
        features.append("Knowledge")
        settings["knowledgeSettings"] = {
            "enableKnowledge": True,
            "enableLightningKnowledge": True,
            "defaultLanguage": "en_US",
        }
    if "LiveChatTranscript" in has:
        features.append("LiveAgent")
        settings["liveAgentSettings"] = {"enableLiveAgent": True}
    if "Order" in has or "OrderItem" in has:
        settings["orderSettings"] = {"enableOrders": True}
    return {
        "orgName": org_name,
        "edition": "Enterprise",  # Developer edition: 5 MB of data storage, too small for a default bundle
        "features": sorted(features),
        "settings": dict(sorted(settings.items())),
    }
