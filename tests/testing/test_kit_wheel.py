"""The kit as a user installs it: the wheel with the ``local`` extra in a fresh virtual environment,
and docs/testing.md's example (docs/examples/) run there by pytest from a folder outside the checkout.
The example's test asks for the ``local_scheduler`` fixture and nothing registers it but the
package's ``pytest11`` entry point.

The build, the install and the run are one child process (this module run as a script: ``run``),
which the test session starts as it begins (tests/conftest.py's ``EARLY_RUNS``); the test asserts on
what it found."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

CONSTRUCT = Path(__file__).resolve().parents[1] / "construct"
if str(CONSTRUCT) not in sys.path:
    sys.path.insert(0, str(CONSTRUCT))

from construct_helpers import REPO, early_result, print_result  # noqa: E402
from wheel_install import UV, build_wheel, install_wheel, user_env  # noqa: E402

EXAMPLES = REPO / "docs" / "examples"


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kit-wheel-") as tmp:
        root = Path(tmp)
        venv = install_wheel(build_wheel(root / "dist"), root / "user", "local")
        # pytest is the user's own choice, not a dependency of the package: the version this suite runs
        subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"),
                        f"pytest=={pytest.__version__}"], check=True, env=user_env(UV_NO_PROGRESS="1"), cwd=root)
        project = root / "project"
        project.mkdir()
        for name in ("reminders.py", "test_reminders.py"):
            shutil.copy(EXAMPLES / name, project / name)
        result = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider", "-v"],
                                cwd=project, env=user_env(), capture_output=True, text=True, timeout=600)
        return {"code": result.returncode, "stdout": result.stdout[-4000:], "stderr": result.stderr[-2000:]}


@pytest.mark.slow
def test_the_example_passes_with_the_fixture_the_installed_wheel_registers():
    outcome = early_result("kit_wheel", timeout=900)
    assert outcome["code"] == 0, outcome["stdout"] + outcome["stderr"]
    assert "plugins: cdk-delayed-scheduler-" in outcome["stdout"]
    assert "2 passed" in outcome["stdout"]


if __name__ == "__main__":
    print_result(run())
