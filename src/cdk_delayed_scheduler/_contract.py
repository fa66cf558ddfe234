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

_MODULE = "cdk_delayed_scheduler._runtime_contract"


def _load() -> ModuleType:
    if _MODULE in sys.modules:
        return sys.modules[_MODULE]
    path = runtime_asset_path() / "scheduler_runtime" / "core" / "contract.py"
    spec = importlib.util.spec_from_file_location(_MODULE, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the scheduler's contract from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE] = module  # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


if TYPE_CHECKING:
    from scheduler_runtime.core import contract
else:
    contract = _load()

__all__ = ["contract"]
