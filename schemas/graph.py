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

Generation uses the same plan (`generator.pipeline.generation_plan`) with two additions: a generator that reads
another object's records without a lookup adds an ordering edge (`after`, never deferred), and only a lookup
filled by a rule of the model (`x-sf.generate`) may be deferred, because generator code reads its parents'
records. A deferred rule lookup is filled once its target has been generated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

import networkx as nx

from schemas.errors import ModelError
from schemas.model import FieldSpec, OrgModel

AFTER = "(after)"  # the key of a non-lookup ordering edge (no field name can hold parentheses)


@dataclass(frozen=True)
class DeferredLookup:
    sobject: str
    field: str
    target: str
    reason: Literal["self", "cycle"]


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


def load_plan(
    model: OrgModel,
    after: Mapping[str, Iterable[str]] | None = None,
    deferrable: Callable[[FieldSpec], bool] | None = None,
) -> LoadPlan:
    """The order to load (or generate) the objects in, and the lookups deferred to break cycles (see above).

    `after` maps an object to objects it must follow although it has no lookup to them; those edges are never
    deferred. `deferrable` narrows which nillable lookups may be deferred (default: every nillable lookup).
    """
    g = build_graph(model)
    for child, parents in (after or {}).items():
        for parent in parents:
            if parent != child:
                g.add_edge(parent, child, key=AFTER, field=None, nillable=False)
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
            (child, key, parent)
            for parent, child, key in cycle
            if key != AFTER
            and g.edges[parent, child, key]["nillable"]
            and (deferrable is None or deferrable(model.get(child).field(key)))
        )
        if not candidates:
            path = " → ".join(
                f"{c} needs {p}'s records" if k == AFTER else f"{c}.{k} → {p}" for p, c, k in cycle
            )
            if deferrable is None:
                raise ModelError(
                    f"The lookups {path} form a cycle of required fields, which cannot be loaded in any order. "
                    "Make one of them nillable so it can be filled by a deferred update."
                )
            raise ModelError(
                f"The lookups {path} form a cycle that cannot be generated in any order: generator code fills "
                "each of them and reads the records they point at. Make one of them a nillable lookup filled by "
                "a rule (x-sf.generate), which is filled once its target is generated."
            )
        child, key, parent = candidates[0]
        deferred.append(DeferredLookup(child, key, parent, "cycle"))
        g.remove_edge(parent, child, key=key)
    order = tuple(nx.lexicographical_topological_sort(nx.DiGraph(g)))
    return LoadPlan(order=order, deferred=tuple(deferred))
