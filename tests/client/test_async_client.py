"""The asyncio client against the real local engine, over both transports (SigV4-signed HTTP through
httpx, and direct invokes of the api function on worker threads): the sync client's calls, results
and errors, awaited, and many calls at once on one client."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

import pytest

from cdk_delayed_scheduler.client import (AsyncSchedulerClient, ConflictError, NotFoundError, PayloadTooLargeError,
                                          Periodic, PeriodicStatus, Schedule, ScheduleRequest, ScheduleStatus,
                                          ValidationError)

from .conftest import Local, Use, fresh_id

pytestmark = pytest.mark.e2e
HOUR = timedelta(hours=1)


def test_schedule_get_and_cancel_answer_the_typed_results(use: Use[Any]) -> None:
    due = datetime.now(timezone.utc).replace(microsecond=123456) + HOUR
    schedule_id = fresh_id("async")

    async def calls(timers: AsyncSchedulerClient) -> tuple[Schedule, Schedule, Any, Schedule]:
        created = await timers.schedule(due, {"order": 42}, id=schedule_id)
        return created, await timers.get(schedule_id), await timers.cancel(schedule_id), await timers.get(schedule_id)

    created, fetched, removed, after = use(calls)
    assert (created.id, created.status, created.due_at) == (schedule_id, ScheduleStatus.SCHEDULED,
                                                            due.replace(microsecond=123000))
    assert (fetched.payload, fetched.due_at, fetched.target) == ({"order": 42}, created.due_at, "default")
    assert (removed.id, removed.status) == (schedule_id, ScheduleStatus.CANCELLED)
    assert after.status is ScheduleStatus.CANCELLED


def test_the_same_create_again_answers_the_same_and_another_body_is_a_conflict(use: Use[Any]) -> None:
    schedule_id = fresh_id("again")

    async def calls(timers: AsyncSchedulerClient) -> tuple[Schedule, Schedule]:
        first = await timers.schedule(HOUR, {"n": 1}, id=schedule_id)
        again = await timers.schedule(HOUR, {"n": 1}, id=schedule_id)
        with pytest.raises(ConflictError) as raised:
            await timers.schedule(HOUR, {"n": 2}, id=schedule_id)
        assert raised.value.status == 409
        return first, again

    first, again = use(calls)
    assert again == first


@pytest.mark.parametrize("call, kind, field", [
    (lambda t: t.schedule(timedelta(seconds=-1), 1), ValidationError, "delaySeconds"),
    (lambda t: t.schedule(HOUR, 1, id="bad id!"), ValidationError, "id"),
    (lambda t: t.schedule(HOUR, "x" * (256 * 1024 + 1)), PayloadTooLargeError, None),
    (lambda t: t.get(f"unknown-{uuid.uuid4().hex}"), NotFoundError, None),
    (lambda t: t.cancel(f"unknown-{uuid.uuid4().hex}"), NotFoundError, None),
    (lambda t: t.get_periodic(f"unknown-{uuid.uuid4().hex}"), NotFoundError, None),
    (lambda t: t.put_periodic(fresh_id("p"), 1, every=1, cron="0 9 * * ? *"), ValidationError, None),
], ids=["negative-delay", "bad-id", "too-large", "get-unknown", "cancel-unknown", "periodic-unknown", "every-and-cron"])
def test_error_answers_raise_the_sync_clients_typed_errors(use: Use[Any], call: Callable[[AsyncSchedulerClient], Any],
                                                           kind: type[Exception], field: str | None) -> None:
    async def calls(timers: AsyncSchedulerClient) -> Any:
        with pytest.raises(kind) as raised:
            await call(timers)
        return raised.value

    error = use(calls)
    assert type(error) is kind and not error.retryable
    if field is not None:
        assert error.field == field


def test_schedule_many_answers_each_item_in_order_across_batches(use: Use[Any]) -> None:
    ids = [fresh_id(f"many{n}") for n in range(13)]
    ids[11] = "bad id!"
    items = [ScheduleRequest(HOUR, {"n": n}, id=i) if n % 2 else {"at": HOUR, "payload": {"n": n}, "id": i}
             for n, i in enumerate(ids)]

    async def calls(timers: AsyncSchedulerClient) -> tuple[list[Any], Schedule]:
        return await timers.schedule_many(items), await timers.get(ids[12])

    results, last = use(calls)
    assert isinstance(results[11], ValidationError) and results[11].field == "schedules[11].id"
    assert [r.id for n, r in enumerate(results) if n != 11] == [i for n, i in enumerate(ids) if n != 11]
    assert last.payload == {"n": 12}


def test_periodic_timers_are_put_read_listed_and_deleted(use: Use[Any]) -> None:
    ids = [fresh_id(f"every{n}") for n in range(3)]

    async def calls(timers: AsyncSchedulerClient) -> tuple[list[Periodic], Periodic, list[str], Any]:
        put = [await timers.put_periodic(i, {"n": n}, every=timedelta(hours=n + 1)) for n, i in enumerate(ids)]
        fetched = await timers.get_periodic(ids[1])
        listed = [p.id async for p in timers.list_periodic(page_size=1)]
        removed = [await timers.delete_periodic(i) for i in ids]
        with pytest.raises(NotFoundError):
            await timers.get_periodic(ids[0])
        return put, fetched, listed, removed

    put, fetched, listed, removed = use(calls)
    assert [(p.status, p.every) for p in put] == [(PeriodicStatus.ACTIVE, 3600 * (n + 1)) for n in range(3)]
    assert (fetched.payload, fetched.next_due_at) == ({"n": 1}, put[1].next_due_at)
    assert set(ids) <= set(listed)
    assert [r.status for r in removed] == [PeriodicStatus.DELETED] * 3


def test_list_pages_through_schedules_by_status_and_due_window(use: Use[Any]) -> None:
    start = datetime(2091, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=uuid.uuid4().int % 500_000)
    ids = [fresh_id(f"listed{n}") for n in range(5)]

    async def calls(timers: AsyncSchedulerClient) -> list[str]:
        for n, i in enumerate(ids):
            await timers.schedule(start + timedelta(seconds=n + 1), n, id=i)
        await timers.schedule(start + timedelta(hours=2), "outside the window")
        pages = timers.list(status=ScheduleStatus.SCHEDULED, due_after=start, due_before=start + HOUR, page_size=2)
        return [s.id async for s in pages]

    assert sorted(use(calls)) == sorted(ids)


def test_a_naive_due_after_is_refused_at_the_call_before_anything_is_sent(use: Use[Any]) -> None:
    async def calls(timers: AsyncSchedulerClient) -> None:
        with pytest.raises(ValueError, match="due_after must be a timezone-aware datetime"):
            timers.list(due_after=datetime(2030, 1, 1))

    use(calls)


def test_many_concurrent_calls_on_one_client_each_get_their_own_answer(use: Use[Any]) -> None:
    ids = [fresh_id(f"gather{n}") for n in range(40)]

    async def calls(timers: AsyncSchedulerClient) -> tuple[list[Schedule], list[Schedule]]:
        created = await asyncio.gather(*(timers.schedule(HOUR, {"n": n}, id=i) for n, i in enumerate(ids)))
        fetched = await asyncio.gather(*(timers.get(i) for i in ids))
        return created, fetched

    created, fetched = use(calls)
    assert [s.id for s in created] == ids and all(s.status is ScheduleStatus.SCHEDULED for s in created)
    assert [s.payload for s in fetched] == [{"n": n} for n in range(40)]


def test_a_due_schedule_reaches_the_target(use: Use[Any], local: Local) -> None:
    payload = {"deliver": fresh_id("async-me")}
    created = use(lambda timers: timers.schedule(timedelta(seconds=1), payload))
    assert created.status is ScheduleStatus.QUEUED
    assert local.recorder.wait_for({created.id}, timeout_seconds=15)
    assert local.recorder.by_id()[created.id][0].envelope["payload"] == payload


def test_reschedule_answers_the_new_due_time_and_keeps_the_payload(use: Use[Any]) -> None:
    schedule_id = fresh_id("async-move")
    later = datetime.now(timezone.utc).replace(microsecond=0) + 2 * HOUR

    async def calls(timers: AsyncSchedulerClient) -> tuple[Schedule, Schedule]:
        await timers.schedule(HOUR, {"order": 7}, id=schedule_id)
        return await timers.reschedule(schedule_id, later), await timers.get(schedule_id)

    moved, read = use(calls)
    assert (moved.id, moved.status, moved.due_at) == (schedule_id, ScheduleStatus.SCHEDULED, later)
    assert (read.due_at, read.payload) == (later, {"order": 7})
