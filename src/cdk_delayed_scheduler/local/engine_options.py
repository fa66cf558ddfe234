"""The engine's options: each one that mirrors a construct prop carries that prop's name."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from .._contract import contract
from .deliveries import RESOURCE_TARGETS, LocalTarget, ResourceTarget, resource_target_names
from .flow_control import FlowControl, check_flow_control

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass
class EngineOptions:
    """How the engine runs. Every field has a default that mirrors the deployed construct, and each
    one that mirrors a construct prop carries that prop's name."""

    port: int = 0
    """HTTP API port on 127.0.0.1 (0 picks a free one)."""
    target: LocalTarget | None = None
    """Where deliveries go; default: one JSON line per delivery on stdout."""
    targets: dict[str, LocalTarget | ResourceTarget] = field(default_factory=dict)
    """Named targets beside the default one (the construct's ``extra_targets``), which a schedule picks by
    its ``target``: a callable is a Lambda function of the engine's (a :class:`LambdaTarget` too, with its
    invocation type); a :class:`QueueTarget`, a :class:`TopicTarget` or a :class:`BusTarget` an SQS queue, an
    SNS topic or an EventBridge bus the engine creates, each with the queue its deliveries arrive in
    (``Engine.target_queue_urls``); a :class:`StateMachineTarget` a Step Functions state machine
    (``Engine.target_state_machine_arns``). Each of those takes ``flow_control=`` (its limits); a callable has
    none: limit it as ``LambdaTarget(lambda envelope, context: deliver(envelope), flow_control=...)``."""
    flow_control: FlowControl | None = None
    """The default target's limits, as the construct renders ``FlowControl(rate=, period=, max_in_flight=)``:
    ``{"rate": n, "periodSeconds": s, "maxInFlight": m}`` (either limit, or both; ``periodSeconds`` only with a
    rate, default 1). ``None``: no limits."""
    delay_window: int = contract.DELAY_WINDOW_SECONDS.default or 0
    """Seconds: schedules due within it go straight to the delayer queue, later ones wait as
    timers for the sweeper (the construct's ``delay_window``). Shrink it to run the sweeper path in seconds."""
    sweep_interval: float = 60.0
    shard_count: int = contract.SHARD_COUNT.default or 1
    endpoint_url: str | None = None
    """An already running AWS-compatible endpoint; default: start moto on 127.0.0.1."""
    state_dir: Path | None = None
    """Where stream checkpoints persist, so a restarted engine resumes; default: memory only."""
    name_prefix: str = "delayed-scheduler"
    dispatcher_max_concurrency: int = 16
    """Concurrent dispatcher invocations (the construct's ``dispatcher_max_concurrency``, the SQS
    mapping's). Each one holds its batch until the latest message in it is due (up to a second), so
    this caps deliveries per second; AWS scales the mapping far beyond it unless the prop is set."""
    dispatcher_batch_size: int = contract.DISPATCHER_BATCH_SIZE.default or 10
    """Delayer messages per dispatcher invocation (the construct's ``dispatcher_batch_size``): 1-10, or
    up to 10,000 with a ``dispatcher_max_batching_window`` of at least a second."""
    dispatcher_max_batching_window: int = 0
    """Seconds (the construct's ``dispatcher_max_batching_window``): how long the delayer queue's poller
    gathers a batch after its first message; with ``SUB_SECOND`` precision messages are sent to surface
    this much earlier (the functions' ``DISPATCHER_MAX_BATCHING_WINDOW_SECONDS``)."""
    precision: str = contract.DEFAULT_PRECISION
    """``SUB_SECOND`` or ``SECOND`` (the construct's ``precision``, the functions' ``PRECISION``)."""
    dispatcher_timeout: float = 5.0
    """Seconds (the construct's ``dispatcher_timeout``): the dispatcher's timeout, and the delayer
    queue's visibility timeout is ``VISIBILITY_TIMEOUT_FACTOR`` (6) times it, as deployed: a delivery
    under way when the engine dies is received again after that. Fractions are allowed here (0.2 s
    gives a 1 s visibility timeout); the functions read it in whole seconds, rounded up."""
    max_receive_count: int = contract.MAX_RECEIVE_COUNT.default or 1
    """Receives of a delayer message before SQS parks it (the construct's ``max_receive_count``), and so
    every delivery's most, and default, ``retry.maxAttempts``."""
    retry_max_age: int = contract.RETRY_MAX_AGE_SECONDS.default or 0
    """Seconds (the construct's ``retry_max_age``): a delivery's default ``retry.maxAgeSeconds``. A failed
    attempt whose next one would start later than this after the due time is parked instead."""
    max_lateness: int | None = None
    """Seconds (the construct's ``max_lateness``): the default lateness bound of a schedule or periodic timer
    that gives no ``maxLatenessSeconds`` (the functions' ``MAX_LATENESS_SECONDS``, set only when given). A
    delivery that would start later than this after its due time is not started: a one-shot ends ``FAILED``
    (``stale``) in the dead-letter queue, a periodic occurrence is skipped. ``None``: a late timer is delivered late."""
    outcomes: LocalTarget | ResourceTarget | None = None
    """Where each occurrence's outcome event goes when it ends (the construct's ``outcomes=Outcomes(target)``; the
    functions' ``OUTCOMES``, set only when given): a callable is a Lambda function of the engine's, called with
    each outcome event; a resource target (:class:`QueueTarget`, ...) is made as a named target is
    (``Engine.outcomes_queue_url``, ``Engine.outcomes_state_machine_arn``). It is not a target a schedule can
    pick. ``None``: no outcome events."""
    outcome_kinds: tuple[str, ...] | None = None
    """Which outcome kinds are sent (the construct's ``Outcomes(kinds=...)``): some of ``DELIVERED``, ``FAILED``,
    ``STALE``, ``CANCELLED``; ``None``: the runtime's default, all but ``CANCELLED``."""
    outcomes_include_payload: bool = False
    """Whether each outcome event carries the schedule's payload (the construct's ``Outcomes(include_payload=...)``)."""
    history_retention: int = contract.HISTORY_RETENTION_SECONDS.default or 0
    stream_retry_attempts: int = 3
    """Retries of a failing stream batch before it goes to the dead-letter queue (the construct's
    ``stream_retry_attempts``; fewer here, so a poisoned batch is given up in about a second)."""
    listing: bool = False
    """Serve ``GET /schedules`` (the construct's ``listing``): every create and status change also
    writes the listing index. Off, the route answers 404 saying how to turn it on."""
    metrics_namespace: str = contract.DEFAULT_METRICS_NAMESPACE
    """The runtime's metrics namespace (the construct's ``metrics_namespace``); the engine logs the
    metric lines at DEBUG under ``cdk_delayed_scheduler.local``."""
    log_level: str = contract.DEFAULT_LOG_LEVEL
    """The runtime's log level (the construct's ``log_level``): its records at this level and above
    reach the logging handlers above ``scheduler_runtime``. The engine's own counts
    (:class:`EngineStats`) see every INFO event whatever the level."""
    require_signature: bool = False
    """Answer 403 to an API request without a well-formed SigV4 ``Authorization`` header, as API
    Gateway with IAM auth does (the signature itself is not checked: moto's credentials are fake)."""
    faults: str | None = None
    """Inject faults at these rates (``kind=rate,...``; see :data:`.faults.FAULT_KINDS`), in the AWS
    layer and the target, never in the runtime's code; ``engine.faults`` counts what was injected."""
    seed: int = 0
    """Seeds the fault RNG."""

    def __post_init__(self) -> None:
        if not self.dispatcher_timeout > 0:
            raise ValueError(f"dispatcher_timeout must be > 0 seconds, got {self.dispatcher_timeout}")
        check_flow_control(self.flow_control)
        for name, target in self.targets.items():
            if not re.fullmatch(contract.TARGET_NAME_PATTERN, name) or name == contract.DEFAULT_TARGET_NAME:
                raise ValueError(f"targets: {name!r} must match {contract.TARGET_NAME_PATTERN} and not be "
                                 f"{contract.DEFAULT_TARGET_NAME!r} (the default target is target=)")
            if not callable(target) and not isinstance(target, RESOURCE_TARGETS):
                raise ValueError(f"targets[{name!r}] must be a callable (a Lambda-style target) or "
                                 f"{resource_target_names()}, got {type(target).__name__}")
        age = contract.RETRY_MAX_AGE_SECONDS
        if not age.min <= self.retry_max_age <= age.max:
            raise ValueError(f"retry_max_age must be {age.min}-{age.max} seconds, got {self.retry_max_age}")
        lateness = contract.MAX_LATENESS_SECONDS
        if self.max_lateness is not None and (isinstance(self.max_lateness, bool) or not isinstance(
                self.max_lateness, int) or not lateness.min <= self.max_lateness <= lateness.max):
            raise ValueError(f"max_lateness must be whole seconds, {lateness.min}-{lateness.max}, "
                             f"got {self.max_lateness!r}")
        self._check_dispatcher_batching()
        self._check_outcomes()
        if self.log_level.upper() not in LOG_LEVELS:
            raise ValueError(f"log_level must be one of {', '.join(LOG_LEVELS)}, got {self.log_level!r}")

    def _check_dispatcher_batching(self) -> None:
        size, window = contract.DISPATCHER_BATCH_SIZE, contract.DISPATCHER_MAX_BATCHING_WINDOW_SECONDS
        if not size.min <= self.dispatcher_batch_size <= size.max:
            raise ValueError(f"dispatcher_batch_size must be {size.min}-{size.max}, got {self.dispatcher_batch_size}")
        if not window.min <= self.dispatcher_max_batching_window <= window.max:
            raise ValueError(f"dispatcher_max_batching_window must be {window.min}-{window.max} seconds, "
                             f"got {self.dispatcher_max_batching_window}")
        if self.dispatcher_batch_size > contract.DISPATCHER_BATCH_SIZE_WITHOUT_WINDOW and self.dispatcher_max_batching_window < 1:
            raise ValueError(f"dispatcher_batch_size above {contract.DISPATCHER_BATCH_SIZE_WITHOUT_WINDOW} needs a "
                             "dispatcher_max_batching_window of at least 1 second")
        self.precision = str(self.precision).upper()
        if self.precision not in contract.PRECISIONS:
            raise ValueError(f"precision must be one of {', '.join(contract.PRECISIONS)}, got {self.precision!r}")

    def _check_outcomes(self) -> None:
        if self.outcomes is not None and not callable(self.outcomes) and not isinstance(self.outcomes, RESOURCE_TARGETS):
            raise ValueError(f"outcomes must be a callable (a Lambda-style target) or {resource_target_names()}, "
                             f"got {type(self.outcomes).__name__}")
        if isinstance(self.outcomes, RESOURCE_TARGETS) and self.outcomes.flow_control is not None:
            raise ValueError(f"outcomes: the outcomes target takes no flow_control (its events are never held back); "
                             f"leave it out of {type(self.outcomes).__name__}(...) (or of its description's flowControl)")
        kinds = self.outcome_kinds
        if kinds is not None:
            known = isinstance(kinds, (tuple, list)) and all(kind in contract.OUTCOME_KINDS for kind in kinds)
            if not kinds or not known or len(set(kinds)) < len(kinds):
                raise ValueError(f"outcome_kinds must be one or more of {', '.join(contract.OUTCOME_KINDS)}, each once, "
                                 f"got {kinds!r}")
            self.outcome_kinds = tuple(kind for kind in contract.OUTCOME_KINDS if kind in kinds)  # the construct's order
        if not isinstance(self.outcomes_include_payload, bool):
            raise ValueError(f"outcomes_include_payload must be True or False, got {self.outcomes_include_payload!r}")
        if self.outcomes is None and (self.outcome_kinds is not None or self.outcomes_include_payload):
            raise ValueError("outcome_kinds and outcomes_include_payload need outcomes (where the outcome events go)")

    @property
    def dispatcher_timeout_seconds(self) -> int:
        """The dispatcher's timeout as the functions read it (``DISPATCHER_TIMEOUT_SECONDS``): whole seconds."""
        return max(1, math.ceil(self.dispatcher_timeout))

    @property
    def visibility_timeout(self) -> int:
        """The delayer queue's visibility timeout, whole seconds: ``VISIBILITY_TIMEOUT_FACTOR`` x ``dispatcher_timeout``."""
        return max(1, round(contract.VISIBILITY_TIMEOUT_FACTOR * self.dispatcher_timeout))
