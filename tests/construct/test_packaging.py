"""The proof that a user's `pip install` works: build the wheel, install it with its ``cdk`` extra
(aws-cdk-lib, constructs) into a clean virtual environment, and synthesize the README's stack there, with Python and with the pinned
`cdk` CLI, from a folder outside the repository.

The Python synth also proves that cdk-nag 2 honours the construct's acknowledgements: its app is
the README's with cdk-nag 2 as an Aspect and a stack that makes every acknowledgement the construct
has (REST API with an API key, REST API with IAM and a grant, a KMS key, the account's logging
role), at the locked (newest) versions; it must report nothing. (The same app at the declared
floors, with cdk-nag 3: test_floor.py.)

The build, the install and both synths are one child process (this module run as a script:
``run``), which the test session starts as it begins (tests/conftest.py's ``EARLY_RUNS``); the tests
assert on what it found.
"""

from __future__ import annotations

import csv
import json
import subprocess
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pytest

from cdk_delayed_scheduler._runtime_asset import ASSET_EXCLUDES, function_asset_path, runtime_asset_path
from construct_helpers import REPO, acknowledging_app, early_result, nag2_target, print_result, readme_stack
from wheel_install import build_wheel, install_wheel, site_packages, user_env

pytestmark = pytest.mark.slow

CDK_CLI = REPO / "integ" / "node_modules" / ".bin" / "cdk"
#: Synthesizes ``app.py``, then prints where the installed package finds its runtime.
SYNTH_AND_LOCATE = ("import runpy\nimport cdk_delayed_scheduler._runtime_asset as a\n"
                    "runpy.run_path('app.py', run_name='__main__')\nprint(a.runtime_asset_path())\n")


# --- the child process --------------------------------------------------------------------------
def _summary(template: dict) -> dict[str, list[str]]:
    """A template's resource types, and its functions' code S3 keys (the asset's content hash)."""
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    return {"types": [r["Type"] for r in template["Resources"].values()],
            "s3_keys": [f["Properties"]["Code"]["S3Key"] for f in functions]}


def _readme_synth(venv: Path, root: Path) -> dict[str, Any]:
    """The README's app with cdk-nag 2 and the acknowledging stack, by ``python app.py`` in a folder outside
    the checkout, before any bytecode exists beside the installed runtime: the README stack's summary, the
    files of the functions' asset, where the package found its runtime, and cdk-nag 2's reports."""
    workdir, outdir = root / "app", root / "cdk.out"
    workdir.mkdir(parents=True)
    (workdir / "app.py").write_text(acknowledging_app(2))
    result = subprocess.run([str(venv / "bin" / "python"), "-c", SYNTH_AND_LOCATE], cwd=workdir,
                            env=user_env(CDK_OUTDIR=str(outdir), PYTHONPATH=str(nag2_target())),
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"the README's stack did not synthesize from the wheel:\n{result.stderr[-3000:]}")
    summary = _summary(json.loads((outdir / "Timers.template.json").read_text()))
    asset = outdir / f"asset.{summary['s3_keys'][0].removesuffix('.zip')}"
    reports = sorted(outdir.glob("AwsSolutions-*-NagReport.csv"))
    return {**summary, "located": result.stdout.strip().splitlines()[-1],
            "shipped": sorted(p.relative_to(asset).as_posix() for p in asset.rglob("*") if p.is_file()),
            "nag_reports": [r.name for r in reports],
            "nag_rows": [row for report in reports for row in csv.DictReader(report.open())]}


def _npx_synth(venv: Path, root: Path) -> dict[str, Any]:
    """The README's stack synthesized by the pinned ``cdk`` CLI in a fresh project, after bytecode
    has appeared beside the installed runtime (as it does once the runtime is imported)."""
    if not CDK_CLI.exists():
        raise SystemExit("the pinned CDK CLI is not installed: run ./dev test (it runs npm ci in integ/)")
    runtime = site_packages(venv) / "cdk_delayed_scheduler" / "_runtime"
    subprocess.run([str(venv / "bin" / "python"), "-m", "compileall", "-q", str(runtime)], env=user_env(), check=True)
    project = root / "npx" / "my-app"
    project.mkdir(parents=True)
    (project / "app.py").write_text(readme_stack())
    (project / "cdk.json").write_text(json.dumps({"app": f"{venv / 'bin' / 'python'} app.py"}))
    result = subprocess.run([str(CDK_CLI), "synth", "--no-notices", "--quiet"], cwd=project, env=user_env(CI="true"),
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"cdk synth failed in a fresh project:\n{result.stderr[-3000:]}")
    return {**_summary(json.loads((project / "cdk.out" / "Timers.template.json").read_text())),
            "bytecode_beside_runtime": bool(list(runtime.rglob("__pycache__")))}


def run() -> dict[str, Any]:
    """Build, install and synthesize; what the tests read, as JSON-ready values."""
    with tempfile.TemporaryDirectory(prefix="packaging-") as tmp:
        root = Path(tmp)
        wheel = build_wheel(root / "dist")
        with zipfile.ZipFile(wheel) as archive:
            names = sorted(archive.namelist())
        venv = install_wheel(wheel, root / "user", "cdk")
        return {"wheel": names, "venv": str(venv), "readme": _readme_synth(venv, root / "readme-app"),
                "npx": _npx_synth(venv, root)}


# --- the tests ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def packaged() -> dict[str, Any]:
    return early_result("packaging", timeout=900)


@pytest.fixture(scope="module")
def checkout_asset_key() -> str:
    """The S3 key (content hash) of the functions' asset (the runtime and tzdata), as a stack built from
    this checkout gets it."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    stack = cdk.Stack(cdk.App(), "Checkout")
    code = lambda_.Code.from_asset(str(function_asset_path()), exclude=ASSET_EXCLUDES)
    return str(stack.resolve(code.bind(stack).s3_location.object_key))


def test_wheel_holds_the_runtime_and_py_typed(packaged):
    names = set(packaged["wheel"])
    assert "cdk_delayed_scheduler/py.typed" in names
    assert "cdk_delayed_scheduler/scheduler.py" in names and "cdk_delayed_scheduler/targets.py" in names
    runtime = {n.removeprefix("cdk_delayed_scheduler/_runtime/") for n in names
               if n.startswith("cdk_delayed_scheduler/_runtime/")}
    expected = {p.relative_to(runtime_asset_path()).as_posix() for p in runtime_asset_path().rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and "tests" not in p.parts}
    assert runtime == expected
    assert "scheduler_runtime/event_filters.json" in runtime
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_the_readme_stack_synthesizes_from_the_installed_wheel(packaged):
    readme = packaged["readme"]
    assert readme["located"].startswith(packaged["venv"]) and readme["located"].endswith("cdk_delayed_scheduler/_runtime")
    assert readme["types"].count("AWS::Lambda::Function") == 4
    shipped = readme["shipped"]
    assert "scheduler_runtime/handlers/dispatcher.py" in shipped
    assert "tzdata/zoneinfo/Europe/Paris" in shipped  # the installed tzdata, staged beside the runtime
    assert not any("__pycache__" in p or p.endswith(".pyc") or "/tests/" in p for p in shipped)


def test_cdk_nag_2_as_an_aspect_honours_every_acknowledgement(packaged):
    readme = packaged["readme"]
    assert len(readme["nag_reports"]) == 2, readme["nag_reports"]  # one per stack
    rows = readme["nag_rows"]
    assert {row["Compliance"] for row in rows} >= {"Compliant", "Suppressed"}
    assert [(row["Rule ID"], row["Resource ID"]) for row in rows if row["Compliance"] == "Non-Compliant"] == []
    suppressed = {row["Rule ID"] for row in rows if row["Compliance"] == "Suppressed"}
    assert {"AwsSolutions-IAM5", "AwsSolutions-IAM4", "AwsSolutions-APIG3", "AwsSolutions-APIG4",
            "AwsSolutions-COG4"} <= suppressed


def test_the_asset_hash_is_the_same_installed_and_in_the_checkout(packaged, checkout_asset_key):
    """__pycache__ and tests are excluded, so the hash depends on the sources alone (the runtime's and
    the locked tzdata's): the same in the checkout, installed, and installed with bytecode beside it."""
    assert packaged["npx"]["bytecode_beside_runtime"]
    assert set(packaged["readme"]["s3_keys"]) == set(packaged["npx"]["s3_keys"]) == {checkout_asset_key}


def test_npx_cdk_synth_in_a_fresh_project(packaged):
    assert "AWS::ApiGatewayV2::Api" in packaged["npx"]["types"]
    assert packaged["npx"]["types"].count("AWS::Lambda::Function") == 4


if __name__ == "__main__":
    print_result(run())
