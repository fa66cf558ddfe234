"""The flow queue (``flow_queue``, ``FlowQueue``): made with the first target with ``flow_control``, whether the
default target, an extra target or one added later, and only then (a scheduler without limits has the queues,
mappings and variables it always had); one however many targets are limited; made, read and sent to exactly as the
delayer queue is (its settings, its key, its event source mapping to the dispatcher, the functions that may send to
it); named to the four functions as ``FLOW_QUEUE_URL``; its depth a metric and a line of the dashboard's queues graph,
whenever the dashboard is made; and clean under cdk-nag and cfn-lint."""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template
from alarm_helpers import body_parts
from construct_helpers import cfn_lint, grants, nag_clean_callback, nag_findings, resource_names, resources_of
from construct_stacks import ENV, FUNCTION_IDS, Built, environment, logical_id

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract

FLOW_QUEUE_URL = contract.ENV.flow_queue_url
#: The ``Later`` stack's dispatcher props: each differs from its default, so a setting the flow queue or its mapping
#: took from elsewhere than the delayer queue's would show.
DISPATCHER_PROPS: dict[str, Any] = dict(
    dispatcher_timeout=cdk.Duration.seconds(120), max_receive_count=3, dispatcher_batch_size=5,
    dispatcher_max_batching_window=cdk.Duration.seconds(2), dispatcher_max_concurrency=7)


def _queue(stack: cdk.Stack, name: str, limits: targets.FlowControl | None = None) -> targets.SqsSendMessage:
    return targets.SqsSendMessage(sqs.Queue(stack, f"Queue-{name}", enforce_ssl=True), flow_control=limits)


def _by_default(app: cdk.App) -> Built:
    """The default target limited, and an extra target limited too: every other prop at its default."""
    stack = cdk.Stack(app, "ByDefault", env=ENV)
    scheduler = DelayedScheduler(stack, "Timers", target=_queue(stack, "default", targets.FlowControl(rate=10)),
                                 extra_targets={"plain": _queue(stack, "plain"),
                                                "email": _queue(stack, "email", targets.FlowControl(max_in_flight=5))})
    dashboard = scheduler.add_dashboard()  # made after the flow queue
    return Built(stack, scheduler, dashboard=dashboard)


def _later(app: cdk.App) -> Built:
    """No limited target at first (the dashboard made then), then two added with ``add_target``; a customer managed
    key and every dispatcher prop changed."""
    stack = cdk.Stack(app, "Later", env=ENV)
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    scheduler = DelayedScheduler(stack, "Timers", target=_queue(stack, "default"), encryption_key=key,
                                 **DISPATCHER_PROPS)
    dashboard = scheduler.add_dashboard()  # made before the flow queue
    before = scheduler.flow_queue
    scheduler.add_target("email", _queue(stack, "email", targets.FlowControl(rate=100, max_in_flight=20)))
    scheduler.add_target("sms", _queue(stack, "sms", targets.FlowControl(rate=5)))
    return Built(stack, scheduler, key=key, dashboard=dashboard, before=before)


@pytest.fixture(scope="module")
def limited() -> dict[str, Built]:
    """Each stack synthesized in an app of its own."""
    return {"ByDefault": _by_default(cdk.App()), "Later": _later(cdk.App())}


def _queues(b: Built) -> dict[str, dict]:
    """The scheduler's queues, by construct path below it."""
    names = resource_names(b.stack, "Timers")
    return {names[k]: v for k, v in resources_of(b.json, "AWS::SQS::Queue").items() if k.startswith("Timers")}


def _mappings(b: Built) -> dict[str, dict]:
    """The dispatcher's event source mappings' properties, by the construct path of the queue each reads."""
    names = resource_names(b.stack, "Timers")
    return {names[props["EventSourceArn"]["Fn::GetAtt"][0]]: props
            for props in (m["Properties"] for m in resources_of(b.json, "AWS::Lambda::EventSourceMapping").values())
            if props["FunctionName"] == {"Ref": logical_id(b, b.scheduler.dispatcher_function)}}


def _reference(part: dict) -> str:
    """A reference in a dashboard's body as ``<logical id>`` (``Ref``) or ``<logical id.attribute>``
    (``Fn::GetAtt``)."""
    return f"<{part['Ref']}>" if "Ref" in part else f"<{'.'.join(part['Fn::GetAtt'])}>"


def _queue_graph(b: Built) -> dict:
    """The properties of the dashboard's queues graph, each reference CloudFormation resolves as ``_reference``
    shows it."""
    parts = body_parts(b, b.extra["dashboard"])
    widgets = json.loads("".join(p if isinstance(p, str) else _reference(p) for p in parts))
    (graph,) = [w for w in widgets["widgets"] if w["properties"].get("title") == "Queues (messages)"]
    return graph["properties"]


# --- no limited target: nothing new ------------------------------------------------------------
@pytest.mark.parametrize("name", ["defaults", "custom", "fanout"])
def test_a_scheduler_without_a_limited_target_has_no_flow_queue(stacks, name):
    b = stacks[name]
    assert b.scheduler.flow_queue is None and b.scheduler.node.try_find_child("FlowQueue") is None
    assert sorted(_queues(b)) == ["DeadLetterQueue", "DelayerQueue"]
    assert sorted(_mappings(b)) == ["DelayerQueue"]
    assert len([k for k in resources_of(b.json, "AWS::Lambda::EventSourceMapping") if k.startswith("Timers")]) == 2
    for fid in FUNCTION_IDS:
        assert FLOW_QUEUE_URL not in environment(b, fid), fid


def test_without_a_flow_queue_its_depth_is_refused_naming_flow_queue(stacks):
    with pytest.raises(ValueError, match=r"^metric_flow_queue_depth: this scheduler has no flow queue \(flow_queue is "
                                         r"None\): it is made with the first target with flow_control$"):
        stacks["defaults"].scheduler.metric_flow_queue_depth()


def test_without_a_flow_queue_the_queues_graph_has_the_delayer_and_dead_letter_queues_only(stacks):
    b = stacks["alarms"]
    graph = _queue_graph(b)
    assert [m[-1]["label"] for m in graph["metrics"] if m[-1].get("visible", True)] == ["delayer queue",
                                                                                       "dead-letter queue"]
    assert "flow" not in json.dumps(graph)


# --- one flow queue, made like the delayer queue ------------------------------------------------
@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_the_first_limited_target_makes_one_flow_queue_however_many_are_limited(limited, name):
    b = limited[name]
    assert sorted(_queues(b)) == ["DeadLetterQueue", "DelayerQueue", "FlowQueue"]
    assert b.scheduler.flow_queue is b.scheduler.node.find_child("FlowQueue")
    assert len(b.scheduler._limited_target_names()) == 2


def test_a_target_added_later_makes_it_then(limited):
    assert limited["Later"].extra["before"] is None


@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_the_flow_queue_has_the_delayer_queues_settings_and_dead_letter_queue(limited, name):
    """The same properties, all of them: visibility timeout, retention, encryption, and the redrive to the same
    dead-letter queue after the same receive count."""
    b = limited[name]
    queues = _queues(b)
    flow, delayer = queues["FlowQueue"]["Properties"], queues["DelayerQueue"]["Properties"]
    assert flow == delayer
    dispatcher_timeout = int(environment(b, "DispatcherFunction")[contract.ENV.dispatcher_timeout_seconds])
    assert flow["VisibilityTimeout"] == contract.VISIBILITY_TIMEOUT_FACTOR * dispatcher_timeout
    assert flow["MessageRetentionPeriod"] == contract.DELAYER_RETENTION_SECONDS
    assert flow["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": [logical_id(b, b.scheduler.dead_letter_queue), "Arn"]},
        "maxReceiveCount": int(environment(b, "DispatcherFunction")[contract.ENV.max_receive_count])}
    if name == "Later":
        assert (dispatcher_timeout, flow["RedrivePolicy"]["maxReceiveCount"]) == (120, 3)


@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_the_flow_queue_refuses_requests_without_tls(limited, name):
    b = limited[name]
    flow = logical_id(b, b.scheduler.flow_queue)
    (policy,) = [p["Properties"] for p in resources_of(b.json, "AWS::SQS::QueuePolicy").values()
                 if p["Properties"]["Queues"] == [{"Ref": flow}]]
    assert policy["PolicyDocument"]["Statement"] == [{
        "Action": "sqs:*", "Condition": {"Bool": {"aws:SecureTransport": "false"}}, "Effect": "Deny",
        "Principal": {"AWS": "*"}, "Resource": {"Fn::GetAtt": [flow, "Arn"]}}]


def test_with_a_customer_managed_key_the_flow_queue_uses_it(limited):
    b = limited["Later"]
    flow = _queues(b)["FlowQueue"]["Properties"]
    assert flow["KmsMasterKeyId"] == {"Fn::GetAtt": [logical_id(b, b.extra["key"]), "Arn"]}
    assert "SqsManagedSseEnabled" not in flow
    assert _queues(limited["ByDefault"])["FlowQueue"]["Properties"]["SqsManagedSseEnabled"] is True


@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_the_dispatcher_reads_the_flow_queue_as_it_reads_the_delayer_queue(limited, name):
    b = limited[name]
    mappings = _mappings(b)
    assert sorted(mappings) == ["DelayerQueue", "FlowQueue"]
    flow, delayer = ({k: v for k, v in mappings[queue].items() if k != "EventSourceArn"}
                     for queue in ("FlowQueue", "DelayerQueue"))
    assert flow == delayer
    assert flow["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    if name == "Later":
        assert (flow["BatchSize"], flow["MaximumBatchingWindowInSeconds"], flow["ScalingConfig"]) == (
            5, 2, {"MaximumConcurrency": 7})
    else:
        assert flow["BatchSize"] == 10 and "ScalingConfig" not in flow


@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_every_function_is_told_the_flow_queues_url(limited, name):
    b = limited[name]
    for fid in FUNCTION_IDS:
        assert environment(b, fid)[FLOW_QUEUE_URL] == {"Ref": logical_id(b, b.scheduler.flow_queue)}, fid


@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_each_principal_may_do_on_the_flow_queue_exactly_what_it_may_on_the_delayer_queue(limited, name):
    """The api function, the enqueuer and the dispatcher send to it; the dispatcher's mapping consumes it; the
    sweeper and everyone else have nothing on it."""
    b = limited[name]
    granted = grants(b.json, resource_names(b.stack, "Timers"))

    def on(principal: str, queue: str) -> set[str]:
        return {action for action, resource in granted[principal] if resource == f"<{queue}.Arn>"}

    for principal in granted:
        assert on(principal, "FlowQueue") == on(principal, "DelayerQueue"), principal
    for fid in ("ApiFunction", "EnqueuerFunction", "DispatcherFunction"):
        assert "sqs:SendMessage" in on(f"{fid}Role", "FlowQueue"), fid
    assert {"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility"} <= on(
        "DispatcherFunctionRole", "FlowQueue")
    assert on("SweeperFunctionRole", "FlowQueue") == set()


def test_a_reserved_concurrency_the_pollers_of_both_queues_would_outgrow_is_refused_naming_it():
    """Each queue's pollers start up to ``dispatcher_max_concurrency`` invocations: with a flow queue, twice that
    must be reserved, else throttled batches count as receives."""
    stack = cdk.Stack(cdk.App(), "Reserved")
    scheduler = DelayedScheduler(stack, "Timers", target=_queue(stack, "default"), dispatcher_max_concurrency=5,
                                 dispatcher_reserved_concurrency=9)
    with pytest.raises(ValueError, match=r"^dispatcher_reserved_concurrency: must be >= 2 x dispatcher_max_concurrency "
                                         r"\(10\) with a target with flow_control \(target 'email'\), got 9: "):
        scheduler.add_target("email", _queue(stack, "email", targets.FlowControl(rate=5)))
    assert scheduler.flow_queue is None and "email" not in scheduler.target_names
    enough = DelayedScheduler(stack, "Enough", target=_queue(stack, "limited", targets.FlowControl(rate=5)),
                              dispatcher_max_concurrency=5, dispatcher_reserved_concurrency=10)
    assert enough.flow_queue is not None


# --- its depth -----------------------------------------------------------------------------------
def test_the_flow_queue_depth_is_its_visible_plus_delayed_messages(limited):
    b = limited["ByDefault"]
    depth = b.scheduler.metric_flow_queue_depth()
    assert isinstance(depth, cloudwatch.MathExpression)
    assert (depth.expression, depth.label, depth.period.to_seconds()) == (
        "flowVisible + flowDelayed", "Flow queue depth", 300)
    queue = {"QueueName": {"Fn::GetAtt": [logical_id(b, b.scheduler.flow_queue), "QueueName"]}}
    used = {key: (m.namespace, m.metric_name, m.statistic, b.stack.resolve(m.dimensions))
            for key, m in depth.using_metrics.items()}
    assert used == {"flowVisible": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", queue),
                    "flowDelayed": ("AWS/SQS", "ApproximateNumberOfMessagesDelayed", "Maximum", queue)}
    changed = b.scheduler.metric_flow_queue_depth(period=cdk.Duration.minutes(1), statistic="Average", label="Backlog",
                                                  color="#ff0000")
    assert (changed.period.to_seconds(), changed.label, changed.color) == (60, "Backlog", "#ff0000")
    assert {m.statistic for m in changed.using_metrics.values()} == {"Average"}


def test_the_flow_and_delayer_depths_may_share_a_graph():
    """Their metric ids differ, which CloudWatch requires of two expressions in one graph (CDK refuses two metrics
    with the same id at synthesis)."""
    stack = cdk.Stack(cdk.App(), "Both")
    s = DelayedScheduler(stack, "Timers", target=_queue(stack, "default", targets.FlowControl(rate=10)))
    cloudwatch.Dashboard(stack, "Depths", widgets=[[cloudwatch.GraphWidget(
        left=[s.metric_delayer_queue_depth(), s.metric_flow_queue_depth()])]])
    body = json.dumps(Template.from_stack(stack).find_resources("AWS::CloudWatch::Dashboard"))
    assert "visible + delayed" in body and "flowVisible + flowDelayed" in body


@pytest.mark.parametrize("name", ["ByDefault", "Later"])
def test_the_queues_graph_shows_the_flow_queues_depth_whether_made_before_or_after_it(limited, name):
    """``ByDefault`` made its dashboard after the flow queue, ``Later`` before: the graph is the same."""
    b = limited[name]
    graph = _queue_graph(b)
    assert [m[-1]["label"] for m in graph["metrics"] if m[-1].get("visible", True)] == [
        "delayer queue", "dead-letter queue", "flow queue"]
    flow = f"<{logical_id(b, b.scheduler.flow_queue)}.QueueName>"
    lines = {m[-1].get("id"): m[:-1] for m in graph["metrics"]}
    assert lines["flowVisible"] == ["AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", flow]
    assert lines["flowDelayed"] == ["AWS/SQS", "ApproximateNumberOfMessagesDelayed", "QueueName", flow]
    assert {"expression": "flowVisible + flowDelayed", "label": "flow queue"} in [m[-1] for m in graph["metrics"]]


# --- cdk-nag and cfn-lint --------------------------------------------------------------------------
@pytest.mark.slow
def test_cdk_nag_and_cfn_lint_report_nothing_on_a_flow_queue_with_or_without_a_key(tmp_path):
    """A queue made beside them without TLS or a dead-letter queue is reported, so the check sees cdk-nag's SQS
    rules run."""
    app = cdk.App(outdir=str(tmp_path))
    for name, keyed in (("Plain", False), ("Keyed", True)):
        stack = cdk.Stack(app, name)
        key = kms.Key(stack, "Key", enable_key_rotation=True) if keyed else None
        scheduler = DelayedScheduler(stack, "Timers", encryption_key=key, target=targets.LambdaInvoke(
            nag_clean_callback(stack), flow_control=targets.FlowControl(rate=10, max_in_flight=2)))
        assert scheduler.flow_queue is not None
    sqs.Queue(stack, "Unacknowledged")
    found = nag_findings(app, tmp_path)
    assert {path for _, _, path in found} == {"Keyed/Unacknowledged/Resource"}, found
    assert {rule.split("[")[0] for rule, _, _ in found} >= {"AwsSolutions-SQS3", "AwsSolutions-SQS4"}, found
    matches = cfn_lint([tmp_path / "Plain.template.json", tmp_path / "Keyed.template.json"])
    assert [m for m in matches if m["Level"] == "Error"] == []
    assert {m["Rule"]["Id"] for m in matches} <= {"W3005"}
