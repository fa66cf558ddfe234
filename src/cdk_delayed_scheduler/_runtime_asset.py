"""Where the Lambda runtime lives, relative to this module (never the working directory), and the
functions' asset staged from it."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parent


@lru_cache(maxsize=1)
def runtime_asset_path() -> Path:
    """The directory deployed as the functions' code: it holds ``scheduler_runtime``.

    Installed from a wheel, the runtime ships inside the package
    (``cdk_delayed_scheduler/_runtime``); in a source checkout it is the
    repository's ``lambda/`` folder.
    """
    for candidate in (_PACKAGE_DIR / "_runtime", _PACKAGE_DIR.parent.parent / "lambda"):
        if (candidate / "scheduler_runtime" / "__init__.py").is_file():
            return candidate
    raise FileNotFoundError("the scheduler runtime is missing from this installation of cdk-delayed-scheduler")


@lru_cache(maxsize=1)
def event_filters() -> dict[str, Any]:
    """The stream event filter patterns, shared by the construct and the local engine."""
    path = runtime_asset_path() / "scheduler_runtime" / "event_filters.json"
    filters: dict[str, Any] = json.loads(path.read_text())
    return filters


# --- the functions' asset: the runtime plus the tzdata package --------------------------------------
#: Directories and file endings that never ship in the functions' asset (``Code.from_asset``'s
#: ``exclude`` says the same, for CDK's own fingerprint).
ASSET_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/tests"]
_SKIPPED_DIRS = {"__pycache__", "tests"}
#: Part of the staged directory's name: change it when what is staged changes shape.
_STAGING_LAYOUT = "runtime+tzdata/1"


def tzdata_path() -> Path:
    """The installed ``tzdata`` package (a dependency of cdk-delayed-scheduler)."""
    spec = importlib.util.find_spec("tzdata")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the tzdata package is missing: the functions' asset ships it for cron schedules' "
                                "time zones (pip install tzdata)")
    return Path(next(iter(spec.submodule_search_locations)))


def _ships(relative: Path) -> bool:
    """Whether a file at ``relative`` (to the tree it is in) ships: not bytecode, and in no cache, test or
    hidden directory (a type checker's or a test tool's cache, such as ``.mypy_cache``)."""
    folders = relative.parts[:-1]
    return relative.suffix != ".pyc" and not _SKIPPED_DIRS & set(folders) and not any(f.startswith(".") for f in folders)


def _shipped(root: Path) -> list[Path]:
    """Files under ``root`` that ship, relative to it, sorted."""
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file() and _ships(p.relative_to(root)))


def _asset_files() -> dict[str, Path]:
    """Each shipped file's path in the asset -> its source: the runtime package at the root (what the wheel
    ships of the runtime directory, nothing else that lies beside it), ``tzdata/`` beside it."""
    runtime = runtime_asset_path() / "scheduler_runtime"
    files = {f"scheduler_runtime/{rel.as_posix()}": runtime / rel for rel in _shipped(runtime)}
    tzdata = tzdata_path()
    files.update({f"tzdata/{rel.as_posix()}": tzdata / rel for rel in _shipped(tzdata)})
    return files


def _is_complete(staged: Path, files: dict[str, Path]) -> bool:
    """Whether ``staged`` holds exactly ``files`` (names and sizes): a temp-dir cleaner may have
    removed some of an old staging's files."""
    if not staged.is_dir():
        return False
    present = {rel.as_posix(): (staged / rel).stat().st_size for rel in _shipped(staged)}
    return present == {name: source.stat().st_size for name, source in files.items()}


@lru_cache(maxsize=1)
def function_asset_path() -> Path:
    """The directory deployed as the functions' code: ``scheduler_runtime/`` and a copy of the installed
    ``tzdata`` package, which ``zoneinfo`` falls back to (``/var/task`` is on Lambda's ``sys.path``) where
    the Lambda image has no ``/usr/share/zoneinfo``.

    Staged once per content under the system's temp directory, named by a hash of every shipped file's
    path and bytes, so every synth of the same sources reuses it and the asset hash is stable.
    """
    files = _asset_files()
    digest = hashlib.sha256(_STAGING_LAYOUT.encode())
    for name, source in files.items():
        digest.update(f"{name}\0{hashlib.sha256(source.read_bytes()).hexdigest()}\0".encode())
    staged = Path(tempfile.gettempdir()) / f"cdk-delayed-scheduler-asset-{digest.hexdigest()[:20]}"
    if _is_complete(staged, files):
        return staged
    build = Path(tempfile.mkdtemp(prefix=f"{staged.name}.", suffix=".partial", dir=staged.parent))
    for name, source in files.items():
        (build / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, build / name)
    build.chmod(0o755)  # mkdtemp's 0o700 would reach the zip: Lambda must read the code
    if staged.exists():  # incomplete: set it aside, then take its place
        shutil.rmtree(staged.rename(f"{build}.stale"), ignore_errors=True)
    try:
        build.rename(staged)
    except OSError:  # another synth staged the same content first
        shutil.rmtree(build, ignore_errors=True)
        if not _is_complete(staged, files):
            raise
    return staged
