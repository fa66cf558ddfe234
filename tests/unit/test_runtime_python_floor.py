"""The runtime runs on Python 3.10, the oldest the package supports (the local engine and the kit run it in the
user's interpreter): no syntax and no standard-library name that came later."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "lambda" / "scheduler_runtime"
LATER = {
    "typing": {"Self", "LiteralString", "Never", "NotRequired", "Required", "TypeVarTuple", "Unpack", "assert_never",
               "assert_type", "reveal_type", "dataclass_transform", "override", "TypeAliasType", "get_overloads"},
    "enum": {"StrEnum", "ReprEnum", "EnumCheck", "verify", "global_enum", "member", "nonmember"},
    "datetime": {"UTC"},
}
"""Names of the standard library that Python 3.11 or later added, by module."""
LATER_MODULES = {"tomllib", "wsgiref.types"}


def later_names(source: str) -> list[str]:
    """What ``source`` imports that Python 3.10 does not have; a SyntaxError if 3.10 cannot parse it."""
    tree = ast.parse(source, feature_version=(3, 10))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in LATER:
            found += [f"{node.module}.{alias.name}" for alias in node.names if alias.name in LATER[node.module]]
        elif isinstance(node, ast.ImportFrom) and node.module in LATER_MODULES:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if alias.name in LATER_MODULES]
    return found


def test_no_runtime_module_needs_a_python_later_than_3_10():
    offending = {str(path.relative_to(RUNTIME)): names for path in sorted(RUNTIME.rglob("*.py"))
                 if (names := later_names(path.read_text(encoding="utf-8")))}
    assert offending == {}


def test_the_check_finds_a_later_name_and_a_later_module():
    assert later_names("from typing import Any, Self\nimport tomllib\nfrom enum import StrEnum\n") == [
        "typing.Self", "tomllib", "enum.StrEnum"]
    assert later_names("from typing import TYPE_CHECKING, Any\n") == []
