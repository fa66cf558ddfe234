"""``add_alarms`` and ``add_dashboard``: each alarm's metric, threshold, comparison, periods and action as the
template holds them; the API's alarm per kind of API, none without one; the dashboard's widgets; the
construct IDs; one call each; bad input named."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from construct_helpers import resources_of
from alarm_helpers import alarm_props, body_parts, reads, ref
from construct_stacks import CUSTOM_ALARMS, Built

from cdk_delayed_scheduler._alarms import ALARM_IDS
from cdk_delayed_scheduler._contract import contract


def queue_name(b: Built, queue) -> dict:
    return {"Fn::GetAtt": [b.stack.get_logical_id(queue.node.default_child), "QueueName"]}


def expected_alarms(b: Built, scheduler, threshold_ms: float, iterator_ms: float, stalled_s: float, periods: int,
                    period: int, namespace: str = "DelayedScheduler") -> dict[str, tuple]:
    s = scheduler
    service = dict(contract.METRIC_DIMENSIONS)
    return {
        "dead_letter_queue_not_empty": ("AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum",
                                        {"QueueName": queue_name(b, s.dead_letter_queue)}, 0, 1, period),
        "lateness": (namespace, contract.LATENESS_METRIC, "p99",
                     {**service, "FunctionName": ref(b, s.dispatcher_function)}, threshold_ms, periods, period),
        "dispatcher_errors": ("AWS/Lambda", "Errors", "Sum", {"FunctionName": ref(b, s.dispatcher_function)}, 0,
                              periods, period),
        "dispatcher_throttles": ("AWS/Lambda", "Throttles", "Sum", {"FunctionName": ref(b, s.dispatcher_function)}, 0,
                                 periods, period),
        "enqueuer_iterator_age": ("AWS/Lambda", "IteratorAge", "Maximum", {"FunctionName": ref(b, s.enqueuer_function)},
                                  iterator_ms, periods, period),
        "sweeper_errors": ("AWS/Lambda", "Errors", "Sum", {"FunctionName": ref(b, s.sweeper_function)}, 0, periods,
                           period),
        "sweeps_stopped_early": (namespace, contract.SWEEPS_STOPPED_EARLY_METRIC, "Sum",
                                 {**service, "FunctionName": ref(b, s.sweeper_function)}, 0, periods, period),
        "delivery_stalled": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum",
                             {"QueueName": queue_name(b, s.delayer_queue)}, stalled_s, periods, period),
    }


def test_each_default_alarm_reads_its_figure_above_its_threshold_and_publishes_to_the_topic(stacks):
    b = stacks["alarms"]
    s, alarms = b.scheduler, b.extra["alarms"]
    # the window (870 s) plus two visibility timeouts (2 x 6 x 60 s): two retries of a failing target
    expected = expected_alarms(b, s, threshold_ms=1000, iterator_ms=60_000, stalled_s=870 + 720, periods=3, period=60)
    expected["api_server_errors"] = ("AWS/ApiGateway", "5xx", "Sum", {"ApiId": ref(b, s.api), "Stage": "$default"},
                                     0, 3, 60)
    assert {name: reads(alarm_props(b, getattr(alarms, name))) for name in ALARM_IDS} == expected
    for alarm in alarms.all:
        props = alarm_props(b, alarm)
        assert props["ComparisonOperator"] == "GreaterThanThreshold"
        assert props["TreatMissingData"] == "notBreaching"
        assert props["AlarmActions"] == [ref(b, b.extra["ops"])]
        assert props["AlarmDescription"]
    assert alarm_props(b, alarms.lateness)["Unit"] == "Milliseconds"
    assert len(resources_of(b.json, "AWS::CloudWatch::Alarm")) == len(ALARM_IDS) == len(alarms.all)


def test_every_parameter_changes_its_alarms_and_the_rest_api_alarm_reads_5xxerror_on_its_stage(stacks):
    b = stacks["alarms_custom"]
    s, alarms = b.scheduler, b.extra["alarms"]
    expected = expected_alarms(b, s, threshold_ms=250, iterator_ms=30_000, stalled_s=600 + 300, periods=5, period=120)
    expected["dead_letter_queue_not_empty"] = expected["dead_letter_queue_not_empty"][:5] + (1, 120)
    expected["api_server_errors"] = ("AWS/ApiGateway", "5XXError", "Sum",
                                     {"ApiName": "Api", "Stage": ref(b, s.api_stage)}, 0, 5, 120)
    assert {name: reads(alarm_props(b, getattr(alarms, name))) for name in ALARM_IDS} == expected
    assert {json.dumps(alarm_props(b, a)["AlarmActions"]) for a in alarms.all} == {json.dumps([ref(b, b.extra["pager"])])}
    assert CUSTOM_ALARMS["evaluation_periods"] == 5


def test_a_scheduler_without_an_api_has_no_api_alarm_and_no_api_widget(stacks):
    b = stacks["alarms_custom"]
    quiet, alarms = b.extra["quiet"], b.extra["quiet_alarms"]
    assert alarms.api_server_errors is None and len(alarms.all) == len(ALARM_IDS) - 1
    paths = {a.node.path for a in quiet.node.find_all() if isinstance(a, cloudwatch.Alarm)}
    assert paths == {f"AlarmsCustom/Quiet/Alarms/{i}" for n, i in ALARM_IDS.items() if n != "api_server_errors"}
    assert alarm_props(b, alarms.dead_letter_queue_not_empty).get("AlarmActions") is None  # no action given
    with pytest.raises(ValueError, match="metric_api_server_errors: this scheduler has no API"):
        quiet.metric_api_server_errors()
    assert "API 5xx" not in dashboard_body(b, b.extra["quiet_dashboard"])


def test_alarm_and_dashboard_construct_ids_are_stable(stacks):
    b = stacks["alarms"]
    alarms = b.extra["alarms"]
    assert {name: getattr(alarms, name).node.path for name in ALARM_IDS} == {
        name: f"Alarms/Timers/Alarms/{construct_id}" for name, construct_id in ALARM_IDS.items()}
    assert b.extra["dashboard"].node.path == "Alarms/Timers/Dashboard"


def test_an_encrypted_topic_lets_cloudwatch_use_its_key(stacks):
    b = stacks["alarms"]
    key = b.json["Resources"][b.stack.get_logical_id(b.extra["key"].node.default_child)]
    granted = [st for st in key["Properties"]["KeyPolicy"]["Statement"]
               if st["Principal"] == {"Service": "cloudwatch.amazonaws.com"}]
    assert [sorted(st["Action"]) for st in granted] == [["kms:Decrypt", "kms:GenerateDataKey"]]


def dashboard_body(b: Built, dashboard: cloudwatch.Dashboard) -> str:
    props = b.json["Resources"][b.stack.get_logical_id(dashboard.node.default_child)]["Properties"]
    return json.dumps(props["DashboardBody"])


def test_the_dashboard_graphs_every_figure_and_the_alarms_states(stacks):
    b = stacks["alarms"]
    body = dashboard_body(b, b.extra["dashboard"])
    for title in ("Lateness (ms)", "Deliveries", "Dispatcher", "Queues (messages)", "Delayer queue's oldest message",
                  "Enqueuer iterator age (ms)", "Sweeper", "API 5xx", "alarm"):
        assert title in body, title
    for figure in (contract.LATENESS_METRIC, contract.FAILED_ATTEMPTS_METRIC, contract.SWEEPS_STOPPED_EARLY_METRIC,
                   "NumberOfMessagesSent", "ApproximateAgeOfOldestMessage", "IteratorAge", "Throttles", "5xx"):
        assert f'\\"{figure}\\"' in body, figure
    for alarm in b.extra["alarms"].all:  # the alarm status widget names each alarm
        assert b.stack.get_logical_id(alarm.node.default_child) in body
    custom = stacks["alarms_custom"]
    made_first = custom.json["Resources"][custom.stack.get_logical_id(custom.extra["dashboard"].node.default_child)]
    assert made_first["Properties"]["DashboardName"] == "timers"
    assert '\\"period\\":60' in json.dumps(made_first["Properties"]["DashboardBody"])


def test_a_dashboard_made_before_the_alarms_shows_their_states_as_one_made_after(stacks):
    """``add_dashboard()`` then ``add_alarms()`` (the ``alarms_custom`` stack) gives the alarms' row too: the order
    of the two calls does not matter."""
    for name in ("alarms", "alarms_custom"):  # alarms first; dashboard first
        b = stacks[name]
        widgets = json.loads("".join(part if isinstance(part, str) else "<ref>"
                                     for part in body_parts(b, b.extra["dashboard"])))["widgets"]
        alarm_widgets = [w for w in widgets if w["type"] == "alarm"]
        assert len(alarm_widgets) == 1 and alarm_widgets[0] == widgets[-1], name  # one row of states, the last
        assert len(alarm_widgets[0]["properties"]["alarms"]) == len(b.extra["alarms"].all), name
        body = dashboard_body(b, b.extra["dashboard"])
        for alarm in b.extra["alarms"].all:
            assert b.stack.get_logical_id(alarm.node.default_child) in body, (name, alarm.node.id)


def test_a_second_call_of_either_raises(stacks):
    s = stacks["alarms"].scheduler
    with pytest.raises(ValueError, match="add_alarms: this scheduler has its alarms already"):
        s.add_alarms()
    with pytest.raises(ValueError, match="add_dashboard: this scheduler has its dashboard already"):
        s.add_dashboard()


@pytest.mark.parametrize("kwargs, message", [
    (dict(alarm_action="arn:aws:sns:eu-west-1:123456789012:ops"), "alarm_action: must be an sns.ITopic"),
    (dict(lateness_threshold=1000), "lateness_threshold: must be a Duration"),
    (dict(lateness_threshold=cdk.Duration.hours(2)), "lateness_threshold: must be between"),
    (dict(evaluation_periods=0), "evaluation_periods: must be between 1 and 1440"),
    (dict(evaluation_periods=2.5), "evaluation_periods: must be a whole number"),
    (dict(evaluation_periods=25, period=cdk.Duration.hours(1)), "evaluation_periods: must be between 1 and 24"),
    (dict(period=cdk.Duration.seconds(30)), "period: must be between 60 and 86400"),
    (dict(period=cdk.Duration.seconds(90)), "period: must be whole minutes"),
    (dict(iterator_age_threshold=cdk.Duration.days(2)), "iterator_age_threshold: must be between"),
    (dict(stalled_margin=cdk.Duration.seconds(10)), "stalled_margin: must be between 60 and 86400"),
    (dict(stalled_margin=cdk.Duration.seconds(cdk.Token.as_number(cdk.Aws.NO_VALUE))), "stalled_margin: must be a "
                                                                                        "Duration known at synthesis"),
])
def test_bad_input_is_refused_naming_the_parameter(stacks, kwargs, message):
    s = stacks["defaults"].scheduler  # refused before anything is added to it
    with pytest.raises(ValueError, match=message):
        s.add_alarms(**kwargs)
    assert s.node.try_find_child("Alarms") is None


def test_a_bad_dashboard_period_is_refused(stacks):
    s = stacks["defaults"].scheduler
    with pytest.raises(ValueError, match="period: must be whole minutes"):
        s.add_dashboard(period=cdk.Duration.seconds(150))
    assert s.node.try_find_child("Dashboard") is None
