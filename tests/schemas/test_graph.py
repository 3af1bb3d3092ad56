"""The dependency graph: every lookup's parent comes first, ties break by name, cycles follow the policy."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from schemas.errors import ModelError
from schemas.graph import build_graph, load_plan
from schemas.model import SCHEMA_DIR, load_model


def test_every_parent_precedes_its_children() -> None:
    model = load_model()
    order = load_plan(model).order
    assert sorted(order) == sorted(model.names)
    for obj in model:
        for f in obj.lookups:
            for target in f.reference_to:
                if target in model.objects and target != obj.name:
                    assert order.index(target) < order.index(obj.name), f"{obj.name}.{f.name}"


def test_order_is_stable_and_lexicographic_among_ready_objects() -> None:
    # Worked out by hand from the lookups: objects with no pending parents are taken in name order.
    expected = (
        "Account", "Issue__c", "Knowledge__kav", "Pricebook2", "Order", "Product2", "PricebookEntry", "OrderItem",
        "ProductCategory", "ProductCategoryProduct", "User", "Contact", "Case", "CaseHistory__c", "EmailMessage",
        "LiveChatTranscript",
    )  # fmt: skip
    assert load_plan(load_model()).order == expected
    assert load_plan(load_model()).deferred == ()


def test_org_provided_lookups_are_not_edges() -> None:
    g = build_graph(load_model())
    assert "Profile" not in g.nodes


def _model_with(tmp_path: Path, edits: dict[str, dict[str, tuple[dict[str, Any], bool]]]) -> Path:
    root = tmp_path / "schemas"
    shutil.copytree(SCHEMA_DIR, root, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    for sobject, fields in edits.items():
        path = root / "objects" / f"{sobject}.json"
        doc = json.loads(path.read_text())
        for name, (prop, required) in fields.items():
            doc["properties"][name] = prop
            if required:
                doc["required"].append(name)
        path.write_text(json.dumps(doc))
    return root


def _lookup(target: str, prefix: str, rel: str) -> dict[str, Any]:
    return {
        "type": ["string", "null"],
        "pattern": f"^{prefix}[0-9A-Za-z]{{15}}$",
        "x-sf": {
            "type": "reference",
            "label": rel,
            "description": rel,
            "referenceTo": [target],
            "relationshipName": rel,
        },
    }


def test_self_lookup_is_deferred(tmp_path: Path) -> None:
    root = _model_with(tmp_path, {"Account": {"ParentId": (_lookup("Account", "001", "Parent"), False)}})
    plan = load_plan(load_model(root))
    assert [(d.sobject, d.field, d.reason) for d in plan.deferred] == [("Account", "ParentId", "self")]


def test_cycle_defers_the_first_nillable_lookup(tmp_path: Path) -> None:
    # User.HomeAccount__c → Account and Account.Agent__c → User form a 2-cycle. Both are nillable, so the
    # lexicographically first (child, field), (Account, Agent__c), is deferred and Account loads first.
    root = _model_with(
        tmp_path,
        {
            "User": {"HomeAccount__c": (_lookup("Account", "001", "HomeAccount__r"), False)},
            "Account": {"Agent__c": (_lookup("User", "005", "Agent__r"), False)},
        },
    )
    plan = load_plan(load_model(root))
    assert [(d.sobject, d.field, d.reason) for d in plan.deferred] == [("Account", "Agent__c", "cycle")]
    assert plan.order.index("Account") < plan.order.index("User")


def test_cycle_of_required_lookups_is_refused(tmp_path: Path) -> None:
    root = _model_with(
        tmp_path,
        {
            "User": {"HomeAccount__c": (_lookup("Account", "001", "HomeAccount__r"), True)},
            "Account": {"Agent__c": (_lookup("User", "005", "Agent__r"), True)},
        },
    )
    # The JSON-Schema type of a required lookup must not allow null; the loader only needs the `required` list.
    with pytest.raises(ModelError, match="cycle of required fields"):
        load_plan(load_model(root))


def test_ordering_edges_are_never_deferred(tmp_path: Path) -> None:
    # Account.Agent__c → User is a nillable lookup; "Account needs User's records" is an ordering edge (a generator
    # reading another object's frame). The lookup is deferred, so User comes first.
    root = _model_with(tmp_path, {"Account": {"Agent__c": (_lookup("User", "005", "Agent__r"), False)}})
    model = load_model(root)
    plain = load_plan(model)
    assert plain.deferred == () and plain.order.index("User") < plain.order.index("Account")
    plan = load_plan(model, after={"User": ["Account"]})
    assert [(d.sobject, d.field, d.reason) for d in plan.deferred] == [("Account", "Agent__c", "cycle")]
    assert plan.order.index("Account") < plan.order.index("User")
    with pytest.raises(ModelError, match="User needs Account's records"):
        load_plan(model, after={"User": ["Account"]}, deferrable=lambda f: False)
