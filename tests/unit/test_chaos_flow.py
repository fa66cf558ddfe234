"""The chaos run's limit check on its own (no engine): arrivals and calls made up to break each limit are reported,
named by the timer whose call broke it; those within the limits, the window's allowance included, are not."""

from __future__ import annotations

import json
import logging
import random

from cdk_delayed_scheduler.local.chaos import WAITING_FOR_ROOM, Trail
from cdk_delayed_scheduler.local.chaos_checks import ChaosReport, as_json
from cdk_delayed_scheduler.local.chaos_flow import MAX_IN_FLIGHT, RATE, WINDOW_MS, check_flow
from cdk_delayed_scheduler.local.gauge import ARRIVAL_ALLOWANCE_MS
from cdk_delayed_scheduler.local.gauge import Gauge, Passage, most_in_a_window, most_inside
from cdk_delayed_scheduler.local.deliveries import Recorder

START_MS = 1_893_456_000_000
INTERVAL_MS = 1050 / RATE
"""The runtime's slots: a period and the 50 ms start tolerance over the rate."""


def _calls(starts_ms: list[float], hold_ms: int = 20) -> list[Passage]:
    """One call per start, each ``hold_ms`` long, as the receiver would record them (entries and exits in order)."""
    moments = [(round(at), n, True) for n, at in enumerate(starts_ms)]
    moments += [(round(at) + hold_ms, n, False) for n, at in enumerate(starts_ms)]
    # at one instant, a call leaves before the next enters, as the receiver's lock orders them
    return [Passage(f"t-{n}", n, entering, at) for at, n, entering in sorted(moments, key=lambda m: (m[0], m[2]))]


def _check(passages: list[Passage], **figures: object) -> ChaosReport:
    report = ChaosReport(timers=0, periodic=0, seconds=0, faults={}, fault_stages={})
    arguments = {"burst_due_ms": {}, "first_arrivals_ms": {}, "waited_for_room": 0, "held_back": 0, **figures}
    report.limited = check_flow(report.violations, passages, **arguments)  # type: ignore[arg-type]
    return report


def test_arrivals_at_the_rate_one_call_inside_at_a_time_pass():
    report = _check(_calls([START_MS + n * INTERVAL_MS for n in range(100)]))
    assert report.ok, report.violations
    assert report.limited is not None
    assert (report.limited.arrivals, report.limited.most_in_flight) == (100, 1)
    assert report.limited.most_in_a_window == 14  # 700 ms of slots 52.5 ms apart


def test_one_arrival_more_than_the_rate_in_a_window_is_reported_naming_the_arrival_that_broke_it():
    starts = [START_MS + n * (WINDOW_MS - 1) / RATE for n in range(RATE + 1)]  # 21 within 699 ms
    report = _check(_calls(starts, hold_ms=1))
    assert report.limited is not None and report.limited.most_in_a_window == RATE + 1
    assert len(report.violations) == 1
    assert report.violations[0].startswith(f"t-{RATE}: the {RATE + 1}th arrival at target limited within "
                                           f"{WINDOW_MS} ms")
    assert "the window from t-0" in report.violations[0]


def test_starts_within_their_tolerance_arriving_within_the_allowance_after_them_pass():
    """What the window's allowance covers: each call starts within 50 ms after its slot and arrives up to the allowance
    after its start, in any order; 21 such arrivals always span a period less the allowance or more."""
    rng = random.Random(7)
    starts = [START_MS + n * INTERVAL_MS + rng.uniform(0, 50) for n in range(2000)]
    arrivals = sorted(start + rng.uniform(0, ARRIVAL_ALLOWANCE_MS) for start in starts)
    # the worst: a period's calls all started late and arrived late, the next period's neither
    squeezed = sorted(START_MS + n * INTERVAL_MS + (49 + ARRIVAL_ALLOWANCE_MS) * (n // RATE % 2 == 0)
                      for n in range(200))
    for case, most in ((arrivals, None), (squeezed, RATE)):
        report = _check(_calls(case, hold_ms=1))
        assert report.ok, report.violations
        assert report.limited is not None and report.limited.most_in_a_window <= RATE
        assert most is None or report.limited.most_in_a_window == most


def test_a_burst_let_through_is_reported():
    report = _check(_calls([START_MS + n for n in range(3 * RATE)], hold_ms=0))
    assert report.limited is not None and report.limited.most_in_a_window == 3 * RATE
    assert any("arrival at target limited" in v for v in report.violations)


def test_one_call_more_than_max_in_flight_inside_at_once_is_reported_naming_the_call_that_entered():
    # four calls overlapping, slowly enough for the rate: a place given twice (a lease that ended too soon)
    report = _check(_calls([START_MS + n * 100 for n in range(MAX_IN_FLIGHT + 1)], hold_ms=1000))
    assert report.limited is not None and report.limited.most_in_flight == MAX_IN_FLIGHT + 1
    assert report.violations == [f"t-{MAX_IN_FLIGHT}: the {MAX_IN_FLIGHT + 1}th call inside target limited at once "
                                 f"(maxInFlight {MAX_IN_FLIGHT}; with t-0, t-1, t-2)"]


def test_a_call_that_left_has_given_its_place_back_even_at_the_same_instant():
    calls = _calls([START_MS + n * 100 for n in range(10)], hold_ms=300)  # each enters as the third before it leaves
    assert most_inside(calls) == (3, ["t-0", "t-1", "t-2"])
    assert _check(calls).ok


def test_the_most_in_a_window_counts_windows_starting_at_each_arrival():
    arrivals = [(0, "a"), (500, "b"), (799, "c"), (800, "d"), (1500, "e")]
    assert most_in_a_window(arrivals, 800) == (3, ["a", "b", "c"])
    assert most_in_a_window([], 800) == (0, [])


def test_the_figures_say_how_long_the_burst_took_against_the_rate_and_how_often_it_waited():
    due = {f"t-{n}": START_MS + n for n in range(40)}
    first = {f"t-{n}": START_MS + 2000 + n * 100 for n in range(30)}  # 30 delivered, the last 4.9 s after the first due
    report = _check(_calls([START_MS + n * INTERVAL_MS for n in range(3)]), burst_due_ms=due, first_arrivals_ms=first,
                    waited_for_room=60, held_back=2)
    figures = report.limited
    assert figures is not None
    assert (figures.burst, figures.burst_half_seconds, figures.burst_seconds, figures.rate_allows_seconds) == (
        40, 3.4, 4.9, 1.6)
    assert (figures.waited_for_room, figures.held_back) == (60, 2)
    assert ("burst of 40: half arrived in 3.4s, all in 4.9s (the rate allows 1.6s); waited for room 60 (1.5 a timer), "
            "held back 2") in figures.line()
    assert figures.line() in report.lines()
    assert json.loads(as_json(report))["limited"]["most_in_flight"] == 1


def test_the_receiver_records_each_call_as_it_enters_and_leaves():
    recorder = Recorder()
    gauge = Gauge(recorder, hold_seconds=0)
    for n in (1, 2):
        gauge({"id": f"t-{n}", "dueAt": "2030-01-01T00:00:00.000Z", "attempt": 1}, None)
    assert [(p.schedule_id, p.entering) for p in gauge.passages] == [("t-1", True), ("t-1", False), ("t-2", True),
                                                                     ("t-2", False)]
    assert [d.received_ms for d in recorder.deliveries] == [p.at_ms for p in gauge.passages if p.entering]


def test_the_trail_counts_the_waits_for_room_of_the_timers_asked_about():
    trail = Trail()
    for schedule_id, event, reason in [("a", "put_back", WAITING_FOR_ROOM), ("a", "put_back", None),
                                       ("b", "put_back", WAITING_FOR_ROOM), ("b", "held_back", "throttled"),
                                       ("c", "put_back", WAITING_FOR_ROOM)]:
        fields = {"id": schedule_id, **({"reason": reason} if reason else {})}
        trail.emit(logging.makeLogRecord({"event": event, "fields": fields}))
    assert trail.count({"a", "b"}, "put_back", WAITING_FOR_ROOM) == 2
    assert trail.count({"a", "b"}, "put_back") == 3
    assert trail.count({"a", "b"}, "held_back") == 1
