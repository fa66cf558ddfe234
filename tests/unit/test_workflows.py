"""The GitHub workflows (.github/workflows/): they parse, CI and the release run the same proof (.ci/run,
the README's ./dev test --all), nothing is built or published before it passes, and the release's own
steps (the tag against the package's version, the notes from CHANGELOG.md) do what they say: each is run
here as written in the workflow."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
PROOF = "bash .ci/run"


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def triggers(flow: dict) -> dict:
    """The ``on:`` mapping (YAML 1.1 reads the bare key ``on`` as True)."""
    return flow.get("on", flow.get(True))


def runs(job: dict) -> list[str]:
    return [step["run"].strip() for step in job["steps"] if "run" in step]


def step(job: dict, name: str) -> dict:
    (found,) = [s for s in job["steps"] if s.get("name") == name]
    return found


def needs(flow: dict, job: str) -> set[str]:
    """Every job that ``job`` waits for, directly or through another."""
    direct = flow["jobs"][job].get("needs", [])
    direct = [direct] if isinstance(direct, str) else direct
    return set(direct).union(*(needs(flow, d) for d in direct))


def test_every_workflow_parses_with_jobs_that_have_steps():
    names = sorted(p.name for p in WORKFLOWS.glob("*.y*ml"))
    assert {"ci.yml", "release.yml"} <= set(names), names
    for name in names:
        flow = workflow(name)
        assert triggers(flow), name
        for job_name, job in flow["jobs"].items():
            assert job["runs-on"] == "ubuntu-latest" and job["steps"], (name, job_name)


def test_the_proof_is_ci_run_which_runs_the_readmes_proving_command():
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert commands == ["./dev test --all"]
    readme = (ROOT / "README.md").read_text()
    assert "./dev test --all    # 2. run the whole test suite, what proves the project" in readme


def test_ci_runs_the_proof_on_pull_requests_and_on_main():
    flow = workflow("ci.yml")
    assert "pull_request" in triggers(flow) and triggers(flow)["push"]["branches"] == ["main"]
    assert [runs(job) for job in flow["jobs"].values()] == [[PROOF]]


def test_the_release_runs_the_same_proof_before_it_builds_or_publishes():
    flow = workflow("release.yml")
    assert triggers(flow)["push"]["tags"] == ["v*"]
    assert runs(flow["jobs"]["test"]) == runs(workflow("ci.yml")["jobs"]["test"]) == [PROOF]
    for job in ("build", "publish", "github-release"):
        assert "test" in needs(flow, job), job
    assert [j for j, job in flow["jobs"].items() if PROOF in runs(job)] == ["test"]


def test_the_release_builds_with_uv_and_publishes_by_trusted_publishing():
    jobs = workflow("release.yml")["jobs"]
    assert any("uv build --out-dir dist" in run for run in runs(jobs["build"]))
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"]["name"] == "pypi"
    assert [s["uses"] for s in publish["steps"]][-1] == "pypa/gh-action-pypi-publish@release/v1"
    assert jobs["github-release"]["permissions"] == {"contents": "write"}
    assert "--notes-file notes/release-notes.md" in runs(jobs["github-release"])[0]


def run_step(name: str, cwd: Path, tag: str) -> subprocess.CompletedProcess:
    """The release's build step ``name``, run by bash as the workflow runs it, in ``cwd`` for the tag ``tag``."""
    script = step(workflow("release.yml")["jobs"]["build"], name)["run"]
    path = f"{Path(sys.executable).parent}:/usr/bin:/bin"  # python3: the suite's, as setup-python's 3.11 in the job
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env={"PATH": path, "GITHUB_REF_NAME": tag},
                          capture_output=True, text=True, timeout=60)


CHANGELOG = """# Changelog

## [Unreleased]

- something new

## [1.2.0] - 2027-01-05

### Added

- the thing

## [1.1.0] - 2026-12-01

- an older thing
"""


@pytest.mark.parametrize("tag, notes", [("v1.2.0", "### Added\n\n- the thing"), ("v1.1.0", "- an older thing")])
def test_the_release_notes_are_the_tagged_versions_section_of_the_changelog(tmp_path, tag, notes):
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    result = run_step("Release notes from CHANGELOG.md", tmp_path, tag)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "notes" / "release-notes.md").read_text() == notes + "\n"


def test_a_version_without_a_changelog_section_stops_the_release(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    result = run_step("Release notes from CHANGELOG.md", tmp_path, "v1.3.0")
    assert result.returncode != 0
    assert "CHANGELOG.md has no section for 1.3.0" in result.stderr


@pytest.mark.parametrize("tag, passes", [("v0.4.1", True), ("v0.4.2", False), ("0.4.1", False)])
def test_only_a_tag_of_the_packages_version_is_released(tmp_path, tag, passes):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "cdk-delayed-scheduler"\nversion = "0.4.1"\n')
    result = run_step("The tag is the package's version", tmp_path, tag)
    assert (result.returncode == 0) is passes, result.stdout + result.stderr
    if not passes:
        assert f"the tag {tag} is not v0.4.1" in result.stdout


def test_the_changelog_keeps_an_unreleased_section_first():
    text = (ROOT / "CHANGELOG.md").read_text()
    sections = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert sections[0] == "Unreleased"
    assert all(re.fullmatch(r"\d+\.\d+\.\d+", version) for version in sections[1:]), sections
