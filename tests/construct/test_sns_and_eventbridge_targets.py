"""``targets.SnsPublish`` and ``targets.EventBridgePutEvents``: the description each renders (the
contract's fields), the dispatcher's exact grant for each (one action on that topic or bus, plus a
topic's customer managed key's producer actions), and bad input refused with the prop named."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._wiring import KEY_PRODUCER
from construct_stacks import FANOUT_STATE_MACHINE_ARN, logical_id, policy, rendered_targets


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S")


def test_each_topic_and_bus_is_rendered_with_the_contracts_fields(stacks):
    b = stacks["fanout"]
    alerts, ordered, bus = (logical_id(b, b.extra[name]) for name in ("alerts", "ordered", "bus"))
    assert rendered_targets(b) == {
        "default": {"type": "sns", "topicArn": f"<Ref {alerts}>", "fifo": False},
        "ordered": {"type": "sns", "topicArn": f"<Ref {ordered}>", "fifo": True, "messageGroupId": "orders"},
        "events": {"type": "eventbridge", "eventBusArn": f"<GetAtt {bus}.Arn>", "detailType": "Timer due",
                   "source": "com.example.timers"},
        "audit": {"type": "eventbridge", "eventBusArn": rendered_targets(b)["audit"]["eventBusArn"],
                  "detailType": "Audit timer", "source": "com.example.audit"},
        "workflow": {"type": "stepfunctions", "stateMachineArn": FANOUT_STATE_MACHINE_ARN},
    }
    assert rendered_targets(b)["audit"]["eventBusArn"].endswith(":event-bus/default")
    assert b.scheduler.target_names == ["default", "ordered", "events", "audit", "workflow"]


def test_the_dispatcher_may_publish_to_each_topic_and_use_its_key_as_a_producer_only(stacks):
    b = stacks["fanout"]
    alerts, ordered = logical_id(b, b.extra["alerts"]), logical_id(b, b.extra["ordered"])
    statements = policy(b, "DispatcherFunction")
    assert [s for s in statements if "sns:Publish" in s["Action"]] == [
        {"Action": "sns:Publish", "Effect": "Allow", "Resource": {"Ref": alerts}},
        {"Action": "sns:Publish", "Effect": "Allow", "Resource": {"Ref": ordered}},
    ]
    key = logical_id(b, b.extra["alerts_key"])
    assert [s for s in statements if s["Resource"] == {"Fn::GetAtt": [key, "Arn"]}] == [
        {"Action": list(KEY_PRODUCER), "Effect": "Allow", "Resource": {"Fn::GetAtt": [key, "Arn"]}}]
    assert not any(action.startswith("sns:") and action != "sns:Publish"
                   for s in statements for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"]))


def test_the_dispatcher_may_put_events_on_each_bus_and_nothing_else_there(stacks):
    b = stacks["fanout"]
    statements = [s for s in policy(b, "DispatcherFunction") if "events:" in str(s["Action"])]
    bus = logical_id(b, b.extra["bus"])
    assert statements[0] == {"Action": "events:PutEvents", "Effect": "Allow", "Resource": {"Fn::GetAtt": [bus, "Arn"]}}
    [default_bus] = statements[1:]
    assert default_bus["Action"] == "events:PutEvents"
    assert cdk.Stack.of(b.stack).resolve(b.extra["bus"].event_bus_arn) == {"Fn::GetAtt": [bus, "Arn"]}
    assert ":event-bus/default" in str(default_bus["Resource"])


# --- bad input, refused with the prop named --------------------------------------------------------


def test_a_resource_of_another_kind_is_refused_with_the_target_that_takes_it(stack):
    queue, topic = sqs.Queue(stack, "Q"), sns.Topic(stack, "T")
    bus = events.EventBus(stack, "B")
    with pytest.raises(ValueError, match=r"^topic: must be an SNS topic \(aws_sns.ITopic\), got Queue; "
                                         r"for a queue use targets.SqsSendMessage\(queue\)$"):
        targets.SnsPublish(queue)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^bus: must be an EventBridge event bus \(aws_events.IEventBus\), got "
                                         r"Topic; for a topic use targets.SnsPublish\(topic\)$"):
        targets.EventBridgePutEvents(topic, detail_type="d", source="s")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^queue: .* got EventBus; for an event bus use "):
        targets.SqsSendMessage(bus)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^target: .*got Topic; wrap the topic: targets.SnsPublish\(topic\)$"):
        DelayedScheduler(stack, "Timers", target=topic)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^target: .*got EventBus; wrap the event bus: "
                                         r"targets.EventBridgePutEvents\(bus, detail_type=..., source=...\)$"):
        DelayedScheduler(stack, "Timers2", target=bus)  # type: ignore[arg-type]


def test_a_message_group_is_for_a_fifo_topic_only_and_follows_snss_rule(stack):
    standard, fifo = sns.Topic(stack, "Standard"), sns.Topic(stack, "Fifo", fifo=True, topic_name="f.fifo")
    with pytest.raises(ValueError, match=r"^message_group_id: only a FIFO topic takes a message group id$"):
        targets.SnsPublish(standard, message_group_id="g")
    with pytest.raises(ValueError, match=r"^message_group_id: must be 1-128 characters of letters, digits and "
                                         r"punctuation, got 'a b'$"):
        targets.SnsPublish(fifo, message_group_id="a b")
    with pytest.raises(ValueError, match=r"^message_group_id: must be 1-128 characters"):
        targets.SnsPublish(fifo, message_group_id="g" * 129)
    assert targets.SnsPublish(fifo, message_group_id="g" * 128).message_group_id == "g" * 128
    imported = sns.Topic.from_topic_arn(stack, "Imported", "arn:aws:sns:eu-west-1:123456789012:orders.fifo")
    assert targets.SnsPublish(imported, message_group_id="orders").topic is imported


@pytest.mark.parametrize(("props", "message"), [
    ({"detail_type": "", "source": "s"}, r"^detail_type: must be 1-128 characters, got 0$"),
    ({"detail_type": "d" * 129, "source": "s"}, r"^detail_type: must be 1-128 characters, got 129$"),
    ({"detail_type": "d", "source": ""}, r"^source: must be 1-256 characters, got 0$"),
    ({"detail_type": "d", "source": "s" * 257}, r"^source: must be 1-256 characters, got 257$"),
    ({"detail_type": "d", "source": "aws.timers"}, r"^source: must not start with 'aws.' \(reserved for AWS "
                                                   r"services' events\), got 'aws.timers'$"),
    ({"detail_type": 7, "source": "s"}, r"^detail_type: must be a string, got int$"),
])
def test_a_detail_type_or_source_eventbridge_would_refuse_is_refused_at_synth(stack, props, message):
    with pytest.raises(ValueError, match=message):
        targets.EventBridgePutEvents(events.EventBus(stack, "Bus"), **props)


def test_the_longest_detail_type_and_source_and_tokens_are_accepted(stack):
    bus = events.EventBus(stack, "Bus")
    longest = targets.EventBridgePutEvents(bus, detail_type="d" * 128, source="s" * 256)
    assert (len(longest.detail_type), len(longest.source)) == (128, 256)
    from_parameter = cdk.CfnParameter(stack, "Source").value_as_string
    assert targets.EventBridgePutEvents(bus, detail_type="Timer due", source=from_parameter).source == from_parameter
    assert targets.EventBridgePutEvents(bus, detail_type="d", source="awsome.timers").source == "awsome.timers"

