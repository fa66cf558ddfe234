"""A schedule's lateness bound (``maxLatenessSeconds``) through the api and dispatcher handlers, on virtual time:
an attempt that would start past it is not started (a one-shot is parked as stale, a periodic occurrence is
skipped and counted), one within it is delivered, a redriven one goes through, and the deployment's
``MAX_LATENESS_SECONDS`` bounds a schedule that sets none. Each test places the dispatcher's start exactly."""

from __future__ import annotations

import json
import os
from contextlib import contextmanager
from typing import Iterator

import pytest

from .conftest import call_api, faulty
from .dispatching import as_record, capture_delayer_sends, dispatch, receive
from .periodic_timers import delivered, occurrence, put
from .redriving import run
from .virtual_time import iso, now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")


def create(schedule_id: str, bound: int | None, target: str = "default", due_in: int = 10) -> int:
    """A one-shot due ``due_in`` seconds from now, with ``bound`` as its ``maxLatenessSeconds``: its due time (ms)."""
    due_ms = now_ms() + due_in * 1000
    body = {"id": schedule_id, "dueAt": due_ms / 1000, "payload": {"keep": schedule_id}, "target": target}
    if bound is not None:
        body["maxLatenessSeconds"] = bound
    status, answer = call_api("POST", "/schedules", body)
    assert status == 201, answer
    return due_ms


def dispatched_at(aws, instant_ms: int, receive_count: int = 1) -> dict:
    """The schedule's message handed to the dispatcher at ``instant_ms`` (a dispatcher that late)."""
    virtual().move_to(instant_ms)
    [message] = aws.receive(aws.delayer_url)
    return dispatch(receive(message, receive_count))


@contextmanager
def deployment_bound(seconds: int) -> Iterator[None]:
    os.environ["MAX_LATENESS_SECONDS"] = str(seconds)
    try:
        yield
    finally:
        del os.environ["MAX_LATENESS_SECONDS"]


def test_an_attempt_that_would_start_past_the_bound_is_parked_as_stale_without_calling_the_target(aws):
    due_ms = create("too-late", 30)
    assert dispatched_at(aws, due_ms + 30_001) == {"batchItemFailures": []}
    assert aws.take(aws.target_url) == []
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": "too-late"}
    reason = parked["messageAttributes"]["reason"]["stringValue"]
    assert reason == "stale: it would start 30.001 s after its due time, past maxLatenessSeconds 30"
    read = call_api("GET", "/schedules/too-late")[1]
    assert (read["status"], read["lastError"], read["maxLatenessSeconds"]) == ("FAILED", reason, 30)


def test_an_attempt_that_starts_at_the_bound_is_delivered(aws):
    due_ms = create("just-in-time", 30)
    assert dispatched_at(aws, due_ms + 30_000) == {"batchItemFailures": []}
    [envelope] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert envelope["id"] == "just-in-time"
    assert call_api("GET", "/schedules/just-in-time")[1]["status"] == "FIRED"
    assert aws.receive(aws.dlq_url) == []


def test_a_retry_that_would_start_past_the_bound_is_parked_as_stale_not_tried(aws):
    """The first attempt fails at its due time; the next comes a visibility timeout (360 s) later, past 300 s."""
    due_ms = create("retried-late", 300, target="broken")
    failed = dispatched_at(aws, due_ms)
    assert len(failed["batchItemFailures"]) == 1 and aws.receive(aws.dlq_url) == []
    assert dispatched_at(aws, due_ms + 360_000, receive_count=2) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert parked["messageAttributes"]["reason"]["stringValue"].startswith("stale: it would start 360 s after")
    read = call_api("GET", "/schedules/retried-late")[1]
    assert (read["status"], read["attempts"]) == ("FAILED", 2)


def test_a_stale_schedule_redriven_by_an_operator_is_delivered_however_late(aws):
    due_ms = create("sent-back", 5)
    dispatched_at(aws, due_ms + 60_000)
    assert [moved["id"] for moved in run(aws).moved] == ["sent-back"]
    virtual().advance(1)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [envelope] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert envelope["id"] == "sent-back"
    assert call_api("GET", "/schedules/sent-back")[1]["status"] == "FIRED"


def test_the_deployments_bound_holds_a_schedule_without_one_and_a_schedules_own_bound_wins(aws):
    with deployment_bound(10):
        plain_due = create("plain", None)
        own_due = create("own", 120)
        assert "maxLatenessSeconds" not in call_api("GET", "/schedules/plain")[1]
        virtual().move_to(plain_due + 60_000)
        by_id = {json.loads(m["body"])["id"]: m for m in aws.receive(aws.delayer_url)}
        assert own_due == plain_due
        assert dispatch(receive(by_id["plain"], 1), receive(by_id["own"], 1)) == {"batchItemFailures": []}
    assert [json.loads(m["body"])["id"] for m in aws.take(aws.target_url)] == ["own"]
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["id"] == "plain"
    assert "past maxLatenessSeconds 10" in parked["messageAttributes"]["reason"]["stringValue"]


def test_without_a_bound_a_late_delivery_is_delivered_late(aws):
    due_ms = create("no-bound", None)
    assert dispatched_at(aws, due_ms + 3_600_000) == {"batchItemFailures": []}
    [envelope] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert envelope["id"] == "no-bound"


def test_a_periodic_occurrence_past_its_bound_is_skipped_and_counted_and_the_next_is_delivered(aws):
    start = now_ms() // 1000 + 60
    answer = put("every-minute", {"every": 60, "startAt": start, "payload": {"n": 1}, "maxLatenessSeconds": 5})
    assert answer["maxLatenessSeconds"] == 5
    first = occurrence(aws, timeout=61)
    sent: list = []
    with faulty("sqs", send_message=capture_delayer_sends(aws, sent)):
        virtual().move_to(start * 1000 + 5_001)  # a dispatcher 5.001 s late
        assert dispatch(receive(first, 1)) == {"batchItemFailures": []}
    assert delivered(aws) == []
    read = call_api("GET", "/periodic/every-minute")[1]
    assert (read["firedCount"], read["skippedCount"]) == (0, 1)
    assert read["lastError"] == "stale: it would start 5.001 s after its due time, past maxLatenessSeconds 5"
    assert aws.receive(aws.dlq_url) == []  # skipped, not parked
    [following] = sent  # the next occurrence was armed before the bound was checked
    assert json.loads(following["MessageBody"])["dueMs"] == (start + 60) * 1000
    virtual().move_to((start + 60) * 1000)
    assert dispatch(as_record(following)) == {"batchItemFailures": []}
    assert [d["dueAt"] for d in delivered(aws)] == [iso((start + 60) * 1000)]
    assert call_api("GET", "/periodic/every-minute")[1]["firedCount"] == 1


@pytest.mark.parametrize(("value", "rule"), [
    (0, "maxLatenessSeconds must be a whole number from 1 to 31536000 (seconds), got 0"),
    (1.5, "maxLatenessSeconds must be a whole number from 1 to 31536000 (seconds), got 1.5"),
    (31536001, "maxLatenessSeconds must be a whole number from 1 to 31536000 (seconds), got 31536001"),
    ("60", "maxLatenessSeconds must be a whole number from 1 to 31536000 (seconds)"),
    (True, "maxLatenessSeconds must be a whole number from 1 to 31536000 (seconds)"),
])
def test_a_bad_bound_is_a_400_naming_the_field_on_a_create_a_batch_item_and_a_periodic_timer(aws, value, rule):
    body = {"delaySeconds": 5, "payload": {}, "maxLatenessSeconds": value}
    assert call_api("POST", "/schedules", body) == (400, {"message": rule, "field": "maxLatenessSeconds"})
    status, answer = call_api("POST", "/schedule-batches", {"schedules": [body]})
    assert status == 200 and answer["results"][0]["status"] == 400
    assert answer["results"][0]["body"]["field"] == "schedules[0].maxLatenessSeconds"
    periodic = {"every": 60, "payload": {}, "maxLatenessSeconds": value}
    assert call_api("PUT", "/periodic/bad-bound", periodic) == (400, {"message": rule, "field": "maxLatenessSeconds"})


def test_the_bound_is_part_of_the_request_a_replay_matches_it_and_another_bound_conflicts(aws):
    body = {"id": "bounded", "delaySeconds": 30, "payload": {}, "maxLatenessSeconds": 60}
    assert call_api("POST", "/schedules", body)[0] == 201
    assert call_api("POST", "/schedules", {**body, "maxLatenessSeconds": 60.0})[0] == 200
    assert call_api("POST", "/schedules", {**body, "maxLatenessSeconds": 61})[0] == 409
    assert call_api("POST", "/schedules", {key: v for key, v in body.items() if key != "maxLatenessSeconds"})[0] == 409
