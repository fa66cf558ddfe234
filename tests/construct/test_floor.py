"""The declared version floors are true, and cdk-nag 2 honours the construct's acknowledgements.

Two apps run side by side, each the README's stack plus a stack that makes every acknowledgement
the construct has (REST API with an API key, REST API with IAM and a grant, a KMS key, the
account's logging role):

- in a virtual environment at the floors this package declares (aws-cdk-lib, constructs) and the
  cdk-nag 3 floor its README states, with cdk-nag 3 as a validation plugin;
- in the development environment (the newest versions) with cdk-nag 2 as an Aspect.

Both must report nothing. The environments are cached under the system temp directory, keyed by
the versions, so a repeat run only synthesizes. The newest versions are the rest of the suite's.

Both synths are one child process (this module run as a script: ``run``), which the test session
starts as it begins (tests/conftest.py's ``EARLY_RUNS``); the tests assert on what it found.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from construct_helpers import REPO, cached_dir, early_result, print_result, readme_stack, uv_env, uv_venv

pytestmark = pytest.mark.slow

UV = Path(sys.executable).with_name("uv")
#: The cdk-nag 2 release the Aspect check runs (the newest 2.x when it was written).
CDK_NAG_2 = "2.38.2"

EXTRA_STACK = '''
from aws_cdk import aws_kms as kms
from cdk_delayed_scheduler import ApiAuthorization, SchedulerApi


class EveryAcknowledgement(cdk.Stack):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        dlq = sqs.Queue(self, "JobsDlq", enforce_ssl=True)
        jobs = sqs.Queue(self, "Jobs", enforce_ssl=True,
                         dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3))
        DelayedScheduler(self, "Keyed", target=targets.SqsSendMessage(jobs),
                         encryption_key=kms.Key(self, "Key", enable_key_rotation=True),
                         api=SchedulerApi.rest(authorization=ApiAuthorization.api_key(), cloud_watch_role=True))
        iam_rest = DelayedScheduler(self, "Signed", target=targets.SqsSendMessage(jobs), api=SchedulerApi.rest())
        iam_rest.grant_schedule(iam.Role(self, "Client", assumed_by=iam.AccountRootPrincipal()))


EveryAcknowledgement(app, "EveryAcknowledgement")
'''

NAG = {
    3: "from aws_cdk import Validations\nfrom cdk_nag import AwsSolutionsChecks\n"
       "Validations.of(app).add_plugins(AwsSolutionsChecks(app))\n",
    2: "from cdk_nag import AwsSolutionsChecks\ncdk.Aspects.of(app).add(AwsSolutionsChecks())\n",
}


def floors() -> dict[str, str]:
    """The lowest versions pyproject.toml allows: the runtime dependencies, and cdk-nag (a dev
    dependency, whose floor the README states)."""
    text = (REPO / "pyproject.toml").read_text()
    found = dict(re.findall(r'"(aws-cdk-lib|constructs|cdk-nag)>=([0-9.]+)', text))
    assert set(found) == {"aws-cdk-lib", "constructs", "cdk-nag"}, found
    return found


def _app_source(nag_major: int) -> str:
    source = readme_stack()
    assert source.count("app = cdk.App()\n") == 1 and source.rstrip().endswith("app.synth()"), source
    source = source.replace("app = cdk.App()\n", "app = cdk.App()\n" + NAG[nag_major])
    return source.rstrip().removesuffix("app.synth()") + EXTRA_STACK + "app.synth()\n"


def _nag2_target() -> Path:
    def build(path: Path) -> None:
        subprocess.run([str(UV), "pip", "install", "-q", "--no-deps", "--target", str(path), f"cdk-nag=={CDK_NAG_2}"],
                       check=True, env=uv_env())

    return cached_dir("cdk-nag2", CDK_NAG_2, build)


def _start(python: Path, workdir: Path, nag_major: int, extra_path: list[Path]) -> subprocess.Popen:
    workdir.mkdir(parents=True)
    (workdir / "app.py").write_text(_app_source(nag_major))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env.update(CDK_OUTDIR=str(workdir / "cdk.out"), JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20",
               PYTHONPATH=os.pathsep.join(map(str, [*extra_path, REPO / "src"])))
    return subprocess.Popen([str(python), "app.py"], cwd=workdir, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _floor_outcome(process: subprocess.Popen, outdir: Path) -> dict[str, Any]:
    """The floor app's exit code, stderr, cdk-nag 3's findings and the acknowledging stack's resource types."""
    _, stderr = process.communicate(timeout=600)
    report = json.loads((outdir / "validation-report.json").read_text()) if process.returncode == 0 else {}
    template = json.loads((outdir / "EveryAcknowledgement.template.json").read_text()) if process.returncode == 0 else {}
    return {"code": process.returncode, "stderr": stderr[-3000:],
            "violations": [v["ruleName"] for p in report.get("pluginReports", []) for v in p["violations"]],
            "types": [r["Type"] for r in template.get("Resources", {}).values()]}


def _nag2_outcome(process: subprocess.Popen, outdir: Path) -> dict[str, Any]:
    """The cdk-nag 2 app's exit code, stderr, and its reports' names and rows."""
    _, stderr = process.communicate(timeout=600)
    reports = sorted(outdir.glob("AwsSolutions-*-NagReport.csv"))
    return {"code": process.returncode, "stderr": stderr[-3000:], "reports": [r.name for r in reports],
            "rows": [row for report in reports for row in csv.DictReader(report.open())]}


def run() -> dict[str, Any]:
    """Both apps side by side, and the versions the floor environment holds."""
    pins = [f"{name}=={version}" for name, version in sorted(floors().items())]
    floor_python = uv_venv("floor", pins) / "bin" / "python"
    with tempfile.TemporaryDirectory(prefix="floor-") as tmp:
        root = Path(tmp)
        floor = _start(floor_python, root / "floor", 3, [])
        nag2 = _start(Path(sys.executable), root / "nag2", 2, [_nag2_target()])
        outcome = {"floor": _floor_outcome(floor, root / "floor" / "cdk.out"),
                   "nag2": _nag2_outcome(nag2, root / "nag2" / "cdk.out")}
    outcome["versions"] = json.loads(subprocess.run(
        [str(floor_python), "-c", "import json; from importlib.metadata import version as v; "
         "print(json.dumps({n: v(n) for n in ('aws-cdk-lib', 'constructs', 'cdk-nag')}))"],
        capture_output=True, text=True, check=True).stdout)
    return outcome


@pytest.fixture(scope="module")
def runs() -> dict[str, Any]:
    return early_result("floor", timeout=900)


def test_the_floor_environment_holds_exactly_the_declared_floors(runs):
    assert runs["versions"] == floors()


def test_the_readme_stack_synthesizes_at_the_floors_and_cdk_nag_3_reports_nothing(runs):
    floor = runs["floor"]
    assert floor["code"] == 0, floor["stderr"]
    assert floor["violations"] == []
    types = floor["types"]
    assert types.count("AWS::ApiGateway::RestApi") == 2 and types.count("AWS::ApiGateway::Account") == 1


def test_cdk_nag_2_as_an_aspect_honours_every_acknowledgement(runs):
    nag2 = runs["nag2"]
    assert nag2["code"] == 0, nag2["stderr"]
    assert len(nag2["reports"]) == 2, nag2["reports"]
    rows = nag2["rows"]
    assert {row["Compliance"] for row in rows} >= {"Compliant", "Suppressed"}
    assert [(row["Rule ID"], row["Resource ID"]) for row in rows if row["Compliance"] == "Non-Compliant"] == []
    suppressed = {row["Rule ID"] for row in rows if row["Compliance"] == "Suppressed"}
    assert {"AwsSolutions-IAM5", "AwsSolutions-IAM4", "AwsSolutions-APIG3", "AwsSolutions-APIG4",
            "AwsSolutions-COG4"} <= suppressed


if __name__ == "__main__":
    print_result(run())
