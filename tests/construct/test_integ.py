"""The example app and the integration test, with the pinned CLI tools from integ/package.json.

- `npx cdk synth` synthesizes the example app with the pinned aws-cdk 2.x CLI.
- `integ-runner` checks the committed snapshot of integ/integ_scheduler.py, offline. While
  integ-runner cannot read this aws-cdk-lib's cloud assembly (schema 55; integ-runner
  2.197.10 reads 53 at most), the same check runs through integ/snapshot.py instead; any other
  integ-runner failure fails the test.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
INTEG = REPO / "integ"
NPX = shutil.which("npx")
SCHEMA_MISMATCH = "Cloud assembly schema version mismatch"


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


def test_example_app_synthesizes_with_npx_cdk_synth(node_tools, tmp_path):
    result = subprocess.run(
        [node_tools, "cdk", "synth", "--no-notices", "--quiet", "--app", f"{sys.executable} app.py",
         "--output", str(tmp_path)],
        cwd=INTEG, env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    template = json.loads((tmp_path / "DelayedSchedulerExample.template.json").read_text())
    types = {r["Type"] for r in template["Resources"].values()}
    assert {"AWS::DynamoDB::Table", "AWS::Lambda::Function", "AWS::ApiGatewayV2::Api"} <= types


def test_integ_snapshot_is_current(node_tools):
    result = subprocess.run(
        [node_tools, "integ-runner", "--language", "python", "--directory", ".", "--app", f"{sys.executable} {{filePath}}"],
        cwd=INTEG, env=_env(), capture_output=True, text=True, timeout=600,
    )
    output = result.stdout + result.stderr
    if result.returncode == 0:
        assert "integ_scheduler" in output, output[-2000:]
        return
    assert SCHEMA_MISMATCH in output, output[-4000:]
    warnings.warn("integ-runner cannot read aws-cdk-lib's cloud assembly schema yet; checked with integ/snapshot.py",
                  stacklevel=1)
    snapshot = _snapshot_module()
    (test,) = snapshot.tests()
    assert snapshot.check(test) == []


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
