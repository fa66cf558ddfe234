"""No import circle inside ``cdk_delayed_scheduler.local``: each module's imports of its siblings, read
with ``ast`` (every import statement, including those under ``if TYPE_CHECKING`` and inside functions),
form a graph without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import cdk_delayed_scheduler.local

PACKAGE = "cdk_delayed_scheduler.local"
FOLDER = Path(next(iter(cdk_delayed_scheduler.local.__path__)))


def _module_name(path: Path) -> str:
    return PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"


def _imported(node: ast.AST, importer: str, modules: set[str]) -> set[str]:
    """The package's modules one import statement names (``from . import x`` names ``x``)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & modules
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        parts = (importer if importer == PACKAGE else importer.rsplit(".", 1)[0]).split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    named = {f"{base}.{alias.name}" for alias in node.names} & modules
    return named or ({base} & modules)


def import_graph(folder: Path) -> dict[str, set[str]]:
    """Each module of the package -> the sibling modules it imports (itself and the package excluded)."""
    paths = sorted(folder.glob("*.py"))
    modules = {_module_name(path) for path in paths}
    graph: dict[str, set[str]] = {}
    for path in paths:
        importer = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[importer] = set().union(*(_imported(node, importer, modules) for node in ast.walk(tree))) - {importer, PACKAGE}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected group of modules (depth-first, the path back to a module on the stack)."""
    found: list[list[str]] = []
    done: set[str] = set()

    def visit(module: str, stack: list[str]) -> None:
        if module in stack:
            found.append(stack[stack.index(module):] + [module])
            return
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, [*stack, module])
        done.add(module)

    for module in sorted(graph):
        visit(module, [])
    return found


def test_the_local_engine_has_no_import_circle():
    found = cycles(import_graph(FOLDER))
    assert not found, "import circles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_the_circle_finder_sees_a_circle_through_a_type_checking_import(tmp_path):
    (tmp_path / "__init__.py").write_text("from .a import A\n")
    (tmp_path / "a.py").write_text("from .b import B\nclass A: ...\n")
    (tmp_path / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\nclass B: ...\n")
    (tmp_path / "c.py").write_text("from . import a\n")
    graph = import_graph(tmp_path)
    assert graph[f"{PACKAGE}.c"] == {f"{PACKAGE}.a"}
    assert cycles(graph) == [[f"{PACKAGE}.a", f"{PACKAGE}.b", f"{PACKAGE}.a"]]
