"""Contract values the construct and the runtime share, read from ``contract.json`` in this asset.

The construct reads the same file (``cdk_delayed_scheduler._runtime_asset.contract``), so the id
pattern, the limits and the defaults have exactly one source.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

_CONTRACT = json.loads((Path(__file__).resolve().parent.parent / "contract.json").read_text(encoding="utf-8"))

ID_PATTERN = re.compile(_CONTRACT["idPattern"])
TARGET_NAME_PATTERN: str = _CONTRACT["targetNamePattern"]
DEFAULT_TARGET_NAME: str = _CONTRACT["defaultTargetName"]
MAX_BATCH_SIZE: int = _CONTRACT["maxBatchSize"]
MAX_PAYLOAD_BYTES: int = _CONTRACT["maxPayloadBytes"]
SQS_MAX_DELAY_SECONDS: int = _CONTRACT["sqsMaxDelaySeconds"]
DEFAULT_DELAY_WINDOW_SECONDS: int = _CONTRACT["delayWindowSeconds"]["default"]
DEFAULT_SHARD_COUNT: int = _CONTRACT["shardCount"]["default"]
MAX_SHARD_COUNT: int = _CONTRACT["shardCount"]["max"]
DEFAULT_HISTORY_RETENTION_SECONDS: int = _CONTRACT["historyRetentionSeconds"]["default"]
DEFAULT_MAX_RECEIVE_COUNT: int = _CONTRACT["maxReceiveCount"]["default"]
DEFAULT_DISPATCHER_TIMEOUT_SECONDS: int = _CONTRACT["dispatcherTimeoutSeconds"]["default"]
VISIBILITY_TIMEOUT_FACTOR: int = _CONTRACT["visibilityTimeoutFactor"]
"""The delayer queue's visibility timeout is this many times the dispatcher's timeout."""
DELAYER_RETENTION_SECONDS: int = _CONTRACT["delayerRetentionSeconds"]
"""How long the delayer queue keeps a message (SQS's retention period), counted from its send."""
API_FUNCTION_TIMEOUT_SECONDS: int = _CONTRACT["apiFunctionTimeoutSeconds"]
DEFAULT_LOG_LEVEL: str = _CONTRACT["defaultLogLevel"]
METRIC_DIMENSIONS: dict = _CONTRACT["metrics"]["dimensions"]
"""The dimensions of every metric the runtime emits (``FunctionName`` is added per function)."""
LATENESS_METRIC: str = _CONTRACT["metrics"]["lateness"]
LISTING: dict = _CONTRACT["listing"]
"""The listing index: ``indexName``, ``partitionKey``, ``sortKey``, the ``statuses`` it covers, ``limit``."""
PERIODIC_DEFAULT_TIME_ZONE: str = _CONTRACT["periodic"]["defaultTimeZone"]
PERIODIC_MIN_EVERY_SECONDS: int = _CONTRACT["periodic"]["minEverySeconds"]
PERIODIC_RETRY_DELAYS_SECONDS: tuple[int, ...] = tuple(_CONTRACT["periodic"]["retryDelaySeconds"])
"""Delays before each retry of a periodic occurrence whose delivery failed (the next is armed already)."""
