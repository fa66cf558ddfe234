"""Pausing and resuming a periodic timer through the typed clients, sync and asyncio, against the local
engine, over both transports: nothing starts after ``pause_periodic`` returns, ``resume_periodic`` counts
what was passed over."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cdk_delayed_scheduler.client import AsyncSchedulerClient, ConflictError, NotFoundError, PeriodicStatus
from cdk_delayed_scheduler.local.api_calls import parse_due_ms

from ..e2e.conftest import wait_until
from .conftest import Use, fresh_id

pytestmark = pytest.mark.e2e


def test_nothing_starts_while_paused_and_a_resume_counts_what_was_passed_over(client, local):
    periodic_id = fresh_id("pause")
    client.put_periodic(periodic_id, {"tick": True}, every=1)
    assert wait_until(lambda: len(local.recorder.by_id().get(periodic_id, [])) >= 1, 15, "a first occurrence")
    paused = client.pause_periodic(periodic_id)
    paused_ms = time.time() * 1000
    assert (paused.status, paused.next_due_at) == (PeriodicStatus.PAUSED, None) and paused.paused_at is not None
    assert client.pause_periodic(periodic_id).paused_at == paused.paused_at  # again: nothing changes
    time.sleep(2.5)
    local.engine.wait_until_quiet()
    started = [parse_due_ms(d.envelope["firedAt"]) for d in local.recorder.by_id()[periodic_id]]
    assert all(fired <= paused_ms for fired in started)  # none started after the pause answered
    resumed = client.resume_periodic(periodic_id)
    assert resumed.status is PeriodicStatus.ACTIVE and resumed.paused_count >= 2 and resumed.paused_at is None
    assert resumed.next_due_at is not None and resumed.next_due_at.timestamp() * 1000 >= paused_ms + 2500
    assert wait_until(lambda: len(local.recorder.by_id()[periodic_id]) > len(started), 15, "an occurrence after")
    client.delete_periodic(periodic_id)


def test_an_ended_timer_is_a_conflict_and_an_unknown_one_not_found(client):
    periodic_id = fresh_id("ended")
    now = datetime.now(timezone.utc)  # a timer that would never fire is refused: this one ends after a few seconds
    client.put_periodic(periodic_id, 1, every=1, start_at=now - timedelta(minutes=1), end_at=now + timedelta(seconds=3))
    assert wait_until(lambda: client.get_periodic(periodic_id).status is PeriodicStatus.ENDED, 20, "its end")
    with pytest.raises(ConflictError, match="ENDED"):
        client.pause_periodic(periodic_id)
    with pytest.raises(NotFoundError):
        client.resume_periodic(fresh_id("nobody"))


def test_the_async_client_pauses_and_resumes(use: Use[Any]) -> None:
    periodic_id = fresh_id("async-pause")

    async def calls(timers: AsyncSchedulerClient) -> tuple[Any, ...]:
        await timers.put_periodic(periodic_id, "p", every=3600)
        answers = await timers.pause_periodic(periodic_id), await timers.resume_periodic(periodic_id)
        await timers.delete_periodic(periodic_id)
        return answers

    paused, resumed = use(calls)
    assert (paused.status, resumed.status) == (PeriodicStatus.PAUSED, PeriodicStatus.ACTIVE)
    assert (paused.next_due_at, resumed.paused_count) == (None, 0) and resumed.next_due_at is not None
