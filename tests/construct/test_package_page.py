"""What a user sees of the package before and right after installing it: the metadata and the PyPI
page, the licence, the console script's ``--version`` and help, and the wheel installed with its
``local`` extra alone (no aws-cdk-lib, which is the ``cdk`` extra): its size, the client and the
envelope an application uses, the local engine, and the demo.

That install and its runs are a child process (this module run as a script: ``run``), which the test
session starts as it begins (tests/conftest.py's ``EARLY_RUNS``, named ``engine_only``); its tests
assert on what it found."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
import tempfile
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency there reads TOML the same way
    import tomli as tomllib  # type: ignore[no-redef]
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

from construct_helpers import REPO, early_result, print_result
from wheel_install import build_wheel, install_wheel, megabytes, site_packages, user_env

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
    # the construct's dependencies are the cdk extra; the engine's extra needs no --no-deps trick any more
    assert "pip install 'cdk-delayed-scheduler[cdk]'" in page and "pip install 'cdk-delayed-scheduler[local]'" in page
    assert "--no-deps" not in page
    assert "./dev" not in page
    opening = _paragraphs(page)[1]  # what it is, under the title
    assert "one-shot and periodic" in opening and "one-shot timers" not in opening, opening
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
    # the engine's extra: the services it uses, not moto[server]'s every service; the tests keep moto[server]
    assert (extra, dev) == (["moto[dynamodb,dynamodbstreams,events,secretsmanager,sns,sqs,stepfunctions]>=5.2,<5.3"], ["moto[server]>=5.2,<5.3"])
    assert version("moto").startswith("5.2.")  # the locked, tested version is inside the bound


@pytest.mark.slow  # a child process: the installed console script
def test_version_and_plain_help():
    shown = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    assert shown == f"cdk-delayed-scheduler {PROJECT['version']}"
    for args in ([], ["local"], ["demo"]):
        text = subprocess.run([str(SCRIPT), *args, "--help"], capture_output=True, text=True, check=True).stdout
        assert "usage: cdk-delayed-scheduler" in text
        assert not re.search(r"``|:param|:class:|:meth:", text), text


APPLICATION = """
import importlib.util, json, sys, threading
from datetime import timedelta
from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.envelope import Envelope
from cdk_delayed_scheduler.local import Engine, EngineOptions

delivered, events = threading.Event(), []
def target(event):
    events.append(event)
    delivered.set()

with Engine(EngineOptions(target=target, require_signature=True, shard_count=1)) as engine:
    created = SchedulerClient(engine.api_url, region="us-east-1").schedule(timedelta(0), {"hello": "no aws-cdk-lib"})
    assert delivered.wait(60), "no delivery"
envelope = Envelope.from_event(events[0])
try:
    from cdk_delayed_scheduler import DelayedScheduler
    refused = ""
except ImportError as error:
    refused = str(error)
print(json.dumps({"installed": importlib.util.find_spec("aws_cdk") is not None, "refused": refused,
                  "delivered": [envelope.id == created.id, envelope.payload],
                  "imported": sorted(m for m in sys.modules if m.split(".")[0] in ("aws_cdk", "jsii", "constructs"))}))
"""


def _outcome(result: subprocess.CompletedProcess) -> dict[str, Any]:
    return {"code": result.returncode, "stdout": result.stdout[-3000:], "stderr": result.stderr[-3000:]}


def run() -> dict[str, Any]:
    """The wheel with the ``local`` extra alone, at the locked versions: its size, and an application's
    run (the client, signing, against the engine; the envelope it delivered; the construct refused),
    and the demo, each from a folder outside the checkout."""
    with tempfile.TemporaryDirectory(prefix="local-extra-") as tmp:
        root = Path(tmp)
        venv = install_wheel(build_wheel(root / "dist"), root / "user", "local")
        env = user_env(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
        application = subprocess.run([str(venv / "bin" / "python"), "-c", APPLICATION], cwd=root, env=env,
                                     capture_output=True, text=True, timeout=300)
        demo = subprocess.run([str(venv / "bin" / "cdk-delayed-scheduler"), "demo", "--timers", "4"], cwd=root,
                              env=env, capture_output=True, text=True, timeout=300)
        printed = application.stdout.strip().splitlines()
        return {"venv_mb": megabytes(venv), "site_packages_mb": megabytes(site_packages(venv)),
                "application": _outcome(application), "demo": _outcome(demo),
                "outcome": json.loads(printed[-1]) if application.returncode == 0 and printed else None}


@pytest.fixture(scope="module")
def local_extra() -> dict[str, Any]:
    return early_result("engine_only", timeout=600)


@pytest.mark.slow
def test_with_the_local_extra_alone_the_client_signs_to_the_engine_and_the_envelope_parses(local_extra):
    assert local_extra["application"]["code"] == 0, local_extra["application"]["stderr"]
    outcome = local_extra["outcome"]
    assert (outcome["installed"], outcome["imported"]) == (False, [])
    assert outcome["delivered"] == [True, {"hello": "no aws-cdk-lib"}]
    assert "aws-cdk-lib is not installed" in outcome["refused"]
    assert "pip install 'cdk-delayed-scheduler[cdk]'" in outcome["refused"]


@pytest.mark.slow
def test_the_demo_runs_with_the_local_extra_alone(local_extra):
    demo = local_extra["demo"]
    assert demo["code"] == 0, demo["stdout"] + demo["stderr"]
    assert "delivered 4/4, lost 0, early 0" in demo["stdout"] and "OK: none lost, none early" in demo["stdout"]


@pytest.mark.slow
def test_the_local_extra_installs_in_at_most_350_mb_as_the_readme_states(local_extra):
    """moto's services the engine uses and Flask, not moto[server]'s every service (431 MB with it)."""
    assert local_extra["venv_mb"] <= 350, local_extra
    stated = int(re.search(r"`\[local\]` (\d+) MB", (REPO / "README.md").read_text()).group(1))
    assert abs(stated - local_extra["venv_mb"]) <= 10, (stated, local_extra["venv_mb"])


if __name__ == "__main__":
    print_result(run())
