"""The proof that a user's `pip install` works: build the wheel, install it into a clean
virtual environment, and synthesize the README's stack there, with Python and with the pinned
`cdk` CLI, from a folder outside the repository."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cdk_delayed_scheduler._runtime_asset import ASSET_EXCLUDES, function_asset_path, runtime_asset_path

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")


def user_env(**extra: str) -> dict:
    """The environment of a user outside this checkout: none of the variables that would point
    Python at the checkout's sources or venv (``PYTHONPATH``, ``VIRTUAL_ENV``, ``PYTHONHOME``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION="20", CDK_DISABLE_CLI_TELEMETRY="true", **extra)
    return env


def _readme_stack() -> str:
    """The Python block of the README's "Use it in your stack" section."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Use it in your stack", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def _checkout_asset_key() -> str:
    """The S3 key (content hash) of the functions' asset (the runtime and tzdata), as a stack built from
    this checkout gets it."""
    import aws_cdk as cdk
    from aws_cdk import aws_lambda as lambda_

    stack = cdk.Stack(cdk.App(), "Checkout")
    code = lambda_.Code.from_asset(str(function_asset_path()), exclude=ASSET_EXCLUDES)
    return stack.resolve(code.bind(stack).s3_location.object_key)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """The built wheel, and the checkout's asset key taken right before building it."""
    outdir = tmp_path_factory.mktemp("dist")
    checkout_key = _checkout_asset_key()
    subprocess.run([str(Path(sys.executable).with_name("hatchling")), "build", "-t", "wheel", "-d", str(outdir)],
                   cwd=REPO, check=True, capture_output=True, text=True)
    (built,) = outdir.glob("cdk_delayed_scheduler-*.whl")
    return built, checkout_key


@pytest.fixture(scope="module")
def clean_venv(wheel, tmp_path_factory) -> Path:
    wheel = wheel[0]
    root = tmp_path_factory.mktemp("user")
    venv = root / "venv"
    env = user_env(UV_PYTHON_DOWNLOADS="never", UV_NO_PROGRESS="1")
    subprocess.run([str(UV), "venv", "-q", "--python", sys.executable, str(venv)], check=True, env=env)
    # The locked versions of the runtime dependencies (aws-cdk-lib, constructs), as a user's lock would pin.
    constraints = root / "constraints.txt"
    exported = subprocess.run([str(UV), "export", "--frozen", "--no-dev", "--no-hashes", "--no-emit-project",
                               "--format", "requirements-txt"], cwd=REPO, check=True, capture_output=True, text=True,
                              env=env).stdout
    constraints.write_text(exported)
    subprocess.run([str(UV), "pip", "install", "-q", "--python", str(venv / "bin" / "python"), "-c", str(constraints),
                    str(wheel)], check=True, env=env, cwd=root)
    return venv


def test_wheel_holds_the_runtime_and_py_typed(wheel):
    with zipfile.ZipFile(wheel[0]) as archive:
        names = set(archive.namelist())
    assert "cdk_delayed_scheduler/py.typed" in names
    assert "cdk_delayed_scheduler/scheduler.py" in names and "cdk_delayed_scheduler/targets.py" in names
    runtime = {n.removeprefix("cdk_delayed_scheduler/_runtime/") for n in names
               if n.startswith("cdk_delayed_scheduler/_runtime/")}
    expected = {p.relative_to(runtime_asset_path()).as_posix() for p in runtime_asset_path().rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and "tests" not in p.parts}
    assert runtime == expected
    assert "scheduler_runtime/event_filters.json" in runtime
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def _synth_in(venv: Path, workdir: Path, outdir: Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "app.py").write_text(_readme_stack())
    result = subprocess.run([str(venv / "bin" / "python"), "app.py"], cwd=workdir, env=user_env(CDK_OUTDIR=str(outdir)),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((outdir / "Timers.template.json").read_text())


def _asset_dir(outdir: Path, template: dict) -> Path:
    (function,) = [r for k, r in template["Resources"].items()
                   if r["Type"] == "AWS::Lambda::Function" and "DispatcherFunction" in k]
    asset_hash = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    return outdir / f"asset.{asset_hash}"


@pytest.fixture(scope="module")
def readme_synth(clean_venv, tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("readme-app")
    return root / "cdk.out", _synth_in(clean_venv, root / "app", root / "cdk.out")


def test_the_readme_stack_synthesizes_from_the_installed_wheel(clean_venv, readme_synth, tmp_path):
    located = subprocess.run([str(clean_venv / "bin" / "python"), "-c",
                              "import cdk_delayed_scheduler._runtime_asset as a; print(a.runtime_asset_path())"],
                             cwd=tmp_path, env=user_env(), capture_output=True, text=True, check=True).stdout.strip()
    assert located.startswith(str(clean_venv)) and located.endswith("cdk_delayed_scheduler/_runtime")

    outdir, template = readme_synth
    functions = [r for r in template["Resources"].values() if r["Type"] == "AWS::Lambda::Function"]
    assert len(functions) == 4
    asset = _asset_dir(outdir, template)
    shipped = sorted(p.relative_to(asset).as_posix() for p in asset.rglob("*") if p.is_file())
    assert "scheduler_runtime/handlers/dispatcher.py" in shipped
    assert "tzdata/zoneinfo/Europe/Paris" in shipped  # the installed tzdata, staged beside the runtime
    assert not any("__pycache__" in p or p.endswith(".pyc") or "/tests/" in p for p in shipped)


@pytest.fixture(scope="module")
def npx_synth(clean_venv, readme_synth, tmp_path_factory) -> dict:
    """The README's stack synthesized by the pinned ``cdk`` CLI in a fresh project, after bytecode
    has appeared beside the installed runtime (as it does once the runtime is imported); the
    ``readme_synth`` it follows ran before there was any."""
    cdk_cli = REPO / "integ" / "node_modules" / ".bin" / "cdk"
    if not cdk_cli.exists():
        pytest.fail("the pinned CDK CLI is not installed: run ./dev test (it runs npm ci in integ/)")
    runtime = next((clean_venv / "lib").glob("python3*/site-packages/cdk_delayed_scheduler/_runtime"))
    subprocess.run([str(clean_venv / "bin" / "python"), "-m", "compileall", "-q", str(runtime)], env=user_env(), check=True)
    assert list(runtime.rglob("__pycache__"))
    project = tmp_path_factory.mktemp("npx") / "my-app"
    project.mkdir()
    (project / "app.py").write_text(_readme_stack())
    (project / "cdk.json").write_text(json.dumps({"app": f"{clean_venv / 'bin' / 'python'} app.py"}))
    result = subprocess.run([str(cdk_cli), "synth", "--no-notices", "--quiet"], cwd=project, env=user_env(CI="true"),
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads((project / "cdk.out" / "Timers.template.json").read_text())


def test_the_asset_hash_is_the_same_installed_and_in_the_checkout(wheel, readme_synth, npx_synth):
    """__pycache__ and tests are excluded, so the hash depends on the sources alone (the runtime's and
    the locked tzdata's): the same in the checkout, installed, and installed with bytecode beside it."""
    keys = lambda t: {r["Properties"]["Code"]["S3Key"] for r in t["Resources"].values()  # noqa: E731
                      if r["Type"] == "AWS::Lambda::Function"}
    assert keys(readme_synth[1]) == keys(npx_synth) == {wheel[1]}


def test_npx_cdk_synth_in_a_fresh_project(npx_synth):
    assert any(r["Type"] == "AWS::ApiGatewayV2::Api" for r in npx_synth["Resources"].values())
    assert sum(r["Type"] == "AWS::Lambda::Function" for r in npx_synth["Resources"].values()) == 4
