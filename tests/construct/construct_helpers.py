"""Helpers for the construct tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable

REPO = Path(__file__).resolve().parents[2]
INTEG = REPO / "integ"

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
os.environ.setdefault("CDK_DISABLE_CLI_TELEMETRY", "true")


def load_example_app():
    """``integ/app.py`` as a module (it is not a package)."""
    spec = importlib.util.spec_from_file_location("delayed_scheduler_example_app", INTEG / "app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def resources_of(template: dict, cfn_type: str) -> dict:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == cfn_type}


def only(template: dict, cfn_type: str, contains: str = "") -> tuple[str, dict]:
    found = {k: v for k, v in resources_of(template, cfn_type).items() if contains in k}
    assert len(found) == 1, f"expected one {cfn_type} with {contains!r} in its id, got {sorted(found)}"
    return next(iter(found.items()))


def acknowledged(construct) -> dict[str, set[str]]:
    """{construct path: cdk-nag 3 rule ids acknowledged on it} under ``construct`` (CDK's native
    validation acknowledgements)."""
    import aws_cdk as cdk

    found: dict[str, set[str]] = {}
    for node in construct.node.find_all():
        for entry in node.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                found.setdefault(node.node.path, set()).update(r.removeprefix("Annotation::") for r in entry.data)
    return found


def uv_env() -> dict[str, str]:
    """The environment for ``uv`` runs that build throwaway environments."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    return env


def cached_dir(name: str, key: str, build: Callable[[Path], None]) -> Path:
    """A directory under the temp dir, built once per ``key`` (a lock keeps parallel runs apart)."""
    path = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-{name}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    with open(f"{path}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (path / ".ready").exists():
            subprocess.run(["rm", "-rf", str(path)], check=True)
            build(path)
            (path / ".ready").touch()
    return path


def uv_venv(name: str, requirements: list[str]) -> Path:
    """A cached virtual environment with the development Python and exactly ``requirements``."""
    uv = str(Path(sys.executable).with_name("uv"))

    def build(path: Path) -> None:
        subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(path)], check=True, env=uv_env())
        subprocess.run([uv, "pip", "install", "-q", "--python", str(path / "bin" / "python"), *requirements],
                       check=True, env=uv_env())

    return cached_dir(name, f"{sys.version}|{sorted(requirements)}", build)
