"""The example app and the integration test, with the pinned CLI tools from integ/package.json.

- The pinned CLI is aws-cdk 2.x. (`npx cdk synth` itself is proven once, in test_packaging.py,
  on a fresh project that installs the built wheel.)
- `integ-runner` checks the committed snapshot of integ/integ_scheduler.py, offline. While the
  installed integ-runner cannot read the cloud assembly schema this aws-cdk-lib writes (found at
  run time: the schema revision integ-runner bundles against ``Manifest.version()``), that run is
  skipped and the same check runs through integ/snapshot.py instead, in a child process (this module
  run as a script: ``run``) that the test session starts as it begins (tests/conftest.py's
  ``EARLY_RUNS``).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from construct_helpers import REPO, early_result, print_result

pytestmark = pytest.mark.slow

INTEG = REPO / "integ"
NPX = shutil.which("npx")


def _env() -> dict:
    return {**os.environ, "CDK_DISABLE_CLI_TELEMETRY": "true", "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
            "CI": "true"}


def _snapshot_module():
    spec = importlib.util.spec_from_file_location("integ_snapshot", INTEG / "snapshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def node_tools():
    if NPX is None or not (INTEG / "node_modules" / ".bin" / "cdk").exists():
        pytest.fail("the pinned CDK CLI is not installed: run ./dev test (it runs npm ci in integ/)")
    return NPX


def test_the_pinned_cli_is_aws_cdk_2(node_tools):
    package = json.loads((INTEG / "package.json").read_text())
    assert package["devDependencies"]["aws-cdk"].startswith("2.")
    version = subprocess.run([node_tools, "cdk", "--version"], cwd=INTEG, env=_env(), capture_output=True,
                             text=True, check=True).stdout
    assert version.startswith(package["devDependencies"]["aws-cdk"]), version


#: The schema version file integ-runner's bundles embed, and its revision (the newest major it reads).
BUNDLED_SCHEMA_VERSION = re.compile(r'cloud-assembly-schema/schema/version\.json"\(exports\d*, module\d*\) \{[^}]*?revision: (\d+)', re.S)


def integ_runner_schema_major() -> int | None:
    """The newest cloud assembly schema major the installed integ-runner (and the CLI it bundles)
    can read, or None when its bundles do not say."""
    root = INTEG / "node_modules" / "@aws-cdk" / "integ-runner"
    revisions = [int(m) for path in (*root.glob("lib/**/*.js"), *root.glob("node_modules/aws-cdk/lib/*.js"))
                 for m in BUNDLED_SCHEMA_VERSION.findall(path.read_text(errors="replace"))]
    return min(revisions) if revisions else None


def written_schema_major() -> int:
    """The cloud assembly schema major this aws-cdk-lib writes."""
    from aws_cdk.cloud_assembly_schema import Manifest

    return int(Manifest.version().split(".")[0])


def schema_mismatch() -> str | None:
    readable = integ_runner_schema_major()
    if readable is not None and readable < written_schema_major():
        return f"integ-runner reads cloud assembly schema {readable}.x at most; aws-cdk-lib writes {written_schema_major()}.x"
    return None


def test_the_schema_versions_are_found():
    """The run-time detection reads real versions (the bundles' layout did not change under it)."""
    assert integ_runner_schema_major() is not None
    assert written_schema_major() >= 50


def test_integ_runner_accepts_the_snapshot(node_tools):
    mismatch = schema_mismatch()
    if mismatch:
        pytest.skip(f"{mismatch}: the snapshot is checked with integ/snapshot.py instead")
    result = subprocess.run(
        [node_tools, "integ-runner", "--language", "python", "--directory", ".", "--app", f"{sys.executable} {{filePath}}"],
        cwd=INTEG, env=_env(), capture_output=True, text=True, timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "integ_scheduler" in output, output[-2000:]


def run() -> dict[str, Any]:
    """Whether integ-runner cannot read this schema and, when it cannot, integ/snapshot.py's differences."""
    mismatch = schema_mismatch()
    if not mismatch:
        return {"mismatch": None, "differences": None}
    snapshot = _snapshot_module()
    (test,) = snapshot.tests()
    return {"mismatch": mismatch, "differences": snapshot.check(test)}


def test_integ_snapshot_is_current_by_snapshot_py():
    checked = early_result("integ", timeout=600)
    if not checked["mismatch"]:
        pytest.skip("integ-runner reads this cloud assembly schema: it checks the snapshot itself")
    assert checked["differences"] == []


def test_snapshot_check_reports_a_stale_snapshot():
    """The fallback check is live: a changed template is a difference."""
    snapshot = _snapshot_module()
    (test,) = snapshot.tests()
    committed = snapshot.comparable(snapshot.snapshot_dir(test))
    assert snapshot.differences(committed, committed) == []
    changed = copy.deepcopy(committed)
    template = changed["DelayedSchedulerInteg.template.json"]
    table = next(r for r in template["Resources"].values() if r["Type"] == "AWS::DynamoDB::Table")
    table["Properties"]["BillingMode"] = "PROVISIONED"
    diffs = snapshot.differences(committed, changed)
    assert len(diffs) == 1 and "BillingMode" in diffs[0]
    del changed["DelayedSchedulerInteg.template.json"]
    assert any("no longer synthesized" in d for d in snapshot.differences(committed, changed))


def test_integ_test_has_assertions():
    """The committed snapshot holds the IntegTest's assertions: create, wait for delivery, read back."""
    snapshot = _snapshot_module()
    (test,) = snapshot.tests()
    assert_templates = [p for p in snapshot.snapshot_dir(test).glob("*DeployAssert*.template.json")]
    (path,) = assert_templates
    resources = json.loads(path.read_text())["Resources"]
    kinds = sorted(r["Type"] for r in resources.values() if r["Type"].startswith("Custom::DeployAssert"))
    assert kinds == ["Custom::DeployAssert@SdkCallLambdainvoke", "Custom::DeployAssert@SdkCallLambdainvoke",
                     "Custom::DeployAssert@SdkCallSQSreceiveMessage"], kinds
    integ = json.loads((snapshot.snapshot_dir(test) / "integ.json").read_text())
    assert list(integ["testCases"]) == ["DelayedSchedulerIntegTest/DefaultTest"]


if __name__ == "__main__":
    print_result(run())
