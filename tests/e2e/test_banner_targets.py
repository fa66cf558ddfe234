"""What ``cdk-delayed-scheduler local`` prints once it runs names every named target, of each of the six
kinds, with where its deliveries go: the queue, topic and bus targets' queue, the state machine, the HTTPS
endpoint and the Lambda handler."""

from __future__ import annotations

import re
from typing import Any

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.cli import endpoint_lines
from cdk_delayed_scheduler.local.deliveries import (BusTarget, HttpsTarget, LambdaTarget, QueueTarget, Recorder,
                                                    StateMachineTarget, TopicTarget)

pytestmark = pytest.mark.e2e


def audit(envelope: Any, context: Any) -> None:
    """A Lambda target's handler."""


TARGETS = {"sqs": QueueTarget(), "sns": TopicTarget(), "eventbridge": BusTarget(detail_type="Due", source="my.app"),
           "stepfunctions": StateMachineTarget(), "https": HttpsTarget("http://127.0.0.1:9/hook", "s3cret"),
           "lambda": LambdaTarget(audit, "Event")}


def test_the_banner_names_every_named_target_of_every_kind_and_where_it_delivers() -> None:
    assert set(TARGETS) == set(contract.TARGET_TYPES)  # one target of each kind the construct has
    with Engine(EngineOptions(target=Recorder(), targets=dict(TARGETS))) as engine:
        lines = endpoint_lines(engine)
    described = {found.group(1): found.group(2) for line in lines
                 if (found := re.fullmatch(r"  target (\S+): its deliveries (.+)", line))}
    assert set(described) == set(TARGETS), lines
    for kind in ("sqs", "sns", "eventbridge"):
        assert described[kind] == f"arrive in the queue {engine.target_queue_urls[kind]}"
    assert described["stepfunctions"].startswith("start executions of the state machine arn:aws:states:")
    assert described["https"] == "are POSTed to http://127.0.0.1:9/hook, signed with its secret"
    assert described["lambda"] == f"invoke the Lambda handler {__name__}:audit (Event)"
