"""Types as a gate: the runtime (``lambda/scheduler_runtime``, checked from ``lambda/`` as Lambda imports it),
the package (``src/cdk_delayed_scheduler``, the runtime beside it on ``MYPYPATH``), and every Python
example of the README and the docs (each block a module, as written: ``doc_examples.py``) pass
``mypy --strict``.

mypy's cache lives under the system's temp directory, one per mypy version, never in the
repository: a cache inside ``lambda/`` would sit beside the functions' code. mypy checks each cached
module against its source, so the cache changes how long a run takes, never what it reports. Cold,
the package's check reads aws-cdk-lib's type information (a few CPU-minutes); warm, a few seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mypy.version
import pytest

from .doc_examples import located, write_modules

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-mypy-{mypy.version.__version__}"
pytestmark = pytest.mark.slow  # a child process: mypy, run as the gate runs it


def _mypy(target: str, cwd: Path, cache: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--ignore-missing-imports", "--no-error-summary",
         "--cache-dir", str(CACHE / cache), target],
        cwd=cwd, capture_output=True, text=True, timeout=900, env={**os.environ, **env})


@pytest.mark.parametrize(("target", "cwd", "env"), [
    pytest.param("scheduler_runtime", ROOT / "lambda", {}, id="runtime"),
    pytest.param("src/cdk_delayed_scheduler", ROOT, {"MYPYPATH": str(ROOT / "lambda")}, id="package"),
])
def test_mypy_strict_reports_nothing(target: str, cwd: Path, env: dict[str, str]) -> None:
    result = _mypy(target, cwd, target.rsplit("/", 1)[-1], **env)
    assert result.returncode == 0 and not result.stdout.strip(), result.stdout[-6000:] + result.stderr[-2000:]


def test_the_gate_fails_on_a_type_error(tmp_path: Path) -> None:
    """The same command reports a function that returns the wrong type (so the gate above can fail)."""
    (tmp_path / "wrong.py").write_text("def half(n: int) -> int:\n    return n / 2\n")
    result = _mypy("wrong.py", tmp_path, "probe")
    assert result.returncode == 1 and "wrong.py:2: error: Incompatible return value type" in result.stdout, result.stdout


def test_every_readme_and_docs_example_passes_mypy_strict(tmp_path: Path) -> None:
    written, unknown = write_modules(tmp_path)
    assert unknown == [], "examples use names that neither they nor doc_examples.CONTEXT give"
    # the package's check's path and cache: the examples read the package and aws-cdk-lib as it does
    path = os.pathsep.join(map(str, (tmp_path, ROOT / "src", ROOT / "lambda")))
    result = _mypy(".", tmp_path, "cdk_delayed_scheduler", MYPYPATH=path)
    assert len(written) >= 30  # every block of the README and docs/*.md (36 when this was written)
    assert result.returncode == 0 and not result.stdout.strip(), located(result.stdout, written)[-6000:] + result.stderr[-2000:]
