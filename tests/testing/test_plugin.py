"""The pytest plugin: registered by the package's entry point, and free until a test uses its fixture
(pytest loads it in every run of every project that installs the package, this one's included)."""

import json
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

HEAVY = ("moto", "boto3", "botocore", "scheduler_runtime", "cdk_delayed_scheduler.local", "aws_cdk", "jsii")
PROBE = """
import json, sys, threading
import cdk_delayed_scheduler.testing.pytest_plugin
heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))
print(json.dumps({{"heavy": heavy, "threads": threading.active_count()}}))
"""


def test_the_package_registers_the_plugin_with_pytest(request):
    (registered,) = [e for e in entry_points(group="pytest11") if e.name == "cdk-delayed-scheduler"]
    assert registered.value == "cdk_delayed_scheduler.testing.pytest_plugin"
    assert request.config.pluginmanager.has_plugin("cdk-delayed-scheduler")
    assert any(line.startswith("local_scheduler(") for line in request.config.getini("markers"))


@pytest.mark.slow  # a child process: only a fresh interpreter shows what loading the plugin imports and starts
def test_loading_the_plugin_imports_no_engine_no_aws_sdk_and_starts_nothing():
    probe = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY)], capture_output=True, text=True,
                           check=True)
    assert json.loads(probe.stdout) == {"heavy": [], "threads": 1}


@pytest.mark.slow  # a child process: a pytest run of its own
def test_the_marker_takes_keyword_options_only(tmp_path):
    (tmp_path / "test_user.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.local_scheduler('TIMERS_API')\n"
        "def test_with_a_positional_option(local_scheduler):\n"
        "    pass\n")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                             "-n", "0", "test_user.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "@pytest.mark.local_scheduler takes keyword options only, got ('TIMERS_API',)" in result.stdout
