"""An environment for a child process that sees this venv as a base install sees it: the named modules cannot be
imported (a ``sitecustomize`` maps each to None), in that process and in every process it starts."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def without_modules(directory: Path, modules: tuple[str, ...]) -> dict[str, str]:
    """This process's environment (pytest's variables left out), with ``modules`` hidden through ``directory``."""
    (directory / "sitecustomize.py").write_text("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules))
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST")}
    return {**env, "PYTHONPATH": os.pathsep.join([str(directory), str(REPO / "src")])}
