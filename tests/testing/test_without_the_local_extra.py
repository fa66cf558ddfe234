"""A bare install (no ``local`` extra: no moto, Flask, boto3 or rich): the kit's fixture, the kit itself,
``cdk-delayed-scheduler local`` and ``demo`` stop at once with one message naming the extra, and a pytest
run that does not use the fixture is untouched.

The bare install is this environment with the extra's modules hidden: a ``sitecustomize`` on the child's
path marks them missing, in the child and in every process it starts (the engine's moto child included),
as a real bare install would."""

from __future__ import annotations

import re
import subprocess
import sys
import time
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency there reads TOML the same way
    import tomli as tomllib  # type: ignore[no-redef]
from pathlib import Path

import pytest

from cdk_delayed_scheduler._local_required import DISTRIBUTIONS

from ..base_install import without_modules

REPO = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).with_name("cdk-delayed-scheduler")
INSTALL = "pip install 'cdk-delayed-scheduler[local]'"
HIDDEN = ("boto3", "moto", "flask", "flask_cors", "rich")
#: Each run must end well before the engine's 30 s wait for a moto child that cannot start.
FAST_SECONDS = 15


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return without_modules(tmp_path_factory.mktemp("bare-install"), HIDDEN)


def _run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    result = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    return result, time.monotonic() - started


@pytest.mark.slow  # a child process: the bare install is a child's environment
def test_the_extra_s_modules_are_hidden_in_the_bare_environment(bare_env, tmp_path):
    probe, _ = _run([sys.executable, "-c", "import moto"], bare_env, tmp_path)
    assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr


def test_the_checked_distributions_are_the_local_extra_s():
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    names = {re.match(r"[A-Za-z0-9_.-]+", requirement).group() for requirement in extra}
    assert names == set(DISTRIBUTIONS)


@pytest.mark.slow  # a child process: the bare install is a child's environment
@pytest.mark.parametrize("command", [["local", "--port", "0"], ["demo", "--timers", "2"]])
def test_local_and_demo_say_to_install_the_local_extra_and_start_nothing(bare_env, tmp_path, command):
    result, seconds = _run([str(SCRIPT), *command], bare_env, tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert seconds < FAST_SECONDS
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: cdk-delayed-scheduler {command[0]} needs the 'local' extra: ")
    assert "moto" in line and INSTALL in line and "Traceback" not in result.stderr
    assert ("rich" in line) == (command[0] == "demo")


@pytest.mark.slow  # a child process: the bare install is a child's environment
def test_recover_stream_runs_in_a_base_install(bare_env, tmp_path):
    """It only invokes the enqueuer, which botocore does: it reads its message before anything else."""
    result, seconds = _run([str(SCRIPT), "recover-stream", "--destination-message", "not json"], bare_env, tmp_path)
    assert (result.returncode, result.stderr.strip().splitlines()) == (
        2, ["error: --destination-message is not JSON: Expecting value: line 1 column 1 (char 0)"]), result.stderr
    assert seconds < FAST_SECONDS


@pytest.mark.slow  # a child process: a pytest run in the bare install
def test_the_fixture_fails_with_the_message_and_a_test_without_it_passes(bare_env, tmp_path):
    (tmp_path / "test_user.py").write_text(
        "def test_plain():\n"
        "    assert True\n\n"
        "def test_timers(local_scheduler):\n"
        "    pass\n")
    result, seconds = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                            "-p", "no:xdist", "test_user.py"], bare_env, tmp_path)
    assert "1 passed, 1 error" in result.stdout, result.stdout + result.stderr
    assert seconds < FAST_SECONDS
    assert (f"the local_scheduler fixture needs the 'local' extra: boto3, moto, flask, flask-cors are not installed. "
            f"Install it with {INSTALL}.") in result.stdout
    assert "zygote" not in result.stdout and "Traceback" not in result.stdout


@pytest.mark.slow  # a child process: the bare install is a child's environment
def test_the_kit_and_the_engine_raise_module_not_found_naming_the_extra(bare_env, tmp_path):
    code = ("from cdk_delayed_scheduler.{module} import {name}\n"
            "try:\n"
            "    {call}\n"
            "except ModuleNotFoundError as missing:\n"
            "    print(missing.name, missing)\n")
    for module, name, call in (("testing", "local_scheduler", "local_scheduler().__enter__()"),
                               ("local", "Engine", "Engine().start()")):
        result, seconds = _run([sys.executable, "-c", code.format(module=module, name=name, call=call)],
                               bare_env, tmp_path)
        assert result.returncode == 0 and seconds < FAST_SECONDS, result.stderr
        assert result.stdout.startswith("boto3 ") and INSTALL in result.stdout, result.stdout
