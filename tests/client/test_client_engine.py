"""The typed client against the real local engine, over both transports: SigV4-signed HTTP and
direct invokes of the api function (the engine's Lambda endpoint)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

import pytest

from cdk_delayed_scheduler.client import (ConflictError, NotFoundError, PayloadTooLargeError, Schedule,
                                          ScheduleRequest, ValidationError)
from cdk_delayed_scheduler.local.api_calls import parse_due_ms

from .conftest import fresh_id

pytestmark = pytest.mark.e2e
HOUR = timedelta(hours=1)


def test_schedule_at_an_aware_datetime_keeps_milliseconds(client):
    due = datetime.now(timezone(timedelta(hours=-5))).replace(microsecond=123_456) + HOUR
    created = client.schedule(due, {"kind": "datetime"}, id=fresh_id("dt"))
    assert created.status == "SCHEDULED" and created.target == "default"
    assert created.due_at == due.replace(microsecond=123_000) and created.due_at.tzinfo == timezone.utc
    assert created.payload is None  # a create's answer carries none
    read = client.get(created.id)
    assert (read.payload, read.attempts, read.due_at) == ({"kind": "datetime"}, 0, created.due_at)
    assert read.created_at is not None and read.created_at <= datetime.now(timezone.utc)


def test_schedule_after_a_timedelta_with_a_generated_id(client):
    before = datetime.now(timezone.utc)
    created = client.schedule(timedelta(seconds=600.25), ["delay"])
    assert uuid.UUID(created.id).version == 4
    assert created.status == "SCHEDULED"  # beyond the delay window: a timer for the sweeper
    assert timedelta(seconds=600.25) <= created.due_at - before <= timedelta(seconds=605)
    assert client.get(created.id).payload == ["delay"]


def test_the_same_create_again_answers_the_same_schedule(client):
    schedule_id = fresh_id("replay")
    first = client.schedule(timedelta(minutes=30), {"n": 1}, id=schedule_id)
    assert client.schedule(timedelta(minutes=30), {"n": 1}, id=schedule_id) == first


def test_the_same_id_with_another_body_is_a_conflict(client):
    schedule_id = fresh_id("conflict")
    client.schedule(timedelta(minutes=30), {"n": 1}, id=schedule_id)
    with pytest.raises(ConflictError) as raised:
        client.schedule(timedelta(minutes=30), {"n": 2}, id=schedule_id)
    assert (raised.value.status, raised.value.field) == (409, "id")


@pytest.mark.parametrize("arguments, field", [
    ({"at": timedelta(seconds=-1)}, "delaySeconds"),
    ({"at": HOUR, "target": "nowhere"}, "target"),
    ({"at": HOUR, "id": "bad id!"}, "id"),
])
def test_a_bad_create_is_a_validation_error_naming_the_field(client, arguments, field):
    arguments = {"payload": 1, **arguments}
    with pytest.raises(ValidationError) as raised:
        client.schedule(arguments.pop("at"), arguments.pop("payload"), **arguments)
    assert (raised.value.status, raised.value.field) == (400, field)
    assert raised.value.message


def test_a_payload_over_256_kib_is_too_large(client):
    with pytest.raises(PayloadTooLargeError) as raised:
        client.schedule(HOUR, "x" * (256 * 1024 + 1), id=fresh_id("big"))
    assert (raised.value.status, raised.value.field) == (413, "payload")


def test_get_and_cancel_of_an_unknown_id_are_not_found(client):
    for call in (client.get, client.cancel):
        with pytest.raises(NotFoundError) as raised:
            call(fresh_id("missing"))
        assert (raised.value.status, raised.value.field) == (404, "id")


def test_cancel_answers_cancelled_and_get_shows_it(client):
    created = client.schedule(HOUR, "to cancel", id=fresh_id("cancel"))
    removed = client.cancel(created.id)
    assert (removed.id, removed.status) == (created.id, "CANCELLED")
    assert client.get(created.id).status == "CANCELLED"


def test_schedule_many_answers_each_item_in_order_with_the_invalid_one_as_its_error(client):
    ids = [fresh_id(f"many{n}") for n in range(23)]
    ids[14] = "bad id!"
    items = [ScheduleRequest(HOUR + timedelta(seconds=n), {"n": n}, id=schedule_id) if n % 2
             else {"at": HOUR, "payload": {"n": n}, "id": schedule_id} for n, schedule_id in enumerate(ids)]
    results = client.schedule_many(items)
    assert len(results) == 23
    error = results[14]
    assert isinstance(error, ValidationError) and error.field == "schedules[14].id"
    assert all(isinstance(r, Schedule) and r.id == i for n, (r, i) in enumerate(zip(results, ids)) if n != 14)
    assert client.get(ids[21]).payload == {"n": 21}


def test_a_due_schedule_reaches_the_target_then_cannot_be_cancelled(client, local):
    payload = {"deliver": fresh_id("me")}
    created = client.schedule(timedelta(seconds=1), payload)
    assert created.status == "QUEUED"
    assert local.recorder.wait_for({created.id}, timeout_seconds=15)
    delivery = local.recorder.by_id()[created.id][0]
    assert delivery.envelope["payload"] == payload
    assert delivery.received_ms >= parse_due_ms(delivery.envelope["dueAt"])  # never early
    fired = client.get(created.id)
    assert fired.status == "FIRED" and fired.fired_at is not None and fired.fired_at >= created.due_at
    with pytest.raises(ConflictError):
        client.cancel(created.id)


def test_reschedule_moves_a_waiting_schedule_and_only_its_new_time_is_delivered(client, local):
    created = client.schedule(HOUR, {"n": 1}, id=fresh_id("move"))
    moved = client.reschedule(created.id, timedelta(seconds=1), {"n": 2})
    assert moved.status == "QUEUED" and moved.due_at < created.due_at and moved.target == "default"
    assert client.reschedule(created.id, timedelta(seconds=1), {"n": 2}).due_at == moved.due_at  # a repeat
    assert local.recorder.wait_for({created.id}, timeout_seconds=15)
    delivery, = local.recorder.by_id()[created.id]
    assert delivery.envelope["payload"] == {"n": 2}
    assert parse_due_ms(delivery.envelope["dueAt"]) == round(moved.due_at.timestamp() * 1000)  # the new time only
    assert delivery.received_ms >= parse_due_ms(delivery.envelope["dueAt"])
    with pytest.raises(ConflictError):
        client.reschedule(created.id, HOUR)
    with pytest.raises(NotFoundError):
        client.reschedule(fresh_id("none"), HOUR)


def test_reschedule_without_a_payload_keeps_it_and_none_sends_null(client):
    created = client.schedule(HOUR, {"keep": True}, id=fresh_id("keep"))
    later = datetime.now(timezone.utc) + 2 * HOUR
    assert client.reschedule(created.id, later).status == "SCHEDULED"
    assert client.get(created.id).payload == {"keep": True}
    client.reschedule(created.id, HOUR, None)
    assert client.get(created.id).payload is None
