"""Batch creates and replays through the api handler on in-process moto.

- a fault on one batch item's writes answers that item alone, and the typed client's retry of the
  batch after a lost answer creates nothing twice (each item's id makes its retry a replay);
- a request is the same whatever the spelling of its numbers (``5``, ``5.0``), and a replay answers
  the first create's id, ``dueAt`` and target with the schedule's status now.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.client._models import Schedule
from cdk_delayed_scheduler.client._transport import Backoff
from scheduler_runtime.handlers import sweeper

from .conftest import call_api, faulty, service_error, window
from .dispatching import dispatch_as_received

pytestmark = pytest.mark.usefixtures("virtual_clock")


def _record_of(put_item_kwargs: dict) -> str | None:
    """The schedule id of a record ``PutItem`` (None for any other write)."""
    pk = put_item_kwargs["Item"]["pk"]["S"]
    return pk.removeprefix("SCHEDULE#") if pk.startswith("SCHEDULE#") else None


def test_a_record_write_fault_on_one_batch_item_answers_that_item_alone(aws):
    def put_item(real, **kwargs):
        if _record_of(kwargs) in ("short-b", "long-d"):
            raise service_error("PutItem", "ProvisionedThroughputExceededException")
        return real.put_item(**kwargs)

    with faulty("dynamodb", put_item=put_item):
        status, body = call_api("POST", "/schedule-batches", {"schedules": [
            {"id": "short-a", "delaySeconds": 0, "payload": 1},
            {"id": "short-b", "delaySeconds": 0, "payload": 2},
            {"id": "long-c", "delaySeconds": 3600, "payload": 3},
            {"id": "long-d", "delaySeconds": 3600, "payload": 4},
        ]})
    assert status == 200
    assert [r["status"] for r in body["results"]] == [201, 500, 201, 500]
    assert body["results"][1]["body"] == {"message": "schedules[1]: internal error; nothing was accepted for this "
                                                     "schedule, retry it", "field": "schedules[1]"}
    assert [call_api("GET", f"/schedules/{i}")[0] for i in ("short-a", "short-b", "long-c", "long-d")] == [200, 404, 200, 404]


class _InProcess:
    """The typed client's transport, answered by the api handler in this process."""

    def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]:
        return call_api(method, path, body)


def test_a_client_batch_retry_after_a_lost_answer_creates_nothing_twice(aws):
    client = SchedulerClient.__new__(SchedulerClient)
    client._setup(_InProcess(), "us-east-1", Backoff(3, 0.0, 0.0))
    lost: list[str] = []

    def put_item(real, **kwargs):
        answer = real.put_item(**kwargs)
        if _record_of(kwargs) and json.loads(kwargs["Item"]["payload"]["S"]) == {"n": 1} and not lost:
            lost.append(_record_of(kwargs))  # written, but its answer never comes back: the item answers 500
            raise service_error("PutItem")
        return answer

    with faulty("dynamodb", put_item=put_item):
        results = client.schedule_many([{"at": timedelta(hours=1, seconds=n), "payload": {"n": n}} for n in range(3)])
    assert all(isinstance(r, Schedule) for r in results) and lost == [results[1].id]
    assert aws.count_items("SCHEDULE#") == 3 and aws.count_items("TIMER#") == 3  # the retry was a replay
    assert [call_api("GET", f"/schedules/{r.id}")[1]["payload"] for r in results] == [{"n": n} for n in range(3)]


def test_delay_seconds_5_and_5_0_are_the_same_request(aws):
    status, first = call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5, "payload": 1}')
    assert status == 201
    assert call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5.0, "payload": 1}') == (200, first)
    assert call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5.000, "payload": 1}') == (200, first)
    assert call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5.001, "payload": 1}')[0] == 409
    status, defined = call_api("PUT", "/periodic/p5", '{"every": 60, "payload": 1}')
    assert status == 201
    assert call_api("PUT", "/periodic/p5", '{"every": 60.0, "payload": 1}') == (200, defined)


def test_a_replay_answers_the_current_status_with_the_first_id_due_and_target(aws):
    bodies = {schedule_id: {"id": schedule_id, "delaySeconds": delay, "payload": 1, "target": target}
              for schedule_id, delay, target in (("cancelled", 0, "default"), ("fired", 0, "default"),
                                                 ("failed", 0, "broken"), ("claimed", 5, "default"))}
    created = {}
    for schedule_id, body in bodies.items():
        with window(1):
            status, created[schedule_id] = call_api("POST", "/schedules", body)
        assert status == 201
    assert call_api("DELETE", "/schedules/cancelled")[0] == 200
    messages = {json.loads(m["body"])["id"]: m for m in aws.receive(aws.delayer_url)}
    assert dispatch_as_received(messages["fired"]) == {"batchItemFailures": []}
    assert dispatch_as_received(messages["failed"], receive_count=3) == {"batchItemFailures": []}
    assert created["claimed"]["status"] == "SCHEDULED"
    assert sweeper.handler({})["claimed"] == 1  # the sweeper's window is 60 s: its timer is claimed

    for schedule_id, now in (("cancelled", "CANCELLED"), ("fired", "FIRED"), ("failed", "FAILED"), ("claimed", "QUEUED")):
        assert call_api("POST", "/schedules", bodies[schedule_id]) == (200, {**created[schedule_id], "status": now})
        assert call_api("GET", f"/schedules/{schedule_id}")[1]["status"] == now
