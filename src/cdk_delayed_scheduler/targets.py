"""Where a due schedule is delivered, named after ``aws_cdk.aws_scheduler_targets``.

A target is bound once to the scheduler's dispatcher function: it grants the
dispatcher exactly the permission its delivery needs, and renders the JSON
description that the runtime reads from the ``TARGETS`` environment variable
(the fields of each kind are ``contract.json``'s ``targetTypes``)::

    from cdk_delayed_scheduler import DelayedScheduler, targets

    DelayedScheduler(self, "Timers", target=targets.LambdaInvoke(callback_fn))
    DelayedScheduler(self, "Jobs", target=targets.SqsSendMessage(jobs_queue))
    DelayedScheduler(self, "Fanout", target=targets.SnsPublish(topic))
    DelayedScheduler(self, "Events", target=targets.EventBridgePutEvents(bus, detail_type="Timer due",
                                                                          source="com.example.timers"))
    DelayedScheduler(self, "Workflows", target=targets.StepFunctionsStartExecution(state_machine))
    DelayedScheduler(self, "Hooks", target=targets.HttpsEndpoint("https://hooks.example.com/timers",
                                                                 signing_secret=secret))
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

from ._flow_control import FlowControl, flow_control_of, with_flow_control
from ._https_checks import check_headers, check_secret, check_timeout, check_url, default_timeout
from ._lambda_timeout import LAMBDA_TIMEOUT_UNKNOWN_WARNING as LAMBDA_TIMEOUT_UNKNOWN_WARNING
from ._lambda_timeout import waited_timeout
from ._target_descriptions import check_deliverable as check_deliverable
from ._target_descriptions import describe_target as describe_target
from ._validation import seconds
from ._target_checks import check_event_texts, check_message_group_id, check_resource, target_for
from ._wiring import KEY_PRODUCER, grant_key, grant_secret_value

__all__ = ["IScheduleTarget", "ScheduleTargetConfig", "LambdaInvocationType", "LambdaInvoke", "SqsSendMessage",
           "SnsPublish", "EventBridgePutEvents", "StepFunctionsStartExecution", "HttpsEndpoint", "FlowControl"]


@dataclass(frozen=True)
class ScheduleTargetConfig:
    """What a bound target contributes to the runtime's ``TARGETS`` JSON."""

    target_json: Mapping[str, Any]
    """The target's description, e.g. ``{"type": "lambda", "functionArn": ...}`` (may hold tokens)."""

    timeout: Optional[Duration] = None
    """How long one delivery may take at most, when the dispatcher waits for it (a Lambda target's
    own timeout, an HTTPS endpoint's request timeout); the scheduler's ``dispatcher_timeout`` must cover
    it. ``None``: not known."""


class IScheduleTarget(abc.ABC):
    """A destination for due schedules: ``LambdaInvoke``, ``SqsSendMessage``, ``SnsPublish``,
    ``EventBridgePutEvents``, ``StepFunctionsStartExecution`` or ``HttpsEndpoint``.

    :meth:`bind` is how each built-in kind grants the dispatcher what its delivery needs and
    describes itself to the runtime. A new kind of target needs support in the runtime too, not
    only a ``bind``: ``DelayedScheduler.add_target`` refuses, at synth, a description whose ``type``
    the runtime cannot deliver to (an ``IScheduleTarget`` of one's own may still wrap a built-in
    kind, e.g. to grant more).
    """

    @abc.abstractmethod
    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``dispatcher`` what delivery needs and describe the target for the runtime."""


class _BuiltInTarget(IScheduleTarget, abc.ABC):
    """A built-in kind of target: it takes a ``flow_control``, which its description carries."""

    def __init__(self, flow_control: Optional[FlowControl]) -> None:
        self.flow_control: Optional[FlowControl] = flow_control_of(flow_control)

    def _describe(self, kind: str, **fields: Any) -> dict[str, Any]:
        """``describe_target(kind, **fields)``, with the ``flowControl`` field when the target has limits."""
        return with_flow_control(describe_target(kind, **fields), self.flow_control)


class LambdaInvocationType(str, enum.Enum):
    """How ``LambdaInvoke`` invokes its function; the values are Lambda's ``InvocationType`` names."""

    REQUEST_RESPONSE = "RequestResponse"
    """Synchronously: the dispatcher waits for the function's run, and a function error is a failed
    delivery, retried and at last parked in the dead-letter queue."""
    EVENT = "Event"
    """Asynchronously: delivered once Lambda accepts the event (202); the function's own retries and
    on-failure destination apply from there, and the dispatcher neither waits for nor pays for its run."""


class LambdaInvoke(_BuiltInTarget):
    """Deliver each due schedule by invoking a Lambda function, synchronously by default.

    The function receives the envelope (``id``, ``dueAt``, ``firedAt``,
    ``attempt``, ``dedupeKey``, ``payload``, ``target``) as its event. Invoked
    synchronously (the default), a function error counts as a failed delivery:
    it is retried through the delayer queue (the flow queue, with ``flow_control``), and parked in the
    dead-letter queue with the error once the retries are exhausted. The dispatcher waits for the
    function, so its ``dispatcher_timeout`` must cover the function's run.

    A failed delivery is retried when its message becomes visible again: after the queue's
    visibility timeout, 6 times ``dispatcher_timeout`` (6 x 60 s by default), up
    to ``max_receive_count`` deliveries in all. Meanwhile ``GET`` answers ``FIRED`` with the
    number of ``attempts`` started. Example::

        callback = lambda_.Function(self, "Callback", ...)
        DelayedScheduler(self, "Timers", target=targets.LambdaInvoke(callback))

    The construct reads the timeout of a function defined in this app (a ``Function``, or an
    ``Alias`` or ``Version`` of one), and refuses a ``dispatcher_timeout`` that does not cover it.
    It cannot read an imported function's (``Function.from_function_arn``): then it assumes the
    function ends within ``dispatcher_timeout`` less 5 seconds, and says so with a synth warning
    (``LAMBDA_TIMEOUT_UNKNOWN_WARNING``), unless ``timeout`` states it::

        billing = lambda_.Function.from_function_arn(self, "Billing", billing_arn)
        timers.add_target("billing", targets.LambdaInvoke(billing, timeout=Duration.seconds(30)))

    With ``invocation_type=LambdaInvocationType.EVENT`` the invoke is asynchronous: the delivery is
    Lambda accepting the event (202), a function error is no longer the scheduler's to retry or park
    (configure the function's own retry attempts and on-failure destination), and the function's
    timeout is neither read nor checked, as the dispatcher does not wait for the run::

        timers.add_target("audit", targets.LambdaInvoke(audit_fn, invocation_type=targets.LambdaInvocationType.EVENT))

    :param handler: the function to invoke. Only ``lambda:InvokeFunction`` on
        exactly its ARN is granted to the dispatcher. Its timeout, when known,
        must be at least 5 seconds shorter than the scheduler's ``dispatcher_timeout``.
    :param timeout: the timeout of a function whose timeout the construct cannot read (an imported
        one), checked against ``dispatcher_timeout`` as a defined function's own. Allowed: 1-900
        whole seconds, and only for such a function invoked synchronously. Default: the function's own
        timeout when it is defined in this app; else unknown, with a warning.
    :param invocation_type: ``LambdaInvocationType.REQUEST_RESPONSE`` (synchronous) or
        ``LambdaInvocationType.EVENT`` (asynchronous); Lambda's names ``"RequestResponse"`` and
        ``"Event"`` are accepted too. Default: ``REQUEST_RESPONSE``.
    :param flow_control: limits on how fast, and how many at once, deliveries to this target start, e.g.
        ``targets.FlowControl(rate=100, max_in_flight=20)``. Default: none, no limits.
    """

    def __init__(self, handler: Union[lambda_.IFunction, lambda_.FunctionBase], *,
                 timeout: Optional[Duration] = None,
                 invocation_type: Union[LambdaInvocationType, str] = LambdaInvocationType.REQUEST_RESPONSE,
                 flow_control: Optional[FlowControl] = None) -> None:
        # (FunctionBase too: pyright does not accept aws-cdk-lib's own Function as its IFunction protocol)
        check_resource("handler", handler, "function")
        super().__init__(flow_control)
        self.invocation_type: LambdaInvocationType = _invocation_type(invocation_type)
        """How the function is invoked."""
        waited = self.invocation_type is LambdaInvocationType.REQUEST_RESPONSE
        self.handler = handler
        self.timeout: Optional[Duration] = waited_timeout(handler, timeout, waited)
        """The function's timeout as the dispatcher's check reads it; ``None``: not known, or not waited
        for (an ``EVENT`` invoke)."""

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``lambda:InvokeFunction`` on the function; describe it as ``{"type": "lambda", ...}``."""
        iam.Grant.add_to_principal(
            grantee=dispatcher,
            actions=["lambda:InvokeFunction"],
            resource_arns=[self.handler.function_arn],
        )
        asynchronous = {} if self.invocation_type is LambdaInvocationType.REQUEST_RESPONSE else {
            "invocation_type": self.invocation_type.value}
        return ScheduleTargetConfig(self._describe("lambda", function_arn=self.handler.function_arn, **asynchronous),
                                    timeout=self.timeout)


class SqsSendMessage(_BuiltInTarget):
    """Deliver each due schedule as a JSON message to an SQS queue (standard or FIFO).

    The message body is the envelope; the ``dedupeKey`` also travels as a
    message attribute. A FIFO queue gets a deduplication id derived from the
    ``dedupeKey``, and the message group id below.

    Example::

        DelayedScheduler(self, "Timers", target=targets.SqsSendMessage(deliveries))
        timers.add_target("orders", targets.SqsSendMessage(orders_fifo, message_group_id="orders"))

    :param queue: the queue. The dispatcher is granted ``sqs:SendMessage`` on
        it, plus ``kms:GenerateDataKey``/``kms:Decrypt`` when the queue is
        encrypted with a customer managed key.
    :param message_group_id: FIFO queues only: the message group of every
        delivery, 1-128 characters. Default: the schedule id, so deliveries of
        different schedules do not block each other.
    :param flow_control: limits on how fast, and how many at once, deliveries to this target start, e.g.
        ``targets.FlowControl(rate=100, max_in_flight=20)``. Default: none, no limits.
    """

    def __init__(self, queue: sqs.IQueue, *, message_group_id: Optional[str] = None,
                 flow_control: Optional[FlowControl] = None) -> None:
        check_resource("queue", queue, "queue")
        super().__init__(flow_control)
        check_message_group_id(message_group_id, queue.fifo, "queue")
        self.queue = queue
        self.message_group_id = message_group_id

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``sqs:SendMessage`` (and the key's producer actions); describe it as ``{"type": "sqs", ...}``."""
        # Only SendMessage: the runtime knows the queue URL, so no GetQueueUrl/GetQueueAttributes.
        self.queue.grant(dispatcher, "sqs:SendMessage")
        # What an SQS producer needs on a customer managed key (SQS developer guide, "Key management").
        grant_key(self.queue.encryption_master_key, dispatcher, *KEY_PRODUCER)
        return ScheduleTargetConfig(self._describe("sqs", queue_url=self.queue.queue_url, fifo=bool(self.queue.fifo),
                                                    **_group(self.message_group_id)))


class SnsPublish(_BuiltInTarget):
    """Deliver each due schedule as a message published to an SNS topic (standard or FIFO).

    The message is the envelope as JSON, the same body ``SqsSendMessage`` sends, and the
    ``dedupeKey`` travels as a message attribute. A FIFO topic gets a deduplication id derived from
    the ``dedupeKey`` and the message group id below, as a FIFO queue does. Subscribe a queue (with
    raw message delivery, so the queue's message is the envelope itself) or a function to it.

    A denied ``sns:Publish``, a topic that does not exist or a message the topic refuses (e.g.
    larger than its maximum message size) is parked in the dead-letter queue at once; throttling and
    internal errors are retried. Example::

        alerts = sns.Topic(self, "Alerts", enforce_ssl=True)
        timers.add_target("alerts", targets.SnsPublish(alerts))
        timers.add_target("orders", targets.SnsPublish(orders_fifo_topic, message_group_id="orders"))

    :param topic: the topic. The dispatcher is granted ``sns:Publish`` on it, plus
        ``kms:GenerateDataKey``/``kms:Decrypt`` when the topic is encrypted with a customer managed key.
    :param message_group_id: FIFO topics only: the message group of every delivery, 1-128
        characters. Default: the schedule id, so deliveries of different schedules do not block
        each other.
    :param flow_control: limits on how fast, and how many at once, deliveries to this target start, e.g.
        ``targets.FlowControl(rate=100, max_in_flight=20)``. Default: none, no limits.
    """

    def __init__(self, topic: sns.ITopic, *, message_group_id: Optional[str] = None,
                 flow_control: Optional[FlowControl] = None) -> None:
        check_resource("topic", topic, "topic")
        super().__init__(flow_control)
        check_message_group_id(message_group_id, topic.fifo, "topic")
        self.topic = topic
        self.message_group_id = message_group_id

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``sns:Publish`` (and the key's producer actions); describe it as ``{"type": "sns", ...}``."""
        # Not Topic.grant_publish: it grants the key's kms:GenerateDataKey* and more besides.
        iam.Grant.add_to_principal(grantee=dispatcher, actions=["sns:Publish"], resource_arns=[self.topic.topic_arn])
        # A publisher to a topic encrypted with a customer managed key: SNS generates the data key and
        # decrypts it on the publisher's behalf (SNS developer guide, "Key management"; its example
        # writes kms:GenerateDataKey*, of which Publish needs GenerateDataKey): an SQS producer's two.
        grant_key(self.topic.master_key, dispatcher, *KEY_PRODUCER)
        return ScheduleTargetConfig(self._describe("sns", topic_arn=self.topic.topic_arn, fifo=bool(self.topic.fifo),
                                                    **_group(self.message_group_id)))


class EventBridgePutEvents(_BuiltInTarget):
    """Deliver each due schedule as an event put on an EventBridge event bus.

    One ``PutEvents`` entry per delivery, with ``detail_type`` and ``source`` as given and the
    envelope as its ``detail``, so a rule matches on ``source`` and ``detail-type`` (and on the
    envelope's fields under ``detail``) and reaches any of EventBridge's targets, API destinations
    included. A response whose entry failed is a failed delivery, with the entry's ``ErrorCode`` as
    the reason: a denied ``events:PutEvents``, a bus that does not exist or an invalid entry is
    parked in the dead-letter queue at once; throttling and internal failures are retried. Example::

        bus = events.EventBus(self, "Bus")
        timers.add_target("events", targets.EventBridgePutEvents(bus, detail_type="Timer due",
                                                                 source="com.example.timers"))

    :param bus: the event bus (``events.EventBus.from_event_bus_name(self, "Default", "default")``
        for the account's default bus). The dispatcher is granted ``events:PutEvents`` on it only.
    :param detail_type: the events' ``detail-type``: 1-128 characters.
    :param source: the events' ``source``: 1-256 characters, not starting with ``aws.`` (reserved for
        AWS services), e.g. ``com.example.timers``.
    :param flow_control: limits on how fast, and how many at once, deliveries to this target start, e.g.
        ``targets.FlowControl(rate=100, max_in_flight=20)``. Default: none, no limits.
    """

    def __init__(self, bus: events.IEventBus, *, detail_type: str, source: str,
                 flow_control: Optional[FlowControl] = None) -> None:
        check_resource("bus", bus, "event bus")
        super().__init__(flow_control)
        check_event_texts(detail_type, source)
        self.bus = bus
        self.detail_type = detail_type
        self.source = source

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``events:PutEvents`` on the bus; describe it as ``{"type": "eventbridge", ...}``."""
        iam.Grant.add_to_principal(grantee=dispatcher, actions=["events:PutEvents"],
                                   resource_arns=[self.bus.event_bus_arn])
        return ScheduleTargetConfig(self._describe("eventbridge", event_bus_arn=self.bus.event_bus_arn,
                                                    detail_type=self.detail_type, source=self.source))


class StepFunctionsStartExecution(_BuiltInTarget):
    """Deliver each due schedule by starting an execution of a Step Functions state machine.

    The execution's input is the envelope (JSON), and its name is derived from the ``dedupeKey``: a
    readable part of it and a hash, at most 80 characters of ``0-9A-Za-z_-``, the same for every
    attempt of one occurrence. A STANDARD workflow refuses a second start of a name it has run
    (``ExecutionAlreadyExists``), which the dispatcher counts as delivered: one execution per
    occurrence, whose input is the first attempt's. An EXPRESS workflow has no such check, so a
    repeated delivery starts a second execution: at least once, as every other target; its
    consumer drops repeats by ``dedupeKey``. An imported state machine is delivered to the same way
    whatever its type.

    A denied ``states:StartExecution``, a state machine that does not exist or is being deleted and
    an input Step Functions refuses (e.g. larger than 256 KiB) are parked in the dead-letter queue
    at once; throttling, the execution limit and internal errors are retried. Example::

        workflow = sfn.StateMachine(self, "Fulfil", definition_body=sfn.DefinitionBody.from_chainable(chain))
        timers.add_target("fulfil", targets.StepFunctionsStartExecution(workflow))

    :param state_machine: the state machine. The dispatcher is granted ``states:StartExecution`` on it
        only.
    :param flow_control: limits on how fast, and how many at once, deliveries to this target start, e.g.
        ``targets.FlowControl(rate=100, max_in_flight=20)``. Default: none, no limits.
    """

    def __init__(self, state_machine: sfn.IStateMachine, *, flow_control: Optional[FlowControl] = None) -> None:
        check_resource("state_machine", state_machine, "state machine")
        super().__init__(flow_control)
        self.state_machine = state_machine

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``states:StartExecution`` on the state machine; describe it as ``{"type": "stepfunctions", ...}``."""
        iam.Grant.add_to_principal(grantee=dispatcher, actions=["states:StartExecution"],
                                   resource_arns=[self.state_machine.state_machine_arn])
        return ScheduleTargetConfig(self._describe("stepfunctions",
                                                    state_machine_arn=self.state_machine.state_machine_arn))


class HttpsEndpoint(_BuiltInTarget):
    """Deliver each due schedule as a signed HTTPS ``POST`` to a URL, a webhook.

    The body is the envelope as compact JSON (``Content-Type: application/json``), with the headers
    ``Scheduler-Schedule-Id``, ``Scheduler-Dedupe-Key`` and ``Scheduler-Attempt`` (its ``id``,
    ``dedupeKey`` and ``attempt``) and ``Scheduler-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>``,
    the HMAC of ``"<t>."`` followed by the exact body bytes, keyed with the signing secret's
    ``SecretString``. A receiver checks it with ``cdk_delayed_scheduler.webhook.verify_signature``, and
    drops repeats by ``dedupeKey``: delivery is at least once, as for every target.

    A 2xx answer is a delivery. 408, 429, a 5xx, a timeout or a connection error is retried; any other
    status (another 4xx, or a 3xx: redirects are never followed) is parked in the dead-letter queue at
    once, with the status as the reason. The answer's body is read and dropped, never logged.

    The dispatcher reads the secret once per sandbox and keeps it 300 seconds, so a rotated secret is
    used within 5 minutes, without a deploy (meanwhile receivers accept the old and the new one). The
    URL and ``headers`` are stored in the dispatcher function's configuration, which anyone allowed
    ``lambda:GetFunctionConfiguration`` reads: do not put secrets there; the signing secret is the
    authentication. Example::

        secret = secretsmanager.Secret(self, "HookSecret")
        timers.add_target("hooks", targets.HttpsEndpoint("https://hooks.example.com/timers", signing_secret=secret,
                                                         headers={"X-Tenant": "acme"}))

    :param url: where to ``POST``: ``https://`` with a host, without user information or a fragment.
    :param signing_secret: the secret whose ``SecretString`` keys the signature. The dispatcher is granted
        ``secretsmanager:GetSecretValue`` on it only, plus ``kms:Decrypt`` on its customer managed key,
        only through Secrets Manager, when it has one.
    :param headers: extra headers of every request: names of RFC 7230 characters, values of printable ASCII,
        at most 2048 bytes in all as sent; none of the scheduler's own (``Content-Type``, ``Scheduler-*``,
        ``Content-Length``, ``Transfer-Encoding``, ``Connection``, ``Host``). Default: none.
    :param timeout: how long connecting (the TLS handshake included) and each wait for the answer's bytes
        may take: 1-30 whole seconds. The scheduler's ``dispatcher_timeout`` must be at least 5 seconds
        longer. Default: 10 seconds.
    :param flow_control: limits on how fast, and how many at once, deliveries to this target start, e.g.
        ``targets.FlowControl(rate=100, max_in_flight=20)``. Default: none, no limits.
    """

    # ``Secret`` named beside ``ISecret``: in jsii's Python types ``Secret`` does not satisfy the ``ISecret``
    # protocol (a parameter named differently), so pyright would refuse ``signing_secret=secretsmanager.Secret(...)``.
    def __init__(self, url: str, *, signing_secret: Union[secretsmanager.ISecret, secretsmanager.Secret],
                 headers: Optional[Mapping[str, str]] = None, timeout: Duration = default_timeout(),
                 flow_control: Optional[FlowControl] = None) -> None:
        check_url(url)
        check_secret(signing_secret)
        check_headers(headers)
        check_timeout(timeout)
        super().__init__(flow_control)
        self.url = url
        self.signing_secret = signing_secret
        self.headers: Optional[Mapping[str, str]] = None if headers is None else dict(headers)
        self.timeout = timeout

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``secretsmanager:GetSecretValue`` on the secret (and ``kms:Decrypt`` on its key through
        Secrets Manager); describe it as ``{"type": "https", ...}``."""
        grant_secret_value(self.signing_secret, dispatcher)
        extra = {} if self.headers is None else {"headers": self.headers}
        return ScheduleTargetConfig(self._describe("https", url=self.url, secret_arn=self.signing_secret.secret_arn,
                                                    timeout_seconds=seconds(self.timeout), **extra),
                                    timeout=self.timeout)


def _group(message_group_id: Optional[str]) -> dict[str, str]:
    """The optional ``message_group_id`` field of a queue's or topic's description."""
    return {} if message_group_id is None else {"message_group_id": message_group_id}


def _invocation_type(value: Any) -> LambdaInvocationType:
    """``value`` as a :class:`LambdaInvocationType`, from the enum or Lambda's name for it."""
    try:
        return LambdaInvocationType(value)
    except ValueError:
        allowed = ", ".join(f"LambdaInvocationType.{kind.name} ({kind.value!r})" for kind in LambdaInvocationType)
        raise ValueError(f"invocation_type: must be one of {allowed}, got {value!r}") from None


def waits_for_unknown_run(config: ScheduleTargetConfig) -> bool:
    """Whether the dispatcher waits for a Lambda function's run of unknown length: a synchronous invoke
    (not ``"invocationType": "Event"``) of a function whose timeout is not known."""
    description = config.target_json
    return (config.timeout is None and description.get("type") == "lambda"
            and description.get("invocationType", LambdaInvocationType.REQUEST_RESPONSE.value)
            == LambdaInvocationType.REQUEST_RESPONSE.value)


def check_target(prop: str, value: Any, also: Optional[str] = None) -> None:
    """Raise ``ValueError`` naming ``prop`` unless ``value`` is a target, with the wrapper to use; ``also``
    names what else the prop takes (``"Outcomes(...)"``), for a prop that takes a target or more."""
    if isinstance(value, IScheduleTarget):
        return
    found = target_for(value)
    hint = (f"wrap the {found[0]}: {found[1]}" if found
            else "e.g. targets.LambdaInvoke(fn) or targets.SqsSendMessage(queue)")
    allowed = "a target from cdk_delayed_scheduler.targets" + (f" or {also}" if also else "")
    raise ValueError(f"{prop}: must be {allowed}, got {type(value).__name__}; {hint}")
