"""The engine's named targets: each made in moto (or as a local function) and described as the construct
renders it in the functions' ``TARGETS``; and what a state machine target received, read back from moto."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from .deliveries import (LAMBDA_INVOCATION_TYPES, RESOURCE_TARGETS, BusTarget, HttpsTarget, LambdaTarget, LocalTarget,
                         QueueTarget, ResourceTarget, StateMachineTarget, TopicTarget)
from .flow_control import FlowControl, with_flow_control
from .resources import (function_arn, provision_target_bus, provision_target_queue, provision_target_secret,
                        provision_target_state_machine, provision_target_topic)

LOCAL_TARGET_FUNCTION = "local-target"
"""The default target's function on the engine's Lambda endpoint; a named one's is this, a dash and its number."""


@dataclass(frozen=True)
class MadeTarget:
    """One target :func:`make_target` made."""

    description: dict[str, Any]
    """As the construct renders it in ``TARGETS`` (or, for the outcomes target, in ``OUTCOMES``)."""
    queue_url: str | None = None
    """The SQS queue a queue, topic or bus target's deliveries arrive in."""
    state_machine_arn: str | None = None


@dataclass
class NamedTargets:
    """What :func:`make_named_targets` made, by target name."""

    descriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each target's description, as the construct renders it in ``TARGETS``."""
    queue_urls: dict[str, str] = field(default_factory=dict)
    """The SQS queue each queue, topic or bus target's deliveries arrive in."""
    state_machine_arns: dict[str, str] = field(default_factory=dict)
    """Each state machine target's ARN."""


def make_named_targets(session: Any, name_prefix: str, targets: dict[str, LocalTarget | ResourceTarget],
                       functions: dict[str, Callable[[Any], Any]],
                       local_target: Callable[[LocalTarget], LocalTarget]) -> NamedTargets:
    """Make every named target (:func:`make_target`), the n-th as ``<name_prefix>-target-<n>`` in moto or as the
    function ``local-target-<n>``."""
    named = NamedTargets()
    for number, (name, target) in enumerate(targets.items(), start=1):
        made = make_target(session, f"{name_prefix}-target-{number}", f"{LOCAL_TARGET_FUNCTION}-{number}", target,
                           functions, local_target)
        named.descriptions[name] = made.description
        if made.queue_url is not None:
            named.queue_urls[name] = made.queue_url
        if made.state_machine_arn is not None:
            named.state_machine_arns[name] = made.state_machine_arn
    return named


def default_target_description(flow_control: FlowControl | None) -> dict[str, Any]:
    """The default target's description in ``TARGETS``: the engine's function :data:`LOCAL_TARGET_FUNCTION`, with
    its limits when it has them (``EngineOptions.flow_control``)."""
    return with_flow_control({"type": "lambda", "functionArn": function_arn(LOCAL_TARGET_FUNCTION)}, flow_control)


def make_target(session: Any, resource: str, function_name: str, target: LocalTarget | ResourceTarget,
                functions: dict[str, Callable[[Any], Any]],
                local_target: Callable[[LocalTarget], LocalTarget]) -> MadeTarget:
    """Make one target: a queue, a topic or a bus (each with the queue its deliveries arrive in), a state machine
    or an HTTPS endpoint's signing secret in moto, named ``resource``; or the local function ``function_name`` in
    ``functions`` (a callable or a :class:`LambdaTarget`, wrapped by ``local_target``). Its description carries
    its limits, if it has any (a callable has none)."""
    made = _make(session, resource, function_name, target, functions, local_target)
    limits = target.flow_control if isinstance(target, RESOURCE_TARGETS) else None
    return replace(made, description=with_flow_control(made.description, limits))


def _make(session: Any, resource: str, function_name: str, target: LocalTarget | ResourceTarget,
          functions: dict[str, Callable[[Any], Any]], local_target: Callable[[LocalTarget], LocalTarget]) -> MadeTarget:
    if isinstance(target, QueueTarget):
        url = provision_target_queue(session, resource, target.fifo)
        return MadeTarget({"type": "sqs", "queueUrl": url, "fifo": target.fifo, **_message_group(target)}, url)
    if isinstance(target, TopicTarget):
        topic_arn, url = provision_target_topic(session, resource, target.fifo)
        return MadeTarget({"type": "sns", "topicArn": topic_arn, "fifo": target.fifo, **_message_group(target)}, url)
    if isinstance(target, BusTarget):
        bus_arn, url = provision_target_bus(session, resource, source=target.source, detail_type=target.detail_type)
        return MadeTarget({"type": "eventbridge", "eventBusArn": bus_arn, "detailType": target.detail_type,
                           "source": target.source}, url)
    if isinstance(target, HttpsTarget):
        return MadeTarget(target.description(provision_target_secret(session, resource, target.secret)))
    if isinstance(target, StateMachineTarget):
        arn = provision_target_state_machine(session, resource, target.express)
        return MadeTarget({"type": "stepfunctions", "stateMachineArn": arn}, state_machine_arn=arn)
    invocation: dict[str, str] = {}
    if isinstance(target, LambdaTarget) and target.invocation_type != LAMBDA_INVOCATION_TYPES[0]:
        invocation = {"invocationType": target.invocation_type}
    functions[function_name] = local_target(_calling(target) if isinstance(target, LambdaTarget) else target)
    return MadeTarget({"type": "lambda", "functionArn": function_arn(function_name), **invocation})


def _calling(target: LambdaTarget) -> LocalTarget:
    """A :class:`LambdaTarget`'s handler as a local function: called with the envelope (and ``None``)."""
    handler = target.handler

    def deliver(envelope: dict[str, Any]) -> Any:
        return handler(envelope, None) if handler is not None else None

    return deliver


def _message_group(target: QueueTarget | TopicTarget) -> dict[str, str]:
    """A FIFO queue's or topic's configured message group, as the construct renders it (absent: the schedule id)."""
    return {"messageGroupId": target.message_group_id} if target.message_group_id else {}


@dataclass(frozen=True)
class Execution:
    """One execution a state machine target's delivery started."""

    arn: str
    envelope: dict[str, Any]
    """Its input: the envelope delivered."""
    started_ms: int


def executions(stepfunctions: Any, state_machine_arn: str, known: frozenset[str] = frozenset()) -> list[Execution]:
    """The executions of a state machine (``list_executions``, then ``describe_execution`` for each one's
    input), oldest first, less those whose ARN is in ``known``."""
    listed: list[dict[str, Any]] = []
    for page in stepfunctions.get_paginator("list_executions").paginate(stateMachineArn=state_machine_arn):
        listed += [execution for execution in page["executions"] if execution["executionArn"] not in known]
    listed.sort(key=lambda execution: execution["startDate"])
    return [Execution(e["executionArn"], json.loads(stepfunctions.describe_execution(executionArn=e["executionArn"])["input"]),
                      _epoch_ms(e["startDate"])) for e in listed]


def _epoch_ms(instant: datetime) -> int:
    """Whole milliseconds since the epoch, counted exactly (a float's product can fall a millisecond short)."""
    return (instant - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
