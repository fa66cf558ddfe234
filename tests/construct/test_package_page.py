"""What a user sees of the package before and right after installing it: the metadata and the PyPI
page, the licence, the console script's ``--version`` and help, and a local engine that runs
without aws-cdk-lib (the ``local`` extra cannot remove a core dependency, so the engine-only
install is ``--no-deps`` plus the engine's own dependencies, and the engine never imports it).

The engine-only run is a child process (this module run as a script: ``run``), which the test
session starts as it begins (tests/conftest.py's ``EARLY_RUNS``); its test asserts on what it found."""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from construct_helpers import REPO, early_result, print_result, uv_venv

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
HOME = "https://github.com/cdk-delayed-scheduler/cdk-delayed-scheduler"
SCRIPT = Path(sys.executable).with_name("cdk-delayed-scheduler")


def _paragraphs(markdown: str) -> list[str]:
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", markdown) if p.strip()]


def test_licence_classifiers_keywords_and_urls():
    licence = (REPO / "LICENSE").read_text()
    assert licence.split()[:4] == ["Apache", "License", "Version", "2.0,"] and "END OF TERMS AND CONDITIONS" in licence
    assert (PROJECT["license"], PROJECT["license-files"]) == ("Apache-2.0", ["LICENSE"])
    from trove_classifiers import classifiers as known

    assert PROJECT["classifiers"] and set(PROJECT["classifiers"]) <= known
    assert "Framework :: AWS CDK :: 2" in PROJECT["classifiers"] and "Typing :: Typed" in PROJECT["classifiers"]
    assert {"aws-cdk", "construct", "scheduler", "timer"} <= set(PROJECT["keywords"])
    urls = PROJECT["urls"]
    assert {"Homepage", "Source", "Issues", "Documentation"} <= set(urls)
    assert all(u.startswith(HOME) for u in urls.values()), urls


def test_the_pypi_page_is_short_absolute_and_says_what_it_is():
    page = (REPO / PROJECT["readme"]).read_text()
    assert PROJECT["readme"] != "README.md"
    links = re.findall(r"\]\(([^)]+)\)", page)
    assert links and all(link.startswith(f"{HOME}/blob/main/") for link in links), links
    for link in links:  # each points at a file in this repository
        assert (REPO / link.removeprefix(f"{HOME}/blob/main/")).is_file(), link
    assert f"{HOME}/blob/main/README.md" in links
    assert "pip install cdk-delayed-scheduler" in page and "DelayedScheduler(self, " in page
    assert "./dev" not in page
    for markdown in (page, (REPO / "README.md").read_text()):
        repeated = [p for p, n in collections.Counter(_paragraphs(markdown)).items() if n > 1]
        assert repeated == []


def test_the_grant_schedule_comments_say_every_route():
    """``grant_schedule`` grants every route and a direct invoke: a comment on it in the PyPI page or
    the README either says so or lists every route, never a few of them."""
    from cdk_delayed_scheduler._contract import contract

    for markdown in (REPO / PROJECT["readme"], REPO / "README.md"):
        comments = [line.split("#", 1)[1] for line in markdown.read_text().splitlines()
                    if ".grant_schedule(" in line and "#" in line]
        assert comments, markdown
        for comment in comments:
            listed = [route for route in contract.ROUTES if f"{route.method} {route.path}" in comment]
            assert "every" in comment and "route" in comment or len(listed) == len(contract.ROUTES), (markdown, comment)


def test_the_floors_and_the_page_agree():
    page = (REPO / PROJECT["readme"]).read_text()
    floor = re.search(r'"aws-cdk-lib>=([0-9.]+)', (REPO / "pyproject.toml").read_text()).group(1)
    nag = re.search(r'"cdk-nag>=([0-9.]+)', (REPO / "pyproject.toml").read_text()).group(1)
    assert f"aws-cdk-lib {floor} or later" in page and f"cdk-nag {nag} or later" in page
    readme = (REPO / "README.md").read_text()
    assert f"aws-cdk-lib {floor}" in readme and f"cdk-nag {nag}" in readme


def test_moto_is_bounded_to_the_minor_release_the_engine_patches_were_tested_on():
    extra = [r for r in PROJECT["optional-dependencies"]["local"] if r.startswith("moto")]
    dev = [r for r in PYPROJECT["dependency-groups"]["dev"] if r.startswith("moto")]
    assert extra == dev == ["moto[server]>=5.2,<5.3"]
    assert version("moto").startswith("5.2.")  # the locked, tested version is inside the bound
    assert f"'moto[server]>=5.2,<5.3'" in (REPO / PROJECT["readme"]).read_text()


def test_version_and_plain_help():
    shown = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert shown == f"cdk-delayed-scheduler {PROJECT['version']}"
    for args in ([], ["local"], ["demo"]):
        text = subprocess.run([str(SCRIPT), *args, "--help"], capture_output=True, text=True, check=True).stdout
        assert "usage: cdk-delayed-scheduler" in text
        assert not re.search(r"``|:param|:class:|:meth:", text), text


ENGINE_ONLY = """
import importlib.util, json, sys, threading
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import ApiClient

delivered, envelopes = threading.Event(), []
def target(envelope):
    envelopes.append(envelope)
    delivered.set()

with Engine(EngineOptions(target=target, shard_count=1)) as engine:
    status, body = ApiClient(engine.api_url).create({"delaySeconds": 0, "payload": {"hello": "no aws-cdk-lib"}})
    assert status == 201, (status, body)
    assert delivered.wait(60), "no delivery"
print(json.dumps({"installed": importlib.util.find_spec("aws_cdk") is not None, "payload": envelopes[0]["payload"],
                  "imported": sorted(m for m in sys.modules if m.split(".")[0] in ("aws_cdk", "jsii", "constructs"))}))
"""


def run() -> dict[str, Any]:
    """The engine's dependencies only (the locked versions), and this checkout's source: the run's exit
    code, stderr and the outcome it printed."""
    venv = uv_venv("engine-only", [f"boto3=={version('boto3')}", f"moto[server]=={version('moto')}",
                                    f"rich=={version('rich')}"])
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env["PYTHONPATH"] = str(REPO / "src")  # the engine finds the runtime itself
    with tempfile.TemporaryDirectory(prefix="engine-only-") as workdir:
        result = subprocess.run([str(venv / "bin" / "python"), "-c", ENGINE_ONLY], cwd=workdir, env=env,
                                capture_output=True, text=True, timeout=300)
    printed = result.stdout.strip().splitlines()
    return {"code": result.returncode, "stderr": result.stderr[-3000:],
            "outcome": json.loads(printed[-1]) if result.returncode == 0 and printed else None}


@pytest.mark.slow
def test_the_local_engine_runs_without_aws_cdk_lib():
    engine_only = early_result("engine_only", timeout=600)
    assert engine_only["code"] == 0, engine_only["stderr"]
    assert engine_only["outcome"] == {"installed": False, "payload": {"hello": "no aws-cdk-lib"}, "imported": []}


if __name__ == "__main__":
    print_result(run())
