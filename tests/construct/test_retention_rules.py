"""Props that cannot work together are refused at synth (issue 11, F1): every receive of a delayer
message must happen within the queue's retention, and the runtime knows the visibility timeout."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._runtime_asset import contract

from construct_helpers import resources_of


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
    retention, factor = contract()["delayerRetentionSeconds"], contract()["visibilityTimeoutFactor"]
    fits = (retention - 870) // (factor * 60)
    _build(max_receive_count=fits)
    with pytest.raises(ValueError, match=rf"max_receive_count \({fits + 1}\)"):
        _build(max_receive_count=fits + 1)


def test_every_function_knows_the_dispatcher_timeout_and_the_queue_follows_the_contract():
    stack, _ = _build(dispatcher_timeout=cdk.Duration.seconds(120))
    template = Template.from_stack(stack).to_json()
    functions = resources_of(template, "AWS::Lambda::Function")
    assert len(functions) == 4
    for function in functions.values():
        assert function["Properties"]["Environment"]["Variables"]["DISPATCHER_TIMEOUT_SECONDS"] == "120"
    [delayer] = [q for q in resources_of(template, "AWS::SQS::Queue").values() if "RedrivePolicy" in q.get("Properties", {})]
    assert delayer["Properties"]["VisibilityTimeout"] == contract()["visibilityTimeoutFactor"] * 120
    assert delayer["Properties"]["MessageRetentionPeriod"] == contract()["delayerRetentionSeconds"]
