"""The dispatcher's EMF record: the namespace, dimensions and figure name that ``contract.json`` gives
the construct's ``metric_lateness``, plus this function's name (each scheduler's own metric)."""

import json

from scheduler_runtime import observability
from scheduler_runtime.core.contract import LATENESS_METRIC, METRIC_DIMENSIONS
from scheduler_runtime.handlers import dispatcher

from .conftest import call_api


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
