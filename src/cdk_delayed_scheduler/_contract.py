"""The contract the construct, the runtime and the local engine share: the runtime's own typed view
(``scheduler_runtime/core/contract.py`` in the functions' asset), loaded from the asset, so that the
construct reads the same names and numbers the deployed functions read.

    from ._contract import contract
    contract.SHARD_COUNT.default, contract.ENV.table_name, contract.ROUTES
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import TYPE_CHECKING

from ._runtime_asset import runtime_asset_path


def load_core_module(name: str) -> ModuleType:
    """A module of the runtime's pure ``core`` package that imports only the standard library
    (``contract``, ``cron``), loaded from the asset as ``cdk_delayed_scheduler._runtime_<name>``, so
    that the construct runs the runtime's own code, never a copy."""
    module_name = f"cdk_delayed_scheduler._runtime_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    path = runtime_asset_path() / "scheduler_runtime" / "core" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the scheduler's {name} module from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from scheduler_runtime.core import contract
else:
    contract = load_core_module("contract")

__all__ = ["contract", "load_core_module"]
