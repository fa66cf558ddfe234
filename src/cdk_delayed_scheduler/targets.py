"""Where a due schedule is delivered, named after ``aws_cdk.aws_scheduler_targets``.

A target is bound once to the scheduler's dispatcher function: it grants the
dispatcher exactly the permission its delivery needs, and renders the JSON
description that the runtime reads from the ``TARGETS`` environment variable
(the fields of each kind are ``contract.json``'s ``targetTypes``)::

    from cdk_delayed_scheduler import DelayedScheduler, targets

    DelayedScheduler(self, "Timers", target=targets.LambdaInvoke(callback_fn))
    DelayedScheduler(self, "Jobs", target=targets.SqsSendMessage(jobs_queue))
"""

from __future__ import annotations

import abc
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from aws_cdk import Duration, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from ._contract import contract
from ._wiring import KEY_PRODUCER

__all__ = ["IScheduleTarget", "ScheduleTargetConfig", "LambdaInvoke", "SqsSendMessage"]

_MESSAGE_GROUP_ID = re.compile(r"^[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}$")


@dataclass(frozen=True)
class ScheduleTargetConfig:
    """What a bound target contributes to the runtime's ``TARGETS`` JSON."""

    target_json: Mapping[str, Any]
    """The target's description, e.g. ``{"type": "lambda", "functionArn": ...}`` (may hold tokens)."""

    timeout: Optional[Duration] = None
    """How long one delivery may take at most, when the dispatcher waits for it (a Lambda target's
    own timeout); the scheduler's ``dispatcher_timeout`` must cover it. ``None``: not known."""


class IScheduleTarget(abc.ABC):
    """A destination for due schedules: ``LambdaInvoke`` or ``SqsSendMessage``.

    :meth:`bind` is how each built-in kind grants the dispatcher what its delivery needs and
    describes itself to the runtime. A new kind of target needs support in the runtime too, not
    only a ``bind``: ``DelayedScheduler.add_target`` refuses, at synth, a description whose ``type``
    the runtime cannot deliver to (an ``IScheduleTarget`` of one's own may still wrap a built-in
    kind, e.g. to grant more).
    """

    @abc.abstractmethod
    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``dispatcher`` what delivery needs and describe the target for the runtime."""


class LambdaInvoke(IScheduleTarget):
    """Deliver each due schedule by invoking a Lambda function synchronously.

    The function receives the envelope (``id``, ``dueAt``, ``firedAt``,
    ``attempt``, ``dedupeKey``, ``payload``, ``target``) as its event. A
    function error counts as a failed delivery: it is retried through the
    delayer queue, and parked in the dead-letter queue with the error once the
    retries are exhausted. The dispatcher waits for the function, so its
    ``dispatcher_timeout`` must cover the function's run.

    A failed delivery is retried when the delayer message becomes visible again: after the
    delayer queue's visibility timeout, 6 times ``dispatcher_timeout`` (6 x 60 s by default), up
    to ``max_receive_count`` deliveries in all. Meanwhile ``GET`` answers ``FIRED`` with the
    number of ``attempts`` started. Example::

        callback = lambda_.Function(self, "Callback", ...)
        DelayedScheduler(self, "Timers", target=targets.LambdaInvoke(callback))

    :param handler: the function to invoke. Only ``lambda:InvokeFunction`` on
        exactly its ARN is granted to the dispatcher. Its timeout, when known,
        must be at least 5 seconds shorter than the scheduler's ``dispatcher_timeout``.
    """

    def __init__(self, handler: Union[lambda_.IFunction, lambda_.FunctionBase]) -> None:
        # (FunctionBase too: pyright does not accept aws-cdk-lib's own Function as its IFunction protocol)
        if not _is_function(handler):
            hint = "; for a queue use targets.SqsSendMessage(queue)" if _is_queue(handler) else ""
            raise ValueError(f"handler: must be a Lambda function (aws_lambda.IFunction), got "
                             f"{type(handler).__name__}{hint}")
        self.handler = handler

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``lambda:InvokeFunction`` on the function; describe it as ``{"type": "lambda", ...}``."""
        iam.Grant.add_to_principal(
            grantee=dispatcher,
            actions=["lambda:InvokeFunction"],
            resource_arns=[self.handler.function_arn],
        )
        timeout = None  # an imported function's, an alias's or a version's timeout is not known here
        if isinstance(self.handler, lambda_.Function):
            timeout = self.handler.timeout or _LAMBDA_DEFAULT_TIMEOUT
        return ScheduleTargetConfig(describe_target("lambda", function_arn=self.handler.function_arn), timeout=timeout)


class SqsSendMessage(IScheduleTarget):
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
    """

    def __init__(self, queue: sqs.IQueue, *, message_group_id: Optional[str] = None) -> None:
        if not _is_queue(queue):
            hint = "; for a function use targets.LambdaInvoke(fn)" if _is_function(queue) else ""
            raise ValueError(f"queue: must be an SQS queue (aws_sqs.IQueue), got {type(queue).__name__}{hint}")
        fifo = queue.fifo
        if message_group_id is not None:
            if not Token.is_unresolved(fifo) and not fifo:
                raise ValueError("message_group_id: only a FIFO queue takes a message group id")
            if not Token.is_unresolved(message_group_id) and not _MESSAGE_GROUP_ID.match(message_group_id):
                raise ValueError(
                    "message_group_id: must be 1-128 characters of letters, digits and punctuation, "
                    f"got {message_group_id!r}"
                )
        self.queue = queue
        self.message_group_id = message_group_id

    def bind(self, dispatcher: iam.IGrantable) -> ScheduleTargetConfig:
        """Grant ``sqs:SendMessage`` (and the key's producer actions); describe it as ``{"type": "sqs", ...}``."""
        # Only SendMessage: the runtime knows the queue URL, so no GetQueueUrl/GetQueueAttributes.
        self.queue.grant(dispatcher, "sqs:SendMessage")
        key = self.queue.encryption_master_key
        if key is not None:
            # What an SQS producer needs on a customer managed key (SQS developer guide, "Key management").
            key.grant(dispatcher, *KEY_PRODUCER)
        optional = {} if self.message_group_id is None else {"message_group_id": self.message_group_id}
        return ScheduleTargetConfig(describe_target("sqs", queue_url=self.queue.queue_url, fifo=bool(self.queue.fifo),
                                                    **optional))


# Lambda's own default, for a function defined without a timeout (``Function.timeout`` is then None).
_LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3)


def _is_function(value: Any) -> bool:
    return hasattr(value, "function_arn") and hasattr(value, "grant_invoke")


def _is_queue(value: Any) -> bool:
    return hasattr(value, "queue_url") and hasattr(value, "queue_arn")


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def describe_target(kind: str, **fields: Any) -> dict[str, Any]:
    """``{"type": kind, <fields>}`` with the field names of ``contract.TARGET_TYPES[kind]``
    (``queue_url`` is ``queueUrl``); a name the contract does not list for ``kind`` raises ``KeyError``."""
    spec = contract.TARGET_TYPES[kind]
    description: dict[str, Any] = {"type": kind}
    for name, value in fields.items():
        field = _camel(name)
        if field not in spec.required and field not in spec.optional:
            raise KeyError(f"the {kind} target has no field {field!r} (contract.json's targetTypes)")
        description[field] = value
    return description


def check_deliverable(name: str, target: IScheduleTarget, description: Mapping[str, Any]) -> None:
    """Refuse, at synth, a bound target the runtime cannot deliver to: its description must have a
    concrete ``type`` the runtime knows, with that kind's fields (``contract.target_description_problem``;
    a field's value may be an unresolved token, only its name is judged)."""
    kind = description.get("type")
    if kind is not None and Token.is_unresolved(kind):
        problem: Optional[str] = "its type must be concrete text, not a token"
    else:
        problem = contract.target_description_problem(description)
    if problem is not None:
        raise ValueError(
            f"target {name!r}: {type(target).__name__} describes a target the runtime cannot deliver to: {problem}. "
            f"The runtime delivers to these kinds: {', '.join(sorted(contract.TARGET_TYPES))} "
            "(targets.LambdaInvoke, targets.SqsSendMessage); a new kind needs runtime support, not only a bind.")


def check_target(prop: str, value: Any) -> None:
    """Raise ``ValueError`` naming ``prop`` unless ``value`` is a target, with the wrapper to use."""
    if isinstance(value, IScheduleTarget):
        return
    if _is_function(value):
        hint = "wrap the function: targets.LambdaInvoke(fn)"
    elif _is_queue(value):
        hint = "wrap the queue: targets.SqsSendMessage(queue)"
    else:
        hint = "e.g. targets.LambdaInvoke(fn) or targets.SqsSendMessage(queue)"
    raise ValueError(f"{prop}: must be a target from cdk_delayed_scheduler.targets, got {type(value).__name__}; {hint}")
