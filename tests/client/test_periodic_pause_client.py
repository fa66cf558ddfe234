"""Pausing and resuming a periodic timer through the typed clients, sync and asyncio, against the local
engine, over both transports: nothing starts after ``pause_periodic`` returns, ``resume_periodic`` counts
what was passed over. The tests that need time to pass run on the testing kit's clock, which moves only
when the test advances it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterator

import pytest

from cdk_delayed_scheduler.client import (AsyncSchedulerClient, ConflictError, NotFoundError, PeriodicStatus,
                                          SchedulerClient)
from cdk_delayed_scheduler.testing import LocalScheduler, local_scheduler

from .conftest import TRANSPORTS, Use, client_for, fresh_id

pytestmark = pytest.mark.e2e


@pytest.fixture(params=TRANSPORTS)
def on_the_kit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[tuple[LocalScheduler, SchedulerClient]]:
    """The testing kit's scheduler (its clock stands still until advanced) and a client of it over the transport."""
    with local_scheduler() as timers:
        yield timers, client_for(request.param, timers.engine, monkeypatch)


def test_nothing_starts_while_paused_and_a_resume_counts_what_was_passed_over(on_the_kit) -> None:
    timers, client = on_the_kit
    client.put_periodic("pause", {"tick": True}, every=1)
    timers.advance(seconds=1)
    assert len(timers.deliveries()) == 1  # a first occurrence
    paused = client.pause_periodic("pause")
    assert (paused.status, paused.next_due_at) == (PeriodicStatus.PAUSED, None) and paused.paused_at is not None
    assert client.pause_periodic("pause").paused_at == paused.paused_at  # again: nothing changes
    timers.advance(seconds=3)
    assert [d.received_at <= paused.paused_at for d in timers.deliveries()] == [True]  # none started after the pause
    resumed = client.resume_periodic("pause")
    assert resumed.status is PeriodicStatus.ACTIVE and resumed.paused_count >= 3 and resumed.paused_at is None
    assert resumed.next_due_at is not None and resumed.next_due_at >= paused.paused_at + timedelta(seconds=3)
    timers.advance(seconds=1)
    assert len(timers.deliveries()) == 2  # an occurrence after the resume
    client.delete_periodic("pause")


def test_an_ended_timer_is_a_conflict_and_an_unknown_one_not_found(on_the_kit) -> None:
    timers, client = on_the_kit
    now = timers.now()  # a timer that would never fire is refused: this one ends after a few seconds
    client.put_periodic("ended", 1, every=1, start_at=now - timedelta(minutes=1), end_at=now + timedelta(seconds=3))
    assert client.get_periodic("ended").status is PeriodicStatus.ACTIVE
    timers.advance(seconds=4)
    assert client.get_periodic("ended").status is PeriodicStatus.ENDED
    with pytest.raises(ConflictError, match="ENDED"):
        client.pause_periodic("ended")
    with pytest.raises(NotFoundError):
        client.resume_periodic("nobody")


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
