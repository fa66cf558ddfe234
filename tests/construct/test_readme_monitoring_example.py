"""The README's monitoring example (its ``## In production`` section's code), run as written in a stack: every alarm
publishes to the topic it is given, and the dashboard has the name it is given."""

from __future__ import annotations


import aws_cdk as cdk
import pytest
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from construct_helpers import readme_block, resources_of

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._alarms import ALARM_IDS

pytestmark = pytest.mark.slow


def readme_monitoring_example() -> str:
    return readme_block("In production")


def test_the_readme_monitoring_example_alarms_to_the_topic_and_adds_the_named_dashboard():
    example: dict = {}
    exec(compile(readme_monitoring_example(), "README.md", "exec"), example)  # noqa: S102 - verbatim
    stack = cdk.Stack(cdk.App(), "Monitored")
    timers = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Deliveries")))
    ops = sns.Topic(stack, "Ops")
    example["add_monitoring"](timers, ops)
    template = cdk.assertions.Template.from_stack(stack).to_json()
    alarms = resources_of(template, "AWS::CloudWatch::Alarm")
    assert len(alarms) == len(ALARM_IDS)  # with an API: its 5xx alarm too
    topic = {"Ref": stack.get_logical_id(ops.node.default_child)}
    assert all(alarm["Properties"]["AlarmActions"] == [topic] for alarm in alarms.values())
    (dashboard,) = resources_of(template, "AWS::CloudWatch::Dashboard").values()
    assert dashboard["Properties"]["DashboardName"] == "timers"
