"""Eager prop validation: a wrong value raises ``ValueError`` naming the prop and what is allowed;
``None`` and unresolved tokens are left alone (CloudFormation judges those)."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional

from aws_cdk import Duration, RemovalPolicy, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from ._log_level import LogLevel
from ._runtime_asset import contract
from .targets import check_target

#: The oldest Python the runtime is tested on; a ``runtime`` prop must be this or later.
OLDEST_PYTHON = (3, 11)
#: The dispatcher's own part of a delivery (the wait for the due time, the delivery start's write),
#: which ``dispatcher_timeout`` must leave beside a Lambda target's timeout.
DISPATCH_MARGIN_SECONDS = 5


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


def describe(value: Any) -> str:
    """A wrong value as an error message shows it: a literal as written, anything else by its type."""
    return repr(value) if isinstance(value, (str, int, float, bool)) else f"a {type(value).__name__}"


def check_type(prop: str, value: Any, expected: type, example: str) -> None:
    """Raise ``ValueError`` unless ``value`` is ``None`` or an ``expected``, naming an example."""
    if value is not None and not isinstance(value, expected):
        raise ValueError(f"{prop}: must be {example}, got {describe(value)}")


def check_duration(prop: str, value: Any) -> None:
    example = f"Duration.seconds({value})" if isinstance(value, (int, float)) else "Duration.seconds(60)"
    check_type(prop, value, Duration, f"a Duration, e.g. {example}")


def check_log_level(log_level: Any) -> None:
    if isinstance(log_level, str):
        raise ValueError(f"log_level: must be a LogLevel, e.g. LogLevel.INFO, or LogLevel.of(text) for text "
                         f"or a token; got {log_level!r}")
    check_type("log_level", log_level, LogLevel, "a LogLevel, e.g. LogLevel.INFO")


def check_runtime(runtime: Any) -> None:
    """A Python Lambda runtime, ``OLDEST_PYTHON`` or later (an unknown newer name is allowed)."""
    oldest = ".".join(map(str, OLDEST_PYTHON))
    check_type("runtime", runtime, lambda_.Runtime, f"a Lambda runtime, e.g. Runtime.PYTHON_{oldest.replace('.', '_')}")
    match = re.fullmatch(r"python(\d+)\.(\d+)", runtime.name)
    if runtime.family != lambda_.RuntimeFamily.PYTHON or not match or (int(match[1]), int(match[2])) < OLDEST_PYTHON:
        raise ValueError(f"runtime: must be a Python {oldest} or later Lambda runtime (the scheduler's runtime is "
                         f"Python), got {runtime.name}")


def check_non_empty(prop: str, value: Any) -> None:
    if not Token.is_unresolved(value) and not value:
        raise ValueError(f"{prop}: must be a non-empty string")


def text(value: Any) -> str:
    """An environment variable's text: a whole number as ``"16"``, a token as a token string."""
    if Token.is_unresolved(value):
        return Token.as_string(value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def check_dispatcher_covers(name: str, target_timeout: Optional[Duration], dispatcher_timeout: Duration) -> None:
    """A Lambda target's run must fit in the dispatcher's, or its deliveries would time out and repeat."""
    if target_timeout is None or Token.is_unresolved(target_timeout.to_seconds()):
        return
    run = int(target_timeout.to_seconds())
    needed, have = run + DISPATCH_MARGIN_SECONDS, int(dispatcher_timeout.to_seconds())
    if have < needed:
        raise ValueError(
            f"dispatcher_timeout: must be at least {needed} seconds to cover target {name!r}, a Lambda function "
            f"with a {run}-second timeout (the dispatcher waits for it, plus {DISPATCH_MARGIN_SECONDS} seconds of "
            f"its own), got {have} seconds")


def check_receives_fit_retention(max_receive_count: Any, dispatcher_timeout: Duration, delay_window: Duration) -> None:
    """Every receive of a delayer message must come while the queue still keeps it.

    A message waits up to ``delay_window`` before its first receive, and each receive that does not
    end in a delivery hides it for the visibility timeout (``visibilityTimeoutFactor`` x
    ``dispatcher_timeout``). SQS counts its retention from the send: past it, the message is dropped,
    neither delivered nor dead-lettered. Unresolved tokens are left alone.
    """
    c = contract()
    values = (max_receive_count, seconds(dispatcher_timeout), seconds(delay_window))
    if any(Token.is_unresolved(v) for v in values):
        return
    receives, timeout, window = (int(v) for v in values)
    retention, visibility = c["delayerRetentionSeconds"], c["visibilityTimeoutFactor"] * timeout
    needed = window + receives * visibility
    if needed > retention:
        raise ValueError(
            f"max_receive_count ({receives}) x the delayer queue's visibility timeout ({c['visibilityTimeoutFactor']} "
            f"x dispatcher_timeout = {visibility} seconds), plus delay_window ({window} seconds), is {needed} "
            f"seconds: longer than the delayer queue keeps a message (4 days, {retention} seconds), so SQS would "
            f"drop it before its last receive. Allowed with this dispatcher_timeout: max_receive_count <= "
            f"{(retention - window) // visibility}")


def validate_props(*, target: Any, extra_targets: Any, api_is_valid: bool, shard_count: Any,
                   delay_window: Duration, history_retention: Duration, max_receive_count: Any, listing: Any,
                   billing_mode: dynamodb.BillingMode, read_capacity: Any, write_capacity: Any,
                   removal_policy: Any, log_level: LogLevel, log_retention: Any, runtime: Any, architecture: Any,
                   memory_sizes: Mapping[str, Any], dispatcher_timeout: Duration, dispatcher_batch_size: Any,
                   dispatcher_max_batching_window: Optional[Duration], dispatcher_max_concurrency: Any,
                   stream_batch_size: Any, stream_retry_attempts: Any, metrics_namespace: str) -> None:
    """``DelayedScheduler``'s props: each of the right kind, then against its contract bounds or range."""
    c = contract()
    if target is None:
        raise ValueError("target: a target is required, e.g. targets.LambdaInvoke(fn)")
    check_target("target", target)
    if extra_targets is not None and not isinstance(extra_targets, Mapping):
        raise ValueError('extra_targets: must be a mapping of name to target, e.g. {"billing": '
                         f"targets.LambdaInvoke(fn)}}, got {describe(extra_targets)}")
    if not api_is_valid:
        raise ValueError("api: must be SchedulerApi.http(...), SchedulerApi.rest(...) or SchedulerApi.none()")
    durations = (("delay_window", delay_window), ("history_retention", history_retention),
                 ("dispatcher_timeout", dispatcher_timeout),
                 ("dispatcher_max_batching_window", dispatcher_max_batching_window))
    for prop, duration in durations:
        check_duration(prop, duration)
    for prop, value, kind, example in (
        ("billing_mode", billing_mode, dynamodb.BillingMode, "a BillingMode, e.g. BillingMode.PAY_PER_REQUEST"),
        ("removal_policy", removal_policy, RemovalPolicy, "a RemovalPolicy, e.g. RemovalPolicy.DESTROY"),
        ("log_retention", log_retention, logs.RetentionDays, "a RetentionDays, e.g. RetentionDays.ONE_WEEK"),
        ("architecture", architecture, lambda_.Architecture, "an Architecture, e.g. Architecture.X86_64"),
    ):
        check_type(prop, value, kind, example)
    check_type("listing", listing, bool, "True or False")
    check_log_level(log_level)
    check_runtime(runtime)
    for prop, duration in durations:
        check_whole_seconds(prop, duration)
    check_bounds("shard_count", shard_count, c["shardCount"])
    check_bounds("delay_window", seconds(delay_window), c["delayWindowSeconds"], unit="seconds")
    check_bounds("history_retention", seconds(history_retention), c["historyRetentionSeconds"], unit="seconds")
    check_bounds("max_receive_count", max_receive_count, c["maxReceiveCount"])
    if billing_mode != dynamodb.BillingMode.PROVISIONED and (read_capacity is not None or write_capacity is not None):
        raise ValueError("read_capacity/write_capacity: only allowed with billing_mode=BillingMode.PROVISIONED")
    check_range("read_capacity", read_capacity, 1, None)
    check_range("write_capacity", write_capacity, 1, None)
    for name, size in memory_sizes.items():
        check_range(f"{name}_memory_size", size, 128, 10240)
    if Token.is_unresolved(dispatcher_timeout.to_seconds()):
        raise ValueError("dispatcher_timeout: must be a concrete duration, not a token "
                         "(the delayer queue's visibility timeout is 6 times it)")
    check_bounds("dispatcher_timeout", seconds(dispatcher_timeout), c["dispatcherTimeoutSeconds"], unit="seconds")
    check_receives_fit_retention(max_receive_count, dispatcher_timeout, delay_window)
    check_range("dispatcher_batch_size", dispatcher_batch_size, 1, 10)
    if dispatcher_max_batching_window is not None:
        check_range("dispatcher_max_batching_window", seconds(dispatcher_max_batching_window), 0, 300, unit="seconds")
    check_range("dispatcher_max_concurrency", dispatcher_max_concurrency, 2, 1000)
    check_range("stream_batch_size", stream_batch_size, 1, 1000)
    check_range("stream_retry_attempts", stream_retry_attempts, 0, 10000)
    check_non_empty("metrics_namespace", metrics_namespace)
