"""aws-cdk-lib and constructs are the ``cdk`` extra: the bare package (the client, the envelope type)
installs without them, and the construct, imported where they are missing or out of the extra's
ranges, raises ImportError saying what to install. (The wheel installed without aws-cdk-lib, its
client, envelope and demo used there: test_package_page.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import tomllib

from construct_helpers import REPO

PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def python(code: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter (the lazy exports cache what they load), with the checkout's sources."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")})


def import_error(prelude: str, statement: str) -> str:
    """The ImportError message ``statement`` raises after ``prelude`` (which hides or fakes a dependency)."""
    done = python(prelude + textwrap.dedent(f"""
        try:
            {statement}
        except ImportError as error:
            print(error)
        else:
            raise SystemExit("no ImportError")
    """))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def faked_version(name: str, version: str) -> str:
    """A prelude that reports ``version`` as the installed version of the distribution ``name``."""
    return textwrap.dedent(f"""
        from importlib import metadata
        real = metadata.version
        metadata.version = lambda dist: {version!r} if dist == {name!r} else real(dist)
    """)


def test_the_extra_declares_the_ranges_the_package_checks_and_the_core_install_has_no_cdk():
    from cdk_delayed_scheduler._cdk_required import REQUIREMENTS

    assert PROJECT["optional-dependencies"]["cdk"] == list(REQUIREMENTS)
    core = " ".join(PROJECT["dependencies"])
    assert "aws-cdk-lib" not in core and "constructs" not in core and "jsii" not in core


def test_each_construct_export_without_aws_cdk_lib_raises_import_error_naming_the_extra():
    hide = "import sys\nsys.modules['aws_cdk'] = None\n"
    for statement in ("from cdk_delayed_scheduler import DelayedScheduler", "from cdk_delayed_scheduler import targets",
                      "import cdk_delayed_scheduler as s; s.SchedulerApi", "import cdk_delayed_scheduler as s; s.LogLevel"):
        message = import_error(hide, statement)
        assert "aws-cdk-lib is not installed" in message, (statement, message)
        assert "pip install 'cdk-delayed-scheduler[cdk]'" in message and "'aws-cdk-lib>=2.269.0,<3'" in message


def test_without_constructs_the_message_names_constructs():
    message = import_error("import sys\nsys.modules['constructs'] = None\n",
                           "from cdk_delayed_scheduler import DelayedScheduler")
    assert message.startswith("cdk_delayed_scheduler.DelayedScheduler needs the 'cdk' extra: constructs is not installed")


def test_an_aws_cdk_lib_outside_the_range_is_refused_with_the_installed_and_needed_versions():
    for installed in ("2.268.9", "2.100.0", "3.0.0"):
        message = import_error(faked_version("aws-cdk-lib", installed), "from cdk_delayed_scheduler import DelayedScheduler")
        assert f"aws-cdk-lib {installed} is installed, and the construct needs aws-cdk-lib>=2.269.0,<3" in message


def test_a_constructs_below_its_floor_is_refused():
    message = import_error(faked_version("constructs", "10.4.2"), "from cdk_delayed_scheduler import targets")
    assert "constructs 10.4.2 is installed, and the construct needs constructs>=10.5.1,<11" in message


def test_the_client_and_the_envelope_import_where_aws_cdk_lib_cannot():
    done = python("""
        import json, sys
        sys.modules['aws_cdk'] = sys.modules['constructs'] = None
        import cdk_delayed_scheduler
        from cdk_delayed_scheduler.client import SchedulerClient
        from cdk_delayed_scheduler.envelope import Envelope
        print(json.dumps(sorted(name for name in dir(cdk_delayed_scheduler) if not name.startswith('_'))))
    """)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)) >= {"DelayedScheduler", "SchedulerApi", "targets", "client", "envelope"}


def test_a_release_in_range_loads_the_construct():
    done = python(faked_version("aws-cdk-lib", "2.999.1") + "from cdk_delayed_scheduler import DelayedScheduler\n"
                  "print(DelayedScheduler.__module__)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cdk_delayed_scheduler.scheduler"
