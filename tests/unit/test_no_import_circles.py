"""No import circle inside the library (``src/cdk_delayed_scheduler``), the runtime (``lambda/scheduler_runtime``) or
the benchmarks (``bench``): each module's imports of the package's modules, read with ``ast`` (every import
statement, including those under ``if TYPE_CHECKING`` and inside functions), form a graph without a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"cdk_delayed_scheduler": ROOT / "src", "scheduler_runtime": ROOT / "lambda", "bench": ROOT}
"""Each package checked, and the folder it is imported from."""


def modules_of(root: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Each module of ``package`` (under ``root``), subpackages included: its file, and whether it is a package."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imported(node: ast.AST, package: str, modules: set[str]) -> set[str]:
    """The modules one import statement in a module of ``package`` names (``from . import x`` names ``x``)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names} & modules
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    named = {f"{base}.{alias.name}" for alias in node.names} & modules
    return named or ({base} & modules)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Each module of ``package`` -> the package's modules it imports (itself excluded)."""
    modules = modules_of(root, package)
    names = set(modules)
    graph: dict[str, set[str]] = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        home = name if is_package else name.rsplit(".", 1)[0]
        graph[name] = set().union(*(_imported(node, home, names) for node in ast.walk(tree))) - {name}
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


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_has_no_import_circle(package):
    found = cycles(import_graph(PACKAGES[package], package))
    assert not found, "import circles: " + "; ".join(" -> ".join(cycle) for cycle in found)


def test_the_circle_finder_sees_a_circle_through_a_type_checking_import_in_a_subpackage(tmp_path):
    sub = tmp_path / "pkg" / "sub"
    sub.mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "top.py").write_text("from .sub import a\n")
    (sub / "__init__.py").write_text("from .a import A\n")
    (sub / "a.py").write_text("from .b import B\nclass A: ...\n")
    (sub / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..sub.a import A\nclass B: ...\n")
    graph = import_graph(tmp_path, "pkg")
    assert graph["pkg.top"] == {"pkg.sub.a"}
    assert cycles(graph) == [["pkg.sub.a", "pkg.sub.b", "pkg.sub.a"]]
