"""The dependency graph of the org model and its load order.

Edges run parent → child for every lookup between two objects of the bundle (lookups to org-provided
objects such as Profile are not edges). The order is `lexicographical_topological_sort`, so ties break
by name and the order never depends on dict or set iteration.

Cycle policy (written down because seeding depends on it):
1. A self-lookup (`Account.ParentId → Account`) is never an ordering edge. The field is inserted empty and
   filled by a deferred update step after the object is loaded.
2. A cycle between objects is broken by deferring lookups that are nillable: among the cycle's edges the
   one whose (child, field) is lexicographically first is deferred, and this repeats until the graph is
   acyclic. A cycle made only of required lookups cannot be loaded and is a ModelError.
Deferred lookups are returned as data (`LoadPlan.deferred`) so tests and the seeder can assert on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from schemas.errors import ModelError
from schemas.model import OrgModel


@dataclass(frozen=True)
class DeferredLookup:
    sobject: str
    field: str
    target: str
    reason: str  # "self" or "cycle"


@dataclass(frozen=True)
class LoadPlan:
    order: tuple[str, ...]
    deferred: tuple[DeferredLookup, ...]

    def position(self, name: str) -> int:
        return self.order.index(name)


def build_graph(model: OrgModel) -> nx.MultiDiGraph:
    """parent → child edges, one per lookup field, keyed by the field name."""
    g = nx.MultiDiGraph()
    for o in model:
        g.add_node(o.name)
    for o in model:
        for f in o.lookups:
            for target in f.reference_to:
                if target in model.objects:
                    g.add_edge(target, o.name, key=f.name, field=f.name, nillable=f.nillable)
    return g


def load_plan(model: OrgModel) -> LoadPlan:
    g = build_graph(model)
    deferred: list[DeferredLookup] = []
    for parent, child, key in sorted(g.edges(keys=True)):
        if parent == child:
            deferred.append(DeferredLookup(child, key, parent, "self"))
            g.remove_edge(parent, child, key=key)
    while True:
        try:
            cycle = nx.find_cycle(g)
        except nx.NetworkXNoCycle:
            break
        candidates = sorted(
            (child, key, parent) for parent, child, key in cycle if g.edges[parent, child, key]["nillable"]
        )
        if not candidates:
            path = " → ".join(f"{p}.{k}" for p, _c, k in cycle)
            raise ModelError(
                f"The lookups {path} form a cycle of required fields, which cannot be loaded in any order. "
                "Make one of them nillable so it can be filled by a deferred update.",
            )
        child, key, parent = candidates[0]
        deferred.append(DeferredLookup(child, key, parent, "cycle"))
        g.remove_edge(parent, child, key=key)
    order = tuple(nx.lexicographical_topological_sort(nx.DiGraph(g)))
    return LoadPlan(order=order, deferred=tuple(deferred))
