"""``cdk-delayed-scheduler check``'s pure parts: the plan of a run, the verdict on each record, and the lateness
table and report. Records are built from the API's JSON, as the client reads them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cdk_delayed_scheduler._check_plan import STEP_SECONDS
from cdk_delayed_scheduler._check_report import (PeriodicFacts, TimerFacts, judge_periodic, judge_timer, lateness_rows,
                                                 nearest_rank)
from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.check import CheckReport, PlannedTimer, make_plan
from cdk_delayed_scheduler.client import Periodic, Schedule

DUE = datetime(2026, 11, 25, 12, tzinfo=timezone.utc)
SHORT = PlannedTimer("short-1", "short", 10.0)
LONG = PlannedTimer("long-1", "long", 930.0)
CANCEL = PlannedTimer("cancel-short", "short", 11.0, "cancel")
MOVED = PlannedTimer("reschedule", "short", 10.0, "reschedule", 20.0)


def _at(offset_ms: int) -> str:
    return (DUE + timedelta(milliseconds=offset_ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _record(status: str, fired_ms: int | None = None, due_ms: int = 0, **fields: Any) -> Schedule:
    """A record due at ``DUE + due_ms``, fired ``fired_ms`` after ``DUE`` when given."""
    body = {"id": "x", "dueAt": _at(due_ms), "status": status, **fields}
    return Schedule.from_json({**body, "firedAt": _at(fired_ms)} if fired_ms is not None else body)


def _facts(timer: PlannedTimer, record: Schedule | None, created: str | None = None, **fields: Any) -> TimerFacts:
    created_status = created or timer.expected_status
    facts = TimerFacts(timer, f"check-test-{timer.name}", Schedule.from_json({"id": "x", "dueAt": _at(0),
                                                                              "status": created_status}),
                       due_at=DUE, local_due=100.0, record=record, read_at=112.0)
    for name, value in fields.items():
        setattr(facts, name, value)
    return facts


# --- the plan ---------------------------------------------------------------------------------------------------

def test_a_plan_makes_each_path_s_timers_a_cancel_on_each_and_a_reschedule_in_the_run_s_group():
    plan = make_plan(short_delay=2, long_delay=100, timers=2, run_id="check-test")
    assert {t.name: (t.path, t.delay, t.action) for t in plan.timers} == {
        "short-1": ("short", 2, None), "short-2": ("short", 2 + STEP_SECONDS, None),
        "cancel-short": ("short", 2 + 2 * STEP_SECONDS, "cancel"), "reschedule": ("short", 2, "reschedule"),
        "long-1": ("long", 100, None), "long-2": ("long", 100 + STEP_SECONDS, None),
        "cancel-long": ("long", 100 + 2 * STEP_SECONDS, "cancel")}
    (moved,) = (t for t in plan.timers if t.action == "reschedule")
    assert moved.new_delay == 4 and moved.row == "reschedule"
    assert plan.group == "check-test" and plan.periodic_id == "check-test-periodic"
    assert [plan.schedule_id(t) for t in plan.timers][:2] == ["check-test-short-1", "check-test-short-2"]
    assert plan.payload("short-1") == {"check": "check-test", "timer": "short-1"}


def test_runs_get_distinct_run_ids():
    assert len({make_plan().run_id for _ in range(20)}) == 20


def test_the_default_long_delay_exceeds_the_construct_s_default_delay_window():
    plan = make_plan()
    default_window = contract.DELAY_WINDOW_SECONDS.default or 0
    assert min(t.delay for t in plan.timers if t.path == "long") > default_window
    assert max(t.last_due_seconds for t in plan.timers if t.path == "short") < contract.DELAY_WINDOW_SECONDS.min


@pytest.mark.parametrize(("options", "message"), [
    ({"timers": 0}, "--timers must be 1-100, got 0"),
    ({"short_delay": 0}, "--short-delay must be > 0 seconds, got 0"),
    ({"short_delay": 10, "long_delay": 20}, "--long-delay must be longer than the short timers' last due time (20 s)"),
    ({"every": 0}, "--every must be >= 1 second, got 0"),
    ({"timeout": 0}, "--timeout must be > 0 seconds, got 0"),
    ({"max_attempts": 0}, "--max-attempts must be 1-1000, got 0"),
    ({"run_id": "no spaces"}, "run_id must be 1-64 characters of A-Za-z0-9._:-"),
])
def test_an_option_out_of_range_is_refused_naming_it(options, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_plan(**options)


def test_the_dry_run_names_each_call_the_wait_and_the_clean_up():
    plan = make_plan(short_delay=1.5, long_delay=6, timers=1, every=2, timeout=15, run_id="check-test")
    text = "\n".join(plan.lines("through the HTTP API http://x (SigV4)"))
    assert "PUT /periodic/check-test-periodic  every 2 s, until at least 3 occurrences have fired" in text
    assert ("POST /schedules check-test-reschedule  delaySeconds 1.5 (expects QUEUED: the short path), then PATCH at "
            "once to delaySeconds 3") in text
    assert "POST /schedules check-test-cancel-long  delaySeconds 6.35 (expects SCHEDULED: the long path), then DELETE" in text
    assert "wait: about 9 s after the creates" in text and "at most 15 s more for late ones" in text
    assert "clean up: DELETE /periodic/check-test-periodic, DELETE /groups/check-test" in text
    assert plan.to_json()["waitSeconds"] == 6.35 + 3


# --- one-shot verdicts ------------------------------------------------------------------------------------------

def test_a_timer_fired_at_or_after_its_due_time_passes_with_its_lateness():
    result = judge_timer(_facts(SHORT, _record("FIRED", fired_ms=42, attempts=1)))
    assert result.problems == () and result.lateness_ms == 42 and result.status == "FIRED"


def test_a_timer_fired_before_its_due_time_is_early():
    result = judge_timer(_facts(LONG, _record("FIRED", fired_ms=-5)))
    assert result.problems == ("early: fired 5 ms before its due time",) and result.lateness_ms == -5


def test_a_rescheduled_timer_delivered_at_its_old_due_time_fails():
    new_due = DUE + timedelta(seconds=10)
    facts = _facts(MOVED, _record("FIRED", fired_ms=3, due_ms=10_000), due_at=new_due, old_due_at=DUE)
    (problem,) = judge_timer(facts).problems
    assert problem.startswith("delivered before its new due time, after its reschedule: firedAt 2026-11-25T12:00:00.003Z")


def test_a_rescheduled_timer_whose_record_keeps_its_old_due_time_fails():
    facts = _facts(MOVED, _record("FIRED", fired_ms=3), due_at=DUE + timedelta(seconds=10), old_due_at=DUE)
    problems = judge_timer(facts).problems
    assert problems[0] == ("its record's dueAt 2026-11-25T12:00:00.000Z is not the rescheduled one, "
                           "2026-11-25T12:00:10.000Z")


def test_a_rescheduled_timer_fired_at_its_new_due_time_passes():
    facts = _facts(MOVED, _record("FIRED", fired_ms=10_007, due_ms=10_000), due_at=DUE + timedelta(seconds=10),
                   old_due_at=DUE)
    assert judge_timer(facts).problems == () and judge_timer(facts).lateness_ms == 7


def test_a_cancelled_timer_that_reads_fired_was_delivered_after_its_cancel():
    (problem,) = judge_timer(_facts(CANCEL, _record("FIRED", fired_ms=1))).problems
    assert problem == "delivered after its cancel was answered: reads FIRED, firedAt 2026-11-25T12:00:00.001Z"


def test_a_cancelled_timer_that_reads_cancelled_without_fired_at_passes():
    assert judge_timer(_facts(CANCEL, _record("CANCELLED"))).problems == ()


@pytest.mark.parametrize(("record", "problem"), [
    (_record("QUEUED"), "not delivered: reads QUEUED 12 s after its due time"),
    (_record("SCHEDULED"), "not delivered: reads SCHEDULED 12 s after its due time"),
    (_record("FAILED", lastError="lambda failed: boom"), "not delivered: parked in the dead-letter queue (lambda failed: boom)"),
    (_record("CANCELLED"), "not delivered: reads CANCELLED, though the check did not cancel it"),
])
def test_a_timer_not_fired_by_the_end_is_not_delivered(record, problem):
    result = judge_timer(_facts(SHORT, record))
    assert result.problems == (problem,) and result.lateness_ms is None


def test_a_timer_created_on_the_other_path_did_not_exercise_its_own():
    (problem,) = judge_timer(_facts(LONG, _record("FIRED", fired_ms=1), created="QUEUED")).problems
    assert problem == ("created QUEUED: it took the short path, so the long path was not exercised "
                       "(--long-delay must exceed the deployment's delay_window)")


def test_a_refused_cancel_proves_nothing_and_fails():
    facts = _facts(CANCEL, _record("FIRED", fired_ms=1), action_error="409: the schedule has fired")
    (problem,) = judge_timer(facts).problems
    assert problem == "cancel refused (409: the schedule has fired), so it proves nothing: raise --short-delay"


def test_a_record_that_could_not_be_read_fails():
    facts = _facts(SHORT, None, read_error="NotFoundError 404: no schedule x")
    assert judge_timer(facts).problems == ("its record could not be read: NotFoundError 404: no schedule x",)


# --- the periodic timer -----------------------------------------------------------------------------------------

def _periodic(fired: int, last_due_ms: int | None, last_fired_ms: int | None, sent_at: float = 0.0,
              read_at: float = 9.5, **fields: Any) -> PeriodicFacts:
    """A timer every 2 s whose first occurrence is due at ``DUE``; the PUT answered at 0.1, read at ``read_at``."""
    created = Periodic.from_json({"id": "p", "status": "ACTIVE", "nextDueAt": _at(0), "every": 2})
    body = {"id": "p", "status": "ACTIVE", "every": 2, "firedCount": fired, **fields}
    body.update({"lastDueAt": _at(last_due_ms)} if last_due_ms is not None else {})
    body.update({"lastFiredAt": _at(last_fired_ms)} if last_fired_ms is not None else {})
    return PeriodicFacts("p", 2, created, sent_at=sent_at, answered_at=0.1, record=Periodic.from_json(body),
                         read_from=read_at - 0.01, read_at=read_at)


def test_a_periodic_timer_that_fired_each_occurrence_due_on_its_grid_passes():
    result = judge_periodic(_periodic(4, 6_000, 6_011), settle=3)
    assert result.problems == () and result.due_at_least == 3 and result.last_lateness_ms == 11


def test_a_periodic_timer_that_fired_fewer_occurrences_than_were_due_fails():
    (problem,) = judge_periodic(_periodic(1, 0, 4), settle=3).problems
    assert problem == "fired 1 occurrences; 3 were due more than 3 s before it was read"


def test_a_periodic_timer_that_fired_more_occurrences_than_can_have_been_due_fired_early():
    problems = judge_periodic(_periodic(6, 10_000, 10_001), settle=3).problems
    assert "fired 6 occurrences, but only 4 can have been due: one fired early" in problems


def test_a_periodic_timer_that_skipped_an_occurrence_fails():
    problems = judge_periodic(_periodic(3, 6_000, 6_002, skippedCount=1), settle=3).problems
    assert problems == ("passed over 1 occurrences, never delivered",)


def test_a_periodic_timer_whose_last_occurrence_fired_early_or_off_its_grid_fails():
    assert judge_periodic(_periodic(4, 6_000, 5_990), settle=3).problems == (
        "early: its last occurrence fired 10 ms before its due time",)
    assert judge_periodic(_periodic(4, 6_500, 6_501), settle=3).problems == (
        "its last occurrence was due at 2026-11-25T12:00:06.500Z, not at 2026-11-25T12:00:06.000Z, occurrence 4 "
        "of its grid",)


def test_a_periodic_timer_whose_occurrence_failed_fails_with_the_reason():
    problems = judge_periodic(_periodic(4, 6_000, 6_001, lastError="parked: target down"), settle=3).problems
    assert problems == ("an occurrence failed: parked: target down",)


# --- the table and the report -----------------------------------------------------------------------------------

def _results() -> tuple[Any, ...]:
    return (*(judge_timer(_facts(SHORT, _record("FIRED", fired_ms=ms))) for ms in (1, 2, 3, 40)),
            judge_timer(_facts(LONG, _record("FIRED", fired_ms=7))),
            judge_timer(_facts(LONG, _record("QUEUED"))),
            judge_timer(_facts(CANCEL, _record("CANCELLED"))),
            judge_timer(_facts(MOVED, _record("FIRED", fired_ms=10_100, due_ms=10_000),
                               due_at=DUE + timedelta(seconds=10), old_due_at=DUE)))


def test_the_lateness_table_has_each_path_and_all_with_nearest_rank_percentiles():
    assert lateness_rows(_results()) == [
        ("short", 4, 4, 0, 2, 40, 40), ("long", 2, 1, 0, 7, 7, 7), ("reschedule", 1, 1, 0, 100, 100, 100),
        ("all", 7, 6, 0, 3, 100, 100)]
    assert [nearest_rank(list(range(1, 101)), f) for f in (0.5, 0.99, 1.0)] == [50, 99, 100]


def test_the_report_lists_each_problem_by_id_and_ends_failed():
    plan = make_plan(short_delay=1.5, long_delay=6, run_id="check-test")
    report = CheckReport(plan, _results(), cleanup=("cancelled the group check-test: 1 timers were still waiting",))
    lines = report.lines()
    assert lines[1:4] == ["lateness from the records, firedAt - dueAt (ms):",
                          "path        timers  delivered  early  p50  p99  max",
                          "short            4          4      0    2   40   40"]
    assert "  check-test-long-1: not delivered: reads QUEUED 12 s after its due time" in lines
    assert "clean-up: cancelled the group check-test: 1 timers were still waiting" in lines
    assert lines[-1] == "FAILED: 1 problem" and not report.ok
    assert report.to_json()["problems"] == ["check-test-long-1: not delivered: reads QUEUED 12 s after its due time"]


def test_a_run_whose_setup_failed_reports_the_error_and_no_table():
    report = CheckReport(make_plan(run_id="check-test"), setup_error="ValidationError 400: unknown target 'nope'",
                         cleanup_problems=("DELETE /groups/check-test failed: boom",))
    assert report.problems == ["setup: ValidationError 400: unknown target 'nope'",
                               "clean-up: DELETE /groups/check-test failed: boom"]
    assert not any(line.startswith("lateness") for line in report.lines())


def test_a_clean_run_ends_ok():
    results = tuple(r for r in _results() if not r.problems)
    assert CheckReport(make_plan(run_id="check-test"), results).lines()[-1] == (
        "OK: none lost, none early, nothing delivered after a cancel or a reschedule")
