"""One version everywhere a user sees one. .projenrc.py's ``version=`` writes pyproject.toml
(tests/test_project.py checks that it is current); from there it must reach the built wheel's metadata,
the console script's ``cdk-delayed-scheduler --version`` run from that wheel, and the newest released
section of CHANGELOG.md, whose notes a release of that version publishes.

The wheel's test is packaging, so it is marked slow (the full tier), though it is quick: the wheel builds in
about 0.3 s (hatchling, no isolated environment) and its script runs in about 0.5 s."""

from __future__ import annotations

import email.parser
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HOME = "https://github.com/cdk-delayed-scheduler/cdk-delayed-scheduler"
#: Runs the wheel's console script ``cdk-delayed-scheduler`` as its entry point names it, with the unpacked wheel
#: first on the path; prints where the package was imported from, then the script's ``--version`` line.
RUN_SCRIPT = """
import sys
from importlib.metadata import distribution
sys.path.insert(0, sys.argv[1])
(script,) = [e for e in distribution("cdk-delayed-scheduler").entry_points
             if e.group == "console_scripts" and e.name == "cdk-delayed-scheduler"]
main = script.load()
print(sys.modules[main.__module__].__file__, flush=True)
main(["--version"])
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from this checkout, unpacked (as an installer would lay it out)."""
    root = tmp_path_factory.mktemp("wheel")
    hatchling = Path(sys.executable).with_name("hatchling")
    subprocess.run([str(hatchling), "build", "-t", "wheel", "-d", str(root / "dist")], cwd=ROOT, check=True,
                   capture_output=True, text=True, timeout=300)
    (built,) = (root / "dist").glob("cdk_delayed_scheduler-*.whl")
    with zipfile.ZipFile(built) as archive:
        archive.extractall(root / "unpacked")
    return root / "unpacked"


def wheel_version(unpacked: Path) -> str:
    (metadata,) = unpacked.glob("cdk_delayed_scheduler-*.dist-info/METADATA")
    return email.parser.Parser().parsestr(metadata.read_text())["Version"]


def script_version(unpacked: Path) -> str:
    result = subprocess.run([sys.executable, "-I", "-c", RUN_SCRIPT, str(unpacked)], capture_output=True,
                            text=True, timeout=120, cwd=unpacked)
    assert result.returncode == 0, result.stderr
    imported_from, shown = result.stdout.strip().splitlines()
    assert Path(imported_from).is_relative_to(unpacked), imported_from  # the wheel's code, not the checkout's
    return shown.removeprefix("cdk-delayed-scheduler ")


def latest_release(changelog: str) -> tuple[str, str]:
    """The version and date of CHANGELOG.md's newest released section (the first below Unreleased)."""
    found = re.search(r"^## \[(\d+\.\d+\.\d+)\] - (\S+)$", changelog, re.M)
    assert found, "CHANGELOG.md has no released section ('## [X.Y.Z] - YYYY-MM-DD')"
    return found.group(1), found.group(2)


@pytest.mark.slow
def test_the_wheel_its_console_script_and_the_changelog_give_one_version(wheel):
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released, date = latest_release(changelog)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", date), f"the {released} section's date is not YYYY-MM-DD: {date}"
    assert {"wheel": wheel_version(wheel), "--version": script_version(wheel)} == {"wheel": released,
                                                                                    "--version": released}


def test_the_changelogs_links_start_from_the_latest_releases_tag():
    changelog = (ROOT / "CHANGELOG.md").read_text()
    released, _ = latest_release(changelog)
    assert f"[Unreleased]: {HOME}/compare/v{released}...HEAD" in changelog.splitlines()
    assert re.search(rf"^\[{re.escape(released)}\]: {re.escape(HOME)}/(compare/v[\d.]+\.\.\.|releases/tag/)"
                     rf"v{re.escape(released)}$", changelog, re.M)
