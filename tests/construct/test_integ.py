"""The example app and the integration tests, with the pinned CLI tools from integ/package.json.

- The pinned CLI is aws-cdk 2.x. (`npx cdk synth` itself is proven once, in test_packaging.py,
  on a fresh project that installs the built wheel.)
- `integ-runner` checks the committed snapshot of every integ/integ_*.py, offline. While the
  installed integ-runner cannot read the cloud assembly schema this aws-cdk-lib writes (found at
  run time: the schema revision integ-runner bundles against ``Manifest.version()``), that run is
  skipped and the same check runs through integ/snapshot.py instead, in a child process (this module
  run as a script: ``run``) that the test session starts as it begins (tests/conftest.py's
  ``EARLY_RUNS``).
- Each snapshot holds its test's assertions, written with integ-tests' own matchers, and the test
  functions' asset imports without aws-cdk-lib (what they run on Lambda is checked in
  test_integ_functions.py). integ/results.py, which reads the assertions' results after a deploy with
  the pinned CLI, fails on any failed one.
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


def _integ_module(name: str):
    """``integ/<name>.py`` as the module ``integ_<name>`` (integ/ is not a package)."""
    spec = importlib.util.spec_from_file_location(f"integ_{name}", INTEG / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _snapshot_module():
    return _integ_module("snapshot")


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
    """Whether integ-runner cannot read this schema and, when it cannot, integ/snapshot.py's differences
    for each test (one child process synthesizes them all)."""
    mismatch = schema_mismatch()
    if not mismatch:
        return {"mismatch": None, "differences": None}
    snapshot = _snapshot_module()
    return {"mismatch": mismatch, "differences": snapshot.check(snapshot.tests())}


def test_integ_snapshots_are_current_by_snapshot_py():
    checked = early_result("integ", timeout=900)
    if not checked["mismatch"]:
        pytest.skip("integ-runner reads this cloud assembly schema: it checks the snapshots itself")
    snapshot = _snapshot_module()
    assert sorted(checked["differences"]) == [test.name for test in snapshot.tests()]
    stale = {name: diffs[:5] for name, diffs in checked["differences"].items() if diffs}
    assert stale == {}, "regenerate with `cd integ && npm run integ:snapshot-update`"


def test_snapshot_check_reports_a_stale_snapshot():
    """The fallback check is live: a changed template is a difference."""
    snapshot = _snapshot_module()
    (test,) = snapshot.tests(["integ_scheduler.py"])
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


def _assertions(test: Path) -> dict[str, dict]:
    """The assertion resources (``Custom::DeployAssert@...``) in ``test``'s committed snapshot, by logical id."""
    snapshot = _snapshot_module()
    (path,) = snapshot.snapshot_dir(test).glob("*DeployAssert*.template.json")
    resources = json.loads(path.read_text())["Resources"]
    return {name: r for name, r in resources.items() if r["Type"].startswith("Custom::DeployAssert")}


def test_every_integ_test_has_a_snapshot_with_its_assertions():
    snapshot = _snapshot_module()
    tests = snapshot.tests()
    assert len(tests) >= 6, [t.name for t in tests]
    assert sorted(p.name for p in INTEG.glob("*.snapshot")) == sorted(f"{t.name}.snapshot" for t in tests)
    for test in tests:
        integ = json.loads((snapshot.snapshot_dir(test) / "integ.json").read_text())
        (case,) = integ["testCases"]
        assert case.endswith("/DefaultTest"), (test.name, case)
        assert len(_assertions(test)) >= 3, test.name


def foreign_matchers(value: Any, where: str = "") -> list[str]:
    """Where ``value`` (an assertion's decoded ``expected``) holds a matcher as aws_cdk.assertions serializes it
    (``{"name": "objectLike", "pattern": ...}``): integ-tests' handler reads only its own (``$ObjectLike``, ...)
    and compares such an object literally, so the assertion can never pass."""
    if isinstance(value, dict):
        found = [where or "/"] if {"name", "pattern"} <= set(value) else []
        return found + [f for key, inner in value.items() for f in foreign_matchers(inner, f"{where}/{key}")]
    if isinstance(value, list):
        return [f for index, inner in enumerate(value) for f in foreign_matchers(inner, f"{where}/{index}")]
    return []


def test_the_foreign_matcher_check_finds_aws_cdk_assertions_matchers():
    from aws_cdk import assertions
    from aws_cdk import integ_tests_alpha as integ

    foreign = integ.ExpectedResult.object_like({"Payload": assertions.Match.object_like({"statusCode": 201})})
    own = integ.ExpectedResult.object_like({"Payload": integ.Match.object_like({"statusCode": 201})})
    assert foreign_matchers(json.loads(foreign.result)) == ["/$ObjectLike/Payload"]
    assert foreign_matchers(json.loads(own.result)) == []


def test_every_expectation_uses_the_integ_tests_matchers():
    snapshot = _snapshot_module()
    found = [f"{test.name}:{name}{where}" for test in snapshot.tests()
             for name, resource in _assertions(test).items() if "expected" in resource["Properties"]
             for where in foreign_matchers(json.loads(resource["Properties"]["expected"]))]
    assert found == [], "use aws_cdk.integ_tests_alpha.Match (harness.Match), not aws_cdk.assertions.Match"


def test_the_test_functions_import_from_their_asset_alone():
    """What the test functions' asset holds is enough for each of them: their modules import, and the redrive
    finds the runtime, with the asset first on the path and aws-cdk-lib, constructs, jsii and boto3 unimportable
    (a Lambda function has botocore, not these)."""
    bundle = _integ_module("harness").bundle_path()
    script = f"""
import importlib, sys
sys.path.insert(0, {str(bundle)!r})
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("aws_cdk", "constructs", "jsii", "boto3"):
            raise ImportError(name + " is not in a Lambda function")
sys.meta_path.insert(0, Refuse())
found = [importlib.import_module(name).__file__ for name in ("recorder", "receiver", "probe", "front_door", "redrive")]
import cdk_delayed_scheduler.operator as operator
operator._runtime_on_path()
import scheduler_runtime.aws.redrive
print("\\n".join([*found, operator.__file__, scheduler_runtime.aws.redrive.__file__]))
"""
    env = {**_env(), "SEEN_TABLE": "seen", "API_FUNCTION": "api", "AWS_DEFAULT_REGION": "us-east-1",
           "API_URL": "https://example.execute-api.us-east-1.amazonaws.com/",
           "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    assert all(line.startswith(str(bundle)) for line in result.stdout.split()), result.stdout


def test_results_fails_a_deploy_whose_outputs_hold_a_failed_assertion(tmp_path, capsys):
    results = _integ_module("results")
    assertions = {"AssertionResultsLambdaInvoke0a1b": json.dumps({"status": "success"}),
                  "AssertionResultsHttpApiCall2c3d": json.dumps({"status": "fail", "message": "Expected 401, got 204"})}
    outputs = {"TargetsTestDefaultTestDeployAssertE9229AAC": {**assertions, "Other": "x"},
               "DelayedSchedulerTargets": {"TimersApiUrl": "https://example.com/"}}
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps(outputs))
    assert results.main([str(path)]) == 1
    printed = capsys.readouterr().out
    assert ("FAILED TargetsTestDefaultTestDeployAssertE9229AAC/AssertionResultsHttpApiCall2c3d: Expected 401, got 204"
            in printed) and "1 of 2 assertions passed" in printed
    assertions["AssertionResultsHttpApiCall2c3d"] = json.dumps({"status": "success"})
    path.write_text(json.dumps({"TargetsTestDefaultTestDeployAssertE9229AAC": assertions}))
    assert results.main([str(path)]) == 0
    path.write_text(json.dumps({"DelayedSchedulerTargets": {"TimersApiUrl": "https://example.com/"}}))
    assert results.main([str(path)]) == 1, "outputs without any assertion result are not a pass"


if __name__ == "__main__":
    print_result(run())
