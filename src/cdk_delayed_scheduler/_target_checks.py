"""Checks of the target classes' arguments: which kind of resource a value is, the target class that
takes it (for the hint of a bad value), and the rules of a message group id and of EventBridge's texts.
Each error names the prop and the rule."""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

from aws_cdk import Token

_MESSAGE_GROUP_ID = re.compile(r"^[A-Za-z0-9!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]{1,128}$")


def check_message_group_id(value: Optional[str], fifo: Any, resource: str) -> None:
    """``message_group_id`` is for a FIFO ``resource`` (queue or topic) only, and 1-128 characters of
    letters, digits and punctuation (SQS's and SNS's rule)."""
    if value is None:
        return
    if not Token.is_unresolved(fifo) and not fifo:
        raise ValueError(f"message_group_id: only a FIFO {resource} takes a message group id")
    if not Token.is_unresolved(value) and not _MESSAGE_GROUP_ID.match(value):
        raise ValueError(
            f"message_group_id: must be 1-128 characters of letters, digits and punctuation, got {value!r}")


def check_text(prop: str, value: Any, max_length: int) -> None:
    """``value`` is text of 1 to ``max_length`` characters (a token is judged at deploy)."""
    if not isinstance(value, str):
        raise ValueError(f"{prop}: must be a string, got {type(value).__name__}")
    if Token.is_unresolved(value):
        return
    if not 1 <= len(value) <= max_length:
        raise ValueError(f"{prop}: must be 1-{max_length} characters, got {len(value)}")


# EventBridge's PutEventsRequestEntry (API reference): DetailType 1-128 characters, Source 1-256
# characters, and "the aws. value prefix is service-reserved and cannot be used" for Source.
# https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEventsRequestEntry.html
EVENT_DETAIL_TYPE_MAX_LENGTH = 128
EVENT_SOURCE_MAX_LENGTH = 256


def check_event_texts(detail_type: Any, source: Any) -> None:
    """An EventBridge entry's ``detail_type`` and ``source`` as PutEvents takes them."""
    check_text("detail_type", detail_type, EVENT_DETAIL_TYPE_MAX_LENGTH)
    check_text("source", source, EVENT_SOURCE_MAX_LENGTH)
    if not Token.is_unresolved(source) and source.startswith("aws."):
        raise ValueError(f"source: must not start with 'aws.' (reserved for AWS services' events), got {source!r}")


def is_function(value: Any) -> bool:
    return hasattr(value, "function_arn") and hasattr(value, "grant_invoke")


def is_queue(value: Any) -> bool:
    return hasattr(value, "queue_url") and hasattr(value, "queue_arn")


def is_topic(value: Any) -> bool:
    return hasattr(value, "topic_arn") and hasattr(value, "grant_publish")


def is_event_bus(value: Any) -> bool:
    return hasattr(value, "event_bus_arn") and hasattr(value, "grant_put_events_to")


def is_state_machine(value: Any) -> bool:
    return hasattr(value, "state_machine_arn") and hasattr(value, "grant_start_execution")


#: Each kind of resource a target takes, by its noun: (recognizes it, what a prop must then be, the
#: target that takes it, as code), for the checks and the hints of bad input.
_KINDS: dict[str, tuple[Callable[[Any], bool], str, str]] = {
    "function": (is_function, "a Lambda function (aws_lambda.IFunction)", "targets.LambdaInvoke(fn)"),
    "queue": (is_queue, "an SQS queue (aws_sqs.IQueue)", "targets.SqsSendMessage(queue)"),
    "topic": (is_topic, "an SNS topic (aws_sns.ITopic)", "targets.SnsPublish(topic)"),
    "event bus": (is_event_bus, "an EventBridge event bus (aws_events.IEventBus)",
                  "targets.EventBridgePutEvents(bus, detail_type=..., source=...)"),
    "state machine": (is_state_machine, "a Step Functions state machine (aws_stepfunctions.IStateMachine)",
                      "targets.StepFunctionsStartExecution(state_machine)"),
}


def check_resource(prop: str, value: Any, noun: str) -> None:
    """Raise ``ValueError`` naming ``prop`` unless ``value`` is a ``noun`` (a key of ``_KINDS``), with the
    target to use when it is another kind of resource."""
    matches, must_be, _ = _KINDS[noun]
    if not matches(value):
        raise ValueError(f"{prop}: must be {must_be}, got {type(value).__name__}{wrapper_hint(value)}")


def target_for(value: Any) -> Optional[tuple[str, str]]:
    """(noun, the target that takes it, as code) when ``value`` is a function, queue, topic, bus or state
    machine; else None."""
    return next(((noun, code) for noun, (matches, _, code) in _KINDS.items() if matches(value)), None)


def wrapper_hint(value: Any) -> str:
    """``"; for a queue use targets.SqsSendMessage(queue)"`` when a target takes ``value``, else ``""``."""
    found = target_for(value)
    if found is None:
        return ""
    noun, code = found
    return f"; for {'an' if noun[0] in 'aeiou' else 'a'} {noun} use {code}"
