"""The ids and group names a call puts in a route's path (``/schedules/{id}``, ``/periodic/{id}``,
``/groups/{group}``) are checked by the runtime's rules (``contract.json``'s patterns) before anything is
sent: a value the path cannot carry raises ``ValidationError`` naming ``id`` or ``group``, from the sync
and the asyncio client alike, where an empty one used to name another route (404 "no route")."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Callable

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.client import AsyncSchedulerClient, PeriodicStatus, SchedulerClient, ValidationError

from cdk_delayed_scheduler.local.engine import API_FUNCTION

from .conftest import Local, ScriptedServer, fresh_id

HOUR = timedelta(hours=1)
# Each call that names an id or a group in its path, with the field its path parameter is.
CALLS: dict[str, tuple[str, Callable[[Any, Any], Any]]] = {
    "get": ("id", lambda c, v: c.get(v)),
    "cancel": ("id", lambda c, v: c.cancel(v)),
    "reschedule": ("id", lambda c, v: c.reschedule(v, HOUR)),
    "put_periodic": ("id", lambda c, v: c.put_periodic(v, 1, every=60)),
    "get_periodic": ("id", lambda c, v: c.get_periodic(v)),
    "pause_periodic": ("id", lambda c, v: c.pause_periodic(v)),
    "resume_periodic": ("id", lambda c, v: c.resume_periodic(v)),
    "delete_periodic": ("id", lambda c, v: c.delete_periodic(v)),
    "cancel_group": ("group", lambda c, v: c.cancel_group(v)),
}
PATTERNS = {"id": contract.ID_PATTERN.pattern, "group": contract.GROUP_PATTERN.pattern}
BAD = {"id": ["", "a/b", "no spaces", "é", "x" * 129], "group": ["", "a/b", "no spaces", "x" * 65]}


@pytest.mark.parametrize("name", CALLS)
def test_a_path_parameter_the_route_cannot_carry_raises_validation_error_and_sends_nothing(
        name: str, scripted: Callable[[list], ScriptedServer]) -> None:
    server = scripted([(500, {"message": "nothing should be sent"})])
    sync = SchedulerClient(server.url, region="us-east-1", sign=False)
    field, call = CALLS[name]

    async def refused_async(value: str) -> ValidationError:
        async with AsyncSchedulerClient(server.url, region="us-east-1", sign=False) as timers:
            with pytest.raises(ValidationError) as refused:
                await call(timers, value)
            return refused.value

    for value in BAD[field]:
        with pytest.raises(ValidationError) as refused:
            call(sync, value)
        for error in (refused.value, asyncio.run(refused_async(value))):
            assert (error.status, error.field) == (400, field), (name, value)
            assert error.message == f"{field} must match {PATTERNS[field]} (got {value!r})"
    assert server.seen == []


def test_cancel_group_of_an_empty_name_is_refused_over_direct_invoke_too(local: Local,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", local.engine.lambda_endpoint_url)
    with pytest.raises(ValidationError) as refused:
        SchedulerClient.for_function(API_FUNCTION, local.session).cancel_group("")
    assert refused.value.field == "group"


def test_the_longest_id_and_group_the_rules_allow_reach_the_api(client: SchedulerClient) -> None:
    schedule_id, group = fresh_id("x" * 115), fresh_id("g" * 51)
    assert (len(schedule_id), len(group)) == (128, 64)
    client.schedule(HOUR, 1, id=schedule_id, group=group)
    assert client.get(schedule_id).group == group
    assert client.cancel_group(group).stopped_schedules == 1
    periodic = client.put_periodic(schedule_id, 1, every=3600)
    assert client.pause_periodic(periodic.id).status == PeriodicStatus.PAUSED
    assert client.delete_periodic(schedule_id).id == schedule_id
