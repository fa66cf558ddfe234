"""The runtime imports only what Lambda's Python runtime provides: the standard library and the
AWS SDK for Python that the runtime ships.

Every module of ``scheduler_runtime`` is imported in a clean interpreter (``python -I``, so no
``PYTHONPATH``, user site or working directory; ``-B``, so no bytecode beside the functions' code)
of a throwaway virtual environment that holds nothing but boto3 and botocore (and their own
dependencies), with only the asset directory added to ``sys.path``. The development venv, which
every other test imports the handlers from, has far more (moto, rich, aws-cdk-lib...), so a stray
import there passes everything else.

``LAMBDA_SDK`` is the SDK of the newest Lambda Python runtime (python3.14); the environment is
built once per version under the temp directory and reused.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ASSET_DIR = REPO / "lambda"
LAMBDA_SDK = {"boto3": "1.40.4", "botocore": "1.40.4"}
# The development venv's base interpreter (Lambda's is 3.14; the runtime supports 3.10 and later).
PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
UV = Path(sys.executable).with_name("uv")
pytestmark = pytest.mark.slow  # child processes: a virtual environment of its own, and a clean interpreter in it

IMPORT_EVERY_MODULE = """
import importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
import botocore, scheduler_runtime
failed = {}
for info in pkgutil.walk_packages(scheduler_runtime.__path__, "scheduler_runtime."):
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed[info.name] = f"{type(exc).__name__}: {exc}"
print(json.dumps({"botocore": botocore.__version__, "modules": sorted(sys.modules), "failed": failed}))
"""


def _build(venv: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    subprocess.run([str(UV), "venv", "-q", "--python", str(PYTHON), str(venv)], check=True, env=env, timeout=120)
    pins = [f"{name}=={version}" for name, version in LAMBDA_SDK.items()]
    subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), *pins],
                   check=True, env=env, timeout=300)


@pytest.fixture(scope="module")
def lambda_python() -> Path:
    """A Python with only the standard library and Lambda's SDK, built once and cached."""
    tag = "-".join(f"{name}{version}" for name, version in LAMBDA_SDK.items())
    venv = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-lambda-sdk-{tag}"
    if not (venv / ".complete").exists():
        building = venv.with_name(f"{venv.name}.{os.getpid()}")
        shutil.rmtree(building, ignore_errors=True)
        _build(building)
        (building / ".complete").touch()
        shutil.rmtree(venv, ignore_errors=True)
        building.rename(venv)  # a concurrent build may have won; then both are complete
    return venv / "bin" / "python"


def import_every_module(python: Path, asset_dir: Path, cwd: Path) -> dict:
    result = subprocess.run([str(python), "-I", "-B", "-c", IMPORT_EVERY_MODULE, str(asset_dir)], cwd=cwd,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def test_every_runtime_module_imports_with_only_the_lambda_sdk(lambda_python, tmp_path):
    result = import_every_module(lambda_python, ASSET_DIR, tmp_path)
    assert result["botocore"] == LAMBDA_SDK["botocore"]
    assert result["failed"] == {}
    handlers = {m for m in result["modules"] if m.startswith("scheduler_runtime.handlers.")}
    assert {f"scheduler_runtime.handlers.{name}" for name in ("api", "sweeper", "enqueuer", "dispatcher")} <= handlers


def test_the_guard_catches_an_import_the_lambda_runtime_lacks(lambda_python, tmp_path):
    """The guard is live: a handler that imports a development-only package (importable in this
    venv) fails to import there."""
    import rich  # noqa: F401 - present in the development venv, so only the guard can catch it

    copy = tmp_path / "asset"
    shutil.copytree(ASSET_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    dispatcher = copy / "scheduler_runtime" / "handlers" / "dispatcher.py"
    source = dispatcher.read_text()
    assert source.count("from __future__ import annotations\n") == 1
    dispatcher.write_text(source.replace("from __future__ import annotations\n",
                                         "from __future__ import annotations\nimport rich\n"))
    result = import_every_module(lambda_python, copy, tmp_path)
    assert list(result["failed"]) == ["scheduler_runtime.handlers.dispatcher"]
    assert "No module named 'rich'" in result["failed"]["scheduler_runtime.handlers.dispatcher"]
