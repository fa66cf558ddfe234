"""The ``DelayedScheduler`` construct: the whole scheduler, secure by default, from one line."""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, Optional, Union

import jsii
from aws_cdk import Annotations, Duration, IStableStringProducer, Lazy, RemovalPolicy, Stack, Token
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from . import _scheduler_apis, _wiring
from ._contract import contract
from ._functions import function_options, runtime_function
from ._grants import SchedulerGrants
from ._log_level import LogLevel
from ._outcomes import Outcomes, outcomes_of
from ._precision import DeliveryPrecision
from ._alarms import SchedulerMonitoring
from ._props import SchedulerProps, default_of
from ._table_capacity import TableCapacity
from .periodic import SchedulerPeriodic
from ._validation import check_dispatcher_covers, seconds, text
from .api import SchedulerApi, SchedulerApiKind
from ._lambda_timeout import LAMBDA_TIMEOUT_UNKNOWN_WARNING, unknown_timeout_warning
from ._target_descriptions import waited_for
from .targets import IScheduleTarget, check_deliverable, check_target, waits_for_unknown_run

__all__ = ["DelayedScheduler", "DEFAULT_TARGET_NAME", "LogLevel"]

DEFAULT_TARGET_NAME: str = contract.DEFAULT_TARGET_NAME
"""The name under which the ``target`` prop is registered."""


@jsii.implements(IStableStringProducer)
class _JsonAtSynthesis:
    """Renders a JSON variable (``TARGETS``, ``OUTCOMES``) at synthesis, from what ``value`` gives then (so
    targets added after construction are included), its tokens as CloudFormation resolves them."""

    def __init__(self, scope: Construct, value: Callable[[], Any]) -> None:
        self._scope = scope
        self._value = value

    def produce(self) -> Optional[str]:
        return Stack.of(self._scope).to_json_string(self._value())


class DelayedScheduler(SchedulerGrants, SchedulerMonitoring, SchedulerPeriodic, Construct):
    """To-the-second timers at any horizon, one-shot and periodic: an API that takes schedules, and
    delivery of each one to a target when it is due.

    It creates the Schedules table (``Table``), the delayer queue (``DelayerQueue``) and its
    dead-letter queue (``DeadLetterQueue``), four functions (``ApiFunction``, ``SweeperFunction``,
    ``EnqueuerFunction``, ``DispatcherFunction``), each with its own role (``<Function>Role``) and
    log group (``<Function>Logs``), the every-minute sweep rule (``SweepSchedule``), and the API
    the ``api`` prop chose, with its access logs (``ApiAccessLogs``): the HTTP API (``HttpApi``; its
    stage ``HttpApi/DefaultStage``, routes ``HttpApi/<METHOD>--<path>`` and JWT authorizer
    ``HttpApi/CognitoAuthorizer``) or the REST API (``Api``; Cognito authorizer ``ApiAuthorizer``,
    ``Api/ApiKey`` and ``Api/UsagePlan``); with its first periodic timer (``add_periodic``), the
    provider that hands them to the api function at deploy (``PeriodicTimersProvider``, its role
    ``PeriodicTimersProviderRole`` and log group ``PeriodicTimersProviderLogs``), each timer being
    ``Periodic-<timer id>``; with its first target with ``flow_control``, the flow queue (``FlowQueue``), where
    the messages of deliveries to limited targets wait; with ``add_alarms``, its alarms under ``Alarms``
    (``SchedulerAlarms`` names each one's ID), and with ``add_dashboard``, ``Dashboard``. These construct IDs are
    part of the public contract: renaming one replaces the resource.

    Direct invoke: whatever the ``api`` prop, a producer allowed by ``grant_invoke`` (or
    ``grant_schedule``) may invoke ``api_function`` with ``{"method": "POST", "path": "/schedules",
    "body": {...}}`` (``GET``/``DELETE`` ``/schedules/<id>`` without a body, ``POST
    /schedule-batches`` with ``{"schedules": [...]}``, ``PUT /periodic/<id>`` with a definition, and
    so on for every route); it answers ``{"statusCode": 201, "body": {...}}``, the same bodies as the API.

    Each due schedule reaches its target as ``{"id", "dueAt", "firedAt", "attempt", "dedupeKey",
    "payload", "target"}``, at least once: drop repeats by ``dedupeKey`` (docs/consuming.md).

    Example::

        timers = DelayedScheduler(self, "Timers", target=targets.SqsSendMessage(deliveries))
        timers.grant_schedule(app_role)  # every route of the API, and a direct invoke
        cloudwatch.Alarm(self, "Stuck", metric=timers.metric_dead_letter_queue_depth(),
                         threshold=0, comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                         evaluation_periods=1)

    :param scope: the parent construct.
    :param id: this construct's id.
    :param target: where due schedules go when they name no target (registered as ``"default"``).
    :param extra_targets: more targets, by name; a schedule picks one with its ``target`` field.
        Names are 1-64 characters of ``A-Za-z0-9._:-``. Default: none.
    :param api: which API takes schedules: ``SchedulerApi.http(...)``, ``SchedulerApi.rest(...)``
        or ``SchedulerApi.none()`` (direct invoke only); each takes its authorization, throttling
        and access logging. Default: ``SchedulerApi.http()`` (IAM authorization, 100 requests per
        second, burst 200, access logs on).
    :param api_name: the API's name, as the API Gateway console and CLI list it. Allowed: 1-128
        characters; not with ``SchedulerApi.none()``. Default: CDK's, the construct id (``HttpApi``
        or ``Api``).
    :param shard_count: how many partitions timers are spread over (no hot keys). The sweeper
        queries each one every minute. Allowed: 1-256. Default: 16.
    :param delay_window: schedules due within this window go straight to the delayer queue,
        which holds them with an SQS message delay; later ones wait in the table until the sweeper
        claims them. Allowed: 90-900 seconds (SQS's maximum delay; the sweeper runs every minute,
        so the window must span more than one sweep). Default: 870 seconds (900 less a 30-second margin).
    :param history_retention: how long final states (fired, cancelled, failed) stay readable
        through ``GET``; then they expire through the table's TTL. Allowed: 60 seconds to 3650 days.
        Default: 1 day.
    :param listing: serve ``GET /schedules`` (schedules by status and due time, paginated, never a
        scan) from a sparse keys-only global secondary index of the table (``listing_index_name``),
        which follows the table's billing mode and capacity. It costs writes: every create and each
        status change (delivery start, failure, cancel) also writes the index, about doubling the
        write cost of the lean path (a one-shot timer costs 2 table writes without listing, and 2 more
        index writes of a keys-only item with it). Without it, ``GET /schedules`` answers 404 with
        how to turn it on: the route is declared either way, so turning listing on changes no
        route and no grant. Default: false.
    :param billing_mode: the table's billing mode. Default: ``BillingMode.PAY_PER_REQUEST``.
    :param read_capacity: provisioned read capacity of the table and of each index, fixed, with
        ``BillingMode.PROVISIONED`` only (the same as ``provisioned_capacity=TableCapacity.fixed(read=...)``,
        and not with it). Allowed: >= 1. Default: 5.
    :param write_capacity: provisioned write capacity of the table and of each index, fixed, with
        ``BillingMode.PROVISIONED`` only (the same as ``provisioned_capacity=TableCapacity.fixed(write=...)``,
        and not with it). Allowed: >= 1. Default: 5.
    :param provisioned_capacity: the capacity of the table and of each of its global secondary indexes
        (the group index, and the listing index with ``listing=True``), with ``BillingMode.PROVISIONED``
        only: ``TableCapacity.fixed(read=..., write=...)``, or ``TableCapacity.autoscaled(max_read=...,
        max_write=..., min_read=1, min_write=1, target_utilization_percent=70)``, where Application Auto
        Scaling holds each one's consumed reads and writes near the target (20-90 %) between the
        minimum and the maximum. A fixed capacity throttles beyond itself and is paid for when idle.
        Not with ``read_capacity``/``write_capacity``. Default: ``TableCapacity.fixed()`` from
        ``read_capacity`` and ``write_capacity``, 5 read and 5 write units (about 2.5 short timers a
        second, 2 writes each) with no auto scaling, as aws-cdk-lib's ``Table``, and a synth warning,
        ``TableCapacity.DEFAULTED_WARNING``, for each unit left to it.
    :param warm_throughput: pre-warms the table: the reads and writes a second it serves at once
        (``WarmThroughput(read_units_per_second=..., write_units_per_second=...)``, CloudFormation's
        ``WarmThroughput``), where a new on-demand table serves 4,000 writes and throttles the rest until its
        traffic has grown. Set it for a known burst: each delivery's FIRED write is one write unit, so
        1,000,000 timers due in the same second take about 40,000 write units a second (simulated: 39,000 in
        the busiest second; the sweeper's claims of the same timers, one write each, come minutes earlier at
        2,667 a second); docs/construct.md, "Bursts". The same values pre-warm each global secondary index: a
        delivery also writes the group index (a timer with a group) and, with ``listing=True``, the listing
        index, and an index short of write throughput throttles the table's writes. Pre-warming is a
        one-time charge for the table and each index (DynamoDB's pricing page); once raised, warm throughput
        cannot be lowered. The table's on-demand throughput quota (40,000 write units a second by default)
        still caps it. Allowed: each given rate a positive whole number, at least one given. Default: none
        (DynamoDB's own warm throughput: 12,000 reads and 4,000 writes a second for a new on-demand table).
    :param encryption_key: a customer managed KMS key for the table and the queues.
        Default: the table uses an AWS owned key, the queues SQS-managed SSE.
    :param point_in_time_recovery: continuous backups of the table. Default: true.
    :param deletion_protection: the table's deletion protection: DynamoDB refuses to delete it (from
        the console, the API, or a stack update that replaces or removes it) until it is turned off.
        Default: true, unless ``removal_policy`` is ``RemovalPolicy.DESTROY`` (a table meant to go with
        its stack, whose deletion protection would make the stack's deletion fail).
    :param removal_policy: what happens to the table (it holds the schedules) and the log
        groups when they leave the stack. Default: ``RemovalPolicy.RETAIN``.
    :param log_level: the runtime's log level (``LOG_LEVEL``): ``LogLevel.DEBUG``, ``.INFO``,
        ``.WARNING``, ``.ERROR``, ``.CRITICAL``, or ``LogLevel.of(text)``. At WARNING and above only
        what needs a look is written, and the functions log in Lambda's JSON format with system log
        level WARN, so Lambda's START/END/REPORT lines (about 330 bytes per invocation) are not
        written either; INFO or DEBUG give the full event trail and Lambda's platform lines. (A
        token keeps Lambda's text format.) Default: ``LogLevel.WARNING``.
    :param log_retention: how long the functions' and the API's logs are kept.
        Default: ``RetentionDays.ONE_MONTH``.
    :param runtime: the functions' Lambda runtime. Allowed: Python 3.11 or later; a newer Python
        than the default (``Runtime.PYTHON_3_14``) is accepted, but the runtime is not tested on it.
        Default: ``Runtime.PYTHON_3_13``, the newest Python the runtime is tested on (its unit and
        handler tests run on Python 3.13, the handler tests also with botocore 1.34.0, the oldest
        this package supports: docs/runtime.md, "Interpreters and SDK versions"). Pinned by this
        package: it changes only with a release of cdk-delayed-scheduler, never with an aws-cdk-lib
        upgrade. (While aws-cdk-lib offers a newer Python, cdk-nag's AwsSolutions-L1 finding on the
        default is acknowledged; set ``runtime`` to move.)
    :param architecture: the functions' processor architecture. Default: ``Architecture.ARM_64``.
    :param tracing: X-Ray tracing of the four functions (``Tracing.ACTIVE`` or ``.PASS_THROUGH``); each
        role is then allowed ``xray:PutTraceSegments`` and ``xray:PutTelemetryRecords``, which X-Ray
        grants only on ``*``. ``Tracing.ACTIVE`` also traces the REST API's stage (an HTTP API has no
        X-Ray tracing). Default: ``Tracing.DISABLED``.
    :param api_memory_size: the api function's memory, in MiB. Allowed: 128-10240. Default: 256.
    :param sweeper_memory_size: the sweeper's memory, in MiB. Allowed: 128-10240. Default: 256.
    :param enqueuer_memory_size: the enqueuer's memory, in MiB. Allowed: 128-10240. Default: 128.
    :param dispatcher_memory_size: the dispatcher's memory, in MiB; it mostly waits out a
        sub-second remainder, so the smallest size is the cheapest. Allowed: 128-10240. Default: 128.
    :param dispatcher_timeout: the dispatcher's timeout. It invokes Lambda targets
        synchronously, so it must cover a target's run: at least 5 seconds longer than the timeout
        of each synchronous ``targets.LambdaInvoke`` function (when known: a function defined in this app, or one
        stated with ``LambdaInvoke(fn, timeout=...)``; an imported function without it gets a synth
        warning, ``targets.LAMBDA_TIMEOUT_UNKNOWN_WARNING``). The
        delayer queue's visibility timeout (and the flow queue's) is 6 times this, and a failed delivery is
        retried after it. Allowed: 10-900 seconds. Default: 60 seconds (a retry 6 minutes later).
    :param dispatcher_batch_size: delayer messages per dispatcher invocation. Allowed: 1-10, or up
        to 10000 with a ``dispatcher_max_batching_window`` of at least 1 second. Default: 10.
    :param dispatcher_max_batching_window: how long Lambda gathers a dispatcher batch. With
        ``precision=DeliveryPrecision.SUB_SECOND`` each message is sent to surface this much earlier
        (still never delivered early), so timers due in the same second share one invocation and one
        wait; ``dispatcher_timeout`` must be at least this plus 10 seconds. With
        ``DeliveryPrecision.SECOND`` it only gathers: deliveries are up to this much later. Allowed:
        0-300 seconds. Default: none.
    :param dispatcher_max_concurrency: the most concurrent dispatcher invocations the queue
        starts (protects a target from bursts); the flow queue, when there is one, starts as many again.
        Allowed: 2-1000. Default: no limit.
    :param dispatcher_reserved_concurrency: concurrency reserved for the dispatcher out of the
        account's, so other functions cannot starve deliveries (and deliveries cannot take more).
        Allowed: >= 2, with ``dispatcher_max_concurrency`` set and at most this, or at most half of this once a
        target has ``flow_control`` (the flow queue's pollers start as many again); else throttled batches would
        count as receives and park messages in the dead-letter queue. Default: none (the account's unreserved
        pool).
    :param dispatcher_keep_warm: an EventBridge rule invokes the dispatcher every 4 minutes with an event that only
        initialises it, so that Lambda keeps an execution environment ready: at sparse traffic (a timer every few
        minutes) a delivery then does not wait for a new environment's init (about 400 ms, which would make it
        late), at about 11,000 invocations of a few milliseconds a month (under $0.01). Default: true.
    :param precision: ``DeliveryPrecision.SUB_SECOND`` waits out the sub-second rest of each delay
        (tens of milliseconds late, the wait billed as dispatcher time) or ``DeliveryPrecision.SECOND``
        delays by the whole seconds left rounded up and delivers on arrival (up to about a second late,
        no billed wait). Never early either way. Default: ``DeliveryPrecision.SUB_SECOND``.
    :param max_receive_count: deliveries of one message before it is parked in the
        dead-letter queue. Allowed: 1-1000. Default: 5. All of them must fall within the delayer queue's
        4-day retention: ``delay_window`` + ``max_receive_count`` x 6 x ``dispatcher_timeout`` at most 4
        days, else SQS would drop the message before its last receive (so 1000 needs a
        ``dispatcher_timeout`` of at most 57 seconds). It is also every delivery's retry limit: the
        default, and the most, of a schedule's ``retry.maxAttempts`` (the first attempt included).
    :param retry_max_age: the default of a schedule's ``retry.maxAgeSeconds``: a failed delivery
        whose next attempt would start more than this long after its due time is parked in the
        dead-letter queue, with its payload and the reason, instead of retried. The first attempt
        is always made, however late (unless ``max_lateness`` bounds it). Allowed: 60 seconds to
        1 day, whole seconds. Default: 1 hour, which the default 5 attempts (about 24 minutes for a
        one-shot) never reach: it bounds a deployment that raises ``max_receive_count``.
    :param max_lateness: the default lateness bound of every schedule and periodic occurrence that gives no
        ``maxLatenessSeconds`` (``MAX_LATENESS_SECONDS`` on the functions): a delivery that would start more
        than this long after its due time, first attempt or retry, is not started. A one-shot ends ``FAILED``
        with a reason starting ``stale`` and is parked in the dead-letter queue with its payload (a redrive
        may still send it); a periodic occurrence is skipped and counted in ``skippedCount``. Allowed: 1
        second to 365 days, whole seconds. Default: none (a late timer is delivered late, however late).
    :param stream_batch_size: stream records per enqueuer invocation. Allowed: 1-1000. Default: 100.
    :param stream_retry_attempts: retries of a failing stream batch (halved on each error)
        before it goes to the dead-letter queue. Allowed: 0-10000. Default: 10.
    :param metrics_namespace: the CloudWatch namespace of the runtime's metrics.
        Default: ``"DelayedScheduler"``.
    :param outcomes: an outcome event for each occurrence when it ends (delivered, failed, stale and, when
        asked, cancelled), sent to a target of any kind: a bare target (``targets.SqsSendMessage(queue)``)
        sends the default kinds without the payload, ``Outcomes(target, kinds=[...], include_payload=True)``
        chooses (``OUTCOMES`` on the functions). Each event travels through the delayer queue and only the
        dispatcher delivers it, so only the dispatcher is granted the target; an event the target never takes
        is parked in the dead-letter queue. Default: none (no outcome events, and nothing new is paid).
    """


    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        target: IScheduleTarget,
        extra_targets: Optional[Mapping[str, IScheduleTarget]] = None,
        api: Optional[SchedulerApi] = None,
        api_name: Optional[str] = None,
        shard_count: int = default_of(contract.SHARD_COUNT),
        delay_window: Optional[Duration] = None,
        history_retention: Optional[Duration] = None,
        listing: bool = False,
        billing_mode: dynamodb.BillingMode = dynamodb.BillingMode.PAY_PER_REQUEST,
        read_capacity: Optional[int] = None,
        write_capacity: Optional[int] = None,
        provisioned_capacity: Optional[TableCapacity] = None,
        warm_throughput: Optional[dynamodb.WarmThroughput] = None,
        encryption_key: Optional[kms.IKey] = None,
        point_in_time_recovery: bool = True,
        deletion_protection: Optional[bool] = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        log_level: Optional[LogLevel] = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        runtime: Optional[lambda_.Runtime] = None,
        architecture: Optional[lambda_.Architecture] = None,
        tracing: lambda_.Tracing = lambda_.Tracing.DISABLED,
        api_memory_size: int = contract.DEFAULT_MEMORY_SIZES_MIB["api"],
        sweeper_memory_size: int = contract.DEFAULT_MEMORY_SIZES_MIB["sweeper"],
        enqueuer_memory_size: int = contract.DEFAULT_MEMORY_SIZES_MIB["enqueuer"],
        dispatcher_memory_size: int = contract.DEFAULT_MEMORY_SIZES_MIB["dispatcher"],
        dispatcher_timeout: Optional[Duration] = None,
        dispatcher_batch_size: int = default_of(contract.DISPATCHER_BATCH_SIZE),
        dispatcher_max_batching_window: Optional[Duration] = None,
        dispatcher_max_concurrency: Optional[int] = None,
        dispatcher_reserved_concurrency: Optional[int] = None,
        dispatcher_keep_warm: bool = True,
        precision: Optional[DeliveryPrecision] = None,
        max_receive_count: int = default_of(contract.MAX_RECEIVE_COUNT),
        retry_max_age: Optional[Duration] = None,
        max_lateness: Optional[Duration] = None,
        stream_batch_size: int = default_of(contract.STREAM_BATCH_SIZE),
        stream_retry_attempts: int = default_of(contract.STREAM_RETRY_ATTEMPTS),
        metrics_namespace: str = contract.DEFAULT_METRICS_NAMESPACE,
        outcomes: Optional[Union[IScheduleTarget, Outcomes]] = None,
    ) -> None:
        props = SchedulerProps.of(locals())  # every prop, checked by its rules (_props.RULES)
        super().__init__(scope, id)

        self.metrics_namespace: str = props.metrics_namespace
        """The CloudWatch namespace of the runtime's metrics."""
        self.encryption_key: Optional[kms.IKey] = props.encryption_key
        """The customer managed key of the table and the queues, or ``None``."""
        self.scheduler_api: SchedulerApi = props.api
        """The ``SchedulerApi`` (the ``api`` prop) this scheduler was built with."""
        self.runtime: lambda_.Runtime = props.runtime
        """The functions' Lambda runtime."""
        self.dispatcher_timeout: Duration = props.dispatcher_timeout
        """The dispatcher's timeout; the delayer queue's visibility timeout (and the flow queue's) is 6 times it."""
        self.delay_window: Duration = props.delay_window
        """Schedules due within it go straight to the delayer queue (the ``delay_window`` prop)."""
        self._log_options = dict(retention=props.log_retention, removal_policy=props.removal_policy)
        self._max_receive_count = props.max_receive_count  # the most a periodic timer's retry_max_attempts may be
        self._target_json: dict[str, Any] = {}
        self._targets: dict[str, IScheduleTarget] = {}
        self.outcomes: Optional[Outcomes] = outcomes_of(props.outcomes)
        """Where each occurrence's outcome event goes (the ``outcomes`` prop, a bare target as
        ``Outcomes(target)``), or ``None``: no outcome events."""
        self._outcome_target_json: dict[str, Any] = {}

        # --- state: the Schedules table, the delayer queue and its dead-letter queue -------------
        self.table: dynamodb.Table = _wiring.schedules_table(
            self, billing_mode=props.billing_mode, capacity=props.table_capacity, encryption_key=props.encryption_key,
            point_in_time_recovery=props.point_in_time_recovery, removal_policy=props.removal_policy,
            deletion_protection=props.table_deletion_protection,
            listing=props.listing, warm_throughput=props.warm_throughput)
        """The Schedules table (partition key ``pk``, sort key ``sk``, TTL attribute ``expiresAt``)."""
        self.listing_index_name: Optional[str] = contract.LISTING["indexName"] if props.listing else None
        """The name of the table's listing index (keys only) with ``listing=True``, else ``None``."""
        self.group_index_name: str = contract.GROUPS["indexName"]
        """The name of the table's group index (keys only, sparse: only the pending members of a ``group``)."""
        encryption = _wiring.queue_encryption(props.encryption_key)
        self.dead_letter_queue: sqs.Queue = sqs.Queue(self, "DeadLetterQueue", retention_period=Duration.days(14),
                                                      enforce_ssl=True, **encryption)
        """Everything that could not be delivered or processed: envelopes parked by the
        dispatcher with the reason, delayer messages past ``max_receive_count``, stream batches
        past their retries, sweep events EventBridge could not deliver and sweeps that failed.
        Kept 14 days."""
        self._queues = _wiring.DispatcherQueues.of(
            dispatcher_timeout=props.dispatcher_timeout, max_receive_count=props.max_receive_count,
            dead_letter_queue=self.dead_letter_queue, encryption=encryption,
            batch_size=props.dispatcher_batch_size, max_batching_window=props.dispatcher_max_batching_window,
            max_concurrency=props.dispatcher_max_concurrency,
            reserved_concurrency=props.dispatcher_reserved_concurrency)
        self.delayer_queue: sqs.Queue = self._queues.queue(self, "DelayerQueue")
        """The SQS standard queue that holds each schedule due within the window with a message delay."""
        self.flow_queue: Optional[sqs.Queue] = None
        """The SQS standard queue where the messages of deliveries to limited targets (``flow_control``) wait,
        apart from the delayer queue, so that a limited target's backlog does not hold up other targets' timers;
        made like the delayer queue (and read by the dispatcher like it) when the first limited target is
        registered. ``None`` when no target has limits."""
        # EventBridge sends failed sweep events to the dead-letter queue, which this key encrypts.
        _wiring.grant_key(props.encryption_key, iam.ServicePrincipal("events.amazonaws.com"), *_wiring.KEY_PRODUCER)

        # --- functions ---------------------------------------------------------------------
        options = dict(environment=self._environment(props), log_retention=props.log_retention,
                       removal_policy=props.removal_policy,
                       **function_options(props.runtime, props.architecture, props.log_level, props.tracing))

        self.api_function: lambda_.Function = runtime_function(
            self, "ApiFunction", "api", props.api_memory_size, Duration.seconds(contract.API_FUNCTION_TIMEOUT_SECONDS),
            "Takes, reads and cancels schedules (API and direct invoke).", **options)
        """Answers every route (``api.ROUTES``: schedules, batches, the listing, periodic definitions),
        from the API or a direct invoke; sends schedules due within the window to the delayer queue."""
        self.sweeper_function: lambda_.Function = runtime_function(
            self, "SweeperFunction", "sweeper", props.sweeper_memory_size, Duration.seconds(60),
            "Claims every minute the schedules that become due within the window.", **options)
        """Claims, every minute, the schedules that have come due within the window (and overdue ones)."""
        self.enqueuer_function: lambda_.Function = runtime_function(
            self, "EnqueuerFunction", "enqueuer", props.enqueuer_memory_size, Duration.seconds(60),
            "Turns claimed schedules into delayed SQS messages.", **options)
        """Turns each claimed schedule (a stream REMOVE record) into a delayed message."""
        self.dispatcher_function: lambda_.Function = runtime_function(
            self, "DispatcherFunction", "dispatcher", props.dispatcher_memory_size, props.dispatcher_timeout,
            "Delivers due schedules to their targets.",
            reserved_concurrent_executions=props.dispatcher_reserved_concurrency, **options)
        """Delivers due schedules from the delayer queue to their targets."""

        self._grant_runtime()  # least privilege, per function

        # --- wiring ------------------------------------------------------------------------
        _wiring.stream_to_enqueuer(self.enqueuer_function, self.table, self.dead_letter_queue,
                                   batch_size=props.stream_batch_size, retry_attempts=props.stream_retry_attempts)
        self.sweep_rule: events.Rule = _wiring.every_minute_to_sweeper(self, self.sweeper_function,
                                                                       self.dead_letter_queue)
        """The EventBridge ``rate(1 minute)`` rule that invokes the sweeper."""
        self._queues.to_dispatcher(self.dispatcher_function, self.delayer_queue)
        self.keep_warm_rule: Optional[events.Rule] = (
            _wiring.keep_warm(self, self.dispatcher_function) if props.dispatcher_keep_warm else None)
        """The EventBridge rule that keeps a dispatcher environment initialised (``dispatcher_keep_warm``), or
        ``None``."""

        # --- targets -------------------------------------------------------------------------
        self.add_target(DEFAULT_TARGET_NAME, props.target)
        for name, extra in (props.extra_targets or {}).items():
            self.add_target(name, extra)
        if self.outcomes is not None:
            self._outcome_target_json = self._bind("outcomes", self.outcomes.target)

        # --- the API -------------------------------------------------------------------------
        access_logs = None
        if props.api.kind != SchedulerApiKind.NONE and props.api.access_logging:
            access_logs = logs.LogGroup(self, "ApiAccessLogs", retention=props.log_retention,
                                        removal_policy=props.removal_policy)
        self._built_api = _scheduler_apis.build(self, self.api_function, props.api, access_logs,
                                                api_name=props.api_name, tracing=props.tracing)
        built = self._built_api
        self.api: Optional[Union[apigwv2.HttpApi, apigw.RestApi]] = built.api if built else None
        """The API: an ``HttpApi`` (``SchedulerApi.http()``), a ``RestApi`` (``SchedulerApi.rest()``),
        or ``None`` (``SchedulerApi.none()``)."""
        self.api_stage: Optional[Union[apigwv2.HttpStage, apigw.Stage]] = built.stage if built else None
        """The API's stage: the HTTP API's ``$default``, or the REST stage, where a WAF web ACL can be
        associated; ``None`` with ``SchedulerApi.none()``."""
        self.api_key: Optional[apigw.IApiKey] = built.api_key if built else None
        """The API key, with ``SchedulerApi.rest(authorization=ApiAuthorization.api_key())`` only."""

    def _environment(self, props: SchedulerProps) -> dict[str, str]:
        """Every function's environment (``contract.ENV``'s names): where the state is, the targets
        (rendered at synthesis, so that targets added later are in), and the props the runtime reads."""
        env = contract.ENV
        # set only when given: a deployment without a lateness bound, or without outcomes, gets no variable
        lateness, outcomes = props.max_lateness, self.outcomes
        optional = {} if lateness is None else {env.max_lateness_seconds: text(seconds(lateness))}
        if outcomes is not None:
            optional[env.outcomes] = Lazy.string(
                _JsonAtSynthesis(self, lambda: outcomes.settings(self._outcome_target_json)))
        return {
            env.table_name: self.table.table_name,
            env.delayer_queue_url: self.delayer_queue.queue_url,
            env.dead_letter_queue_url: self.dead_letter_queue.queue_url,
            env.targets: Lazy.string(_JsonAtSynthesis(self, lambda: dict(self._target_json))),
            env.shard_count: text(props.shard_count),
            env.delay_window_seconds: text(seconds(props.delay_window)),
            env.history_retention_seconds: text(seconds(props.history_retention)),
            env.max_receive_count: text(props.max_receive_count),
            env.retry_max_age_seconds: text(seconds(props.retry_max_age)),
            env.dispatcher_timeout_seconds: text(seconds(props.dispatcher_timeout)),
            env.dispatcher_max_batching_window_seconds: text(seconds(props.dispatcher_max_batching_window)
                                                             if props.dispatcher_max_batching_window else 0),
            env.precision: props.precision.name,
            env.listing: "true" if props.listing else "false",
            env.metrics_namespace: props.metrics_namespace,
            env.log_level: props.log_level.name,
            **optional,
        }

    # --- public methods ------------------------------------------------------------------
    def add_target(self, name: str, target: IScheduleTarget) -> None:
        """Register ``target`` under ``name``; a schedule picks it with ``"target": name``.

        Example::

            timers.add_target("billing", targets.LambdaInvoke(billing_fn))

        :param name: 1-64 characters of ``A-Za-z0-9._:-``, unique in this scheduler.
        :param target: e.g. ``targets.SqsSendMessage(queue)``. A ``targets.LambdaInvoke`` function's
            timeout must leave ``dispatcher_timeout`` 5 seconds to spare; an imported function's
            timeout is not known (state it with ``LambdaInvoke(fn, timeout=...)``, else a synth warning).
            Neither applies to an asynchronous invoke (``invocation_type=LambdaInvocationType.EVENT``).
        """
        if not isinstance(name, str) or not re.fullmatch(contract.TARGET_NAME_PATTERN, name):
            raise ValueError(f"target name: must be 1-64 characters of A-Za-z0-9._:-, got {name!r}")
        if name in self._targets:
            raise ValueError(f"target name: {name!r} is already registered")
        check_target(f"target {name!r}", target)
        description = self._bind(name, target)
        if self.flow_queue is None and contract.FLOW_CONTROL_FIELD in description:
            self._add_flow_queue(name)
        self._target_json[name] = description
        self._targets[name] = target

    def _add_flow_queue(self, target_name: str) -> None:
        """The flow queue, with the first limited target (``target_name``): made, read and sent to as the delayer
        queue is, and named to every function (``FLOW_QUEUE_URL``); its depth joins a dashboard made before it."""
        self._queues.check_room_for_a_second_poller(target_name)
        self.flow_queue = _wiring.flow_queue(self, self._queues, self.dispatcher_function, self.functions)
        self._grant_delayer_sends(self.flow_queue)
        if self._on_flow_queue is not None:
            self._on_flow_queue()

    def _bind(self, name: str, target: IScheduleTarget) -> dict[str, Any]:
        """Bind ``target`` to the dispatcher (it grants what its delivery needs) and check, naming ``name``,
        that the runtime can deliver to it within ``dispatcher_timeout``: its description, for the runtime."""
        config = target.bind(self.dispatcher_function)
        description = dict(config.target_json)
        check_deliverable(name, target, description)
        check_dispatcher_covers(name, config.timeout, self.dispatcher_timeout, waited_for(description))
        if waits_for_unknown_run(config):
            Annotations.of(self).add_warning_v2(LAMBDA_TIMEOUT_UNKNOWN_WARNING,
                                                unknown_timeout_warning(name, self.dispatcher_timeout))
        return description

    @property
    def target_names(self) -> list[str]:
        """The registered target names, ``"default"`` first."""
        return list(self._targets)

    @property
    def url(self) -> str:
        """The API's base URL, e.g. ``https://abc123.execute-api.eu-west-1.amazonaws.com/``
        (HTTP) or ``.../v1/`` (REST). With ``SchedulerApi.none()`` there is none: reading it raises
        ``ValueError`` (``api`` says which the scheduler has)."""
        if self._built_api is None:
            raise ValueError("url: this scheduler has no API (api=SchedulerApi.none()): producers invoke api_function "
                             "directly (grant_schedule grants it)")
        return self._built_api.url

    @property
    def functions(self) -> list[lambda_.Function]:
        """The four runtime functions: api, sweeper, enqueuer, dispatcher."""
        return [self.api_function, self.sweeper_function, self.enqueuer_function, self.dispatcher_function]
