"""The scratch-org definition: each feature/setting present exactly when the bundle holds its object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orgs.salesforce.scratch import scratch_definition

# object -> (features, settings keys) it needs, from seeding.md part B (B3 Knowledge, B4 chat, Orders)
NEEDS = {
    "Knowledge__kav": ({"Knowledge"}, {"knowledgeSettings"}),
    "LiveChatTranscript": ({"LiveAgent"}, {"liveAgentSettings"}),
    "Order": (set(), {"orderSettings"}),
}


@pytest.mark.parametrize("present", [(), ("Knowledge__kav",), ("LiveChatTranscript", "Order"), tuple(NEEDS)])
def test_features_follow_the_objects(present: tuple[str, ...]) -> None:
    counts = {"Account": 5, "Case": 3, **{name: (1 if name in present else 0) for name in NEEDS}}
    d = scratch_definition(counts)
    assert set(d["features"]) == set().union(*(NEEDS[n][0] for n in present))
    assert set(d["settings"]) == {"securitySettings"} | set().union(*(NEEDS[n][1] for n in present))
    assert d["settings"]["securitySettings"] == {"enableAuditFieldsInactiveOwner": True}


def test_the_small_bundle_needs_knowledge_chat_and_orders(small_bundle: Path) -> None:
    counts = json.loads((small_bundle / "manifest.json").read_text())["counts"]
    d = scratch_definition(counts)
    expected = {n for n in NEEDS if counts.get(n, 0) > 0}
    assert expected == set(NEEDS)  # the small profile has articles, chats and orders
    assert {"Knowledge": "Knowledge__kav" in expected, "LiveAgent": "LiveChatTranscript" in expected} == {
        f: f in d["features"] for f in ("Knowledge", "LiveAgent")
    }
    assert ("orderSettings" in d["settings"]) == ("Order" in expected)
