"""Groups in a user's test: the kit's client cancels a group, and ``advance`` then delivers only what the
cancel did not stop (members that joined after it, other groups); a group lists without ``listing``."""

from datetime import timedelta

import pytest

from cdk_delayed_scheduler.client import NotFoundError, ScheduleStatus


def test_advance_delivers_nothing_of_a_cancelled_group_but_what_joined_after(local_scheduler):
    timers = local_scheduler.client
    stopped = [timers.schedule(timedelta(minutes=m), {"n": m}, group="user-42").id for m in (1, 30, 90)]
    timers.put_periodic("user-42-digest", {"digest": True}, every=3600, group="user-42")
    other = timers.schedule(timedelta(minutes=30), "other", group="user-7").id
    assert [s.id for s in timers.list(group="user-42")] == stopped  # no listing=True needed

    cancelled = timers.cancel_group("user-42")
    assert (cancelled.stopped_schedules, cancelled.stopped_periodic) == (3, 1)
    later = timers.schedule(timedelta(minutes=30), "later", group="user-42").id

    local_scheduler.advance(hours=3)
    assert sorted(d.id for d in local_scheduler.deliveries()) == sorted([other, later])
    assert {timers.get(i).status for i in stopped} == {ScheduleStatus.CANCELLED}
    with pytest.raises(NotFoundError):
        timers.get_periodic("user-42-digest")
    assert timers.cancel_group("user-42").stopped_schedules == 0  # the later one was delivered already
