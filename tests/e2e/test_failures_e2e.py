"""Failures end to end: a target that fails, a flaky target, and an engine that restarts mid-stream."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import external_moto, lead_ms, wait_until

pytestmark = pytest.mark.e2e


class FlakyTarget(Recorder):
    """Fails every delivery whose payload says ``fail``, and the first attempt of ``flaky`` ones."""

    def __call__(self, envelope: dict) -> None:
        mode = envelope["payload"].get("mode")
        if mode == "fail" or (mode == "flaky" and envelope["attempt"] == 1):
            raise RuntimeError(f"target refused attempt {envelope['attempt']}")
        super().__call__(envelope)


def test_failed_deliveries_retry_then_park_with_reason_and_flaky_ones_succeed_on_retry():
    target = FlakyTarget()
    options = EngineOptions(target=target, delay_window=4, sweep_interval=1, shard_count=2, dispatcher_timeout=0.2, max_receive_count=3)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        # Due at once: a dispatcher holding a message until it is due would outlast the 1 s
        # visibility timeout, and the message would be received again (a legitimate duplicate).
        for schedule_id, mode in (("ok", "ok"), ("flaky", "flaky"), ("doomed", "fail")):
            body = {"id": schedule_id, "delaySeconds": 0, "payload": {"mode": mode}}
            assert api.raw("createSchedule", body).status == 201
        assert target.wait_for({"ok", "flaky"}, timeout_seconds=20)
        doomed = wait_until(lambda: (body := api.raw("getSchedule", id="doomed")[1])["status"] == "FAILED" and body, 20,
                            "the doomed schedule did not become FAILED")
        engine.wait_until_quiet()
        sqs = boto3.client("sqs", endpoint_url=engine.endpoint_url)
        parked = sqs.receive_message(QueueUrl=engine.dead_letter_queue_url, MessageAttributeNames=["All"]).get("Messages", [])

    assert [d.envelope["attempt"] for d in target.by_id()["ok"]] == [1]
    assert [d.envelope["attempt"] for d in target.by_id()["flaky"]] == [2]
    assert "doomed" not in target.by_id()
    assert doomed["status"] == "FAILED" and doomed["attempts"] == 3
    assert "target refused attempt 3" in doomed["lastError"]
    assert len(parked) == 1
    assert json.loads(parked[0]["Body"])["payload"] == {"mode": "fail"}
    assert "after 3 attempts" in parked[0]["MessageAttributes"]["reason"]["StringValue"]


def test_engine_restart_resumes_from_its_checkpoints(tmp_path):
    """Against an already running endpoint, a second engine resumes where the first stopped: no record twice."""
    first, second = Recorder(), Recorder()
    # A 5 s window: "across" (due in 9 s: its create may take up to 4 s on a loaded machine and still
    # make a timer) is claimed and enqueued by the first engine about 4 s in, which then stops at once,
    # seconds before "across" is due (the margin is checked).
    with external_moto() as endpoint:
        base = dict(endpoint_url=endpoint, state_dir=tmp_path, delay_window=5, sweep_interval=1, shard_count=2)
        with Engine(EngineOptions(target=first, **base)) as engine:
            api = raw_client(engine.api_url)
            now = time.time()
            assert api.raw("createSchedule", {"id": "before-1", "dueAt": round(now + 1, 3), "payload": 1})[0] == 201
            status, across = api.raw("createSchedule", {"id": "across", "dueAt": round(now + 9, 3), "payload": 2})
            assert (status, across["status"]) == (201, "SCHEDULED")
            assert first.wait_for({"before-1"}, timeout_seconds=15)
            wait_until(lambda: engine.stats.events["enqueued"] == 1, 15, "the first engine did not enqueue across")
        margin_ms = lead_ms(across["dueAt"])
        assert margin_ms > 500, f"the first engine stopped only {margin_ms:.0f} ms before across was due"
        checkpoints = json.loads((tmp_path / "checkpoints.json").read_text())
        assert set(checkpoints) == {"enqueuer"}

        with Engine(EngineOptions(target=second, **base)) as engine:
            api = raw_client(engine.api_url)
            status, after = api.raw("createSchedule", {"id": "after", "dueAt": round(time.time() + 8.5, 3),
                                                       "payload": 3})
            assert (status, after["status"]) == (201, "SCHEDULED")  # a timer: claimed here
            assert second.wait_for({"across", "after"}, timeout_seconds=20)
            engine.wait_until_quiet()
            claims = dict(engine.stats.claims)

    # The second engine processed only records written after the first one's checkpoint:
    # the old REMOVEs were not enqueued again, so nothing was delivered twice.
    assert set(first.by_id()) == {"before-1"}
    assert set(second.by_id()) == {"across", "after"}
    assert all(len(ds) == 1 for ds in second.by_id().values())
    assert claims == {"after": 1}
