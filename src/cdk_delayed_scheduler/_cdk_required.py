"""The construct's dependencies, checked before the construct is first imported.

aws-cdk-lib and constructs are the ``cdk`` extra (``pip install 'cdk-delayed-scheduler[cdk]'``), so
that application code installs the client and the envelope type without them. An install without
the extra may still hold them (a CDK app always does), at any version: the package root checks the
same ranges the extra declares before it loads a construct class, and says what to install when
one is missing or out of range.
"""

from __future__ import annotations

import importlib.util
import re
from importlib import metadata

#: The ``cdk`` extra's requirements, exactly as pyproject.toml declares them (a test compares them).
REQUIREMENTS = ("aws-cdk-lib>=2.269.0,<3", "constructs>=10.5.1,<11")
#: The module each distribution provides.
_MODULES = {"aws-cdk-lib": "aws_cdk", "constructs": "constructs"}
_INSTALL = "pip install 'cdk-delayed-scheduler[cdk]'"


def _numbers(version: str) -> tuple[int, ...]:
    """A release's leading numbers: ``2.269.0`` is (2, 269, 0); ``10.5.1rc1`` is (10, 5, 1)."""
    release = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in release.group().split(".")) if release else ()


def _problem(requirement: str) -> str | None:
    """What is wrong with ``requirement`` (``name>=floor,<ceiling``) here, or None."""
    name, floor, ceiling = re.fullmatch(r"([a-z-]+)>=([0-9.]+),<([0-9.]+)", requirement).groups()  # type: ignore[union-attr]
    if importlib.util.find_spec(_MODULES[name]) is None:
        return f"{name} is not installed"
    try:
        installed = metadata.version(name)
    except metadata.PackageNotFoundError:  # importable without metadata (vendored): nothing to compare
        return None
    if not _numbers(floor) <= _numbers(installed) < _numbers(ceiling):
        return f"{name} {installed} is installed, and the construct needs {name}>={floor},<{ceiling}"
    return None


def require_cdk(name: str) -> None:
    """Before ``cdk_delayed_scheduler.<name>`` loads: raise ImportError naming what to install when
    aws-cdk-lib or constructs is missing or out of range."""
    problems = [p for p in map(_problem, REQUIREMENTS) if p is not None]
    if problems:
        raise ImportError(
            f"cdk_delayed_scheduler.{name} needs the 'cdk' extra: {'; '.join(problems)}. Install it with "
            f"{_INSTALL} (or {' '.join(repr(r) for r in REQUIREMENTS)}). The client "
            "(cdk_delayed_scheduler.client) and the envelope type (cdk_delayed_scheduler.envelope) need neither.")
