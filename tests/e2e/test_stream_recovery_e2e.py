"""End to end: the stream mapping gives up on a claim, the dead-letter queue holds its
range, and ``cdk-delayed-scheduler recover-stream`` brings the timer back to its delivery."""

from __future__ import annotations

import json

import boto3
import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.cli import main
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder
from scheduler_runtime.aws.delayer import DelayerQueue
from scheduler_runtime.aws.store import ScheduleStore

from .conftest import wait_until

pytestmark = pytest.mark.e2e


def test_a_claim_the_stream_gave_up_on_is_in_the_dead_letter_queue_and_recover_stream_delivers_it(monkeypatch):
    send, write_back = DelayerQueue.send, ScheduleStore.write_back

    def refuse_lost(queue, messages, *args, **kwargs):  # SQS refuses the one timer, every time...
        lost = {entry_id for entry_id, ref, _ in messages if ref.schedule_id == "lost"}
        return send(queue, [m for m in messages if m[0] not in lost], *args, **kwargs) | lost

    def keep_lost(store, timers, *args, **kwargs):  # ...and so does its write-back
        return write_back(store, [t for t in timers if t.schedule_id != "lost"], *args, **kwargs) + \
            [t for t in timers if t.schedule_id == "lost"]

    monkeypatch.setattr(DelayerQueue, "send", refuse_lost)
    monkeypatch.setattr(ScheduleStore, "write_back", keep_lost)
    target = Recorder()
    options = EngineOptions(target=target, delay_window=2, sweep_interval=0.5, shard_count=2, stream_retry_attempts=2)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        for schedule_id in ("lost", "kept"):
            assert api.raw("createSchedule", {"id": schedule_id, "delaySeconds": 4, "payload": schedule_id})[0] == 201
        assert target.wait_for({"kept"}, timeout_seconds=20)
        wait_until(lambda: engine.stats.stream_failures, 20, "the stream mapping did not give up")
        sqs = boto3.client("sqs", endpoint_url=engine.endpoint_url, region_name="us-east-1")
        [parked] = wait_until(lambda: sqs.receive_message(QueueUrl=engine.dead_letter_queue_url).get("Messages"), 5,
                              "no on-failure message in the dead-letter queue")
        assert api.raw("getSchedule", id="lost")[1]["status"] == "QUEUED"  # and would stay so: no timer, no message
        assert json.loads(parked["Body"])["DDBStreamBatchInfo"]["streamArn"] == engine.stream_arn  # a range, no record

        monkeypatch.undo()  # the fault clears
        assert main(["recover-stream", "--destination-message", parked["Body"],
                     "--endpoint-url", engine.lambda_endpoint_url]) == 0
        assert target.wait_for({"lost"}, timeout_seconds=20)
        assert api.raw("getSchedule", id="lost")[1]["status"] == "FIRED"
        # Recovering again is harmless: the message is sent again and the dispatcher drops it.
        assert main(["recover-stream", "--destination-message", parked["Body"],
                     "--endpoint-url", engine.lambda_endpoint_url]) == 0
        engine.wait_until_quiet()
    assert sorted(d.envelope["id"] for d in target.deliveries) == ["kept", "lost"]
