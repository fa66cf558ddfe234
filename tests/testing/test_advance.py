"""Time passes without sleeping: ``advance`` delivers what comes due, through the runtime's protocol."""

import random
from datetime import timedelta

import pytest

from cdk_delayed_scheduler.client import ScheduleRequest, ScheduleStatus
from cdk_delayed_scheduler.local import EngineOptions
from cdk_delayed_scheduler.testing import local_scheduler


def test_a_timer_an_hour_away_is_delivered_once_at_its_due_time(local_scheduler):
    timers = local_scheduler.client
    scheduled = timers.schedule(timedelta(hours=1), {"order": 42})
    assert scheduled.status == ScheduleStatus.SCHEDULED  # beyond the delay window: a timer in the table

    local_scheduler.advance(minutes=59, seconds=58)
    assert local_scheduler.deliveries() == []
    assert timers.get(scheduled.id).status == ScheduleStatus.QUEUED  # claimed within the window, not yet due

    local_scheduler.advance(seconds=2)
    (delivery,) = local_scheduler.deliveries()
    assert (delivery.id, delivery.payload, delivery.target) == (scheduled.id, {"order": 42}, "default")
    assert delivery.due_at == scheduled.due_at                       # dueAt as scheduled
    assert delivery.lateness == timedelta(0)                          # at its due instant, to the millisecond
    assert delivery.envelope.fired_at >= delivery.due_at
    assert timers.get(scheduled.id).status == ScheduleStatus.FIRED

    local_scheduler.advance(hours=2)
    assert len(local_scheduler.deliveries()) == 1                     # nothing delivered twice


def test_the_clock_moves_by_what_advance_was_given(local_scheduler):
    before = local_scheduler.now()
    local_scheduler.advance(days=1, hours=2)
    assert local_scheduler.now() - before == timedelta(days=1, hours=2)  # and it stands still between calls
    # the server's clock is the same one: a delay counts from the moved clock
    due = local_scheduler.client.schedule(timedelta(seconds=30), {}).due_at
    assert due - local_scheduler.now() == timedelta(seconds=30)


def test_timers_come_in_due_order_whichever_path_they_take(local_scheduler):
    timers = local_scheduler.client
    for name, delay in (("in-a-day", timedelta(days=1)), ("in-ten-seconds", timedelta(seconds=10)),
                        ("in-twenty-minutes", timedelta(minutes=20))):
        timers.schedule(delay, {"name": name}, id=name)

    local_scheduler.advance(days=1)
    assert [d.id for d in local_scheduler.deliveries()] == ["in-ten-seconds", "in-twenty-minutes", "in-a-day"]
    assert [d.lateness for d in local_scheduler.deliveries()] == [timedelta(0)] * 3


def test_a_cancelled_schedule_is_never_delivered(local_scheduler):
    timers = local_scheduler.client
    short = timers.schedule(timedelta(seconds=5), {"kept": False})     # already in the delayer queue
    long = timers.schedule(timedelta(hours=3), {"kept": False})        # a timer in the table
    kept = timers.schedule(timedelta(hours=3), {"kept": True})
    timers.cancel(short.id)
    timers.cancel(long.id)

    local_scheduler.advance(hours=4)
    assert [d.id for d in local_scheduler.deliveries()] == [kept.id]
    assert timers.get(short.id).status == timers.get(long.id).status == ScheduleStatus.CANCELLED


def test_each_periodic_occurrence_is_delivered_once_on_its_grid(local_scheduler):
    timers = local_scheduler.client
    definition = timers.put_periodic("report", {"job": "report"}, every=600)

    local_scheduler.advance(hours=1)
    deliveries = local_scheduler.deliveries()
    due_times = [d.due_at for d in deliveries]
    assert due_times == [definition.next_due_at + timedelta(minutes=10 * k) for k in range(6)]
    assert len({d.envelope.dedupe_key for d in deliveries}) == 6
    assert all(d.id == "report" and timedelta(0) <= d.lateness < timedelta(seconds=2) for d in deliveries)
    after = timers.get_periodic("report")
    assert (after.fired_count, after.skipped_count) == (6, 0)
    assert after.next_due_at == definition.next_due_at + timedelta(hours=1)


def test_a_deleted_periodic_timer_delivers_nothing_more(local_scheduler):
    timers = local_scheduler.client
    timers.put_periodic("poll", {}, every=60)
    local_scheduler.advance(minutes=3)
    timers.delete_periodic("poll")

    local_scheduler.advance(hours=1)
    assert len(local_scheduler.deliveries()) == 3


def test_a_failed_delivery_is_retried_after_the_visibility_timeout():
    """The engine's delayer queue hides a failed message for 6 x dispatcher_timeout (30 s)."""
    attempts = []

    def flaky(event, context):
        attempts.append(event["attempt"])
        if len(attempts) == 1:
            raise RuntimeError("the first attempt fails")

    with local_scheduler(targets={"flaky": flaky}) as scheduler:
        scheduled = scheduler.client.schedule(timedelta(seconds=10), {}, target="flaky")

        scheduler.advance(seconds=10)
        (first,) = scheduler.deliveries("flaky")
        assert first.error == "RuntimeError: the first attempt fails"

        scheduler.advance(seconds=30)
        assert [d.envelope.attempt for d in scheduler.deliveries("flaky")] == [1, 2]
        assert scheduler.deliveries("flaky")[1].error is None
        assert scheduler.client.get(scheduled.id).status == ScheduleStatus.FIRED


@pytest.mark.parametrize("seconds", [-1, float("nan"), float("inf")])
def test_advance_refuses_a_negative_or_unbounded_time(local_scheduler, seconds):
    with pytest.raises(ValueError, match=r"advance: the time to pass must be a finite number of seconds >= 0"):
        local_scheduler.advance(seconds)


def test_a_timer_in_a_window_shorter_than_the_sweep_interval_is_claimed_as_it_enters_it():
    """With a 5 s window and the rule's minute, a timer due in 5.1 s waits in the table and enters the window
    0.1 s later, long before the rule's next run: advance claims it then, and it comes at its due time."""
    with local_scheduler(delay_window=5) as scheduler:
        scheduled = scheduler.client.schedule(timedelta(seconds=5, milliseconds=100), {})
        assert scheduled.status == ScheduleStatus.SCHEDULED

        scheduler.advance(seconds=1)
        assert scheduler.client.get(scheduled.id).status == ScheduleStatus.QUEUED
        scheduler.advance(seconds=5)
        (delivery,) = scheduler.deliveries()
        assert (delivery.id, delivery.lateness) == (scheduled.id, timedelta(0))


def test_timers_spread_over_an_hour_each_come_at_their_due_instant_in_due_order(local_scheduler):
    """Some short (straight to the delayer queue), most waiting in the table until the rule's sweep claims
    them: each delivery starts at its due instant to the millisecond, whichever path it took."""
    spread = random.Random(7)
    requests = [ScheduleRequest(timedelta(seconds=spread.randint(1, 3600)), {"n": n}) for n in range(30)]
    scheduled = local_scheduler.client.schedule_many(requests)
    local_scheduler.advance(hours=1)
    deliveries = local_scheduler.deliveries()
    by_due = sorted(scheduled, key=lambda s: (s.due_at, s.id))
    assert sorted(d.id for d in deliveries) == sorted(s.id for s in scheduled)
    assert [d.due_at for d in deliveries] == [s.due_at for s in by_due]  # in due order
    assert {d.lateness for d in deliveries} == {timedelta(0)}


def test_a_retry_past_the_lateness_bound_is_parked_as_stale_and_the_target_not_called_again():
    """``max_lateness`` (the construct's prop, an engine option here) of one and a half visibility timeouts: the
    first attempt fails at its due time, the second a visibility timeout later, and the third would start two
    visibility timeouts after the due time, past the bound: it is not started."""
    calls: list = []

    def down(envelope, _context):
        calls.append(envelope)
        raise RuntimeError("the target is down")

    visibility = EngineOptions().visibility_timeout  # the kit's, as the engine's default
    with local_scheduler(down, max_lateness=visibility * 3 // 2) as timers:
        scheduled = timers.client.schedule(timedelta(minutes=1), {"n": 1})
        timers.advance(minutes=1, seconds=3 * visibility)
        assert [envelope["attempt"] for envelope in calls] == [1, 2]
        read = timers.client.get(scheduled.id)
        assert read.status == ScheduleStatus.FAILED
        assert read.last_error == (f"stale: it would start {2 * visibility} s after its due time, past "
                                   f"maxLatenessSeconds {visibility * 3 // 2}")
