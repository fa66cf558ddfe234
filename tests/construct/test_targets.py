"""Targets: the ``TARGETS`` description each built-in target renders (the contract's fields), the
dispatcher's grants for it, and a target the runtime cannot deliver to, refused at synth."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract
from construct_stacks import FUNCTION_IDS, environment, logical_id, policy, rendered_targets


def test_targets_json_is_the_same_in_every_function(stacks):
    for b in (stacks["defaults"], stacks["custom"]):
        values = {json.dumps(environment(b, fid)[contract.ENV.targets]) for fid in FUNCTION_IDS}
        assert len(values) == 1


def test_lambda_target(stacks):
    b = stacks["defaults"]
    callback_id = logical_id(b, b.extra["callback"])
    assert rendered_targets(b) == {"default": {"type": "lambda", "functionArn": f"<GetAtt {callback_id}.Arn>"}}
    invoke = [s for s in policy(b, "DispatcherFunction") if s["Action"] == "lambda:InvokeFunction"]
    assert invoke == [{"Action": "lambda:InvokeFunction", "Effect": "Allow",
                       "Resource": {"Fn::GetAtt": [callback_id, "Arn"]}}]
    assert b.scheduler.target_names == ["default"]


def test_sqs_targets_extra_targets_and_add_target(stacks):
    b = stacks["custom"]
    jobs, ordered = logical_id(b, b.extra["jobs"]), logical_id(b, b.extra["ordered"])
    other = logical_id(b, b.extra["callback"])
    assert rendered_targets(b) == {
        "default": {"type": "sqs", "queueUrl": f"<Ref {jobs}>", "fifo": False},
        "ordered": {"type": "sqs", "queueUrl": f"<Ref {ordered}>", "fifo": True, "messageGroupId": "g-1"},
        "callback": {"type": "lambda", "functionArn": f"<GetAtt {other}.Arn>"},
    }
    statements = policy(b, "DispatcherFunction")
    sends = [s["Resource"] for s in statements if s["Action"] == "sqs:SendMessage"]
    assert {"Fn::GetAtt": [jobs, "Arn"]} in sends and {"Fn::GetAtt": [ordered, "Arn"]} in sends
    # the encrypted target queue's key: only what a producer needs
    jobs_key = logical_id(b, b.extra["jobs_key"])
    assert {"Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [jobs_key, "Arn"]}} in statements
    assert b.scheduler.target_names == ["default", "ordered", "callback"]


def test_each_built_in_targets_description_is_one_the_runtime_delivers_to(stacks):
    """Every description the built-in targets render (Lambda, SQS and SNS standard and FIFO with a
    group, EventBridge, Step Functions, HTTPS) passes the check the runtime applies at start, with the contract's field
    names."""
    descriptions = {f"{stack}/{name}": description for stack in ("defaults", "custom", "fanout", "https")
                    for name, description in rendered_targets(stacks[stack]).items()}
    assert {d["type"] for d in descriptions.values()} == set(contract.TARGET_TYPES)
    for name, description in descriptions.items():
        assert contract.target_description_problem(description) is None, (name, description)


class _MailTarget(targets.IScheduleTarget):
    """A target of one's own, of a kind the runtime has no delivery for."""

    def bind(self, dispatcher: iam.IGrantable) -> targets.ScheduleTargetConfig:
        return targets.ScheduleTargetConfig({"type": "smtp", "to": "ops@example.com"})


class _LambdaWithoutArn(targets.IScheduleTarget):
    def bind(self, dispatcher: iam.IGrantable) -> targets.ScheduleTargetConfig:
        return targets.ScheduleTargetConfig({"type": "lambda", "function": "cb"})


class _WrappedQueue(targets.IScheduleTarget):
    """A target of one's own that renders a built-in kind (with a token for its URL): deliverable."""

    def __init__(self, queue: sqs.IQueue) -> None:
        self.inner = targets.SqsSendMessage(queue)

    def bind(self, dispatcher: iam.IGrantable) -> targets.ScheduleTargetConfig:
        return self.inner.bind(dispatcher)


@pytest.mark.parametrize(("target", "problem"), [
    (_MailTarget(), r"type 'smtp' is not supported; supported kinds: eventbridge, https, lambda, sns, sqs, "
                    r"stepfunctions"),
    (_LambdaWithoutArn(), r"the lambda target needs functionArn"),
])
def test_a_target_the_runtime_cannot_deliver_to_is_refused_at_synth(target, problem):
    stack = cdk.Stack(cdk.App(), "S")
    queue_target = targets.SqsSendMessage(sqs.Queue(stack, "Q"))
    with pytest.raises(ValueError, match=rf"^target 'default': {type(target).__name__} describes a target the "
                                         rf"runtime cannot deliver to: {problem}\. The runtime delivers to these "
                                         r"kinds: eventbridge, https, lambda, sns, sqs, stepfunctions \(targets.LambdaInvoke, "
                                         r".*targets.HttpsEndpoint\); a new kind needs runtime support"):
        DelayedScheduler(stack, "Timers", target=target)
    scheduler = DelayedScheduler(stack, "Ok", target=queue_target)
    with pytest.raises(ValueError, match=r"^target 'alerts': "):
        scheduler.add_target("alerts", target)
    assert scheduler.target_names == ["default"]


def test_a_target_of_ones_own_that_renders_a_built_in_kind_is_accepted():
    stack = cdk.Stack(cdk.App(), "S")
    scheduler = DelayedScheduler(stack, "Timers", target=_WrappedQueue(sqs.Queue(stack, "Q")))
    assert scheduler.target_names == ["default"]


def test_a_description_field_the_contract_does_not_list_cannot_be_rendered():
    assert targets.describe_target("sqs", queue_url="u", fifo=False) == {"type": "sqs", "queueUrl": "u", "fifo": False}
    with pytest.raises(KeyError, match=r"the sqs target has no field 'topicArn'"):
        targets.describe_target("sqs", topic_arn="t")
