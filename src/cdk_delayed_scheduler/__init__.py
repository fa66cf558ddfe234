"""cdk-delayed-scheduler: to-the-second timers, one-shot and periodic, for AWS CDK apps.

``from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, ApiAuthorization, LogLevel, TableCapacity, targets``

Type checkers and editors see the real classes (the imports below under ``TYPE_CHECKING``). At
run time the construct classes load on first use (PEP 562), so the client
(``cdk_delayed_scheduler.client``), the envelope type (``cdk_delayed_scheduler.envelope``) and the
local engine (``cdk_delayed_scheduler.local``) never import aws-cdk-lib, which is the ``cdk`` extra
(``pip install 'cdk-delayed-scheduler[cdk]'``). The first construct class loaded checks that
aws-cdk-lib and constructs are installed, in the extra's ranges, and otherwise raises ImportError
saying what to install.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__all__ = ["DelayedScheduler", "PeriodicTimer", "SchedulerAlarms", "SchedulerApi", "ApiAuthorization", "LogLevel",
           "DeliveryPrecision", "TableCapacity", "Outcomes", "OutcomeKind", "targets"]

if TYPE_CHECKING:
    from . import targets
    from ._alarms import SchedulerAlarms
    from ._log_level import LogLevel
    from ._outcomes import Outcomes
    from ._precision import DeliveryPrecision
    from ._table_capacity import TableCapacity
    from .api import ApiAuthorization, SchedulerApi
    from .outcome import OutcomeKind
    from .periodic import PeriodicTimer
    from .scheduler import DelayedScheduler
else:
    from ._cdk_required import require_cdk

    _LAZY = {
        "DelayedScheduler": ("cdk_delayed_scheduler.scheduler", "DelayedScheduler"),
        "PeriodicTimer": ("cdk_delayed_scheduler.periodic", "PeriodicTimer"),
        "SchedulerAlarms": ("cdk_delayed_scheduler._alarms", "SchedulerAlarms"),
        "SchedulerApi": ("cdk_delayed_scheduler.api", "SchedulerApi"),
        "ApiAuthorization": ("cdk_delayed_scheduler.api", "ApiAuthorization"),
        "LogLevel": ("cdk_delayed_scheduler._log_level", "LogLevel"),
        "DeliveryPrecision": ("cdk_delayed_scheduler._precision", "DeliveryPrecision"),
        "TableCapacity": ("cdk_delayed_scheduler._table_capacity", "TableCapacity"),
        "Outcomes": ("cdk_delayed_scheduler._outcomes", "Outcomes"),
        "OutcomeKind": ("cdk_delayed_scheduler.outcome", "OutcomeKind"),
        "targets": ("cdk_delayed_scheduler.targets", None),
    }

    def __getattr__(name: str) -> Any:
        if name not in _LAZY:
            raise AttributeError(f"module 'cdk_delayed_scheduler' has no attribute {name!r}")
        module_name, attribute = _LAZY[name]
        require_cdk(name)
        module = importlib.import_module(module_name)
        value = module if attribute is None else getattr(module, attribute)
        globals()[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(__all__))
