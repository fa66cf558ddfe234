"""The direct-invoke door, through the local engine's Lambda endpoint: the same bodies and answers, no API Gateway."""

from __future__ import annotations

import json

import boto3
import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder
from cdk_delayed_scheduler.local.engine import API_FUNCTION


pytestmark = pytest.mark.e2e


def test_direct_invoke_creates_reads_cancels_and_delivers_like_the_http_api():
    recorder = Recorder()
    with Engine(EngineOptions(target=recorder, delay_window=4, sweep_interval=1, shard_count=2)) as engine:
        client = boto3.client("lambda", endpoint_url=engine.lambda_endpoint_url, region_name="us-east-1",
                              aws_access_key_id="local", aws_secret_access_key="local")

        def invoke(event: dict) -> dict:
            response = client.invoke(FunctionName=API_FUNCTION, Payload=json.dumps(event).encode())
            assert "FunctionError" not in response
            return json.loads(response["Payload"].read())

        created = invoke({"method": "POST", "path": "/schedules",
                          "body": {"id": "direct-1", "delaySeconds": 1, "payload": {"via": "invoke"}}})
        assert created["statusCode"] == 201 and created["body"]["status"] == "QUEUED"
        assert invoke({"method": "POST", "path": "/schedules",
                       "body": {"id": "direct-1", "delaySeconds": 1, "payload": {"via": "invoke"}}})["statusCode"] == 200
        batch = invoke({"method": "POST", "path": "/schedule-batches", "body": {"schedules": [
            {"id": "direct-2", "delaySeconds": 30, "payload": 2}, {"id": "bad id!", "delaySeconds": 1, "payload": 3}]}})
        assert [r["status"] for r in batch["body"]["results"]] == [201, 400]
        assert batch["body"]["results"][1]["body"]["field"] == "schedules[1].id"
        assert invoke({"method": "DELETE", "path": "/schedules/direct-2"})["body"] == {"id": "direct-2", "status": "CANCELLED"}
        # The HTTP API answers the same schedule the same way.
        assert raw_client(engine.api_url).raw("getSchedule", id="direct-2")[1]["status"] == "CANCELLED"
        assert invoke({"method": "GET", "path": "/schedules/nope"})["statusCode"] == 404
        assert invoke({"path": "/schedules"})["statusCode"] == 400
        assert recorder.wait_for({"direct-1"}, timeout_seconds=10)
        engine.wait_until_quiet()  # a duplicate delivery would have arrived by now
        assert [d.envelope["payload"] for d in recorder.by_id()["direct-1"]] == [{"via": "invoke"}]
        assert invoke({"method": "GET", "path": "/schedules/direct-1"})["body"]["status"] == "FIRED"
