"""The ``DelayedScheduler`` construct: the whole scheduler, secure by default, from one line."""

from __future__ import annotations

import re
from typing import Any, Mapping, Optional, Sequence

import jsii
from aws_cdk import (
    Acknowledgment,
    Duration,
    IStableStringProducer,
    Lazy,
    RemovalPolicy,
    Stack,
    Token,
    Validations,
)
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_destinations as lambda_destinations
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from ._runtime_asset import event_filters, runtime_asset_path
from .targets import IScheduleTarget

__all__ = ["DelayedScheduler", "ApiAuthorization", "ApiAuthorizationKind", "DEFAULT_TARGET_NAME", "newest_python_runtime"]

DEFAULT_TARGET_NAME = "default"
"""The name under which the ``target`` prop is registered (``DEFAULT_TARGET``)."""

#: SQS's maximum message delay; the delay window cannot exceed it.
MAX_SQS_DELAY_SECONDS = 900
_TARGET_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
_LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
_CODE_EXCLUDES = ["**/__pycache__", "**/*.pyc", "**/tests"]
_HANDLER_MODULE = "scheduler_runtime.handlers"

#: The JSON schema API Gateway applies to ``POST /schedules`` before the function runs.
#: The api handler validates again, in full (RFC 3339 parsing, the 256 KiB payload limit, ...).
CREATE_SCHEDULE_SCHEMA = apigw.JsonSchema(
    schema=apigw.JsonSchemaVersion.DRAFT4,
    title="CreateSchedule",
    type=apigw.JsonSchemaType.OBJECT,
    additional_properties=False,
    required=["payload"],
    properties={
        "id": apigw.JsonSchema(type=apigw.JsonSchemaType.STRING, min_length=1, max_length=128,
                               pattern="^[A-Za-z0-9._:-]+$"),
        "dueAt": apigw.JsonSchema(type=[apigw.JsonSchemaType.STRING, apigw.JsonSchemaType.NUMBER]),
        "delaySeconds": apigw.JsonSchema(type=apigw.JsonSchemaType.NUMBER, minimum=0),
        "payload": apigw.JsonSchema(),
        "target": apigw.JsonSchema(type=apigw.JsonSchemaType.STRING, min_length=1, max_length=64),
    },
)

#: The most schedules one ``POST /schedule-batches`` call takes (the api handler's limit too).
#: Ten payloads of 256 KiB fit Lambda's 6 MB invocation limit even once API Gateway has
#: escaped the body into its event (quotes and backslashes double), so no batch of valid
#: schedules can fail before the function runs.
MAX_BATCH_SIZE = 10

#: The JSON schema API Gateway applies to ``POST /schedule-batches``: ``{"schedules": [...]}``
#: with 1-10 JSON objects. Each item is validated by the api handler, which answers per item
#: (``schedules[i].field``), so one bad item never refuses the others.
CREATE_SCHEDULE_BATCH_SCHEMA = apigw.JsonSchema(
    schema=apigw.JsonSchemaVersion.DRAFT4,
    title="CreateScheduleBatch",
    type=apigw.JsonSchemaType.OBJECT,
    additional_properties=False,
    required=["schedules"],
    properties={
        "schedules": apigw.JsonSchema(
            type=apigw.JsonSchemaType.ARRAY,
            min_items=1,
            max_items=MAX_BATCH_SIZE,
            items=apigw.JsonSchema(type=apigw.JsonSchemaType.OBJECT),
        ),
    },
)


class ApiAuthorizationKind:
    """The kinds of :class:`ApiAuthorization` (string constants)."""

    IAM = "IAM"
    API_KEY = "API_KEY"
    COGNITO = "COGNITO"
    NONE = "NONE"


class ApiAuthorization:
    """How callers authenticate to the scheduler's REST API. Use the factory methods."""

    def __init__(self, kind: str, user_pools: Sequence[aws_cognito.IUserPool] = (), scopes: Sequence[str] = ()) -> None:
        self.kind = kind
        self.user_pools = tuple(user_pools)
        self.scopes = tuple(scopes)

    @staticmethod
    def iam() -> "ApiAuthorization":
        """SigV4-signed requests, allowed by IAM policy (see ``grant_schedule``). The default."""
        return ApiAuthorization(ApiAuthorizationKind.IAM)

    @staticmethod
    def api_key() -> "ApiAuthorization":
        """An API key in the ``x-api-key`` header. The construct creates the key and a usage plan
        (``DelayedScheduler.api_key``); the key value is read from API Gateway, never from the template."""
        return ApiAuthorization(ApiAuthorizationKind.API_KEY)

    @staticmethod
    def cognito(user_pool: aws_cognito.IUserPool, *, scopes: Sequence[str] = ()) -> "ApiAuthorization":
        """A Cognito user pool token in the ``Authorization`` header.

        :param user_pool: the pool whose tokens are accepted.
        :param scopes: OAuth scopes an access token must carry. Default: none (an ID token is accepted).
        """
        return ApiAuthorization(ApiAuthorizationKind.COGNITO, [user_pool], scopes)

    @staticmethod
    def none() -> "ApiAuthorization":
        """No authorization at all: anyone who knows the URL can create and cancel schedules.

        Only for a private test; cdk-nag (APIG4, COG4) reports it, and that is intended."""
        return ApiAuthorization(ApiAuthorizationKind.NONE)


@jsii.implements(IStableStringProducer)
class _TargetsJson:
    """Renders ``TARGETS`` at synthesis, so targets added after construction are included."""

    def __init__(self, scheduler: "DelayedScheduler") -> None:
        self._scheduler = scheduler

    def produce(self) -> Optional[str]:
        return Stack.of(self._scheduler).to_json_string(dict(self._scheduler._target_json))


class DelayedScheduler(Construct):
    """To-the-second, one-shot timers at any horizon: a REST API that takes schedules, and
    delivery of each one to a target when it is due.

    It creates the Schedules table (``Table``), the delayer queue (``DelayerQueue``) and its
    dead-letter queue (``DeadLetterQueue``), five functions (``ApiFunction``,
    ``FastTrackFunction``, ``SweeperFunction``, ``EnqueuerFunction``, ``DispatcherFunction``),
    each with its own role (``<Function>Role``) and log group (``<Function>Logs``), the
    every-minute sweep rule (``SweepSchedule``) and the REST API (``Api``). These construct
    IDs are part of the public contract: renaming one replaces the resource.

    :param scope: the parent construct.
    :param id: this construct's id.
    :param target: where due schedules go when they name no target (registered as ``"default"``).
    :param extra_targets: more targets, by name; a schedule picks one with its ``target`` field.
        Names are 1-64 characters of ``A-Za-z0-9._:-``. Default: none.
    :param shard_count: how many partitions timers are spread over (no hot keys). The sweeper
        queries each one every minute. Allowed: 1-256. Default: 16.
    :param delay_window: schedules due within this window are handed to the delayer queue,
        which holds them with an SQS message delay. Allowed: 90-900 seconds (SQS's maximum
        delay; the sweeper runs every minute, so the window must span more than one sweep).
        Default: 870 seconds (900 less a 30-second margin).
    :param history_retention: how long final states (fired, cancelled, failed) stay readable
        through ``GET``; then they expire through the table's TTL. Allowed: 1 minute to 3650 days.
        Default: 1 day.
    :param billing_mode: the table's billing mode. Default: ``BillingMode.PAY_PER_REQUEST``.
    :param read_capacity: provisioned read capacity, with ``BillingMode.PROVISIONED`` only.
        Allowed: >= 1. Default: 5.
    :param write_capacity: provisioned write capacity, with ``BillingMode.PROVISIONED`` only.
        Allowed: >= 1. Default: 5.
    :param encryption_key: a customer managed KMS key for the table and both queues.
        Default: the table uses an AWS owned key, the queues SQS-managed SSE.
    :param point_in_time_recovery: continuous backups of the table. Default: true.
    :param removal_policy: what happens to the table (it holds the schedules) and the log
        groups when they leave the stack. Default: ``RemovalPolicy.RETAIN``.
    :param api_authorization: how API callers authenticate. Default: ``ApiAuthorization.iam()``.
    :param api_throttling_rate_limit: the stage's steady-state request rate, per second.
        Allowed: >= 1. Default: 100.
    :param api_throttling_burst_limit: the stage's burst capacity. Allowed: >= 1. Default: 200.
    :param api_stage_name: the stage name in the API's URL. Default: ``"v1"``.
    :param api_cloud_watch_role: create the account-wide role that lets API Gateway write logs
        (``AWS::ApiGateway::Account``); set false when the account already has one.
        Default: true.
    :param log_level: the functions' log level. Allowed: DEBUG, INFO, WARNING, ERROR,
        CRITICAL. Default: ``"INFO"``.
    :param log_retention: how long the functions' and the API's logs are kept.
        Default: ``RetentionDays.ONE_MONTH``.
    :param architecture: the functions' processor architecture. Default: ``Architecture.ARM_64``.
        (The runtime is always the newest Python runtime this aws-cdk-lib offers.)
    :param memory_size: each function's memory, in MiB. Allowed: 128-10240. Default: 256.
    :param dispatcher_timeout: the dispatcher's timeout. It invokes Lambda targets
        synchronously, so it must cover a target's run. The delayer queue's visibility timeout
        is 6 times this. Allowed: 10-900 seconds. Default: 60 seconds.
    :param dispatcher_batch_size: delayer messages per dispatcher invocation. Allowed: 1-10.
        Default: 10.
    :param dispatcher_max_batching_window: how long Lambda gathers a dispatcher batch.
        Allowed: 0-300 seconds; a longer window makes deliveries later. Default: none.
    :param dispatcher_max_concurrency: the most concurrent dispatcher invocations the queue
        starts (protects a target from bursts). Allowed: 2-1000. Default: no limit.
    :param max_receive_count: deliveries of one message before it is parked in the
        dead-letter queue. Allowed: 1-1000. Default: 5.
    :param stream_batch_size: stream records per fast-track/enqueuer invocation.
        Allowed: 1-1000. Default: 100.
    :param stream_retry_attempts: retries of a failing stream batch (halved on each error)
        before it goes to the dead-letter queue. Allowed: 0-10000. Default: 10.
    :param metrics_namespace: the CloudWatch namespace of the runtime's metrics.
        Default: ``"DelayedScheduler"``.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        target: IScheduleTarget,
        extra_targets: Optional[Mapping[str, IScheduleTarget]] = None,
        shard_count: int = 16,
        delay_window: Optional[Duration] = None,
        history_retention: Optional[Duration] = None,
        billing_mode: dynamodb.BillingMode = dynamodb.BillingMode.PAY_PER_REQUEST,
        read_capacity: Optional[int] = None,
        write_capacity: Optional[int] = None,
        encryption_key: Optional[kms.IKey] = None,
        point_in_time_recovery: bool = True,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        api_authorization: Optional[ApiAuthorization] = None,
        api_throttling_rate_limit: float = 100,
        api_throttling_burst_limit: int = 200,
        api_stage_name: str = "v1",
        api_cloud_watch_role: bool = True,
        log_level: str = "INFO",
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        architecture: Optional[lambda_.Architecture] = None,
        memory_size: int = 256,
        dispatcher_timeout: Optional[Duration] = None,
        dispatcher_batch_size: int = 10,
        dispatcher_max_batching_window: Optional[Duration] = None,
        dispatcher_max_concurrency: Optional[int] = None,
        max_receive_count: int = 5,
        stream_batch_size: int = 100,
        stream_retry_attempts: int = 10,
        metrics_namespace: str = "DelayedScheduler",
    ) -> None:
        super().__init__(scope, id)
        delay_window = delay_window or Duration.seconds(870)
        history_retention = history_retention or Duration.days(1)
        dispatcher_timeout = dispatcher_timeout or Duration.seconds(60)
        api_authorization = api_authorization or ApiAuthorization.iam()
        architecture = architecture or lambda_.Architecture.ARM_64

        if target is None:
            raise ValueError("target: a target is required, e.g. targets.LambdaInvoke(fn)")
        for prop, duration in (("delay_window", delay_window), ("history_retention", history_retention),
                               ("dispatcher_timeout", dispatcher_timeout)):
            seconds = duration.to_seconds(integral=False)
            if not Token.is_unresolved(seconds) and float(seconds) != int(seconds):
                raise ValueError(f"{prop}: must be whole seconds, got {seconds} seconds")
        _check_range("shard_count", shard_count, 1, 256)
        _check_range("delay_window", _seconds(delay_window), 90, MAX_SQS_DELAY_SECONDS, unit="seconds")
        _check_range("history_retention", _seconds(history_retention), 60, 3650 * 86400, unit="seconds")
        provisioned = billing_mode == dynamodb.BillingMode.PROVISIONED
        if not provisioned and (read_capacity is not None or write_capacity is not None):
            raise ValueError("read_capacity/write_capacity: only allowed with billing_mode=BillingMode.PROVISIONED")
        _check_range("read_capacity", read_capacity, 1, None)
        _check_range("write_capacity", write_capacity, 1, None)
        _check_range("api_throttling_rate_limit", api_throttling_rate_limit, 1, None)
        _check_range("api_throttling_burst_limit", api_throttling_burst_limit, 1, None)
        if not Token.is_unresolved(log_level) and str(log_level).upper() not in _LOG_LEVELS:
            raise ValueError(f"log_level: must be one of {', '.join(_LOG_LEVELS)}, got {log_level!r}")
        _check_range("memory_size", memory_size, 128, 10240)
        if Token.is_unresolved(dispatcher_timeout.to_seconds()):
            raise ValueError("dispatcher_timeout: must be a concrete duration, not a token "
                             "(the delayer queue's visibility timeout is 6 times it)")
        _check_range("dispatcher_timeout", _seconds(dispatcher_timeout), 10, 900, unit="seconds")
        _check_range("dispatcher_batch_size", dispatcher_batch_size, 1, 10)
        if dispatcher_max_batching_window is not None:
            _check_range("dispatcher_max_batching_window", _seconds(dispatcher_max_batching_window), 0, 300,
                         unit="seconds")
        _check_range("dispatcher_max_concurrency", dispatcher_max_concurrency, 2, 1000)
        _check_range("max_receive_count", max_receive_count, 1, 1000)
        _check_range("stream_batch_size", stream_batch_size, 1, 1000)
        _check_range("stream_retry_attempts", stream_retry_attempts, 0, 10000)
        if not Token.is_unresolved(metrics_namespace) and not metrics_namespace:
            raise ValueError("metrics_namespace: must be a non-empty string")

        self.metrics_namespace = metrics_namespace
        self.encryption_key = encryption_key
        self.api_authorization = api_authorization
        self._target_json: dict[str, Any] = {}
        self._targets: dict[str, IScheduleTarget] = {}

        # --- state: the Schedules table ------------------------------------------------
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=billing_mode,
            read_capacity=(read_capacity or 5) if provisioned else None,
            write_capacity=(write_capacity or 5) if provisioned else None,
            stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
            time_to_live_attribute="expiresAt",
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=point_in_time_recovery
            ),
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key else dynamodb.TableEncryption.DEFAULT,
            encryption_key=encryption_key,
            removal_policy=removal_policy,
        )
        """The Schedules table (partition key ``pk``, sort key ``sk``, TTL attribute ``expiresAt``)."""

        # --- queues ----------------------------------------------------------------------
        queue_encryption = (
            dict(encryption=sqs.QueueEncryption.KMS, encryption_master_key=encryption_key)
            if encryption_key
            else dict(encryption=sqs.QueueEncryption.SQS_MANAGED)
        )
        self.dead_letter_queue = sqs.Queue(
            self,
            "DeadLetterQueue",
            retention_period=Duration.days(14),
            enforce_ssl=True,
            **queue_encryption,
        )
        """Everything that could not be delivered or processed: envelopes parked by the
        dispatcher with the reason, delayer messages past ``max_receive_count``, stream batches
        past their retries, sweep events EventBridge could not deliver and sweeps that failed.
        Kept 14 days."""

        self.delayer_queue = sqs.Queue(
            self,
            "DelayerQueue",
            visibility_timeout=Duration.seconds(6 * int(dispatcher_timeout.to_seconds())),
            retention_period=Duration.days(4),
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dead_letter_queue, max_receive_count=max_receive_count),
            **queue_encryption,
        )
        """The SQS standard queue that holds each claimed schedule with a message delay until it is due."""

        if encryption_key is not None:
            # EventBridge sends failed sweep events to the dead-letter queue, which this key encrypts.
            encryption_key.grant(iam.ServicePrincipal("events.amazonaws.com"), "kms:GenerateDataKey", "kms:Decrypt")

        # --- functions -------------------------------------------------------------------
        self._environment = {
            "TABLE_NAME": self.table.table_name,
            "DELAYER_QUEUE_URL": self.delayer_queue.queue_url,
            "DEAD_LETTER_QUEUE_URL": self.dead_letter_queue.queue_url,
            "TARGETS": Lazy.string(_TargetsJson(self)),
            "DEFAULT_TARGET": DEFAULT_TARGET_NAME,
            "SHARD_COUNT": _text(shard_count),
            "CLAIM_WINDOW_SECONDS": _text(_seconds(delay_window)),
            "HISTORY_RETENTION_SECONDS": _text(_seconds(history_retention)),
            "MAX_RECEIVE_COUNT": _text(max_receive_count),
            "METRICS_NAMESPACE": metrics_namespace,
            "LOG_LEVEL": str(log_level).upper() if not Token.is_unresolved(log_level) else log_level,
        }
        self._code = lambda_.Code.from_asset(str(runtime_asset_path()), exclude=_CODE_EXCLUDES)
        self._architecture = architecture
        self._memory_size = memory_size
        self._log_retention = log_retention
        self._removal_policy = removal_policy
        filters = event_filters()

        self.api_function = self._function("ApiFunction", "api", Duration.seconds(29),
                                           "Answers the scheduler's REST API.")
        """Answers ``POST /schedules``, ``GET``/``DELETE /schedules/{id}`` and ``POST /schedule-batches``."""
        self.fast_track_function = self._function("FastTrackFunction", "fast_track", Duration.seconds(60),
                                                  "Claims new schedules that are already due within the window.")
        """Claims, from the stream's INSERT records, schedules created already due within the window."""
        self.sweeper_function = self._function("SweeperFunction", "sweeper", Duration.seconds(60),
                                               "Claims every minute the schedules that become due within the window.")
        """Claims, every minute, the schedules that have come due within the window (and overdue ones)."""
        self.enqueuer_function = self._function("EnqueuerFunction", "enqueuer", Duration.seconds(60),
                                                "Turns claimed schedules into delayed SQS messages.")
        """Turns each claimed schedule (a stream REMOVE record) into a delayed message."""
        self.dispatcher_function = self._function("DispatcherFunction", "dispatcher", dispatcher_timeout,
                                                  "Delivers due schedules to their targets.")
        """Delivers due schedules from the delayer queue to their targets."""

        # Least privilege, per function: exactly the table operations its handler makes.
        self._grant_table(self.api_function, "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem",
                          "dynamodb:DeleteItem")
        self._grant_table(self.fast_track_function, "dynamodb:DeleteItem")
        self._grant_table(self.sweeper_function, "dynamodb:Query", "dynamodb:DeleteItem")
        self._grant_table(self.enqueuer_function, "dynamodb:BatchWriteItem")  # write-back of refused timers
        self._grant_table(self.dispatcher_function, "dynamodb:UpdateItem")
        self._grant_send(self.enqueuer_function, self.delayer_queue)
        self._grant_send(self.dispatcher_function, self.delayer_queue)  # put back an early message
        self._grant_send(self.dispatcher_function, self.dead_letter_queue)  # park an exhausted delivery

        # --- wiring: stream -> fast track / enqueuer ------------------------------------------
        # The mapping grants its function read access to exactly this table's stream, plus
        # dynamodb:ListStreams on "*": that action has no resource-level permissions in IAM.
        for function, filter_name in ((self.fast_track_function, "fastTrack"), (self.enqueuer_function, "enqueuer")):
            function.add_event_source(
                sources.DynamoEventSource(
                    self.table,
                    starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                    batch_size=stream_batch_size,
                    bisect_batch_on_error=True,
                    retry_attempts=stream_retry_attempts,
                    report_batch_item_failures=True,
                    on_failure=sources.SqsDlq(self.dead_letter_queue),
                    filters=[lambda_.FilterCriteria.filter(filters[filter_name])],
                )
            )

        # --- wiring: every minute -> sweeper ---------------------------------------------
        # A failed sweep is not retried (the next minute's sweep is the retry); it is recorded
        # in the dead-letter queue, so its depth alarm shows a sweeper that keeps failing.
        self.sweeper_function.configure_async_invoke(
            retry_attempts=0,
            max_event_age=Duration.minutes(2),
            on_failure=lambda_destinations.SqsDestination(self.dead_letter_queue),
        )
        self.sweep_rule = events.Rule(
            self,
            "SweepSchedule",
            description="Runs the delayed scheduler's sweeper every minute.",
            schedule=events.Schedule.rate(Duration.minutes(1)),
            targets=[
                events_targets.LambdaFunction(
                    self.sweeper_function,
                    dead_letter_queue=self.dead_letter_queue,
                    retry_attempts=2,
                    max_event_age=Duration.minutes(2),
                )
            ],
        )
        """The EventBridge ``rate(1 minute)`` rule that invokes the sweeper."""

        # --- wiring: delayer queue -> dispatcher -----------------------------------------
        self.dispatcher_function.add_event_source(
            sources.SqsEventSource(
                self.delayer_queue,
                batch_size=dispatcher_batch_size,
                max_batching_window=dispatcher_max_batching_window,
                report_batch_item_failures=True,
                max_concurrency=dispatcher_max_concurrency,
            )
        )

        # --- targets ---------------------------------------------------------------------
        self.add_target(DEFAULT_TARGET_NAME, target)
        for name, extra in (extra_targets or {}).items():
            self.add_target(name, extra)

        # --- the REST API ----------------------------------------------------------------
        self._build_api(
            api_authorization,
            stage_name=api_stage_name,
            rate_limit=api_throttling_rate_limit,
            burst_limit=api_throttling_burst_limit,
            cloud_watch_role=api_cloud_watch_role,
        )
        self._acknowledge_nag_findings()

    # --- public methods ------------------------------------------------------------------
    def add_target(self, name: str, target: IScheduleTarget) -> None:
        """Register ``target`` under ``name``; a schedule picks it with ``"target": name``.

        :param name: 1-64 characters of ``A-Za-z0-9._:-``, unique in this scheduler.
        :param target: e.g. ``targets.SqsSendMessage(queue)``.
        """
        if not isinstance(name, str) or not _TARGET_NAME.match(name):
            raise ValueError(f"target name: must be 1-64 characters of A-Za-z0-9._:-, got {name!r}")
        if name in self._targets:
            raise ValueError(f"target name: {name!r} is already registered")
        if not isinstance(target, IScheduleTarget):
            raise ValueError(f"target {name!r}: must be a target from cdk_delayed_scheduler.targets")
        self._targets[name] = target
        self._target_json[name] = dict(target.bind(self.dispatcher_function).target_json)

    @property
    def target_names(self) -> list[str]:
        """The registered target names, ``"default"`` first."""
        return list(self._targets)

    def grant_schedule(self, grantee: iam.IGrantable) -> iam.Grant:
        """Allow ``grantee`` to call the API: ``execute-api:Invoke`` on ``POST /schedules``,
        ``GET``/``DELETE /schedules/*`` and ``POST /schedule-batches`` of this API's stage, and
        nothing else.

        Meaningful with ``ApiAuthorization.iam()`` (the default). The ``*`` in the two
        ``/schedules/*`` resources stands for the ``{id}`` path parameter; when ``grantee`` is a
        construct in this stack, that cdk-nag finding (AwsSolutions-IAM5) is acknowledged on it
        with this reason.
        """
        stack = Stack.of(self)
        if isinstance(grantee, Construct) and Stack.of(grantee) is stack:
            api_id = stack.get_logical_id(self.api.node.default_child)
            stage_id = stack.get_logical_id(self.api.deployment_stage.node.default_child)
            for verb in ("GET", "DELETE"):
                _acknowledge(
                    grantee,
                    f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:"
                    f"<{api_id}>/<{stage_id}>/{verb}/schedules/*]",
                    f"grant_schedule: the * is the {{id}} path parameter of {verb} /schedules/{{id}} on this "
                    "scheduler's own API and stage; no other route or API is granted.",
                )
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["execute-api:Invoke"],
            resource_arns=[
                self.api.arn_for_execute_api("POST", "/schedules", self.api.deployment_stage.stage_name),
                self.api.arn_for_execute_api("GET", "/schedules/*", self.api.deployment_stage.stage_name),
                self.api.arn_for_execute_api("DELETE", "/schedules/*", self.api.deployment_stage.stage_name),
                self.api.arn_for_execute_api("POST", "/schedule-batches", self.api.deployment_stage.stage_name),
            ],
        )

    @property
    def url(self) -> str:
        """The API's base URL, e.g. ``https://abc123.execute-api.eu-west-1.amazonaws.com/v1/``."""
        return self.api.url

    @property
    def functions(self) -> list[lambda_.Function]:
        """The five runtime functions: api, fast track, sweeper, enqueuer, dispatcher."""
        return [self.api_function, self.fast_track_function, self.sweeper_function, self.enqueuer_function,
                self.dispatcher_function]

    def metric_dead_letter_queue_depth(self, **options: Any) -> cloudwatch.Metric:
        """Messages waiting in the dead-letter queue (``ApproximateNumberOfMessagesVisible``);
        anything above zero is a schedule or a batch that needs attention.

        :param options: ``cloudwatch.MetricOptions`` fields (``period``, ``statistic``, ...).
            Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.dead_letter_queue.metric_approximate_number_of_messages_visible(**options)

    def metric_delayer_queue_depth(self, **options: Any) -> cloudwatch.Metric:
        """Schedules waiting in the delayer queue, visible and delayed.

        :param options: ``cloudwatch.MetricOptions`` fields. Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.delayer_queue.metric_approximate_number_of_messages_visible(**options)

    def metric_lateness(self, **options: Any) -> cloudwatch.Metric:
        """How late deliveries start after their ``dueAt``, in milliseconds (``LatenessMs``, which
        the dispatcher emits as CloudWatch Embedded Metric Format, dimension
        ``Service=DelayedScheduler``).

        :param options: ``cloudwatch.MetricOptions`` fields. Default: p99 over 5 minutes.
        """
        options.setdefault("statistic", "p99")
        return cloudwatch.Metric(
            namespace=self.metrics_namespace,
            metric_name="LatenessMs",
            dimensions_map={"Service": "DelayedScheduler"},
            unit=cloudwatch.Unit.MILLISECONDS,
            **options,
        )

    def metric_dispatcher_errors(self, **options: Any) -> cloudwatch.Metric:
        """Failed dispatcher invocations (Lambda ``Errors``).

        :param options: ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        return self.dispatcher_function.metric_errors(**options)

    # --- internals -------------------------------------------------------------------------
    def _function(self, id: str, module: str, timeout: Duration, description: str) -> lambda_.Function:
        role = iam.Role(
            self,
            f"{id}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"{description} (delayed scheduler)",
        )
        log_group = logs.LogGroup(self, f"{id}Logs", retention=self._log_retention,
                                  removal_policy=self._removal_policy)
        # Instead of the managed AWSLambdaBasicExecutionRole: write to this function's log group only.
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                resources=[log_group.log_group_arn])
        )
        return lambda_.Function(
            self,
            id,
            description=description,
            runtime=newest_python_runtime(),
            architecture=self._architecture,
            handler=f"{_HANDLER_MODULE}.{module}.handler",
            code=self._code,
            memory_size=self._memory_size,
            timeout=timeout,
            role=role,
            log_group=log_group,
            environment=dict(self._environment),
        )

    def _grant_table(self, function: lambda_.Function, *actions: str) -> None:
        self.table.grant(function, *actions)
        if self.encryption_key is not None:
            self.encryption_key.grant(function, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey")

    def _grant_send(self, function: lambda_.Function, queue: sqs.Queue) -> None:
        queue.grant(function, "sqs:SendMessage")
        if self.encryption_key is not None:
            self.encryption_key.grant(function, "kms:GenerateDataKey", "kms:Decrypt")

    def _build_api(self, authorization: ApiAuthorization, *, stage_name: str, rate_limit: float,
                   burst_limit: int, cloud_watch_role: bool) -> None:
        access_logs = logs.LogGroup(self, "ApiAccessLogs", retention=self._log_retention,
                                    removal_policy=self._removal_policy)
        self.api = apigw.RestApi(
            self,
            "Api",
            description="Delayed scheduler: create, read and cancel one-shot timers.",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            cloud_watch_role=cloud_watch_role,
            deploy_options=apigw.StageOptions(
                stage_name=stage_name,
                throttling_rate_limit=rate_limit,
                throttling_burst_limit=burst_limit,
                access_log_destination=apigw.LogGroupLogDestination(access_logs),
                access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                    caller=True, http_method=True, ip=True, protocol=True, request_time=True,
                    resource_path=True, response_length=True, status=True, user=True,
                ),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                metrics_enabled=True,
            ),
        )
        """The REST API: ``POST /schedules``, ``GET``/``DELETE /schedules/{id}`` and
        ``POST /schedule-batches`` (up to 25 creates in one request)."""
        self.api_key: Optional[apigw.IApiKey] = None
        """The API key, with ``ApiAuthorization.api_key()`` only."""

        method_options: dict[str, Any]
        kind = authorization.kind
        if kind == ApiAuthorizationKind.IAM:
            method_options = dict(authorization_type=apigw.AuthorizationType.IAM)
        elif kind == ApiAuthorizationKind.API_KEY:
            method_options = dict(authorization_type=apigw.AuthorizationType.NONE, api_key_required=True)
        elif kind == ApiAuthorizationKind.COGNITO:
            authorizer = apigw.CognitoUserPoolsAuthorizer(self, "ApiAuthorizer",
                                                          cognito_user_pools=list(authorization.user_pools))
            method_options = dict(authorization_type=apigw.AuthorizationType.COGNITO, authorizer=authorizer,
                                  authorization_scopes=list(authorization.scopes) or None)
        elif kind == ApiAuthorizationKind.NONE:
            method_options = dict(authorization_type=apigw.AuthorizationType.NONE)
        else:
            raise ValueError(f"api_authorization: unknown kind {kind!r}; use the ApiAuthorization factories")

        integration = apigw.LambdaIntegration(self.api_function, proxy=True)
        model = self.api.add_model("CreateScheduleModel", content_type="application/json",
                                   model_name="CreateSchedule", schema=CREATE_SCHEDULE_SCHEMA)
        body_validator = self.api.add_request_validator("BodyValidator", validate_request_body=True,
                                                        validate_request_parameters=True)
        params_validator = self.api.add_request_validator("ParametersValidator", validate_request_parameters=True)
        schedules = self.api.root.add_resource("schedules")
        schedules.add_method("POST", integration, request_validator=body_validator,
                             request_models={"application/json": model}, **method_options)
        one = schedules.add_resource("{id}")
        for verb in ("GET", "DELETE"):
            one.add_method(verb, integration, request_validator=params_validator,
                           request_parameters={"method.request.path.id": True}, **method_options)
        # Up to 25 creates in one API request and one invocation (API Gateway bills per request).
        batch_model = self.api.add_model("CreateScheduleBatchModel", content_type="application/json",
                                         model_name="CreateScheduleBatch", schema=CREATE_SCHEDULE_BATCH_SCHEMA)
        batches = self.api.root.add_resource("schedule-batches")
        batches.add_method("POST", integration, request_validator=body_validator,
                           request_models={"application/json": batch_model}, **method_options)

        # Errors API Gateway answers itself (request validation, auth, throttling) keep the API's
        # error shape, {"message": ..., "field": ...}, like the errors of the api function.
        for response_id, response_type, field in (
            ("BadRequestBody", apigw.ResponseType.BAD_REQUEST_BODY, '"body"'),
            ("BadRequestParameters", apigw.ResponseType.BAD_REQUEST_PARAMETERS, '"id"'),
            ("Default4xx", apigw.ResponseType.DEFAULT_4_XX, "null"),
            ("Default5xx", apigw.ResponseType.DEFAULT_5_XX, "null"),
        ):
            self.api.add_gateway_response(
                response_id,
                type=response_type,
                templates={"application/json": f'{{"message": $context.error.messageString, "field": {field}}}'},
            )

        if kind == ApiAuthorizationKind.API_KEY:
            self.api_key = self.api.add_api_key("ApiKey")
            plan = self.api.add_usage_plan(
                "UsagePlan",
                throttle=apigw.ThrottleSettings(rate_limit=rate_limit, burst_limit=burst_limit),
            )
            plan.add_api_key(self.api_key)
            plan.add_api_stage(stage=self.api.deployment_stage)

    def _acknowledge_nag_findings(self) -> None:
        """cdk-nag (AwsSolutions) findings that are deliberate, each with its reason."""
        for function in (self.fast_track_function, self.enqueuer_function):
            _acknowledge(function.role.node.find_child("DefaultPolicy"),
                rule="AwsSolutions-IAM5[Resource::*]",
                reason="dynamodb:ListStreams, which the DynamoDB event source mapping needs, does not support "
                       "resource-level permissions; every other stream action is scoped to this table's stream.",
            )
        if self.encryption_key is not None:
            for function in (self.fast_track_function, self.enqueuer_function, self.sweeper_function):
                for action in ("kms:ReEncrypt*", "kms:GenerateDataKey*"):
                    _acknowledge(
                        function.role.node.find_child("DefaultPolicy"),
                        f"AwsSolutions-IAM5[Action::{action}]",
                        "The on-failure destination into the dead-letter queue (CDK's SqsDlq for the stream "
                        "mappings, SqsDestination for the sweeper) grants that queue's KMS producer actions "
                        "with CDK's standard wildcards; they are scoped to that one key and cannot be "
                        "narrowed from outside aws-cdk-lib.",
                    )
        _acknowledge(self.api,
            rule="AwsSolutions-APIG3",
            reason="A WAFv2 web ACL is an account-level choice with its own cost; the API is protected by "
                   "IAM/Cognito/API-key auth, request validation and stage throttling, and a user can "
                   "associate a web ACL with api.deployment_stage.",
        )
        if self.api_authorization.kind in (ApiAuthorizationKind.IAM, ApiAuthorizationKind.API_KEY):
            _acknowledge(self.api,
                rule="AwsSolutions-COG4",
                reason="The API is authorized with "
                       + ("IAM (SigV4)" if self.api_authorization.kind == ApiAuthorizationKind.IAM
                          else "an API key, as the user chose with ApiAuthorization.api_key()")
                       + "; a Cognito authorizer is one of the options, not a requirement.",
            )
        if self.api_authorization.kind == ApiAuthorizationKind.API_KEY:
            _acknowledge(self.api,
                rule="AwsSolutions-APIG4",
                reason="The user chose API key authorization (ApiAuthorization.api_key()); every method "
                       "requires the key.",
            )
        cloud_watch_role = self.api.node.try_find_child("CloudWatchRole")
        if cloud_watch_role is not None:
            _acknowledge(cloud_watch_role,
                rule="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                   "AmazonAPIGatewayPushToCloudWatchLogs]",
                reason="API Gateway's account-level logging role needs this AWS managed policy for access "
                       "and execution logs; set api_cloud_watch_role=False when the account already has one.",
            )


def _seconds(duration: Duration) -> Any:
    """Whole seconds of ``duration``, or the unresolved token."""
    return duration.to_seconds()


def newest_python_runtime() -> lambda_.Runtime:
    """The newest ``PYTHON_3_x`` runtime this aws-cdk-lib offers (the runtime needs 3.10 or later)."""
    versions = [int(m.group(1)) for name in dir(lambda_.Runtime) if (m := re.fullmatch(r"PYTHON_3_(\d+)", name))]
    return getattr(lambda_.Runtime, f"PYTHON_3_{max(versions)}")


def _text(value: Any) -> str:
    """An environment variable's text: a whole number as ``"16"``, a token as a token string."""
    if Token.is_unresolved(value):
        return Token.as_string(value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _check_range(prop: str, value: Any, low: Optional[float], high: Optional[float], unit: str = "") -> None:
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


def _acknowledge(scope: Construct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on ``scope`` (CDK's native validation acknowledgements)."""
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))
