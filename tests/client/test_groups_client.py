"""Groups through the typed clients, sync and asyncio, against the local engine over both transports:
``group=`` on every create, ``cancel_group`` stops the members created before it (and no others), and
``list(group=...)`` / ``list_periodic(group=...)`` page through a group's waiting members."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cdk_delayed_scheduler.client import (AsyncSchedulerClient, ConflictError, GroupCancellation, NotFoundError,
                                          PeriodicStatus, SchedulerClient, ScheduleRequest, ScheduleStatus,
                                          ValidationError)
from cdk_delayed_scheduler.local.api_calls import parse_due_ms

from ..e2e.conftest import wait_until
from .conftest import Local, Use, fresh_id

pytestmark = pytest.mark.e2e
HOUR = timedelta(hours=1)
SOON = timedelta(seconds=2)  # within the engine's delay window: QUEUED at once


SETTLED = {"test_cancel_group_stops_the_members_created_before_it_and_no_others"}
"""The tests whose group has members due: a cancel answers a second (``SETTLE_MS``) after its write there, so
that a delivery allowed just before it has started by the answer (none starts after it)."""


@pytest.fixture(autouse=True)
def answered_without_the_settle(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside ``SETTLED`` nothing of a cancelled group is due, and its cancel answers without the settle."""
    if request.function.__name__ not in SETTLED:
        monkeypatch.setattr("scheduler_runtime.handlers._group_routes.SETTLE_MS", 0)


def test_every_create_takes_a_group_and_reads_it_back(client: SchedulerClient) -> None:
    group = fresh_id("tenant")
    one, plain, first, second = (fresh_id(name) for name in ("one", "plain", "batch", "batch"))
    client.schedule(HOUR, {"n": 1}, id=one, group=group)
    client.schedule(HOUR, {"n": 2}, id=plain)
    results = client.schedule_many([ScheduleRequest(HOUR, 3, id=first, group=group),
                                    {"at": HOUR, "payload": 4, "id": second, "group": group}])
    assert [result.id for result in results] == [first, second]  # type: ignore[union-attr]
    assert [client.get(i).group for i in (one, first, second, plain)] == [group, group, group, None]
    assert client.get(one).raw["group"] == group
    periodic_id = fresh_id("beat")
    put = client.put_periodic(periodic_id, {"job": "poll"}, every=3600, group=group)
    assert put.group == group and client.get_periodic(periodic_id).group == group
    assert client.put_periodic(fresh_id("ungrouped"), 1, every=3600).group is None


def test_the_same_schedule_id_in_another_group_is_a_conflict(client: SchedulerClient) -> None:
    schedule_id, group = fresh_id("same"), fresh_id("g")
    first = client.schedule(HOUR, 1, id=schedule_id, group=group)
    assert client.schedule(HOUR, 1, id=schedule_id, group=group) == first  # the same request again
    for other in (fresh_id("other"), None):
        with pytest.raises(ConflictError):
            client.schedule(HOUR, 1, id=schedule_id, group=other)


def test_put_periodic_with_another_group_moves_the_timer_to_it(client: SchedulerClient) -> None:
    periodic_id, first, second = fresh_id("moved"), fresh_id("from"), fresh_id("to")
    client.put_periodic(periodic_id, 1, every=3600, group=first)
    assert client.put_periodic(periodic_id, 1, every=3600, group=second).group == second  # another body: replaced
    assert [p.id for p in client.list_periodic(group=second)] == [periodic_id]
    assert list(client.list_periodic(group=first)) == []
    assert client.cancel_group(first).stopped_periodic == 0 and client.get_periodic(periodic_id).group == second


def test_cancel_group_stops_the_members_created_before_it_and_no_others(client: SchedulerClient, local: Local) -> None:
    group, neighbour = fresh_id("stop"), fresh_id("keep")
    long_one, short_one = client.schedule(HOUR, 1, group=group), client.schedule(SOON, 2, group=group)
    periodic_id = fresh_id("tick")
    client.put_periodic(periodic_id, {"tick": True}, every=1, group=group)
    kept_long, kept_short = client.schedule(HOUR, 3, group=neighbour), client.schedule(SOON, 4, group=neighbour)
    cancelled = client.cancel_group(group)
    answered_ms = time.time() * 1000
    assert isinstance(cancelled, GroupCancellation)
    assert (cancelled.group, cancelled.stopped_schedules, cancelled.stopped_periodic, cancelled.count_complete) == (
        group, 2, 1, True)
    assert cancelled.cancelled_before <= datetime.now(timezone.utc)
    later = client.schedule(SOON, 5, group=group)  # joins after the cancel: not affected

    assert [client.get(s.id).status for s in (long_one, short_one)] == [ScheduleStatus.CANCELLED] * 2
    with pytest.raises(NotFoundError):
        client.get_periodic(periodic_id)
    assert client.get(kept_long.id).status is ScheduleStatus.SCHEDULED
    delivered = local.recorder.by_id
    assert wait_until(lambda: later.id in delivered() and kept_short.id in delivered(), 15, "the unaffected ones")
    local.engine.wait_until_quiet()
    assert short_one.id not in delivered()
    assert all(parse_due_ms(d.envelope["firedAt"]) <= answered_ms for d in delivered().get(periodic_id, []))
    client.cancel_group(neighbour)


def test_cancel_group_again_answers_what_joined_since(client: SchedulerClient) -> None:
    group = fresh_id("again")
    client.schedule(HOUR, 1, group=group)
    first = client.cancel_group(group)
    again = client.cancel_group(group)
    assert (first.stopped_schedules, again.stopped_schedules, again.stopped_periodic) == (1, 0, 0)
    assert again.cancelled_before > first.cancelled_before
    client.schedule(HOUR, 2, group=group)
    client.put_periodic(fresh_id("joined"), 3, every=3600, group=group)
    third = client.cancel_group(group)
    assert (third.stopped_schedules, third.stopped_periodic) == (1, 1)


def test_a_group_lists_its_waiting_members_in_the_order_they_joined_page_by_page(client: SchedulerClient) -> None:
    group = fresh_id("listed")
    joined = [client.schedule(timedelta(hours=10 - n), {"n": n}, group=group).id for n in range(5)]  # due: reversed
    client.schedule(HOUR, "elsewhere", group=fresh_id("other"))
    client.schedule(HOUR, "nowhere")
    listed = list(client.list(group=group, page_size=2))
    assert [s.id for s in listed] == joined
    assert all(s.group == group and s.status is ScheduleStatus.SCHEDULED and s.payload is None for s in listed)
    periodic = [client.put_periodic(fresh_id(f"p{n}"), n, every=3600, group=group).id for n in range(3)]
    assert [p.id for p in client.list_periodic(group=group, page_size=2)] == periodic
    assert all(p.status is PeriodicStatus.ACTIVE for p in client.list_periodic(group=group))

    client.cancel_group(group)
    newcomer = client.schedule(HOUR, "new", group=group)
    after = {s.id: s.status for s in client.list(group=group)}
    assert after[newcomer.id] is ScheduleStatus.SCHEDULED
    assert all(status is ScheduleStatus.CANCELLED for i, status in after.items() if i in joined)  # until cleaned up
    assert list(client.list_periodic(group=group)) == []


@pytest.mark.parametrize("filters, field", [
    ({"status": "SCHEDULED"}, "status"),
    ({"due_after": datetime(2030, 1, 1, tzinfo=timezone.utc)}, "dueAfter"),
    ({"due_before": datetime(2030, 1, 1, tzinfo=timezone.utc)}, "dueBefore"),
])
def test_a_group_listing_takes_no_status_or_due_filter(client: SchedulerClient, filters: dict[str, Any],
                                                       field: str) -> None:
    with pytest.raises(ValidationError) as refused:
        next(client.list(group=fresh_id("g"), **filters))
    assert refused.value.field == field and "cannot be combined with group" in refused.value.message


@pytest.mark.parametrize("call, field", [
    (lambda c: c.schedule(HOUR, 1, group="no spaces"), "group"),
    (lambda c: c.put_periodic(fresh_id("bad"), 1, every=60, group="x" * 65), "group"),
    (lambda c: c.cancel_group("no/slash"), "group"),
    (lambda c: next(c.list(group="no spaces")), "group"),
    (lambda c: c.schedule_many([ScheduleRequest(HOUR, 1, group="")])[0], "schedules[0].group"),
])
def test_a_malformed_group_is_a_validation_error_naming_it(client: SchedulerClient, call: Any, field: str) -> None:
    try:
        refused = call(client)
    except ValidationError as error:
        refused = error
    assert isinstance(refused, ValidationError) and refused.field == field


def test_the_asyncio_client_creates_lists_and_cancels_a_group(use: Use[Any]) -> None:
    group, periodic_id = fresh_id("async-group"), fresh_id("async-beat")

    async def calls(timers: AsyncSchedulerClient) -> tuple[Any, ...]:
        created = [(await timers.schedule(HOUR, n, group=group)).id for n in range(3)]
        put = await timers.put_periodic(periodic_id, 1, every=3600, group=group)
        listed = [s.id async for s in timers.list(group=group, page_size=2)]
        periodic = [p.id async for p in timers.list_periodic(group=group, page_size=1)]
        cancelled = await timers.cancel_group(group)
        statuses = [(await timers.get(i)).status for i in created]
        with pytest.raises(NotFoundError):
            await timers.get_periodic(periodic_id)
        return created, put, listed, periodic, cancelled, statuses

    created, put, listed, periodic, cancelled, statuses = use(calls)
    assert put.group == group and listed == created and periodic == [periodic_id]
    assert (cancelled.group, cancelled.stopped_schedules, cancelled.stopped_periodic) == (group, 3, 1)
    assert statuses == [ScheduleStatus.CANCELLED] * 3


def test_a_group_and_an_id_with_a_colon_reach_the_api_decoded(client: SchedulerClient) -> None:
    """The client quotes a path's group and id (``:`` as ``%3A``); the API decodes them as API Gateway does."""
    group, schedule_id = fresh_id("tenant:7"), fresh_id("order:42.reminder")
    client.schedule(HOUR, 1, id=schedule_id, group=group)
    assert client.get(schedule_id).group == group
    assert client.cancel_group(group).stopped_schedules == 1
    assert client.get(schedule_id).status == ScheduleStatus.CANCELLED
