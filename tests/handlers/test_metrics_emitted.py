"""The runtime's EMF records: the namespace, dimensions and figure names that ``contract.json`` gives
the construct's ``metric_*`` methods, plus the emitting function's name (each scheduler's own metric).
The dispatcher's record carries each delivery's lateness and, when a batch has any, its failed
attempts; the sweeper writes one record for a sweep that stopped early, and none for a complete one."""

import json

import pytest

from cdk_delayed_scheduler.local.pollers import LambdaContext
from scheduler_runtime import observability
from scheduler_runtime.core.contract import (DISPATCHER_KEEP_WARM_MARKER, FAILED_ATTEMPTS_METRIC, LATENESS_METRIC,
                                             METRIC_DIMENSIONS, SWEEPS_STOPPED_EARLY_METRIC)
from scheduler_runtime.handlers import dispatcher, sweeper

from .conftest import call_api, schedule

pytestmark = pytest.mark.usefixtures("virtual_clock")


def test_a_delivery_emits_its_lateness_under_the_contract_names(aws, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    monkeypatch.setenv("METRICS_NAMESPACE", "Orders/Timers")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "Orders-TimersDispatcher-abc")
    status, _ = call_api("POST", "/schedules", {"id": "m", "delaySeconds": 0, "payload": {}})
    assert status == 201
    messages = aws.wait_for_messages(aws.delayer_url)
    assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    (record,) = [json.loads(line) for line in lines]
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Orders/Timers"
    assert [m["Name"] for m in directive["Metrics"]] == [LATENESS_METRIC]
    assert directive["Dimensions"] == [sorted({*METRIC_DIMENSIONS, "FunctionName"})]
    assert {k: record[k] for k in METRIC_DIMENSIONS} == METRIC_DIMENSIONS
    assert record["FunctionName"] == "Orders-TimersDispatcher-abc"
    assert len(record[LATENESS_METRIC]) == 1 and record[LATENESS_METRIC][0] >= 0


def test_a_batch_with_a_failed_attempt_counts_it_beside_the_lateness_of_what_was_delivered(aws, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    assert call_api("POST", "/schedules", {"id": "ok", "delaySeconds": 0, "payload": {}})[0] == 201
    [message] = aws.wait_for_messages(aws.delayer_url)
    malformed = {**message, "messageId": "not-ours", "body": "not a delayer message"}
    answer = dispatcher.handler({"Records": [message, malformed]})
    assert answer == {"batchItemFailures": [{"itemIdentifier": "not-ours"}]}
    (record,) = [json.loads(line) for line in lines]
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Metrics"] == [{"Name": LATENESS_METRIC, "Unit": "Milliseconds"},
                                    {"Name": FAILED_ATTEMPTS_METRIC, "Unit": "Count"}]
    assert len(record[LATENESS_METRIC]) == 1 and record[FAILED_ATTEMPTS_METRIC] == 1


def test_a_batch_with_only_failed_attempts_emits_them_and_no_lateness(aws, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    bad = {"messageId": "m-1", "body": "{}", "attributes": {"ApproximateReceiveCount": "1"}}
    assert dispatcher.handler({"Records": [bad, {**bad, "messageId": "m-2"}]})["batchItemFailures"] == [
        {"itemIdentifier": "m-1"}, {"itemIdentifier": "m-2"}]
    (record,) = [json.loads(line) for line in lines]
    assert record[FAILED_ATTEMPTS_METRIC] == 2 and LATENESS_METRIC not in record


def test_a_keep_warm_invocation_emits_nothing_and_leaves_the_delayer_queue_alone(aws, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    assert call_api("POST", "/schedules", {"id": "waits", "delaySeconds": 0, "payload": {}})[0] == 201
    assert dispatcher.handler({DISPATCHER_KEEP_WARM_MARKER: True}) == {"batchItemFailures": []}
    assert lines == [] and aws.take(aws.target_url) == []
    [message] = aws.receive(aws.delayer_url)  # still waiting for the mapping's invocation
    assert json.loads(message["body"])["id"] == "waits"


def test_a_sweep_that_stops_early_emits_one_count_and_a_complete_sweep_none(aws, monkeypatch):
    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    monkeypatch.setenv("METRICS_NAMESPACE", "Orders/Timers")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "Orders-TimersSweeper-abc")
    for n in range(4):
        schedule(f"s-{n}", 20, long=True)
    assert sweeper.handler({})["complete"] is True
    assert lines == []
    for n in range(4, 40):
        schedule(f"s-{n}", 20, long=True)
    short_of_time = LambdaContext("sweeper", timeout_seconds=1)  # the sweep stops after its first page
    assert sweeper.handler({}, short_of_time)["complete"] is False
    (record,) = [json.loads(line) for line in lines]
    (directive,) = record["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "Orders/Timers"
    assert directive["Metrics"] == [{"Name": SWEEPS_STOPPED_EARLY_METRIC, "Unit": "Count"}]
    assert directive["Dimensions"] == [sorted({*METRIC_DIMENSIONS, "FunctionName"})]
    assert record[SWEEPS_STOPPED_EARLY_METRIC] == 1 and record["FunctionName"] == "Orders-TimersSweeper-abc"
