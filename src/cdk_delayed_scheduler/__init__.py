"""cdk-delayed-scheduler: to-the-second one-shot timers for AWS CDK apps.

``from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, ApiAuthorization, targets``

The construct classes load aws-cdk-lib lazily, so the local engine's command
line (``cdk_delayed_scheduler.local``) starts without importing it.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["DelayedScheduler", "SchedulerApi", "ApiAuthorization", "targets"]

_LAZY = {
    "DelayedScheduler": ("cdk_delayed_scheduler.scheduler", "DelayedScheduler"),
    "SchedulerApi": ("cdk_delayed_scheduler.api", "SchedulerApi"),
    "ApiAuthorization": ("cdk_delayed_scheduler.api", "ApiAuthorization"),
    "targets": ("cdk_delayed_scheduler.targets", None),
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'cdk_delayed_scheduler' has no attribute {name!r}")
    module_name, attribute = _LAZY[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
