"""Contract values the construct, the runtime and the local engine share, read from ``contract.json``
in this asset: a typed view, so no caller indexes the JSON by hand.

The construct loads this very module from the asset (``cdk_delayed_scheduler._contract``), so the id
pattern, the limits, the defaults, the environment names, the routes and the target descriptions'
fields have exactly one source.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

_CONTRACT: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent.parent / "contract.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Bounds:
    """A tunable's allowed range (inclusive) and its default (``None``: no default value)."""

    min: int
    max: int
    default: Optional[int] = None

    @classmethod
    def of(cls, entry: Mapping[str, int]) -> "Bounds":
        return cls(min=entry["min"], max=entry["max"], default=entry.get("default"))


@dataclass(frozen=True)
class Environment:
    """The functions' environment variable names: each is the construct prop's name in capitals
    (``delay_window`` -> ``DELAY_WINDOW_SECONDS``), and the local engine sets the same ones."""

    table_name: str
    delayer_queue_url: str
    flow_queue_url: str
    dead_letter_queue_url: str
    targets: str
    shard_count: str
    delay_window_seconds: str
    history_retention_seconds: str
    max_receive_count: str
    retry_max_age_seconds: str
    max_lateness_seconds: str
    dispatcher_timeout_seconds: str
    dispatcher_max_batching_window_seconds: str
    precision: str
    listing: str
    metrics_namespace: str
    log_level: str
    outcomes: str

    def names(self) -> tuple[str, ...]:
        """Every name, in the contract's order."""
        return tuple(self.__dict__.values())


@dataclass(frozen=True)
class Route:
    """One route of the API: answered by the api function's handler for ``operation`` (also the
    OpenAPI ``operationId``), declared by the construct on every kind of API."""

    method: str
    path: str
    operation: str

    @property
    def reads_only(self) -> bool:
        return self.method == "GET"


@dataclass(frozen=True)
class TargetType:
    """The fields of one kind of target description (``{"type": <kind>, ...}`` in ``TARGETS``), each
    with its JSON type (``string``, ``boolean``, ``number`` or ``object``)."""

    kind: str
    required: Mapping[str, str]
    optional: Mapping[str, str]
    values: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """The values a field may take, where they are a closed list (the first is the default of an optional one)."""


@dataclass(frozen=True)
class Webhook:
    """The HTTPS target's request: the names of the headers the runtime sends (and a receiver checks),
    the signature's version tag (``v1=<hex>`` in :attr:`signature_header`), how old a signature a
    receiver accepts by default, how long the runtime keeps a signing secret it read, and the bounds
    of a target's ``timeoutSeconds``."""

    signature_header: str
    signature_version: str
    schedule_id_header: str
    dedupe_key_header: str
    attempt_header: str
    tolerance_seconds: int
    secret_cache_seconds: int
    timeout_seconds: Bounds

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> "Webhook":
        return cls(**{_env_name(key).lower(): value for key, value in entry.items() if key != "timeoutSeconds"},
                   timeout_seconds=Bounds.of(entry["timeoutSeconds"]))

    def own_headers(self) -> tuple[str, ...]:
        """The headers the runtime sets on every request, which a target's ``headers`` never override."""
        return ("Content-Type", self.signature_header, self.schedule_id_header, self.dedupe_key_header,
                self.attempt_header)


def _env_name(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key)


ID_PATTERN = re.compile(_CONTRACT["idPattern"])
TARGET_NAME_PATTERN: str = _CONTRACT["targetNamePattern"]
DEFAULT_TARGET_NAME: str = _CONTRACT["defaultTargetName"]
MAX_BATCH_SIZE: int = _CONTRACT["maxBatchSize"]
MAX_PAYLOAD_BYTES: int = _CONTRACT["maxPayloadBytes"]
SQS_MAX_DELAY_SECONDS: int = _CONTRACT["sqsMaxDelaySeconds"]

DELAY_WINDOW_SECONDS = Bounds.of(_CONTRACT["delayWindowSeconds"])
SHARD_COUNT = Bounds.of(_CONTRACT["shardCount"])
HISTORY_RETENTION_SECONDS = Bounds.of(_CONTRACT["historyRetentionSeconds"])
MAX_RECEIVE_COUNT = Bounds.of(_CONTRACT["maxReceiveCount"])
RETRY_MAX_AGE_SECONDS = Bounds.of(_CONTRACT["retryMaxAgeSeconds"])
"""A delivery's maximum age (``retry.maxAgeSeconds``, the ``retry_max_age`` prop): its range and default."""
MAX_LATENESS_SECONDS = Bounds.of(_CONTRACT["maxLatenessSeconds"])
"""A schedule's lateness bound (``maxLatenessSeconds``, the ``max_lateness`` prop): its range; no default
(without one, a late delivery is delivered late)."""
DISPATCHER_TIMEOUT_SECONDS = Bounds.of(_CONTRACT["dispatcherTimeoutSeconds"])
DISPATCHER_BATCH_SIZE = Bounds.of(_CONTRACT["dispatcherBatchSize"])
DISPATCHER_MAX_BATCHING_WINDOW_SECONDS = Bounds.of(_CONTRACT["dispatcherMaxBatchingWindowSeconds"])
DISPATCHER_MAX_CONCURRENCY = Bounds.of(_CONTRACT["dispatcherMaxConcurrency"])
DISPATCHER_BATCH_SIZE_WITHOUT_WINDOW: int = _CONTRACT["dispatcherBatchSizeWithoutWindow"]
DISPATCHER_KEEP_WARM_MARKER: str = _CONTRACT["dispatcherKeepWarm"]["marker"]
"""The field of the event the construct's rule invokes the dispatcher with (``dispatcher_keep_warm``): an invocation
that only initialises the function, so that Lambda keeps an environment ready for the next delivery."""
DISPATCHER_KEEP_WARM_EVERY_MINUTES: int = _CONTRACT["dispatcherKeepWarm"]["everyMinutes"]
"""How often that rule invokes it: within the time Lambda keeps an idle environment (taken as 5 minutes)."""
"""The largest dispatcher batch without a batching window: SQS's mapping takes more only with a window."""
PRECISIONS: tuple[str, ...] = tuple(_CONTRACT["precision"]["values"])
"""The delivery precisions (``PRECISION``): ``SUB_SECOND`` waits out the sub-second rest of a delay,
``SECOND`` delays by the whole seconds left rounded up and delivers on arrival."""
DEFAULT_PRECISION: str = _CONTRACT["precision"]["default"]
STREAM_BATCH_SIZE = Bounds.of(_CONTRACT["streamBatchSize"])
"""Stream records per enqueuer invocation; its ``max`` is also the most one ``GetRecords`` returns."""
GET_RECORDS_LIMIT: int = STREAM_BATCH_SIZE.max
"""The most records one DynamoDB Streams ``GetRecords`` call returns (its ``Limit``)."""
STREAM_RETRY_ATTEMPTS = Bounds.of(_CONTRACT["streamRetryAttempts"])
MEMORY_SIZE_MIB = Bounds.of(_CONTRACT["memorySizeMiB"])
"""Any function's memory range (no default: see :data:`DEFAULT_MEMORY_SIZES_MIB`)."""
DEFAULT_MEMORY_SIZES_MIB: Mapping[str, int] = {
    name: size for name, size in _CONTRACT["memorySizeMiB"].items() if name not in ("min", "max")}
"""Each function's default memory, by function (``api``, ``sweeper``, ``enqueuer``, ``dispatcher``)."""

# The defaults, by their old names (read across the runtime).
DEFAULT_DELAY_WINDOW_SECONDS: int = _CONTRACT["delayWindowSeconds"]["default"]
DEFAULT_SHARD_COUNT: int = _CONTRACT["shardCount"]["default"]
MAX_SHARD_COUNT: int = SHARD_COUNT.max
DEFAULT_HISTORY_RETENTION_SECONDS: int = _CONTRACT["historyRetentionSeconds"]["default"]
DEFAULT_MAX_RECEIVE_COUNT: int = _CONTRACT["maxReceiveCount"]["default"]
DEFAULT_RETRY_MAX_AGE_SECONDS: int = _CONTRACT["retryMaxAgeSeconds"]["default"]
DEFAULT_DISPATCHER_TIMEOUT_SECONDS: int = _CONTRACT["dispatcherTimeoutSeconds"]["default"]

VISIBILITY_TIMEOUT_FACTOR: int = _CONTRACT["visibilityTimeoutFactor"]
"""The delayer queue's visibility timeout is this many times the dispatcher's timeout."""
DELAYER_RETENTION_SECONDS: int = _CONTRACT["delayerRetentionSeconds"]
"""How long the delayer queue keeps a message (SQS's retention period), counted from its send."""
API_FUNCTION_TIMEOUT_SECONDS: int = _CONTRACT["apiFunctionTimeoutSeconds"]
DEFAULT_LOG_LEVEL: str = _CONTRACT["defaultLogLevel"]
DEFAULT_METRICS_NAMESPACE: str = _CONTRACT["metricsNamespace"]["default"]
METRIC_DIMENSIONS: Mapping[str, str] = _CONTRACT["metrics"]["dimensions"]
"""The dimensions of every metric the runtime emits (``FunctionName`` is added per function)."""
LATENESS_METRIC: str = _CONTRACT["metrics"]["lateness"]
FAILED_ATTEMPTS_METRIC: str = _CONTRACT["metrics"]["failedAttempts"]
"""The dispatcher's count of delivery attempts that failed and go back to SQS for a retry (in its EMF record)."""
SWEEPS_STOPPED_EARLY_METRIC: str = _CONTRACT["metrics"]["sweepsStoppedEarly"]
"""The sweeper's count of sweeps that ran short of time and stopped before the last shard (1 per such sweep)."""
TARGET_DIMENSION: str = _CONTRACT["metrics"]["targetDimension"]
"""The dimension (beside the others) of a limited target's own metrics: its name."""
WAITING_FOR_ROOM_METRIC: str = _CONTRACT["metrics"]["waitingForRoom"]
"""A limited target's count of deliveries sent back to wait for room (a slot later than a second, every place held,
or the target paused); with ``LatenessMs`` of its deliveries and ``HeldBack``, in one EMF record per target."""
HELD_BACK_METRIC: str = _CONTRACT["metrics"]["heldBack"]
"""A limited target's count of answers that said slow down (each holds the target back)."""

ENV = Environment(**{_env_name(key).lower(): name for key, name in _CONTRACT["environment"].items()})
"""The functions' environment variable names."""
ROUTES: tuple[Route, ...] = tuple(Route(**route) for route in _CONTRACT["routes"])
"""Every route of the API, in the order the construct declares them."""
TARGET_TYPES: Mapping[str, TargetType] = {
    kind: TargetType(kind, dict(fields["required"]), dict(fields["optional"]),
                     {name: tuple(values) for name, values in fields.get("values", {}).items()})
    for kind, fields in _CONTRACT["targetTypes"].items()}
"""Every kind of target the runtime delivers to, by its ``type``."""

WEBHOOK = Webhook.of(_CONTRACT["webhook"])
"""The HTTPS target's headers, signature version, tolerance, secret cache time and timeout bounds."""

GROUPS: Mapping[str, Any] = _CONTRACT["groups"]
"""The group index (``indexName``, ``partitionKey``, ``sortKey``), a group name's ``pattern``, and the
background sweep of a cancelled group (``sweepPageSize`` members a message, ``sweepFirstDelaySeconds``)."""
GROUP_PATTERN = re.compile(GROUPS["pattern"])
LISTING: Mapping[str, Any] = _CONTRACT["listing"]
"""The listing index: ``indexName``, ``partitionKey``, ``sortKey``, the ``statuses`` it covers, ``limit``."""
FLOW_CONTROL: Mapping[str, Any] = _CONTRACT["flowControl"]
"""A target's limits: the description's ``field``, the ``perGroupField`` of each group's own limits, the bounds of
``rate``, ``periodSeconds`` and ``maxInFlight``, the key prefix of a limited target's item, and how often a delivery
held back by a paused target looks again."""
FLOW_CONTROL_FIELD: str = FLOW_CONTROL["field"]
PER_GROUP_FIELD: str = FLOW_CONTROL["perGroupField"]
"""The field of a target's ``flowControl`` holding the limits each group (a schedule's ``group``) has on its own,
within the target's: ``{"rate"?, "periodSeconds"?, "maxInFlight"?}``."""
_LIMITS = ("rate", "periodSeconds", "maxInFlight")
"""The limits of a ``flowControl`` and of its ``perGroup``, in the order messages name them."""
OUTCOMES: Mapping[str, Any] = _CONTRACT["outcomes"]
"""Outcome events: the delayer message's ``marker`` field, every outcome ``kinds`` and the ``defaultKinds`` sent when
a deployment names none, how much of a target's answer an event carries (``answerMaxChars``), and the ``parkReason``
an outcome event parked in the dead-letter queue starts with."""
OUTCOME_KINDS: tuple[str, ...] = tuple(OUTCOMES["kinds"])
DEFAULT_OUTCOME_KINDS: tuple[str, ...] = tuple(OUTCOMES["defaultKinds"])
PERIODIC_DEFAULT_TIME_ZONE: str = _CONTRACT["periodic"]["defaultTimeZone"]
PERIODIC_MIN_EVERY_SECONDS: int = _CONTRACT["periodic"]["minEverySeconds"]
PERIODIC_RETRY_DELAYS_SECONDS: tuple[int, ...] = tuple(_CONTRACT["periodic"]["retryDelaySeconds"])
"""Delays before each retry of a periodic occurrence whose delivery failed (the next is armed already)."""


def target_description_problem(description: Any) -> Optional[str]:
    """What is wrong with a target description (``{"type": ..., <its fields>}``), or ``None``.

    The construct refuses such a description at synth and the runtime at start, with this text.
    """
    if not isinstance(description, Mapping):
        return "must be a JSON object"
    kind = description.get("type")
    if not isinstance(kind, str) or kind not in TARGET_TYPES:
        return f"type {kind!r} is not supported; supported kinds: {', '.join(sorted(TARGET_TYPES))}"
    spec = TARGET_TYPES[kind]
    missing = [name for name in spec.required if name not in description]
    if missing:
        return f"the {kind} target needs {', '.join(missing)}"
    unknown = [name for name in description
               if name not in ("type", FLOW_CONTROL_FIELD) and name not in {**spec.required, **spec.optional}]
    if unknown:
        return f"the {kind} target takes no {', '.join(sorted(unknown))}"
    for name, allowed in spec.values.items():
        if name in description and description[name] not in allowed:
            return f"the {kind} target's {name} must be one of {', '.join(allowed)}, got {description[name]!r}"
    if FLOW_CONTROL_FIELD in description:
        problem = flow_control_problem(description[FLOW_CONTROL_FIELD])
        if problem is not None:
            return f"the {kind} target's {FLOW_CONTROL_FIELD}: {problem}"
    return None


def flow_control_problem(value: Any) -> Optional[str]:
    """What is wrong with a target's ``flowControl``, or ``None``.

    ``{"rate": n?, "periodSeconds": s?, "maxInFlight": m?, "perGroup": {...}?}`` needs at least one of ``rate``,
    ``maxInFlight`` and ``perGroup``, and ``periodSeconds`` only with a rate. ``perGroup`` (each group's own limits)
    follows the same rules, without a ``perGroup`` of its own, and stays within the target's limits where both have
    one: its rate per second (``rate / periodSeconds``) at most the target's, its ``maxInFlight`` at most the
    target's. Each message names the field (``perGroup.rate``)."""
    problem = _limits_problem(value, None)
    if problem is not None or PER_GROUP_FIELD not in value:
        return problem
    group = value[PER_GROUP_FIELD]
    if isinstance(group, Mapping) and PER_GROUP_FIELD in group:
        return f"{PER_GROUP_FIELD} takes no {PER_GROUP_FIELD} of its own (a group's limits are not divided further)"
    return _limits_problem(group, PER_GROUP_FIELD) or _per_group_excess(value, group)


def _limits_problem(value: Any, where: Optional[str]) -> Optional[str]:
    """What is wrong with one set of limits on its own: the target's (``where`` None, which may hold a ``perGroup``)
    or its groups' (``where`` the field that holds them, which starts each message)."""
    subject, prefix = ("", "") if where is None else (f"{where} ", f"{where}.")
    if not isinstance(value, Mapping):
        return f"{subject}must be a JSON object"
    allowed = _LIMITS if where is not None else (*_LIMITS, PER_GROUP_FIELD)
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        return f"{subject}takes no {', '.join(unknown)} (only {', '.join(allowed[:-1])} and {allowed[-1]})"
    if "rate" not in value and "maxInFlight" not in value:
        if where is not None:
            return f"{subject}needs rate or maxInFlight (or both)"
        if PER_GROUP_FIELD not in value:
            return f"needs rate, maxInFlight or {PER_GROUP_FIELD} (one or more)"
    if "periodSeconds" in value and "rate" not in value:
        return f"{prefix}periodSeconds needs a rate"
    for name in _LIMITS:
        if name in value:
            bounds = Bounds.of(FLOW_CONTROL[name])
            number = value[name]
            if isinstance(number, bool) or not isinstance(number, int) or not bounds.min <= number <= bounds.max:
                return f"{prefix}{name} must be a whole number, {bounds.min}-{bounds.max}, got {number!r}"
    return None


def _per_group_excess(target: Mapping[str, Any], group: Mapping[str, Any]) -> Optional[str]:
    """Where a group's (checked) limits exceed its target's, or ``None``: a group is held to both, so a group limit
    above the target's would never be reached."""
    default_period = FLOW_CONTROL["periodSeconds"]["default"]
    if "rate" in target and "rate" in group:
        target_period, group_period = (limits.get("periodSeconds", default_period) for limits in (target, group))
        if group["rate"] * target_period > target["rate"] * group_period:
            return (f"{PER_GROUP_FIELD}.rate must be at most the target's rate per second: a group's {group['rate']} "
                    f"per {group_period} s is more than the target's {target['rate']} per {target_period} s")
    if "maxInFlight" in target and "maxInFlight" in group and group["maxInFlight"] > target["maxInFlight"]:
        return (f"{PER_GROUP_FIELD}.maxInFlight must be at most the target's maxInFlight, {target['maxInFlight']}, "
                f"got {group['maxInFlight']}")
    return None
