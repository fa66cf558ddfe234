"""The declared version floors are true: the README's stack, plus a stack that makes every
acknowledgement the construct has (REST API with an API key, REST API with IAM and a grant, a KMS
key, the account's logging role), synthesizes in a virtual environment at the floors this package
declares (aws-cdk-lib, constructs) and the cdk-nag 3 floor its README states, with cdk-nag 3 as a
validation plugin, which reports nothing. The environment is cached under the system temp
directory, keyed by the versions, so a repeat run only synthesizes. (The same app at the newest
versions, with cdk-nag 2 as an Aspect, is synthesized from the built wheel: test_packaging.py.)

The synth is a child process (this module run as a script: ``run``), which the test session starts
as it begins (tests/conftest.py's ``EARLY_RUNS``); the tests assert on what it found.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from construct_helpers import REPO, acknowledging_app, early_result, print_result, uv_venv

pytestmark = pytest.mark.slow


def floors() -> dict[str, str]:
    """The lowest versions pyproject.toml allows: the runtime dependencies, and cdk-nag (a dev
    dependency, whose floor the README states)."""
    text = (REPO / "pyproject.toml").read_text()
    found = dict(re.findall(r'"(aws-cdk-lib|constructs|cdk-nag)>=([0-9.]+)', text))
    assert set(found) == {"aws-cdk-lib", "constructs", "cdk-nag"}, found
    return found


def run() -> dict[str, Any]:
    """The app at the floors: its exit code, stderr, cdk-nag 3's findings, the acknowledging stack's
    resource types, and the versions the environment holds."""
    pins = [f"{name}=={version}" for name, version in sorted(floors().items())]
    python = uv_venv("floor", pins) / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    with tempfile.TemporaryDirectory(prefix="floor-") as workdir:
        outdir = Path(workdir) / "cdk.out"
        (Path(workdir) / "app.py").write_text(acknowledging_app(3))
        env.update(CDK_OUTDIR=str(outdir), JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", PYTHONPATH=str(REPO / "src"))
        result = subprocess.run([str(python), "app.py"], cwd=workdir, env=env, capture_output=True, text=True,
                                timeout=600)
        synthesized = result.returncode == 0
        report = json.loads((outdir / "validation-report.json").read_text()) if synthesized else {}
        template = json.loads((outdir / "EveryAcknowledgement.template.json").read_text()) if synthesized else {}
    versions = json.loads(subprocess.run(
        [str(python), "-c", "import json; from importlib.metadata import version as v; "
         "print(json.dumps({n: v(n) for n in ('aws-cdk-lib', 'constructs', 'cdk-nag')}))"],
        capture_output=True, text=True, check=True).stdout)
    return {"code": result.returncode, "stderr": result.stderr[-3000:], "versions": versions,
            "violations": [v["ruleName"] for p in report.get("pluginReports", []) for v in p["violations"]],
            "types": [r["Type"] for r in template.get("Resources", {}).values()]}


@pytest.fixture(scope="module")
def floor() -> dict[str, Any]:
    return early_result("floor", timeout=900)


def test_the_floor_environment_holds_exactly_the_declared_floors(floor):
    assert floor["versions"] == floors()


def test_the_readme_stack_synthesizes_at_the_floors_and_cdk_nag_3_reports_nothing(floor):
    assert floor["code"] == 0, floor["stderr"]
    assert floor["violations"] == []
    types = floor["types"]
    assert types.count("AWS::ApiGateway::RestApi") == 2 and types.count("AWS::ApiGateway::Account") == 1


if __name__ == "__main__":
    print_result(run())
