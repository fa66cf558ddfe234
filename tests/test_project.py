"""The repository's generated files are current: regenerating them changes nothing."""

import filecmp
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATED_BY_PROJEN = ["pyproject.toml", ".gitignore", ".gitattributes", ".projen/tasks.json", ".projen/deps.json", ".projen/files.json"]


def test_projen_regenerates_the_committed_files_unchanged(tmp_path):
    shutil.copy(ROOT / ".projenrc.py", tmp_path / ".projenrc.py")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    env = {**os.environ, "PROJEN_DISABLE_POST": "1", "UV_PYTHON_DOWNLOADS": "never"}
    subprocess.run([sys.executable, ".projenrc.py"], cwd=tmp_path, env=env, check=True, capture_output=True, timeout=300)
    stale = [name for name in GENERATED_BY_PROJEN if not filecmp.cmp(ROOT / name, tmp_path / name, shallow=False)]
    assert stale == [], f"regenerate with ./dev projen: {stale}"

