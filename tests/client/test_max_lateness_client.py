"""``max_lateness=`` on the sync and the asyncio client, over both transports against a scripted API: it is sent
as ``maxLatenessSeconds`` (whole seconds) by a create, a batch item and a periodic PUT, read back from the
answers as a ``timedelta``, and refused before anything is sent when it is not whole seconds within range."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Callable

import pytest

from cdk_delayed_scheduler.client import AsyncSchedulerClient, ScheduleRequest, SchedulerClient

from .conftest import TRANSPORTS, ScriptedServer, sent_bodies

HOUR = timedelta(hours=1)
DUE = "2030-01-01T00:00:00.000Z"
CREATED = {"id": "late-1", "dueAt": DUE, "status": "SCHEDULED", "target": "default"}
READ = {**CREATED, "payload": {"order": 42}, "maxLatenessSeconds": 300}
UNBOUNDED_PERIODIC = {"id": "beat", "status": "ACTIVE", "nextDueAt": DUE, "every": 60, "payload": 1}
PERIODIC = {**UNBOUNDED_PERIODIC, "maxLatenessSeconds": 30}


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_schedule_sends_max_lateness_in_whole_seconds_and_get_reads_it_back(over, transport: str) -> None:
    client, server = over(transport, [(201, CREATED), (201, CREATED), (200, READ), (200, CREATED)])
    client.schedule(HOUR, {"order": 42}, id="late-1", max_lateness=timedelta(minutes=5))
    client.schedule(HOUR, {"order": 42}, id="late-1")
    read, unbounded = client.get("late-1"), client.get("late-1")
    bounded_body, plain_body = sent_bodies(server)[:2]
    assert bounded_body["maxLatenessSeconds"] == 300 and type(bounded_body["maxLatenessSeconds"]) is int
    assert "maxLatenessSeconds" not in plain_body
    assert (read.max_lateness, unbounded.max_lateness) == (timedelta(seconds=300), None)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_batch_items_and_periodic_timers_send_and_read_max_lateness(over, transport: str) -> None:
    batch = {"results": [{"status": 201, "body": {**CREATED, "id": name}} for name in ("a", "b", "c")]}
    client, server = over(transport, [(200, batch), (201, PERIODIC), (200, UNBOUNDED_PERIODIC)])
    client.schedule_many([ScheduleRequest(HOUR, 1, id="a", max_lateness=timedelta(days=365)),
                          {"at": HOUR, "payload": 2, "id": "b", "max_lateness": timedelta(seconds=1)},
                          ScheduleRequest(HOUR, 3, id="c")])
    put = client.put_periodic("beat", 1, every=60, max_lateness=timedelta(seconds=30))
    unbounded = client.get_periodic("beat")
    items = sent_bodies(server)[0]["schedules"]
    assert [item.get("maxLatenessSeconds") for item in items] == [31_536_000, 1, None]
    assert sent_bodies(server)[1] == {"payload": 1, "every": 60, "maxLatenessSeconds": 30}
    assert (put.max_lateness, unbounded.max_lateness) == (timedelta(seconds=30), None)


BAD: list[tuple[Any, type, str]] = [
    (timedelta(seconds=1.5), ValueError, "max_lateness must be whole seconds from 1 to 31536000 (365 days), got 1.5"),
    (timedelta(0), ValueError, "max_lateness must be whole seconds from 1 to 31536000 (365 days), got 0.0"),
    (timedelta(days=365, seconds=1), ValueError, "got 31536001.0"),
    (300, TypeError, "max_lateness must be a timedelta, got int"),
]
CALLS: dict[str, Callable[[Any, Any], Any]] = {
    "schedule": lambda c, bad: c.schedule(HOUR, 1, max_lateness=bad),
    "put_periodic": lambda c, bad: c.put_periodic("beat", 1, every=60, max_lateness=bad),
    "schedule_many": lambda c, bad: c.schedule_many([ScheduleRequest(HOUR, 1), ScheduleRequest(HOUR, 2,
                                                                                              max_lateness=bad)]),
}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize(("bad", "error", "says"), BAD)
def test_a_max_lateness_the_api_would_refuse_is_refused_before_anything_is_sent(
        scripted: Callable[[list], ScriptedServer], call: str, bad: Any, error: type, says: str) -> None:
    server = scripted([(500, {"message": "nothing should be sent"})])
    client = SchedulerClient(server.url, region="us-east-1", sign=False)
    with pytest.raises(error) as refused:
        CALLS[call](client, bad)
    assert says in str(refused.value)
    if call == "schedule_many":
        assert str(refused.value).startswith("items[1].max_lateness ")
    assert server.seen == []


def test_the_asyncio_client_sends_and_reads_max_lateness(scripted: Callable[[list], ScriptedServer]) -> None:
    server = scripted([(201, CREATED), (201, PERIODIC), (200, READ)])

    async def calls() -> tuple[Any, Any]:
        async with AsyncSchedulerClient(server.url, region="us-east-1", sign=False) as timers:
            await timers.schedule(HOUR, {"order": 42}, id="late-1", max_lateness=timedelta(minutes=5))
            put = await timers.put_periodic("beat", 1, every=60, max_lateness=timedelta(seconds=30))
            return put, await timers.get("late-1")

    put, read = asyncio.run(calls())
    assert [body.get("maxLatenessSeconds") for body in sent_bodies(server)[:2]] == [300, 30]
    assert (put.max_lateness, read.max_lateness) == (timedelta(seconds=30), timedelta(minutes=5))
