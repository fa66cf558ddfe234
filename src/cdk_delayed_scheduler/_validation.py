"""Eager prop validation: a wrong value raises ``ValueError`` naming the prop and what is allowed;
``None`` and unresolved tokens are left alone (CloudFormation judges those)."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from aws_cdk import Duration, Token
from aws_cdk import aws_dynamodb as dynamodb

from ._runtime_asset import contract

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def check_range(prop: str, value: Any, low: Optional[float], high: Optional[float], unit: str = "") -> None:
    """Raise ``ValueError`` naming ``prop`` and its range; skip ``None`` and unresolved tokens."""
    if value is None or Token.is_unresolved(value):
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{prop}: must be a number, got {value!r}")
    suffix = f" {unit}" if unit else ""
    if high is None:
        if value < low:
            raise ValueError(f"{prop}: must be >= {low}{suffix}, got {value}")
    elif not low <= value <= high:
        raise ValueError(f"{prop}: must be between {low} and {high}{suffix}, got {value}")


def check_bounds(prop: str, value: Any, bounds: dict, unit: str = "") -> None:
    """``check_range`` against a contract entry ``{"default", "min", "max"}``."""
    check_range(prop, value, bounds["min"], bounds["max"], unit)


def check_whole_seconds(prop: str, duration: Optional[Duration]) -> None:
    if duration is None:
        return
    seconds = duration.to_seconds(integral=False)
    if not Token.is_unresolved(seconds) and float(seconds) != int(seconds):
        raise ValueError(f"{prop}: must be whole seconds, got {seconds} seconds")


def seconds(duration: Duration) -> Any:
    """Whole seconds of ``duration``, or the unresolved token."""
    return duration.to_seconds()


def check_log_level(log_level: str) -> None:
    if not Token.is_unresolved(log_level) and str(log_level).upper() not in LOG_LEVELS:
        raise ValueError(f"log_level: must be one of {', '.join(LOG_LEVELS)}, got {log_level!r}")


def check_non_empty(prop: str, value: Any) -> None:
    if not Token.is_unresolved(value) and not value:
        raise ValueError(f"{prop}: must be a non-empty string")


def text(value: Any) -> str:
    """An environment variable's text: a whole number as ``"16"``, a token as a token string."""
    if Token.is_unresolved(value):
        return Token.as_string(value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def validate_props(*, target: Any, api_is_valid: bool, shard_count: Any, delay_window: Duration,
                   history_retention: Duration, max_receive_count: Any, billing_mode: dynamodb.BillingMode,
                   read_capacity: Any, write_capacity: Any, log_level: str, memory_sizes: Mapping[str, Any],
                   dispatcher_timeout: Duration, dispatcher_batch_size: Any,
                   dispatcher_max_batching_window: Optional[Duration], dispatcher_max_concurrency: Any,
                   stream_batch_size: Any, stream_retry_attempts: Any, metrics_namespace: str) -> None:
    """``DelayedScheduler``'s props, each against its contract bounds or its documented range."""
    c = contract()
    if target is None:
        raise ValueError("target: a target is required, e.g. targets.LambdaInvoke(fn)")
    if not api_is_valid:
        raise ValueError("api: must be SchedulerApi.http(...), SchedulerApi.rest(...) or SchedulerApi.none()")
    for prop, duration in (("delay_window", delay_window), ("history_retention", history_retention),
                           ("dispatcher_timeout", dispatcher_timeout),
                           ("dispatcher_max_batching_window", dispatcher_max_batching_window)):
        check_whole_seconds(prop, duration)
    check_bounds("shard_count", shard_count, c["shardCount"])
    check_bounds("delay_window", seconds(delay_window), c["delayWindowSeconds"], unit="seconds")
    check_bounds("history_retention", seconds(history_retention), c["historyRetentionSeconds"], unit="seconds")
    check_bounds("max_receive_count", max_receive_count, c["maxReceiveCount"])
    if billing_mode != dynamodb.BillingMode.PROVISIONED and (read_capacity is not None or write_capacity is not None):
        raise ValueError("read_capacity/write_capacity: only allowed with billing_mode=BillingMode.PROVISIONED")
    check_range("read_capacity", read_capacity, 1, None)
    check_range("write_capacity", write_capacity, 1, None)
    check_log_level(log_level)
    for name, size in memory_sizes.items():
        check_range(f"{name}_memory_size", size, 128, 10240)
    if Token.is_unresolved(dispatcher_timeout.to_seconds()):
        raise ValueError("dispatcher_timeout: must be a concrete duration, not a token "
                         "(the delayer queue's visibility timeout is 6 times it)")
    check_range("dispatcher_timeout", seconds(dispatcher_timeout), 10, 900, unit="seconds")
    check_range("dispatcher_batch_size", dispatcher_batch_size, 1, 10)
    if dispatcher_max_batching_window is not None:
        check_range("dispatcher_max_batching_window", seconds(dispatcher_max_batching_window), 0, 300, unit="seconds")
    check_range("dispatcher_max_concurrency", dispatcher_max_concurrency, 2, 1000)
    check_range("stream_batch_size", stream_batch_size, 1, 1000)
    check_range("stream_retry_attempts", stream_retry_attempts, 0, 10000)
    check_non_empty("metrics_namespace", metrics_namespace)
