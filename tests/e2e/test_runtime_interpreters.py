"""The runtime's tests on the Python its functions run on by default, and on the oldest SDK it is
supported with, each in a virtual environment of its own beside ``.venv`` (gitignored):

- ``.venv-py<X.Y>``: the Python of ``DEFAULT_RUNTIME`` (python3.13) with every package at the version
  uv.lock pins; tests/unit and tests/handlers run there.
- ``.venv-py<X.Y>-botocore<V>``: the same Python, with boto3 and botocore at the floor this package
  declares (``botocore>=1.34`` in pyproject.toml: 1.34.0) and the rest as uv.lock pins it;
  tests/handlers run there. AWS does not publish the SDK version its python3.13 runtime includes
  (docs/runtime.md, "Interpreters and SDK versions"), so the handlers are tested at both ends of the
  range the package allows: the floor here, uv.lock's botocore in every other run.

Each environment is built when missing, or when uv.lock or the interpreter changed (a stamp file
keyed on both), and reused as it is otherwise. The interpreter is found on PATH, under pyenv or by
uv, and never downloaded; a machine without it fails the test, naming what to install.

The builds and both runs are one child process (this module run as a script: ``run``), which the
test session starts as it begins (tests/conftest.py's ``EARLY_RUNS``); the tests assert on what it
printed."""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency there reads TOML the same way
    import tomli as tomllib  # type: ignore[no-redef]
from pathlib import Path
from typing import Any

import botocore
import pytest

CONSTRUCT = Path(__file__).resolve().parents[1] / "construct"
if str(CONSTRUCT) not in sys.path:
    sys.path.insert(0, str(CONSTRUCT))

from construct_helpers import REPO, early_result, print_result, uv_env  # noqa: E402
from wheel_install import UV, user_env  # noqa: E402

#: The SDK packages set to the floor; the others uv.lock pins stay. s3transfer and urllib3 follow
#: boto3's and botocore's own requirements (the floor's accept neither uv.lock's s3transfer nor its urllib3).
SDK_PACKAGES = ("boto3", "botocore", "s3transfer", "urllib3")
RUNS = {"locked": ("tests/unit", "tests/handlers"), "sdk_floor": ("tests/handlers",)}
"""What runs in each environment: ``locked`` (uv.lock's packages), ``sdk_floor`` (boto3 and botocore at the floor)."""


def default_python() -> str:
    """The Python version of the functions' default runtime: ``3.13`` for ``python3.13``."""
    from cdk_delayed_scheduler._functions import DEFAULT_RUNTIME

    return DEFAULT_RUNTIME.name.removeprefix("python")


def sdk_floor() -> str:
    """The botocore floor pyproject.toml declares for the package, as a full version (``1.34`` -> ``1.34.0``)."""
    dependencies = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    (floor,) = [m.group(1) for d in dependencies if (m := re.fullmatch(r"botocore>=([0-9.]+)", d.replace(" ", "")))]
    return ".".join((floor.split(".") + ["0", "0"])[:3])


def find_python(version: str) -> Path | None:
    """An interpreter of ``version`` on this machine: on PATH, under pyenv, or one uv finds (never downloaded)."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    found = subprocess.run([str(UV), "python", "find", version], capture_output=True, text=True, env=uv_env())
    under_pyenv = sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"), reverse=True)
    candidates = [shutil.which(f"python{version}"), *under_pyenv, found.stdout.strip() if found.returncode == 0 else None]
    for candidate in filter(None, candidates):
        probe = subprocess.run([str(candidate), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return Path(candidate)
    return None


def locked_requirements() -> str:
    """uv.lock's packages, every extra and the development group, as requirements (the project itself editable)."""
    command = [str(UV), "export", "--frozen", "--all-extras", "--no-hashes", "--format", "requirements-txt"]
    return subprocess.run(command, cwd=REPO, check=True, capture_output=True, text=True, env=uv_env()).stdout


def with_sdk(requirements: str, version: str) -> str:
    """``requirements`` with boto3 and botocore at ``version`` (a matching pair), and the packages whose
    versions follow them left to the resolver."""
    kept = [line for line in requirements.splitlines() if not line.startswith(tuple(f"{p}==" for p in SDK_PACKAGES))]
    return "\n".join([*kept, f"boto3=={version}", f"botocore=={version}", ""])


def environment(name: str, python: Path, requirements: str) -> Path:
    """``REPO/.venv-<name>`` holding ``requirements`` on ``python``: built when missing or when either changed,
    else reused as it is. A lock keeps concurrent runs apart."""
    venv = REPO / f".venv-{name}"
    key = hashlib.sha256(f"{python.resolve()}\n{requirements}".encode()).hexdigest()[:16]
    lock = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-{hashlib.sha256(bytes(venv)).hexdigest()[:12]}.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        if not (venv / f".built-{key}").exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([str(UV), "venv", "-q", "--python", str(python), str(venv)], check=True, env=uv_env())
            (venv / "requirements.txt").write_text(requirements)
            subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "-r",
                            str(venv / "requirements.txt")], cwd=REPO, check=True, env=uv_env())
            (venv / f".built-{key}").touch()
    return venv


def run_tests(venv: Path, paths: tuple[str, ...]) -> dict[str, Any]:
    """pytest over ``paths`` with ``venv``'s Python: its versions, exit code, last line, wall and CPU seconds."""
    python = str(venv / "bin" / "python")
    env = {k: v for k, v in user_env().items() if not k.startswith("PYTEST_")}  # not a worker of this session
    versions = subprocess.run([python, "-c", "import platform, botocore; print(platform.python_version(), "
                               "botocore.__version__)"], check=True, capture_output=True, text=True, env=env)
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.monotonic()
    result = subprocess.run([python, "-m", "pytest", *paths, "-p", "no:cacheprovider", "-n", "2", "-q"],
                            cwd=REPO, capture_output=True, text=True, env=env, timeout=1200)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    python_version, botocore_version = versions.stdout.split()
    return {"python": python_version, "botocore": botocore_version, "code": result.returncode,
            "summary": result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "",
            "tail": (result.stdout + result.stderr)[-4000:], "wall": round(time.monotonic() - start, 1),
            "cpu": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)}


def run() -> dict[str, Any]:
    version, floor = default_python(), sdk_floor()
    python = find_python(version)
    if python is None:
        return {"error": f"no Python {version} on this machine (PATH, pyenv, uv): the full tier runs the runtime's "
                         f"tests on it; install it (pyenv install {version}, or uv python install {version})"}
    locked = locked_requirements()
    venvs = {"locked": environment(f"py{version}", python, locked),
             "sdk_floor": environment(f"py{version}-botocore{floor}", python, with_sdk(locked, floor))}
    return {"version": version, "floor": floor, **{name: run_tests(venvs[name], RUNS[name]) for name in RUNS}}


@pytest.fixture(scope="module")
def outcome() -> dict[str, Any]:
    result = early_result("runtime_interpreters", timeout=1800)
    assert "error" not in result, result.get("error")
    return result


def _passed(run_result: dict[str, Any]) -> int:
    """How many tests passed, once the run ended with none failed."""
    assert run_result["code"] == 0, run_result["tail"]
    assert not re.search(r"\b(failed|errors?)\b", run_result["summary"]), run_result["summary"]
    return int(re.search(r"(\d+) passed", run_result["summary"]).group(1))


@pytest.mark.slow
def test_the_runtimes_unit_and_handler_tests_pass_on_the_default_runtimes_python(outcome):
    locked = outcome["locked"]
    assert outcome["version"] == default_python() == "3.13"
    assert locked["python"].startswith(f"{outcome['version']}.")
    assert locked["botocore"] == botocore.__version__  # uv.lock's, as in this session
    assert _passed(locked) >= 900  # tests/unit and tests/handlers (979 when written)


@pytest.mark.slow
def test_the_handler_tests_pass_on_the_default_runtimes_python_with_the_oldest_botocore_supported(outcome):
    floor = outcome["sdk_floor"]
    assert outcome["floor"] == sdk_floor() == "1.34.0"
    assert (floor["python"].rsplit(".", 1)[0], floor["botocore"]) == (outcome["version"], outcome["floor"])
    assert _passed(floor) >= 300  # tests/handlers (354 when written)


if __name__ == "__main__":
    print_result(run())
