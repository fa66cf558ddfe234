"""A limited target in CloudWatch: ``metric_target_lateness``, ``metric_target_waiting`` and
``metric_target_held_back`` read what the dispatcher emits for a target with flow control (its name as the
``Target`` dimension); ``add_alarms(target_lateness=...)`` alarms on a target's lateness; the dashboard has a row
per limited target and nothing new without one; a target without flow control (or no target at all) is refused."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_sqs as sqs
from construct_stacks import ENV, Built
from alarm_helpers import alarm_props, body_parts, reads, ref

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._alarms import ALARM_IDS
from cdk_delayed_scheduler._contract import contract

#: The ``Limited`` stack's targets, as their ``flow_control`` (``None``: none), in the order they are added.
LIMITS = {"default": targets.FlowControl(rate=10), "email": targets.FlowControl(max_in_flight=5), "plain": None}
#: ``add_alarms(target_lateness=...)`` in the ``Limited`` stack.
TARGET_LATENESS = {"default": cdk.Duration.minutes(5), "email": cdk.Duration.millis(1500)}


@pytest.fixture(scope="module")
def limited() -> Built:
    """A scheduler with two limited targets and one without limits, its alarms (a lateness alarm for each
    limited target, every 2 minutes for 4 periods) and its dashboard."""
    stack = cdk.Stack(cdk.App(), "Limited", env=ENV)

    def target(name: str) -> targets.SqsSendMessage:
        return targets.SqsSendMessage(sqs.Queue(stack, f"Queue-{name}", enforce_ssl=True), flow_control=LIMITS[name])

    scheduler = DelayedScheduler(stack, "Timers", target=target("default"))
    for name in list(LIMITS)[1:]:
        scheduler.add_target(name, target(name))
    alarms = scheduler.add_alarms(target_lateness=TARGET_LATENESS, period=cdk.Duration.minutes(2), evaluation_periods=4)
    dashboard = scheduler.add_dashboard()
    return Built(stack, scheduler, alarms=alarms, dashboard=dashboard)


def test_each_target_metric_reads_the_dispatchers_figure_for_that_target(limited):
    """Namespace, name, statistic and dimensions as the dispatcher's EMF record has them: the service, the
    dispatcher's function name and the target's name."""
    s, stack = limited.scheduler, limited.stack
    expected = {
        "metric_target_lateness": (contract.LATENESS_METRIC, "p99"),
        "metric_target_waiting": (contract.WAITING_FOR_ROOM_METRIC, "Sum"),
        "metric_target_held_back": (contract.HELD_BACK_METRIC, "Sum"),
    }
    for method, (name, statistic) in expected.items():
        for target in ("default", "email"):
            metric = getattr(s, method)(target)
            assert (metric.namespace, metric.metric_name, metric.statistic, metric.period.to_seconds()) == (
                contract.DEFAULT_METRICS_NAMESPACE, name, statistic, 300), method
            assert stack.resolve(metric.dimensions) == {
                **contract.METRIC_DIMENSIONS, "FunctionName": ref(limited, s.dispatcher_function),
                contract.TARGET_DIMENSION: target}, method
            changed = getattr(s, method)(target, period=cdk.Duration.minutes(1), statistic="Maximum", label="x")
            assert (changed.period.to_seconds(), changed.statistic, changed.label) == (60, "Maximum", "x"), method
    assert s.metric_target_lateness("email").unit == cloudwatch.Unit.MILLISECONDS


def test_one_metric_target_method_per_figure_the_dispatcher_emits_for_a_limited_target(limited):
    """Every figure of a limited target's EMF record (``contract.json``) has a ``metric_target_*`` method."""
    s = limited.scheduler
    readers = {getattr(s, name)("email").metric_name for name in dir(s) if name.startswith("metric_target_")}
    assert readers == {contract.LATENESS_METRIC, contract.WAITING_FOR_ROOM_METRIC, contract.HELD_BACK_METRIC}


@pytest.mark.parametrize("method", ["metric_target_lateness", "metric_target_waiting", "metric_target_held_back"])
def test_a_target_without_flow_control_or_no_target_at_all_is_refused_naming_target_name(limited, method):
    read = getattr(limited.scheduler, method)
    with pytest.raises(ValueError, match="target_name: target 'plain' has no flow_control, so the dispatcher emits no "
                                         "figures of its own for it"):
        read("plain")
    with pytest.raises(ValueError, match="target_name: must be the name of a registered target with flow_control "
                                         r"\('default', 'email'\), got 'sms'"):
        read("sms")


def test_a_scheduler_without_limited_targets_says_it_has_none(stacks):
    with pytest.raises(ValueError, match=r"target_name: must be .* \(this scheduler has none\)"):
        stacks["defaults"].scheduler.metric_target_waiting("email")


def test_target_lateness_alarms_go_off_at_or_above_each_targets_duration(limited):
    s, alarms = limited.scheduler, limited.extra["alarms"]
    assert list(alarms.target_lateness) == ["default", "email"]
    for target, threshold_ms in (("default", 300_000), ("email", 1500)):
        props = alarm_props(limited, alarms.target_lateness[target])
        dimensions = {**contract.METRIC_DIMENSIONS, "FunctionName": ref(limited, s.dispatcher_function),
                      contract.TARGET_DIMENSION: target}
        assert reads(props) == (contract.DEFAULT_METRICS_NAMESPACE, contract.LATENESS_METRIC, "p99", dimensions,
                                threshold_ms, 4, 120), target
        assert props["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
        assert (props["TreatMissingData"], props["Unit"]) == ("notBreaching", "Milliseconds")
        assert repr(target) in props["AlarmDescription"]
        assert alarms.target_lateness[target].node.path == f"Limited/Timers/Alarms/TargetLateness{target}"
    assert alarms.all == [getattr(alarms, name) for name in ALARM_IDS] + list(alarms.target_lateness.values())


def test_without_target_lateness_there_is_no_target_alarm(stacks):
    alarms = stacks["alarms"].extra["alarms"]
    assert alarms.target_lateness == {} and len(alarms.all) == len(ALARM_IDS)


@pytest.mark.parametrize("target_lateness, message", [
    ({"plain": cdk.Duration.minutes(1)}, "target_lateness: target 'plain' has no flow_control"),
    ({"sms": cdk.Duration.minutes(1)}, "target_lateness: must be the name of a registered target with flow_control"),
    ({"email": 60}, r"target_lateness\['email'\]: must be a Duration"),
    ({"email": cdk.Duration.days(2)}, r"target_lateness\['email'\]: must be between 0.001 and 86400 seconds"),
    ({"email": cdk.Duration.seconds(cdk.Token.as_number(cdk.Aws.NO_VALUE))},
     r"target_lateness\['email'\]: must be a Duration known at synthesis"),
    (["email"], "target_lateness: must be a mapping of target name to Duration"),
])
def test_a_bad_target_lateness_is_refused_naming_it(target_lateness, message):
    stack = cdk.Stack(cdk.App(), "Refused")
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Queue")))
    for name, flow_control in LIMITS.items():
        if name != "default":
            scheduler.add_target(name, targets.SqsSendMessage(sqs.Queue(stack, f"Queue-{name}"),
                                                              flow_control=flow_control))
    with pytest.raises(ValueError, match=message):
        scheduler.add_alarms(target_lateness=target_lateness)
    assert scheduler.node.try_find_child("Alarms") is None  # refused before anything is added


def _widgets(b: Built) -> list[dict]:
    """The dashboard's widgets, each reference CloudFormation resolves as ``"<ref>"``."""
    parts = body_parts(b, b.extra["dashboard"])
    return json.loads("".join(part if isinstance(part, str) else "<ref>" for part in parts))["widgets"]


def test_the_dashboard_has_a_row_per_limited_target_before_the_alarms_states(limited, stacks):
    widgets, unlimited = _widgets(limited), _widgets(stacks["alarms"])
    graphs = [w for w in widgets if w["type"] == "metric"]
    baseline = [w for w in unlimited if w["type"] == "metric"]
    rows = graphs[len(baseline):]
    assert [w["properties"]["title"] for w in graphs[:len(baseline)]] == [w["properties"]["title"] for w in baseline]
    assert [w["properties"]["title"] for w in rows] == [
        f"Target {target}: {what}" for target in ("default", "email")
        for what in ("lateness (ms)", "waiting for room", "held back")]
    assert len({w["y"] for w in rows}) == 2 and sum(w["width"] for w in rows) == 48  # two full rows
    for widget, figures in zip(rows[:3], ([contract.LATENESS_METRIC] * 2, [contract.WAITING_FOR_ROOM_METRIC],
                                          [contract.HELD_BACK_METRIC])):
        metrics = widget["properties"]["metrics"]
        assert [m[1] for m in metrics] == figures
        assert all(m[m.index(contract.TARGET_DIMENSION) + 1] == "default" for m in metrics)
    assert [m[-1].get("stat") for m in rows[0]["properties"]["metrics"]] == ["p50", "p99"]
    assert widgets[-1]["type"] == "alarm" and len(widgets[-1]["properties"]["alarms"]) == len(ALARM_IDS) + 2


def test_a_dashboard_without_limited_targets_has_no_target_row(stacks):
    for name in ("alarms", "alarms_custom"):
        titles = [w["properties"].get("title", "") for w in _widgets(stacks[name])]
        assert titles and not [t for t in titles if t.startswith("Target ")], name
