"""Structured logs and CloudWatch Embedded Metric Format (EMF) metrics.

Logs go through :mod:`logging` under the ``scheduler_runtime`` logger, one
JSON object per event. Metrics are EMF JSON lines written to the metric sink,
stdout by default, which is where Lambda's log extraction reads them.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, Callable, Mapping

from .core.contract import DEFAULT_LOG_LEVEL, ENV

logger = logging.getLogger("scheduler_runtime")
# Quiet by default: the hot path's events (created, enqueued, delivered) are INFO, so a WARNING
# level writes only what needs a look; DEBUG or INFO gives the full event trail.
logger.setLevel((os.environ.get(ENV.log_level) or DEFAULT_LOG_LEVEL).upper())

_metric_sink: Callable[[str], None] = lambda line: print(line, file=sys.stdout, flush=True)  # noqa: E731


def set_metric_sink(sink: Callable[[str], None]) -> None:
    """Send EMF lines elsewhere (the local engine keeps stdout for deliveries)."""
    global _metric_sink
    _metric_sink = sink


def log_event(event: str, level: int = logging.INFO, **fields: object) -> None:
    """Log one structured event, e.g. ``log_event("claimed", id=..., by="sweeper")``."""
    if logger.isEnabledFor(level):
        logger.log(level, json.dumps({"event": event, **fields}, default=str), extra={"event": event, "fields": fields})


def emit_metrics(namespace: str, dimensions: Mapping[str, str], metrics: Mapping[str, Any], unit: str = "Milliseconds",
                 timestamp_ms: int = 0, units: Mapping[str, str] | None = None) -> None:
    """One EMF record with the given metric values under ``namespace`` and ``dimensions``, plus
    ``FunctionName``: the emitting function's name (Lambda sets ``AWS_LAMBDA_FUNCTION_NAME``), so two
    schedulers that share a namespace have metrics of their own; ``local`` outside Lambda.

    Each metric's unit is ``units[name]`` where given, else ``unit``. One record is one log event
    however many metrics it carries: a further metric costs its bytes, and a custom metric of its own."""
    units = units or {}
    dimensions = {**dimensions, "FunctionName": os.environ.get("AWS_LAMBDA_FUNCTION_NAME") or "local"}
    record = {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace,
                    "Dimensions": [sorted(dimensions)],
                    "Metrics": [{"Name": name, "Unit": units.get(name, unit)} for name in metrics],
                }
            ],
        },
        **dimensions,
        **metrics,
    }
    _metric_sink(json.dumps(record, separators=(",", ":")))
