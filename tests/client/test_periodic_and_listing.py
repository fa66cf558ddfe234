"""Periodic timers and the listing through the typed client, against the local engine, over both transports."""

from __future__ import annotations

import time
import uuid
from datetime import datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from cdk_delayed_scheduler.client import NotFoundError, ScheduleStatus, ValidationError
from cdk_delayed_scheduler.local.api_calls import parse_due_ms

from ..e2e.conftest import wait_until
from .conftest import fresh_id

pytestmark = pytest.mark.e2e


def test_a_periodic_timer_fires_every_second_until_deleted(client, local):
    periodic_id = fresh_id("every")
    created = client.put_periodic(periodic_id, {"tick": True}, every=1)
    assert (created.id, created.status, created.every, created.target) == (periodic_id, "ACTIVE", 1, "default")
    assert created.next_due_at is not None and created.cron is None
    assert wait_until(lambda: len(local.recorder.by_id().get(periodic_id, [])) >= 2, 15, "two occurrences")
    progress = wait_until(lambda: (p := client.get_periodic(periodic_id)).fired_count >= 2 and p, 10, "firedCount >= 2")
    assert progress.last_fired_at is not None and progress.payload == {"tick": True}
    removed = client.delete_periodic(periodic_id)
    deleted_ms = time.time() * 1000
    assert (removed.id, removed.status) == (periodic_id, "DELETED")
    with pytest.raises(NotFoundError):
        client.get_periodic(periodic_id)
    local.engine.wait_until_quiet()
    deliveries = local.recorder.by_id()[periodic_id]
    assert all(parse_due_ms(d.envelope["firedAt"]) <= deleted_ms for d in deliveries)  # none started after the DELETE
    assert len({d.envelope["dedupeKey"] for d in deliveries}) == len(deliveries)  # one key per occurrence
    assert all(d.received_ms >= parse_due_ms(d.envelope["dueAt"]) for d in deliveries)  # never early


def test_put_periodic_again_is_idempotent_and_a_new_body_replaces_it(client):
    periodic_id = fresh_id("cron")
    start = datetime.now(timezone.utc) + timedelta(days=1)
    first = client.put_periodic(periodic_id, "p", cron="0 9 ? * MON-FRI *", time_zone="Europe/Paris", start_at=start)
    assert (first.cron, first.time_zone, first.every) == ("0 9 ? * MON-FRI *", "Europe/Paris", None)
    assert first.start_at == start.replace(microsecond=start.microsecond // 1000 * 1000)
    assert first.next_due_at is not None and first.next_due_at >= start.replace(microsecond=0)
    local_due = first.next_due_at.astimezone(ZoneInfo("Europe/Paris"))
    assert (local_due.hour, local_due.minute, local_due.weekday() < 5) == (9, 0, True)
    again = client.put_periodic(periodic_id, "p", cron="0 9 ? * MON-FRI *", time_zone="Europe/Paris", start_at=start)
    assert (again.created_at, again.next_due_at, again.cron) == (first.created_at, first.next_due_at, first.cron)
    replaced = client.put_periodic(periodic_id, "q", every=timedelta(hours=1))
    assert (replaced.every, replaced.cron, client.get_periodic(periodic_id).payload) == (3600, None, "q")
    client.delete_periodic(periodic_id)


@pytest.mark.parametrize("arguments, field", [
    ({"every": 0}, "every"),
    ({"cron": "every day"}, "cron"),
    ({"every": 5, "time_zone": "Mars/Olympus"}, "timeZone"),
])
def test_a_bad_periodic_timer_is_a_validation_error_naming_the_field(client, arguments, field):
    with pytest.raises(ValidationError) as raised:
        client.put_periodic(fresh_id("bad"), 1, **arguments)
    assert raised.value.field == field


def test_exactly_one_of_every_or_cron(client):
    for arguments in ({}, {"every": 5, "cron": "0 9 * * ? *"}):
        with pytest.raises(ValidationError):
            client.put_periodic(fresh_id("one"), 1, **arguments)


def test_unknown_periodic_timers_are_not_found(client):
    for call in (client.get_periodic, client.delete_periodic):
        with pytest.raises(NotFoundError):
            call(fresh_id("nobody"))


def test_list_periodic_pages_through_every_definition(client):
    ids = {fresh_id(f"listed{n}") for n in range(3)}
    for periodic_id in ids:
        client.put_periodic(periodic_id, 1, every=3600)
    listed = {p.id: p for p in client.list_periodic(page_size=2)}
    assert ids <= set(listed)
    assert all(listed[i].status == "ACTIVE" and listed[i].every == 3600 for i in ids)
    for periodic_id in ids:
        client.delete_periodic(periodic_id)


def test_list_finds_schedules_by_status_and_due_window_across_pages(client):
    window_start = datetime(2090, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=uuid.uuid4().int % 500_000)
    ids = [client.schedule(window_start + timedelta(seconds=n + 1), {"n": n}).id for n in range(5)]
    client.schedule(window_start + timedelta(hours=2), "outside the window")
    client.cancel(ids[2])
    window = {"due_after": window_start, "due_before": window_start + timedelta(hours=1), "page_size": 2}
    listed = list(client.list(status=ScheduleStatus.SCHEDULED, **window))
    assert sorted(s.id for s in listed) == sorted(ids[:2] + ids[3:])
    assert all(s.status is ScheduleStatus.SCHEDULED and s.payload is None for s in listed)
    assert [s.id for s in client.list(status="SCHEDULED", **window)] == [s.id for s in listed]  # the text does as well


def test_list_with_an_unknown_status_is_a_validation_error(client):
    with pytest.raises(ValidationError) as raised:
        next(client.list(status="SOMEDAY"))
    assert raised.value.field == "status"
