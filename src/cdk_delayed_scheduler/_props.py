"""``DelayedScheduler``'s props as one frozen value, and the rules they are checked by: a table of
small checks, each naming its prop (as aws-cdk-lib's ``validate-queue-props.ts`` does), run in order,
so a wrong kind of value is named before its range is judged."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, Mapping, Optional, Union

from aws_cdk import Duration, RemovalPolicy, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs

from ._contract import contract
from ._functions import DEFAULT_RUNTIME
from ._log_level import LogLevel
from ._outcomes import Outcomes, outcomes_of
from ._precision import DeliveryPrecision
from ._table_capacity import MIN_CAPACITY_UNITS, TableCapacity
from ._validation import (check_duration, check_log_level, check_non_empty, check_range, check_runtime, check_type,
                          check_whole_seconds, describe, seconds, seconds_or_days)
from .api import SchedulerApi, SchedulerApiKind
from .targets import IScheduleTarget, check_target

#: The longest name API Gateway takes for an API (HTTP or REST): ``api_name``'s limit.
MAX_API_NAME_LENGTH = 128


def default_of(bounds: contract.Bounds) -> int:
    """A tunable's default, for a signature (each tunable with a default in ``contract.json``)."""
    if bounds.default is None:
        raise ValueError(f"{bounds} has no default")
    return bounds.default


@dataclass(frozen=True)
class SchedulerProps:
    """The props of one ``DelayedScheduler``, as its keyword arguments gave them, with each computed
    default (``None`` in the signature) filled in. Their meaning is documented on the construct."""

    target: IScheduleTarget
    extra_targets: Optional[Mapping[str, IScheduleTarget]]
    api: SchedulerApi
    api_name: Optional[str]
    shard_count: int
    delay_window: Duration
    history_retention: Duration
    listing: bool
    billing_mode: dynamodb.BillingMode
    read_capacity: Optional[int]
    write_capacity: Optional[int]
    provisioned_capacity: Optional[TableCapacity]
    warm_throughput: Optional[dynamodb.WarmThroughput]
    encryption_key: Optional[kms.IKey]
    point_in_time_recovery: bool
    deletion_protection: Optional[bool]
    removal_policy: RemovalPolicy
    log_level: LogLevel
    log_retention: logs.RetentionDays
    runtime: lambda_.Runtime
    architecture: lambda_.Architecture
    tracing: lambda_.Tracing
    api_memory_size: int
    sweeper_memory_size: int
    enqueuer_memory_size: int
    dispatcher_memory_size: int
    dispatcher_timeout: Duration
    dispatcher_batch_size: int
    dispatcher_max_batching_window: Optional[Duration]
    dispatcher_max_concurrency: Optional[int]
    dispatcher_reserved_concurrency: Optional[int]
    dispatcher_keep_warm: bool
    precision: DeliveryPrecision
    max_receive_count: int
    retry_max_age: Duration
    max_lateness: Optional[Duration]
    stream_batch_size: int
    stream_retry_attempts: int
    metrics_namespace: str
    outcomes: Optional[Union[IScheduleTarget, Outcomes]]

    @classmethod
    def of(cls, arguments: Mapping[str, Any]) -> SchedulerProps:
        """The props among ``arguments`` (the construct's ``locals()``), computed defaults filled in,
        then checked by every rule of ``RULES``."""
        given = {field.name: arguments[field.name] for field in fields(cls)}
        for name, default in _COMPUTED_DEFAULTS.items():
            if given[name] is None:
                given[name] = default()
        props = cls(**given)
        for rule in RULES:
            rule(props)
        return props

    @property
    def table_deletion_protection(self) -> Optional[bool]:
        """The table's ``DeletionProtectionEnabled``: as given, else on unless the table is destroyed with
        the stack (``None``, left out of the template, when off by that default)."""
        if self.deletion_protection is not None:
            return self.deletion_protection
        return None if self.removal_policy == RemovalPolicy.DESTROY else True

    @property
    def table_capacity(self) -> Optional[TableCapacity]:
        """The table's and each index's capacity: ``None`` on demand; with ``BillingMode.PROVISIONED``,
        ``provisioned_capacity``, else ``TableCapacity.fixed()`` with ``read_capacity`` and
        ``write_capacity`` where given."""
        if self.billing_mode != dynamodb.BillingMode.PROVISIONED:
            return None
        return self.provisioned_capacity or TableCapacity.fixed(read=self.read_capacity, write=self.write_capacity)

    def memory_size(self, function: str) -> int:
        """The memory of ``function`` (``"api"``, ``"sweeper"``, ``"enqueuer"``, ``"dispatcher"``), in MiB."""
        size: int = getattr(self, f"{function}_memory_size")
        return size


#: The props whose default is computed: ``None`` in the signature stands for these.
_COMPUTED_DEFAULTS: dict[str, Callable[[], Any]] = {
    "api": SchedulerApi.http,
    "delay_window": lambda: Duration.seconds(default_of(contract.DELAY_WINDOW_SECONDS)),
    "history_retention": lambda: Duration.seconds(default_of(contract.HISTORY_RETENTION_SECONDS)),
    "dispatcher_timeout": lambda: Duration.seconds(default_of(contract.DISPATCHER_TIMEOUT_SECONDS)),
    "retry_max_age": lambda: Duration.seconds(default_of(contract.RETRY_MAX_AGE_SECONDS)),
    "log_level": lambda: LogLevel.of(contract.DEFAULT_LOG_LEVEL),
    "runtime": lambda: DEFAULT_RUNTIME,
    "architecture": lambda: lambda_.Architecture.ARM_64,
    "precision": lambda: DeliveryPrecision.of(contract.DEFAULT_PRECISION),
}

# --- the rules ----------------------------------------------------------------------------------
Rule = Callable[[SchedulerProps], None]
"""One check of the props: raises ``ValueError`` naming the prop, or returns."""

_DURATIONS = ("delay_window", "history_retention", "dispatcher_timeout", "dispatcher_max_batching_window",
              "retry_max_age", "max_lateness")


def _value(props: SchedulerProps, prop: str) -> Any:
    """The prop's value; a duration prop's as its whole seconds (or its token)."""
    value = getattr(props, prop)
    return seconds(value) if prop in _DURATIONS and isinstance(value, Duration) else value


def _of_kind(prop: str, kind: type, example: str) -> Rule:
    return lambda props: check_type(prop, getattr(props, prop), kind, example)


def _a_duration(prop: str) -> Rule:
    return lambda props: check_duration(prop, getattr(props, prop))


def _whole_seconds(prop: str) -> Rule:
    return lambda props: check_whole_seconds(prop, getattr(props, prop))


def _in_range(prop: str, bounds: contract.Bounds, unit: str = "",
              show: Optional[Callable[[float], str]] = None) -> Rule:
    return lambda props: check_range(prop, _value(props, prop), bounds.min, bounds.max, unit, show)


def _at_least(prop: str, low: int) -> Rule:
    return lambda props: check_range(prop, _value(props, prop), low, None)


def _target_given(props: SchedulerProps) -> None:
    if props.target is None:
        raise ValueError("target: a target is required, e.g. targets.LambdaInvoke(fn)")
    check_target("target", props.target)


def _extra_targets_by_name(props: SchedulerProps) -> None:
    if props.extra_targets is not None and not isinstance(props.extra_targets, Mapping):
        raise ValueError('extra_targets: must be a mapping of name to target, e.g. {"billing": '
                         f"targets.LambdaInvoke(fn)}}, got {describe(props.extra_targets)}")


def _outcomes_from_the_classes(props: SchedulerProps) -> None:
    """A target or ``Outcomes(...)`` (whose own arguments were checked when it was built)."""
    outcomes_of(props.outcomes)


def _api_from_factories(props: SchedulerProps) -> None:
    if not isinstance(props.api, SchedulerApi):
        raise ValueError("api: must be SchedulerApi.http(...), SchedulerApi.rest(...) or SchedulerApi.none(), "
                         f"got {describe(props.api)}")


def _capacity_only_provisioned(props: SchedulerProps) -> None:
    if props.billing_mode != dynamodb.BillingMode.PROVISIONED and (
            props.read_capacity is not None or props.write_capacity is not None):
        raise ValueError("read_capacity/write_capacity: only allowed with billing_mode=BillingMode.PROVISIONED")
    if props.billing_mode != dynamodb.BillingMode.PROVISIONED and props.provisioned_capacity is not None:
        raise ValueError("provisioned_capacity: only allowed with billing_mode=BillingMode.PROVISIONED (an "
                         "on-demand table has no capacity to fix or scale)")
    if props.provisioned_capacity is not None and (props.read_capacity is not None or props.write_capacity is not None):
        raise ValueError("provisioned_capacity: not with read_capacity/write_capacity; give both units in it, e.g. "
                         "TableCapacity.fixed(read=5, write=5)")


def _warm_throughput_units(props: SchedulerProps) -> None:
    """Each given rate of ``warm_throughput`` a positive whole number (DynamoDB's ``WarmThroughput`` takes
    whole units a second, at least 1), and at least one given (CloudFormation refuses an empty one)."""
    warm = props.warm_throughput
    if warm is None:
        return
    rates = {"read": warm.read_units_per_second, "write": warm.write_units_per_second}
    if all(rate is None for rate in rates.values()):
        raise ValueError("warm_throughput: give read_units_per_second, write_units_per_second or both, e.g. "
                         "WarmThroughput(write_units_per_second=40000)")
    for kind, rate in rates.items():
        if rate is None or (isinstance(rate, (int, float)) and Token.is_unresolved(rate)):
            continue
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or rate < 1 or not float(rate).is_integer():
            raise ValueError(f"warm_throughput.{kind}_units_per_second: must be a positive whole number of "
                             f"{kind} units a second, got {describe(rate)}")


def _api_name_fits(props: SchedulerProps) -> None:
    name = props.api_name
    if name is None or Token.is_unresolved(name):
        return
    if props.api.kind == SchedulerApiKind.NONE:
        raise ValueError("api_name: there is no API to name with api=SchedulerApi.none()")
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_API_NAME_LENGTH:
        raise ValueError(f"api_name: must be 1-{MAX_API_NAME_LENGTH} characters, got {describe(name)}"
                         + (f" ({len(name)} characters)" if isinstance(name, str) else ""))


def _reserved_covers_the_pollers(props: SchedulerProps) -> None:
    """Reserved concurrency below what the delayer queue's pollers may start throttles their invocations,
    and each throttled batch counts as a receive of its messages, which then reach the dead-letter queue."""
    reserved, pollers = props.dispatcher_reserved_concurrency, props.dispatcher_max_concurrency
    if reserved is None or Token.is_unresolved(reserved):
        return
    if pollers is None:
        raise ValueError(
            f"dispatcher_reserved_concurrency: needs dispatcher_max_concurrency (at most {reserved}): without it "
            "the delayer queue's pollers start more dispatcher invocations than are reserved, and each throttled "
            "batch counts as a receive of its messages, which reach the dead-letter queue after max_receive_count")
    if not Token.is_unresolved(pollers) and reserved < pollers:
        raise ValueError(
            f"dispatcher_reserved_concurrency: must be >= dispatcher_max_concurrency ({pollers}), got {reserved}: "
            "the delayer queue's pollers start up to dispatcher_max_concurrency invocations, and a throttled batch "
            "counts as a receive of its messages")


def _batch_beyond_ten_needs_a_window(props: SchedulerProps) -> None:
    """SQS's mapping takes a batch of more than ten messages only with a batching window."""
    size, window = props.dispatcher_batch_size, props.dispatcher_max_batching_window
    if Token.is_unresolved(size) or size <= contract.DISPATCHER_BATCH_SIZE_WITHOUT_WINDOW:
        return
    if window is None or (not Token.is_unresolved(seconds(window)) and seconds(window) < 1):
        raise ValueError(
            f"dispatcher_batch_size: more than {contract.DISPATCHER_BATCH_SIZE_WITHOUT_WINDOW} ({size}) needs "
            "dispatcher_max_batching_window of at least 1 second (SQS's event source mapping takes larger "
            "batches only with a batching window)")


def _timeout_covers_the_lead(props: SchedulerProps) -> None:
    """A message may reach the dispatcher up to the batching window (the lead) plus a second before it is
    due, and its invocation waits that out before it delivers: the timeout must leave the least timeout
    allowed (``dispatcher_timeout``'s minimum) for the deliveries on top of the lead. The visibility
    timeout, ``VISIBILITY_TIMEOUT_FACTOR`` x the timeout, then also covers the gathering plus the timeout."""
    window = props.dispatcher_max_batching_window
    if window is None or Token.is_unresolved(seconds(window)):
        return
    least = int(seconds(window)) + contract.DISPATCHER_TIMEOUT_SECONDS.min
    timeout = int(seconds(props.dispatcher_timeout))
    if timeout < least:
        raise ValueError(
            f"dispatcher_timeout: must be at least dispatcher_max_batching_window + "
            f"{contract.DISPATCHER_TIMEOUT_SECONDS.min} seconds ({least} seconds), got {timeout} seconds: a message "
            "surfaces up to the batching window plus a second before it is due, and its invocation waits that out")


def _precision_from_the_class(props: SchedulerProps) -> None:
    if not isinstance(props.precision, DeliveryPrecision):
        raise ValueError("precision: must be DeliveryPrecision.SUB_SECOND or DeliveryPrecision.SECOND, "
                         f"got {describe(props.precision)}")


def _concrete_dispatcher_timeout(props: SchedulerProps) -> None:
    if Token.is_unresolved(props.dispatcher_timeout.to_seconds()):
        raise ValueError(f"dispatcher_timeout: must be a concrete duration, not a token (the delayer queue's "
                         f"visibility timeout is {contract.VISIBILITY_TIMEOUT_FACTOR} times it)")


def _receives_fit_retention(props: SchedulerProps) -> None:
    """Every receive of a delayer message must come while the queue still keeps it.

    A message waits up to ``delay_window`` before its first receive, and each receive that does not
    end in a delivery hides it for the visibility timeout (``VISIBILITY_TIMEOUT_FACTOR`` x
    ``dispatcher_timeout``). SQS counts its retention from the send: past it, the message is dropped,
    neither delivered nor dead-lettered. Unresolved tokens are left alone.
    """
    values = (props.max_receive_count, seconds(props.dispatcher_timeout), seconds(props.delay_window))
    if any(Token.is_unresolved(v) for v in values):
        return
    receives, timeout, window = (int(v) for v in values)
    factor, retention = contract.VISIBILITY_TIMEOUT_FACTOR, contract.DELAYER_RETENTION_SECONDS
    visibility = factor * timeout
    needed = window + receives * visibility
    if needed > retention:
        raise ValueError(
            f"max_receive_count ({receives}) x the delayer queue's visibility timeout ({factor} x "
            f"dispatcher_timeout = {visibility} seconds), plus delay_window ({window} seconds), is {needed} "
            f"seconds: longer than the delayer queue keeps a message ({seconds_or_days(retention)}, {retention} "
            f"seconds), so SQS would drop it before its last receive. Allowed with this dispatcher_timeout: "
            f"max_receive_count <= {(retention - window) // visibility}")


RULES: tuple[Rule, ...] = (
    # the kind of each value first, each with an example of the right one
    _target_given,
    _extra_targets_by_name,
    _outcomes_from_the_classes,
    _api_from_factories,
    *(_a_duration(prop) for prop in _DURATIONS),
    _of_kind("billing_mode", dynamodb.BillingMode, "a BillingMode, e.g. BillingMode.PAY_PER_REQUEST"),
    _of_kind("removal_policy", RemovalPolicy, "a RemovalPolicy, e.g. RemovalPolicy.DESTROY"),
    _of_kind("log_retention", logs.RetentionDays, "a RetentionDays, e.g. RetentionDays.ONE_WEEK"),
    _of_kind("architecture", lambda_.Architecture, "an Architecture, e.g. Architecture.X86_64"),
    _of_kind("provisioned_capacity", TableCapacity,
             "TableCapacity.fixed(read=..., write=...) or TableCapacity.autoscaled(max_read=..., max_write=...)"),
    _of_kind("warm_throughput", dynamodb.WarmThroughput, "a WarmThroughput, e.g. "
             "WarmThroughput(write_units_per_second=40000)"),
    _of_kind("listing", bool, "True or False"),
    _of_kind("dispatcher_keep_warm", bool, "True or False"),
    _of_kind("deletion_protection", bool, "True or False"),
    _of_kind("tracing", lambda_.Tracing, "a Tracing, e.g. Tracing.ACTIVE"),
    lambda props: check_log_level(props.log_level),
    lambda props: check_runtime(props.runtime),
    *(_whole_seconds(prop) for prop in _DURATIONS),
    # then each against its range, from contract.json
    _in_range("shard_count", contract.SHARD_COUNT),
    _in_range("delay_window", contract.DELAY_WINDOW_SECONDS, unit="seconds"),
    _in_range("history_retention", contract.HISTORY_RETENTION_SECONDS, show=seconds_or_days),
    _in_range("max_receive_count", contract.MAX_RECEIVE_COUNT),
    _in_range("retry_max_age", contract.RETRY_MAX_AGE_SECONDS, show=seconds_or_days),
    _in_range("max_lateness", contract.MAX_LATENESS_SECONDS, show=seconds_or_days),
    _api_name_fits,
    _capacity_only_provisioned,
    _at_least("read_capacity", MIN_CAPACITY_UNITS),
    _at_least("write_capacity", MIN_CAPACITY_UNITS),
    _warm_throughput_units,
    *(_in_range(f"{function}_memory_size", contract.MEMORY_SIZE_MIB) for function in contract.DEFAULT_MEMORY_SIZES_MIB),
    _concrete_dispatcher_timeout,
    _in_range("dispatcher_timeout", contract.DISPATCHER_TIMEOUT_SECONDS, unit="seconds"),
    _receives_fit_retention,
    _in_range("dispatcher_batch_size", contract.DISPATCHER_BATCH_SIZE),
    _in_range("dispatcher_max_batching_window", contract.DISPATCHER_MAX_BATCHING_WINDOW_SECONDS, unit="seconds"),
    _batch_beyond_ten_needs_a_window,
    _timeout_covers_the_lead,
    _precision_from_the_class,
    _in_range("dispatcher_max_concurrency", contract.DISPATCHER_MAX_CONCURRENCY),
    _at_least("dispatcher_reserved_concurrency", contract.DISPATCHER_MAX_CONCURRENCY.min),
    _reserved_covers_the_pollers,
    _in_range("stream_batch_size", contract.STREAM_BATCH_SIZE),
    _in_range("stream_retry_attempts", contract.STREAM_RETRY_ATTEMPTS),
    lambda props: check_non_empty("metrics_namespace", props.metrics_namespace),
)
"""``DelayedScheduler``'s props rules, in the order they are checked."""
