"""The wheel as a user gets it: built from this checkout, installed into a fresh virtual environment
at the locked versions, and run outside the checkout (test_packaging.py, test_package_page.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from construct_helpers import REPO

UV = Path(sys.executable).with_name("uv")


def user_env(**extra: str) -> dict[str, str]:
    """The environment of a user outside this checkout: none of the variables that would point
    Python at the checkout's sources or venv (``PYTHONPATH``, ``VIRTUAL_ENV``, ``PYTHONHOME``), nor the
    suite's bytecode cache (``PYTHONPYCACHEPREFIX``, tests/__init__.py): a user's bytecode lands beside
    the installed modules."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONPYCACHEPREFIX")}
    env.update(JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", CDK_DISABLE_CLI_TELEMETRY="true", **extra)
    return env


def build_wheel(outdir: Path) -> Path:
    subprocess.run([str(Path(sys.executable).with_name("hatchling")), "build", "-t", "wheel", "-d", str(outdir)],
                   cwd=REPO, check=True, capture_output=True, text=True)
    (built,) = outdir.glob("cdk_delayed_scheduler-*.whl")
    return built


def install_wheel(wheel: Path, root: Path, extras: str) -> Path:
    """A fresh virtual environment under ``root`` holding ``wheel[extras]`` and what it depends on, at
    the versions uv.lock pins (as a user's lock would pin them)."""
    venv = root / "venv"
    env = user_env(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env)
    constraints = root / "constraints.txt"
    exported = subprocess.run([str(UV), "export", "--frozen", "--no-dev", "--all-extras", "--no-hashes",
                               "--no-emit-project", "--format", "requirements-txt"], cwd=REPO, check=True,
                              capture_output=True, text=True, env=env).stdout
    constraints.write_text(exported)
    subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "-c", str(constraints),
                    f"{wheel}[{extras}]"], check=True, env=env, cwd=root)
    return venv


def site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python3*/site-packages")
    return found


def megabytes(path: Path) -> int:
    """``du -sm path``: the disk space under ``path``, in MiB, as installed: without the bytecode that running
    from it may add beside the modules (whether it does depends on the interpreter's settings, not the install)."""
    return int(subprocess.run(["du", "-sm", "--exclude=__pycache__", str(path)], check=True, capture_output=True,
                              text=True).stdout.split()[0])
