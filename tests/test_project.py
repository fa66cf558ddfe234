"""The repository's generated files are current: regenerating them changes nothing. Test modules import no
other test module: what several of them use lives in a helper module beside them."""

import ast
import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FREE_OF_TEST_MODULE_IMPORTS = ["tests"]
"""Where no module imports a test module (``test_*.py``), but for the imports allowed below."""
ALLOWED_TEST_MODULE_IMPORTS = {
    # docs/testing.md's example app keeps its tests in docs/examples/test_reminders.py, as a user's project
    # would; this module imports them so that pytest collects and runs them as written there.
    ("tests/testing/test_example_app.py", "test_reminders"),
    # and its example of a suite on moto's mock_aws, in docs/examples/test_orders.py, the same way.
    ("tests/testing/test_example_with_mock_aws.py", "test_orders"),
}
"""(module, the test module it imports) pairs the check accepts, each for the reason given beside it."""
GENERATED_BY_PROJEN = ["pyproject.toml", ".gitignore", ".gitattributes", ".projen/tasks.json", ".projen/deps.json", ".projen/files.json"]


@pytest.mark.slow  # a child process: projen (.projenrc.py, on jsii's node)
def test_projen_regenerates_the_committed_files_unchanged(tmp_path):
    shutil.copy(ROOT / ".projenrc.py", tmp_path / ".projenrc.py")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    env = {**os.environ, "PROJEN_DISABLE_POST": "1", "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run([sys.executable, ".projenrc.py"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    stale = [name for name in GENERATED_BY_PROJEN if not filecmp.cmp(ROOT / name, tmp_path / name, shallow=False)]
    assert stale == [], f"regenerate with ./dev projen: {stale}"


def imported_test_modules(source: str) -> list[tuple[int, str]]:
    """The test modules (a dotted name with a ``test_*`` part) that ``source`` imports: (line, the name it imports)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            names = [base] if node.module else [base + alias.name for alias in node.names]
        else:
            continue
        found += [(node.lineno, name) for name in names if any(part.startswith("test_") for part in name.split("."))]
    return sorted(found)


def test_the_import_check_finds_each_way_of_importing_a_test_module():
    source = """
from .test_periodic_handlers import put
from . import test_groups, dispatching
from tests.client.test_imports import run_python
import test_reminders
from ..e2e.test_cli import Running
from .dispatching import dispatch
from cdk_delayed_scheduler.testing import pytest_plugin
import pytest

def inside():
    from .test_redrive import park
"""
    assert [name for _, name in imported_test_modules(source)] == [
        ".test_periodic_handlers", ".test_groups", "tests.client.test_imports", "test_reminders", "..e2e.test_cli",
        ".test_redrive"]


def test_no_module_in_the_checked_test_directories_imports_a_test_module():
    found = [(path.relative_to(ROOT).as_posix(), line, name)
             for directory in FREE_OF_TEST_MODULE_IMPORTS for path in sorted((ROOT / directory).rglob("*.py"))
             for line, name in imported_test_modules(path.read_text())]
    refused = [f"{module}:{line}: {name}" for module, line, name in found
               if (module, name) not in ALLOWED_TEST_MODULE_IMPORTS]
    assert refused == [], f"move what these share into a helper module beside them and import it from there: {refused}"
    assert {(module, name) for module, _, name in found} == ALLOWED_TEST_MODULE_IMPORTS, "an allowed import is gone"
