"""aws-cdk-lib and constructs are the ``cdk`` extra: the bare package (the client, the envelope type)
installs without them, and the construct, imported where they are missing or out of the extra's
ranges, raises ImportError saying what to install. (The wheel installed without aws-cdk-lib, its
client, envelope and demo used there: test_package_page.py.)

The checks run in this interpreter: a dependency is hidden as a bare install lacks it (``sys.modules``
maps it to None) or its version faked, and the package's construct exports, which it keeps once loaded,
are dropped from its namespace first, so that each import goes through the check as a first one does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency there reads TOML the same way
    import tomli as tomllib  # type: ignore[no-redef]
from importlib import metadata

import pytest

from construct_helpers import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


@pytest.fixture
def first_import(monkeypatch):
    """Drops the package's loaded construct exports (restored after the test), so the next import checks."""
    import cdk_delayed_scheduler

    for name in cdk_delayed_scheduler.__all__:
        monkeypatch.delitem(vars(cdk_delayed_scheduler), name, raising=False)
    return monkeypatch


def hide(monkeypatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)


def fake_version(monkeypatch, name: str, version: str) -> list[str]:
    """Report ``version`` as the installed version of the distribution ``name``; the names asked, in order."""
    real, asked = metadata.version, []

    def reported(dist: str) -> str:
        asked.append(dist)
        return version if dist == name else real(dist)

    monkeypatch.setattr(metadata, "version", reported)
    return asked


def import_error(statement: str) -> str:
    """The ImportError message ``statement`` raises."""
    with pytest.raises(ImportError) as raised:
        exec(statement, {})
    return str(raised.value)


def test_the_extra_declares_the_ranges_the_package_checks_and_the_core_install_has_no_cdk():
    from cdk_delayed_scheduler._cdk_required import REQUIREMENTS

    assert PROJECT["optional-dependencies"]["cdk"] == list(REQUIREMENTS)
    core = " ".join(PROJECT["dependencies"])
    assert "aws-cdk-lib" not in core and "constructs" not in core and "jsii" not in core


def test_each_construct_export_without_aws_cdk_lib_raises_import_error_naming_the_extra(first_import):
    hide(first_import, "aws_cdk")
    for statement in ("from cdk_delayed_scheduler import DelayedScheduler", "from cdk_delayed_scheduler import targets",
                      "import cdk_delayed_scheduler as s; s.SchedulerApi", "import cdk_delayed_scheduler as s; s.LogLevel"):
        message = import_error(statement)
        assert "aws-cdk-lib is not installed" in message, (statement, message)
        assert "pip install 'cdk-delayed-scheduler[cdk]'" in message and "'aws-cdk-lib>=2.269.0,<3'" in message


def test_without_constructs_the_message_names_constructs(first_import):
    hide(first_import, "constructs")
    message = import_error("from cdk_delayed_scheduler import DelayedScheduler")
    assert message.startswith("cdk_delayed_scheduler.DelayedScheduler needs the 'cdk' extra: constructs is not installed")


@pytest.mark.parametrize("installed", ["2.268.9", "2.100.0", "3.0.0"])
def test_an_aws_cdk_lib_outside_the_range_is_refused_with_the_installed_and_needed_versions(first_import, installed):
    fake_version(first_import, "aws-cdk-lib", installed)
    message = import_error("from cdk_delayed_scheduler import DelayedScheduler")
    assert f"aws-cdk-lib {installed} is installed, and the construct needs aws-cdk-lib>=2.269.0,<3" in message


def test_a_constructs_below_its_floor_is_refused(first_import):
    fake_version(first_import, "constructs", "10.4.2")
    message = import_error("from cdk_delayed_scheduler import targets")
    assert "constructs 10.4.2 is installed, and the construct needs constructs>=10.5.1,<11" in message


def test_a_release_in_range_loads_the_construct(first_import):
    asked = fake_version(first_import, "aws-cdk-lib", "2.999.1")
    from cdk_delayed_scheduler import DelayedScheduler

    assert "aws-cdk-lib" in asked
    assert DelayedScheduler.__module__ == "cdk_delayed_scheduler.scheduler"


@pytest.mark.slow  # a child process: only a fresh interpreter shows what importing the package alone loads
def test_the_client_and_the_envelope_import_where_aws_cdk_lib_cannot():
    code = """
        import json, sys
        sys.modules['aws_cdk'] = sys.modules['constructs'] = None
        import cdk_delayed_scheduler
        from cdk_delayed_scheduler.client import SchedulerClient
        from cdk_delayed_scheduler.envelope import Envelope
        print(json.dumps(sorted(name for name in dir(cdk_delayed_scheduler) if not name.startswith('_'))))
    """
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) >= {"DelayedScheduler", "SchedulerApi", "targets", "client", "envelope"}
