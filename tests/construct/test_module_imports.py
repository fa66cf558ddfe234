"""The construct's modules import one another without a circle, and ``_nag`` (the acknowledgement
helper every module that makes a resource calls) imports none of them."""

from __future__ import annotations

import ast
from pathlib import Path

from construct_helpers import REPO

PACKAGE = REPO / "src" / "cdk_delayed_scheduler"


def _imports(path: Path) -> set[str]:
    """The package's own modules ``path`` imports, for a type checker too (``TYPE_CHECKING`` blocks count)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or node.level != 1:
            continue
        if node.module:
            found.add(node.module.split(".")[0])
        else:
            found.update(alias.name for alias in node.names)
    return found & {p.stem for p in PACKAGE.glob("*.py")}


def _graph() -> dict[str, set[str]]:
    return {path.stem: _imports(path) for path in PACKAGE.glob("*.py") if path.stem != "__init__"}


def test_the_construct_modules_import_without_a_circle():
    graph, done, path = _graph(), set(), []

    def visit(module: str) -> None:
        assert module not in path, f"import circle: {' -> '.join([*path[path.index(module):], module])}"
        if module in done:
            return
        path.append(module)
        for imported in sorted(graph.get(module, ())):
            visit(imported)
        path.pop()
        done.add(module)

    for module in sorted(graph):
        visit(module)
    assert {"scheduler", "_grants", "_nag"} <= done


def test_the_acknowledgement_helper_is_a_leaf():
    graph = _graph()
    assert graph["_nag"] == set()
    assert {module for module, imported in graph.items() if "_nag" in imported} >= {
        "_wiring", "_functions", "_grants", "_scheduler_apis"}
