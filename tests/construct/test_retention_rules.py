"""Props that cannot work together are refused at synth: every receive of a delayer message must
happen within the queue's retention, and the runtime knows the visibility timeout."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract

from construct_helpers import resources_of
from construct_stacks import CUSTOM_PROPS


def _build(**props) -> tuple[cdk.Stack, DelayedScheduler]:
    stack = cdk.Stack(cdk.App(), "S")
    return stack, DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)


@pytest.mark.parametrize("props", [
    {"max_receive_count": 1000},  # 1,000 receives x 6 minutes: 250 days
    {"max_receive_count": 100, "dispatcher_timeout": cdk.Duration.seconds(900)},  # 100 x 90 minutes
])
def test_receives_that_outlast_the_delayer_queues_retention_are_refused_naming_the_props(props):
    with pytest.raises(ValueError, match=r"max_receive_count.*dispatcher_timeout.*delay_window.*4 days"):
        _build(**props)


def test_the_most_receives_that_fit_the_retention_are_allowed():
    retention, factor = contract.DELAYER_RETENTION_SECONDS, contract.VISIBILITY_TIMEOUT_FACTOR
    window, timeout = contract.DELAY_WINDOW_SECONDS.default, contract.DISPATCHER_TIMEOUT_SECONDS.default
    fits = (retention - window) // (factor * timeout)
    _build(max_receive_count=fits)
    with pytest.raises(ValueError, match=rf"max_receive_count \({fits + 1}\)"):
        _build(max_receive_count=fits + 1)


def test_every_function_knows_the_dispatcher_timeout_and_the_queue_follows_the_contract(stacks):
    b = stacks["custom"]  # dispatcher_timeout=Duration.seconds(120)
    timeout = int(CUSTOM_PROPS["dispatcher_timeout"].to_seconds())
    functions = {k: v for k, v in resources_of(b.json, "AWS::Lambda::Function").items() if k.startswith("Timers")}
    assert len(functions) == 4
    for function in functions.values():
        assert function["Properties"]["Environment"]["Variables"][contract.ENV.dispatcher_timeout_seconds] == str(timeout)
    [delayer] = [q for k, q in resources_of(b.json, "AWS::SQS::Queue").items()
                 if k.startswith("Timers") and "RedrivePolicy" in q.get("Properties", {})]
    assert delayer["Properties"]["VisibilityTimeout"] == contract.VISIBILITY_TIMEOUT_FACTOR * timeout
    assert delayer["Properties"]["MessageRetentionPeriod"] == contract.DELAYER_RETENTION_SECONDS
