"""Python run in a child process with the package's sources first on its path: what a fresh interpreter
imports, and code run in an environment of the test's choosing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEAVY = ("aws_cdk", "constructs", "jsii", "boto3")


def run_python(code: str, environ: Mapping[str, str] = os.environ) -> subprocess.CompletedProcess:
    """``python -c code`` with the client's sources first on the path, in ``environ`` (default: this one)."""
    env = {**environ, "PYTHONPATH": SRC}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


def imports_none_of(module: str, absent: tuple[str, ...]) -> subprocess.CompletedProcess:
    return run_python(f"import {module}, sys; "
                      f"assert not any(m.startswith({absent!r}) for m in sys.modules), "
                      f"sorted(m for m in sys.modules if m.startswith({absent!r}))")
