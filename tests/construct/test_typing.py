"""Editors and type checkers see the real types through the README's import
(``from cdk_delayed_scheduler import DelayedScheduler, targets``): pyright reports each of a new
user's common mistakes at its line, and a correct app is clean under strict checking.

One pyright run checks both sample apps in ``type_samples/`` and the README's targets example (its
``## Targets`` section's code, as written); the package is read from this
checkout's ``src``, aws-cdk-lib from the development environment. It is a child process (this module
run as a script: ``run``), which the test session starts as it begins (tests/conftest.py's
``EARLY_RUNS``); the tests assert on what it reported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from construct_helpers import REPO, early_result, print_result, readme_block

pytestmark = pytest.mark.slow

SAMPLES = Path(__file__).resolve().parent / "type_samples"
README_TARGETS = "readme_targets.py"


def readme_targets_example() -> str:
    return readme_block("Targets")


def run() -> dict[str, Any]:
    """pyright over both samples and the README's targets example: the files it analysed, and
    {file name: [(line, message), ...]} of its errors."""
    with tempfile.TemporaryDirectory(prefix="pyright-") as project:
        readme_sample = Path(project) / README_TARGETS
        readme_sample.write_text(readme_targets_example(), encoding="utf-8")
        (Path(project) / "pyrightconfig.json").write_text(json.dumps({
            "extraPaths": [str(REPO / "src")],
            "pythonVersion": f"{sys.version_info.major}.{sys.version_info.minor}",
        }))
        env = {**os.environ, "PYRIGHT_PYTHON_IGNORE_WARNINGS": "1"}
        result = subprocess.run([str(Path(sys.executable).with_name("pyright")), "--outputjson", "--pythonpath",
                                 sys.executable, "--project", project, *map(str, sorted(SAMPLES.glob("*.py"))),
                                 str(readme_sample)],
                                capture_output=True, text=True, timeout=600, env=env)
    report = json.loads(result.stdout)
    found: dict[str, list[tuple[int, str]]] = {}
    for d in report["generalDiagnostics"]:
        if d["severity"] == "error":
            found.setdefault(Path(d["file"]).name, []).append((d["range"]["start"]["line"] + 1, d["message"]))
    return {"files_analyzed": report["summary"]["filesAnalyzed"], "errors": found, "output": result.stdout[-2000:]}


@pytest.fixture(scope="module")
def diagnostics() -> dict[str, list[tuple[int, str]]]:
    """{sample file name: [(line, message), ...]} of pyright's errors."""
    reported = early_result("typing", timeout=900)
    assert reported["files_analyzed"] == 3, reported["output"]
    return {name: [(line, message) for line, message in errors] for name, errors in reported["errors"].items()}


def test_each_mistake_is_reported_at_its_line(diagnostics):
    lines = (SAMPLES / "app_with_mistakes.py").read_text().splitlines()
    marked = [n for n, line in enumerate(lines, 1) if line.rstrip().endswith("# mistake")]
    assert len(marked) == 13
    reported = diagnostics.get("app_with_mistakes.py", [])
    assert sorted({line for line, _ in reported}) == marked, reported


def test_the_messages_name_the_prop_and_its_type(diagnostics):
    messages = dict(diagnostics["app_with_mistakes.py"])
    lines = (SAMPLES / "app_with_mistakes.py").read_text().splitlines()
    by_text = {lines[n - 1].strip(): text for n, text in messages.items()}

    def about(fragment: str) -> str:
        return next(text for line, text in by_text.items() if fragment in line)

    assert '"target" of type "IScheduleTarget"' in about("target=fn)")
    assert '"delay_window" of type "Duration | None"' in about("delay_window=900")
    assert '"log_level" of type "LogLevel | None"' in about('"VERBOSE"')
    assert 'No parameter named "perod"' in about("perod=")


def test_a_correct_app_is_clean_under_strict_checking(diagnostics):
    assert diagnostics.get("correct_app.py", []) == []


def test_the_readme_targets_example_type_checks_as_written(diagnostics):
    assert "HttpsEndpoint" in readme_targets_example()
    assert diagnostics.get(README_TARGETS, []) == []


if __name__ == "__main__":
    print_result(run())
