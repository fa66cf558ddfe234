"""Where the Lambda runtime lives, relative to this module (never the working directory)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

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
def event_filters() -> dict:
    """The stream event filter patterns, shared by the construct and the local engine."""
    return json.loads((runtime_asset_path() / "scheduler_runtime" / "event_filters.json").read_text())


@lru_cache(maxsize=1)
def contract() -> dict:
    """The values the construct and the runtime share (``contract.json``): the id and target name
    patterns, the default target's name, batch and SQS limits, and each tunable's default and range."""
    return json.loads((runtime_asset_path() / "scheduler_runtime" / "contract.json").read_text(encoding="utf-8"))
