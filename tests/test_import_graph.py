"""The project's packages import each other without cycles, counting imports inside functions.

The graph is built from the source (an ast walk of every `import` and `from ... import`, at any depth,
`if TYPE_CHECKING:` blocks excepted since they never run); module `a` depends on `b` when `a` imports `b` or
a name from it. networkx lists the simple cycles; there must be none.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

from tests.conftest import REPO

PACKAGES = ("schemas", "generator", "validators", "orgs", "evals", "flows")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, module: str, is_package: bool) -> list[tuple[str, tuple[str, ...]]]:
    """Every import in `tree` as (module, names imported from it; () for `import m`), relative imports
    resolved, TYPE_CHECKING blocks skipped."""
    found: list[tuple[str, tuple[str, ...]]] = []
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = module.split(".")
                parent = parent if is_package else parent[:-1]
                parent = parent[: len(parent) - (node.level - 1)]
                base = ".".join([*parent, base] if base else parent)
            found.append((base, tuple(alias.name for alias in node.names)))
    return found


def import_graph() -> nx.DiGraph:
    files = {_module_name(p): p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for module, path in files.items():
        tree = ast.parse(path.read_text(), str(path))
        for base, names in _imports(tree, module, path.name == "__init__.py"):
            # `from pkg import sub` depends on the submodule pkg.sub; `from m import name` on m
            subs = [f"{base}.{n}" for n in names if f"{base}.{n}" in files]
            for target in subs or [base]:
                if target in files and target != module:
                    graph.add_edge(module, target)
    return graph


def test_the_graph_sees_imports_inside_functions() -> None:
    tree = ast.parse("def f():\n    from generator.pipeline import generate\n    import orgs.bundle\n")
    assert sorted(_imports(tree, "flows.x", False)) == [
        ("generator.pipeline", ("generate",)),
        ("orgs.bundle", ()),
    ]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from flows.build import X\n")
    assert _imports(tree, "flows.x", False) == [("typing", ("TYPE_CHECKING",))]
    tree = ast.parse("from . import ast\nfrom ..errors import QueryError\n")
    assert _imports(tree, "orgs.local.soql.parser", False) == [
        ("orgs.local.soql", ("ast",)),
        ("orgs.local.errors", ("QueryError",)),
    ]


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert graph.number_of_edges() > 100  # the walk found the project's imports
    cycles = sorted(sorted(c) for c in nx.simple_cycles(graph))
    assert cycles == [], f"{len(cycles)} import cycle(s), e.g. {' -> '.join(cycles[0])}"
