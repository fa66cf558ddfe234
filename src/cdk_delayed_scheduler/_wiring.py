"""What ``DelayedScheduler`` builds around its functions: the table, the queues, and the triggers (stream ->
enqueuer, every minute -> sweeper, delayer queue -> dispatcher, and flow queue -> dispatcher once a target has
``flow_control``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

import jsii
from aws_cdk import Annotations, Duration, RemovalPolicy, Token
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as events_targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from . import _nag
from ._contract import contract
from ._runtime_asset import event_filters
from ._table_capacity import CAPACITY_DEFAULTED_WARNING, defaulted_capacity_warning
from ._validation import seconds

if TYPE_CHECKING:
    from ._table_capacity import TableCapacity

#: Provisioned capacity units of the table and each index with ``BillingMode.PROVISIONED`` when
#: ``TableCapacity.fixed()`` (or ``read_capacity``/``write_capacity``) leaves a unit out.
DEFAULT_CAPACITY_UNITS = 5
#: What a sender to a queue encrypted with a customer managed key needs on the key (the SQS developer
#: guide, "Key management"), and no more: no ``kms:ReEncrypt*`` or ``kms:GenerateDataKey*``.
KEY_PRODUCER = ("kms:GenerateDataKey", "kms:Decrypt")


def schedules_table(scope: Construct, *, billing_mode: dynamodb.BillingMode, capacity: Optional[TableCapacity],
                    encryption_key: Optional[kms.IKey], point_in_time_recovery: bool,
                    removal_policy: RemovalPolicy, listing: bool,
                    deletion_protection: Optional[bool] = None,
                    warm_throughput: Optional[dynamodb.WarmThroughput] = None) -> dynamodb.Table:
    """``Table``: partition key ``pk``, sort key ``sk``, TTL ``expiresAt``, a NEW_AND_OLD_IMAGES stream;
    the group index and, with ``listing``, the listing index (names from ``contract.json``), keys only.
    ``capacity`` (``None`` on demand) is the table's and each index's, and with
    ``TableCapacity.autoscaled()`` each one's reads and writes are auto scaled (``scale_capacity``).
    ``warm_throughput`` (``None``: DynamoDB's own) is the table's and each index's too: a delivery writes
    an index its timer is in, and an index short of write throughput throttles the table's writes.
    A capacity left to its default is warned about on ``scope`` (``CAPACITY_DEFAULTED_WARNING``)."""
    warning = defaulted_capacity_warning(capacity, DEFAULT_CAPACITY_UNITS) if capacity else None
    if warning:
        Annotations.of(scope).add_warning_v2(CAPACITY_DEFAULTED_WARNING, warning)
    reads = (capacity.min_read or DEFAULT_CAPACITY_UNITS) if capacity else None
    writes = (capacity.min_write or DEFAULT_CAPACITY_UNITS) if capacity else None
    table = dynamodb.Table(
        scope, "Table",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
        billing_mode=billing_mode,
        read_capacity=reads,
        write_capacity=writes,
        stream=dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
        time_to_live_attribute="expiresAt",
        point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
            point_in_time_recovery_enabled=point_in_time_recovery
        ),
        encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED if encryption_key else dynamodb.TableEncryption.DEFAULT,
        encryption_key=encryption_key,
        removal_policy=removal_policy,
        deletion_protection=deletion_protection,
        warm_throughput=warm_throughput,
    )
    # both sparse and keys only: the group index holds grouped items while they wait, the listing index listed ones
    indexes = [contract.GROUPS, *([contract.LISTING] if listing else [])]
    for index in indexes:
        table.add_global_secondary_index(
            index_name=index["indexName"],
            partition_key=dynamodb.Attribute(name=index["partitionKey"], type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name=index["sortKey"], type=dynamodb.AttributeType.STRING),
            projection_type=dynamodb.ProjectionType.KEYS_ONLY,
            read_capacity=reads,
            write_capacity=writes,
            warm_throughput=warm_throughput,
        )
    if capacity is not None:
        scale_capacity(table, capacity, [index["indexName"] for index in indexes])
    return table


def scale_capacity(table: dynamodb.Table, capacity: TableCapacity, index_names: list[str]) -> None:
    """With ``TableCapacity.autoscaled()``, a target tracking policy on the reads and on the writes of
    ``table`` and of each index in ``index_names`` (CDK's ``Table/ReadScaling``, ``Table/WriteScaling``,
    ``Table/<index>ReadScaling``, ``Table/<index>WriteScaling``), each through Application Auto Scaling's
    service-linked role for DynamoDB; nothing with ``TableCapacity.fixed()``."""
    target, low_read, high_read = capacity.target_utilization_percent, capacity.min_read, capacity.max_read
    low_write, high_write = capacity.min_write, capacity.max_write
    if target is None or low_read is None or high_read is None or low_write is None or high_write is None:
        return
    attributes = [table.auto_scale_read_capacity(min_capacity=low_read, max_capacity=high_read),
                  table.auto_scale_write_capacity(min_capacity=low_write, max_capacity=high_write)]
    for name in index_names:
        attributes += [
            table.auto_scale_global_secondary_index_read_capacity(name, min_capacity=low_read, max_capacity=high_read),
            table.auto_scale_global_secondary_index_write_capacity(name, min_capacity=low_write,
                                                                   max_capacity=high_write)]
    for attribute in attributes:
        attribute.scale_on_utilization(target_utilization_percent=target)


def queue_encryption(encryption_key: Optional[kms.IKey]) -> dict[str, Any]:
    """Every queue's encryption: the customer managed key when given, else SQS-managed SSE."""
    if encryption_key:
        return dict(encryption=sqs.QueueEncryption.KMS, encryption_master_key=encryption_key)
    return dict(encryption=sqs.QueueEncryption.SQS_MANAGED)


def stream_to_enqueuer(enqueuer: lambda_.Function, table: dynamodb.Table, dead_letter_queue: sqs.IQueue, *,
                       batch_size: int, retry_attempts: int) -> None:
    """The enqueuer reads claims (REMOVE records that pass ``event_filters.json``) from the stream.

    The mapping grants read access to exactly this table's stream, plus ``dynamodb:ListStreams``
    on ``*``: that action has no resource-level permissions in IAM (acknowledged for cdk-nag here). A batch it gives up on sends its
    stream range (no record) to the dead-letter queue, so the queue's depth alarm shows it, and a direct
    invoke of the enqueuer with ``{"recover": <that message>}`` re-enqueues its claims within the
    stream's 24 h retention (docs/runtime.md, "Stream recovery"); that invoke uses the same grants.
    """
    enqueuer.add_event_source(
        sources.DynamoEventSource(
            table,
            starting_position=lambda_.StartingPosition.TRIM_HORIZON,
            batch_size=batch_size,
            bisect_batch_on_error=True,
            retry_attempts=retry_attempts,
            report_batch_item_failures=True,
            on_failure=_StreamFailureQueue(dead_letter_queue),
            filters=[lambda_.FilterCriteria.filter(event_filters()["enqueuer"])],
        )
    )
    assert enqueuer.role is not None, "every runtime function has its own role"
    _nag.acknowledge(
        enqueuer.role.node.find_child("DefaultPolicy"),
        rule="AwsSolutions-IAM5[Resource::*]",
        reason="dynamodb:ListStreams, which the DynamoDB event source mapping needs, does not support "
               "resource-level permissions; every other stream action is scoped to this table's stream.",
    )


def every_minute_to_sweeper(scope: Construct, sweeper: lambda_.Function, dead_letter_queue: sqs.IQueue) -> events.Rule:
    """``SweepSchedule``. A failed sweep is not retried (the next minute's sweep is the retry); it is
    recorded in the dead-letter queue, so its depth alarm shows a sweeper that keeps failing."""
    sweeper.configure_async_invoke(
        retry_attempts=0,
        max_event_age=Duration.minutes(2),
        on_failure=_InvokeFailureQueue(dead_letter_queue),
    )
    return events.Rule(
        scope, "SweepSchedule",
        description="Runs the delayed scheduler's sweeper every minute.",
        schedule=events.Schedule.rate(Duration.minutes(1)),
        targets=[events_targets.LambdaFunction(sweeper, dead_letter_queue=dead_letter_queue,
                                               retry_attempts=2, max_event_age=Duration.minutes(2))],
    )


def keep_warm(scope: Construct, dispatcher: lambda_.Function) -> events.Rule:
    """``DispatcherKeepWarm``: every few minutes, an event that only initialises the dispatcher (no message, no
    request), so that Lambda keeps an environment for the next delivery. A missed one is not retried: the next one
    comes minutes later, and a delivery that finds no environment is only late by an init, never lost."""
    dispatcher.configure_async_invoke(retry_attempts=0, max_event_age=Duration.minutes(1))  # its only async caller
    return events.Rule(
        scope, "DispatcherKeepWarm",
        description="Keeps a delayed scheduler dispatcher environment initialised for sparse traffic.",
        schedule=events.Schedule.rate(Duration.minutes(contract.DISPATCHER_KEEP_WARM_EVERY_MINUTES)),
        targets=[events_targets.LambdaFunction(
            dispatcher, event=events.RuleTargetInput.from_object({contract.DISPATCHER_KEEP_WARM_MARKER: True}),
            retry_attempts=0, max_event_age=Duration.minutes(1))],
    )


@dataclass(frozen=True)
class DispatcherQueues:
    """How each queue the dispatcher reads is made and read: the delayer queue, and the flow queue made like it
    (:func:`flow_queue`). Both have the same visibility timeout (``VISIBILITY_TIMEOUT_FACTOR`` x the dispatcher's
    timeout), retention, TLS-only policy, encryption and redrive to the dead-letter queue after
    ``max_receive_count`` receives, and each has an event source mapping to the dispatcher with the same batch
    size, batching window and maximum concurrency."""

    queue_props: Mapping[str, Any]
    """The ``sqs.Queue`` props both queues are made with."""
    batch_size: int
    max_batching_window: Optional[Duration]
    max_concurrency: Optional[int]
    reserved_concurrency: Optional[int]
    """The dispatcher's reserved concurrency, which the pollers of both queues share."""

    @classmethod
    def of(cls, *, dispatcher_timeout: Duration, max_receive_count: int, dead_letter_queue: sqs.IQueue,
           encryption: Mapping[str, Any], batch_size: int, max_batching_window: Optional[Duration],
           max_concurrency: Optional[int], reserved_concurrency: Optional[int]) -> "DispatcherQueues":
        """The settings from the scheduler's props; ``encryption`` is :func:`queue_encryption`'s."""
        visibility_timeout = contract.VISIBILITY_TIMEOUT_FACTOR * int(seconds(dispatcher_timeout))
        queue_props = dict(
            visibility_timeout=Duration.seconds(visibility_timeout),
            retention_period=Duration.seconds(contract.DELAYER_RETENTION_SECONDS),
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letter_queue, max_receive_count=max_receive_count),
            **encryption,
        )
        return cls(queue_props, batch_size, max_batching_window, max_concurrency, reserved_concurrency)

    def queue(self, scope: Construct, id: str) -> sqs.Queue:
        """A standard queue (per-message delays) with these settings."""
        return sqs.Queue(scope, id, **self.queue_props)

    def to_dispatcher(self, dispatcher: lambda_.Function, queue: sqs.IQueue) -> None:
        """``queue``'s event source mapping to ``dispatcher``, which grants it the consumer's actions on ``queue``
        (and ``kms:Decrypt`` on its key)."""
        dispatcher.add_event_source(
            sources.SqsEventSource(
                queue,
                batch_size=self.batch_size,
                max_batching_window=self.max_batching_window,
                report_batch_item_failures=True,
                max_concurrency=self.max_concurrency,
            )
        )

    def check_room_for_a_second_poller(self, target_name: str) -> None:
        """Refuse a reserved concurrency below what the pollers of both queues may start, each up to
        ``dispatcher_max_concurrency``: a throttled batch counts as a receive of its messages."""
        reserved, pollers = self.reserved_concurrency, self.max_concurrency
        if reserved is None or pollers is None or Token.is_unresolved(reserved) or Token.is_unresolved(pollers):
            return
        if reserved < 2 * pollers:
            raise ValueError(
                f"dispatcher_reserved_concurrency: must be >= 2 x dispatcher_max_concurrency ({2 * pollers}) with a "
                f"target with flow_control (target {target_name!r}), got {reserved}: the flow queue's pollers start "
                "up to dispatcher_max_concurrency invocations besides the delayer queue's, and a throttled batch "
                "counts as a receive of its messages")


def flow_queue(scope: Construct, queues: DispatcherQueues, dispatcher: lambda_.Function,
               functions: Sequence[lambda_.Function]) -> sqs.Queue:
    """``FlowQueue``: made like the delayer queue, read by the dispatcher like it, and named to each of
    ``functions`` (``FLOW_QUEUE_URL``), whose runtime then sends there every message of a delivery to a limited
    target."""
    queue = queues.queue(scope, "FlowQueue")
    queues.to_dispatcher(dispatcher, queue)
    for function in functions:
        function.add_environment(contract.ENV.flow_queue_url, queue.queue_url)
    return queue


def grant_key(key: Optional[kms.IKey], grantee: iam.IGrantable, *actions: str) -> None:
    if key is not None:
        key.grant(grantee, *actions)


def grant_secret_value(secret: secretsmanager.ISecret, grantee: iam.IGrantable) -> None:
    """``secretsmanager:GetSecretValue`` on ``secret`` alone, and ``kms:Decrypt`` on its customer managed
    key, only through Secrets Manager (``kms:ViaService``), when it has one."""
    # The secret's ARN as policies name it: the full one when known, else the partial one and the six
    # random characters Secrets Manager appends (as Secret.grant_read names it).
    arn = secret.secret_full_arn or f"{secret.secret_arn}-??????"
    iam.Grant.add_to_principal(grantee=grantee, actions=["secretsmanager:GetSecretValue"], resource_arns=[arn])
    if secret.encryption_key is not None:
        # Secrets Manager decrypts the secret with the caller's permission, and only through it.
        iam.Grant.add_to_principal(
            grantee=grantee, actions=["kms:Decrypt"], resource_arns=[secret.encryption_key.key_arn],
            conditions={"StringEquals": {"kms:ViaService": f"secretsmanager.{secret.env.region}.amazonaws.com"}})


def grant_send(queue: sqs.IQueue, grantee: iam.IGrantable, *actions: str) -> None:
    """``sqs:SendMessage`` (and ``actions``) on ``queue``, and its key's ``KEY_PRODUCER`` actions."""
    queue.grant(grantee, "sqs:SendMessage", *actions)
    grant_key(queue.encryption_master_key, grantee, *KEY_PRODUCER)


def _failure_queue_arn(queue: sqs.IQueue, function: lambda_.IFunction) -> str:
    """``queue`` as ``function``'s on-failure destination. CDK's ``SqsDlq`` and ``SqsDestination`` grant
    ``Queue.grant_send_messages``, which adds the key's ``kms:ReEncrypt*`` and ``kms:GenerateDataKey*``;
    this grants the same queue actions, and on the key ``KEY_PRODUCER`` alone."""
    grant_send(queue, function, "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
    return queue.queue_arn


@jsii.implements(lambda_.IEventSourceDlq)
class _StreamFailureQueue:
    """The stream mapping's on-failure destination (what CDK's ``SqsDlq`` does, without the key wildcards)."""

    def __init__(self, queue: sqs.IQueue) -> None:
        self._queue = queue

    def bind(self, target: lambda_.IEventSourceMapping, target_handler: lambda_.IFunction) -> lambda_.DlqDestinationConfig:
        return lambda_.DlqDestinationConfig(destination=_failure_queue_arn(self._queue, target_handler))


@jsii.implements(lambda_.IDestination)
class _InvokeFailureQueue:
    """An asynchronous invocation's on-failure destination (what CDK's ``SqsDestination`` does, without
    the key wildcards)."""

    def __init__(self, queue: sqs.IQueue) -> None:
        self._queue = queue

    def bind(self, scope: Construct, fn: lambda_.IFunction, *, type: lambda_.DestinationType) -> lambda_.DestinationConfig:
        return lambda_.DestinationConfig(destination=_failure_queue_arn(self._queue, fn))
