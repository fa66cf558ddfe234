"""The engine's named targets: each made in moto (or as a local function) and described as the construct
renders it in the functions' ``TARGETS``; and what a state machine target received, read back from moto."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from .deliveries import (LAMBDA_INVOCATION_TYPES, BusTarget, HttpsTarget, LambdaTarget, LocalTarget, QueueTarget,
                         ResourceTarget, StateMachineTarget, TopicTarget)
from .resources import (function_arn, provision_target_bus, provision_target_queue, provision_target_secret,
                        provision_target_state_machine, provision_target_topic)

LOCAL_TARGET_FUNCTION = "local-target"
"""The default target's function on the engine's Lambda endpoint; a named one's is this, a dash and its number."""


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
    """Make every named target: a queue, a topic or a bus (each with the queue its deliveries arrive in), a
    state machine or an HTTPS endpoint's signing secret in moto, or a local function in ``functions``
    (wrapped by ``local_target``)."""
    made = NamedTargets()
    for number, (name, target) in enumerate(targets.items(), start=1):
        resource = f"{name_prefix}-target-{number}"
        if isinstance(target, QueueTarget):
            url = made.queue_urls[name] = provision_target_queue(session, resource, target.fifo)
            made.descriptions[name] = {"type": "sqs", "queueUrl": url, "fifo": target.fifo, **_message_group(target)}
        elif isinstance(target, TopicTarget):
            topic_arn, made.queue_urls[name] = provision_target_topic(session, resource, target.fifo)
            made.descriptions[name] = {"type": "sns", "topicArn": topic_arn, "fifo": target.fifo,
                                       **_message_group(target)}
        elif isinstance(target, BusTarget):
            bus_arn, made.queue_urls[name] = provision_target_bus(
                session, resource, source=target.source, detail_type=target.detail_type)
            made.descriptions[name] = {"type": "eventbridge", "eventBusArn": bus_arn,
                                       "detailType": target.detail_type, "source": target.source}
        elif isinstance(target, HttpsTarget):
            made.descriptions[name] = target.description(provision_target_secret(session, resource, target.secret))
        elif isinstance(target, StateMachineTarget):
            arn = made.state_machine_arns[name] = provision_target_state_machine(session, resource, target.express)
            made.descriptions[name] = {"type": "stepfunctions", "stateMachineArn": arn}
        else:
            function_name = f"{LOCAL_TARGET_FUNCTION}-{number}"
            invocation: dict[str, str] = {}
            if isinstance(target, LambdaTarget) and target.invocation_type != LAMBDA_INVOCATION_TYPES[0]:
                invocation = {"invocationType": target.invocation_type}
            functions[function_name] = local_target(_calling(target) if isinstance(target, LambdaTarget) else target)
            made.descriptions[name] = {"type": "lambda", "functionArn": function_arn(function_name), **invocation}
    return made


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
