"""The chaos run's outcome check on its own (no engine): each way an outcome can go wrong is reported; and its wait."""

from __future__ import annotations

from typing import Any

import pytest

from cdk_delayed_scheduler.local import chaos_settle
from cdk_delayed_scheduler.local.chaos_checks import ChaosReport
from cdk_delayed_scheduler.local.chaos_outcomes import check_outcomes, expected_kind
from cdk_delayed_scheduler.local.chaos_settle import wait_for_outcomes

DUE, DUE_MS = "2030-01-01T00:00:00.000Z", 1_893_456_000_000
LATER = "2030-01-01T00:00:05.000Z"
KIND_FIELDS = {"DELIVERED": {"firedAt": DUE, "latenessMs": 3, "answer": {"statusCode": 200}},
               "FAILED": {"reason": "3 attempts reached", "lastError": "boom"}, "STALE": {"reason": "stale: 60 s late"},
               "CANCELLED": {"reason": "cancelled"}}


def _event(kind: str, schedule_id: str = "t", due: str = DUE, due_ms: int = DUE_MS) -> dict[str, Any]:
    return {"outcome": kind, "id": schedule_id, "group": None, "target": "default", "dueAt": due,
            "dedupeKey": f"{schedule_id}@{due_ms}", "attempts": 1, "endedAt": due, **KIND_FIELDS[kind]}


def _get(status: str, schedule_id: str = "t", last_error: str | None = None) -> tuple[int, dict[str, Any]]:
    return 200, {"id": schedule_id, "dueAt": DUE, "status": status, "lastError": last_error, "payload": {}}


def _check(events: list[dict[str, Any]], reads: dict[str, Any], parked: dict[str, Any] | None = None,
           redriven: tuple[str, ...] = ()) -> ChaosReport:
    report = ChaosReport(timers=len(reads), periodic=0, seconds=0, faults={}, fault_stages={})
    check_outcomes(report, events, reads, parked or {}, redriven)
    return report


def _parked_outcome(event: dict[str, Any], reason: str | None = "outcome: target failed (receive 5)") -> dict[str, Any]:
    return {"reason": reason, "body": {"outcome": event}}


@pytest.mark.parametrize(("status", "last_error", "kind"), [
    ("FIRED", None, "DELIVERED"), ("FIRED", "target failed", "DELIVERED"), ("CANCELLED", None, "CANCELLED"),
    ("FAILED", "stale: 61 s past its due time", "STALE"), ("FAILED", "5 attempts reached: boom", "FAILED"),
    ("SCHEDULED", None, None), ("QUEUED", None, None),
])
def test_the_kind_expected_is_how_get_reads_the_timer(status, last_error, kind):
    expected = expected_kind(_get(status, last_error=last_error)[1])
    assert (expected.value if expected else None) == kind


def test_every_timer_with_outcomes_of_the_one_kind_its_get_reads_passes_and_repeats_are_counted():
    events = [_event("DELIVERED", "a"), _event("DELIVERED", "a"), _event("CANCELLED", "c"), _event("STALE", "s"),
              _event("FAILED", "f"), _event("DELIVERED", "p"), _event("CANCELLED", "p", LATER, DUE_MS + 5000)]
    reads = {"a": _get("FIRED", "a"), "c": _get("CANCELLED", "c"), "s": _get("FAILED", "s", "stale: 61 s late"),
             "f": _get("FAILED", "f", "3 attempts reached"), "never-created": (404, {"message": "not found"})}
    report = _check(events, reads)
    assert report.ok, report.violations
    assert (report.outcomes_received, report.outcome_repeats, report.outcome_mismatches) == (7, 1, 0)
    assert report.outcomes_by_kind == {"DELIVERED": 3, "CANCELLED": 2, "STALE": 1, "FAILED": 1}


def test_a_missing_outcome_two_kinds_for_one_occurrence_and_a_kind_get_contradicts_are_each_reported():
    events = [_event("DELIVERED", "twice"), _event("FAILED", "twice"), _event("DELIVERED", "wrong"),
              _event("DELIVERED", "p"), _event("CANCELLED", "p")]
    reads = {"lost": _get("FIRED", "lost"), "twice": _get("FIRED", "twice"), "wrong": _get("CANCELLED", "wrong")}
    report = _check(events, reads)
    words = " | ".join(report.violations)
    assert not report.ok and (report.outcomes_missing, report.outcome_mismatches) == (1, 3), words
    assert "lost: ended DELIVERED (GET FIRED), but no outcome event arrived or was parked" in words
    assert "twice: outcome events of several kinds (DELIVERED, FAILED), but GET reads FIRED" in words
    assert "wrong: an outcome event (DELIVERED), but GET reads CANCELLED (CANCELLED)" in words
    assert f"p@{DUE_MS}: outcome events of several kinds (CANCELLED, DELIVERED)" in words  # a periodic occurrence


@pytest.mark.parametrize(("events", "reads", "words"), [
    ([], {"t": _get("SCHEDULED")}, "t: still SCHEDULED at the end"),
    ([_event("DELIVERED", due=LATER, due_ms=DUE_MS + 5000)], {"t": _get("FIRED")}, "another due time than GET's"),
    ([_event("DELIVERED")], {"t": (404, {})}, "t: outcome DELIVERED for a timer GET answers 404"),
    ([{**_event("DELIVERED"), "latenessMs": None}, _event("DELIVERED")], {"t": _get("FIRED")}, "latenessMs"),
    ([_event("DELIVERED")], {}, ""),  # an outcome of no one-shot (a periodic occurrence's): passes alone
])
def test_the_check_flags_a_timer_still_pending_an_outcome_at_another_due_time_or_of_no_timer_and_a_bad_event(
        events, reads, words):
    report = _check(events, reads)
    assert report.ok is not bool(words) and words in " | ".join(report.violations), report.violations


def test_an_outcome_parked_in_the_dead_letter_queue_counts_and_its_kind_is_checked_too():
    parked = {"t": [_parked_outcome(_event("DELIVERED"))], "?": [_parked_outcome(_event("FAILED", "u"), None)]}
    report = _check([], {"t": _get("FIRED"), "u": _get("FAILED", "u", "3 attempts reached")}, parked)
    assert report.ok and report.outcomes_parked == 2, report.violations
    report = _check([], {"t": _get("CANCELLED")}, {"t": [_parked_outcome(_event("DELIVERED"))]})
    assert report.outcome_mismatches == 1 and "GET reads CANCELLED" in report.violations[0]


def test_a_timer_whose_delivery_message_sqs_parked_awaits_its_redrive_but_one_the_dispatcher_parked_needs_its_outcome():
    bare = {"reason": None, "body": {"id": "t", "dueMs": DUE_MS, "token": "k"}}
    report = _check([], {"t": _get("FIRED", last_error="target failed")}, {"t": [bare]})
    assert report.ok and report.outcomes_awaiting_redrive == 1, report.violations
    envelope = {"reason": "5 attempts reached: boom", "body": {"id": "t", "dueAt": DUE, "payload": {}}}
    report = _check([], {"t": _get("FAILED", last_error="5 attempts reached: boom")}, {"t": [envelope]})
    assert report.outcomes_missing == 1 and not report.ok


def test_a_timer_parked_unanswered_whose_failed_outcome_died_with_its_last_receive_awaits_its_redrive():
    """Its last attempt delivered it (DELIVERED sent), its batch failed; the receive that parked it FAILED died before
    sending FAILED, and SQS parked its message after that receive: the redrive sends FAILED (the record is FAILED
    with the message's tag). Without the message parked by SQS, FAILED is missing."""
    unanswered = "maxAttempts 3 reached: receive 4 of 5 ended without a delivery: the target failed, or ..."
    bare = {"reason": None, "body": {"id": "t", "dueMs": DUE_MS, "token": "k"}}
    report = _check([_event("DELIVERED")], {"t": _get("FAILED", last_error=unanswered)}, {"t": [bare]})
    assert report.ok and report.outcomes_awaiting_redrive == 1, report.violations
    assert not _check([_event("DELIVERED")], {"t": _get("FAILED", last_error=unanswered)}).ok
    refused = "delivery failed after 3 attempts: refused"  # DELIVERED cannot stand beside this FAILED
    assert not _check([_event("DELIVERED")], {"t": _get("FAILED", last_error=refused)}, {"t": [bare]}).ok


def test_a_timer_redriven_after_it_failed_may_end_delivered_after_its_failed_outcome_and_no_other_may():
    events = [_event("FAILED"), _event("DELIVERED")]
    assert _check(events, {"t": _get("FIRED")}, redriven=("t",)).ok
    assert not _check(events, {"t": _get("FIRED")}).ok
    assert not _check([_event("FAILED")], {"t": _get("FIRED")}, redriven=("t",)).ok  # its final outcome missing



def test_a_timer_parked_after_a_receive_that_ended_unanswered_may_have_been_delivered_first():
    """Its last attempt's receive ended without the dispatcher's answer (a batch that failed after the delivery): the
    record cannot tell, so it is parked FAILED, and the DELIVERED that receive sent stands beside it."""
    unanswered = "maxAttempts 1 reached: receive 2 of 5 ended without a delivery: the target failed, or ..."
    events = [_event("DELIVERED"), _event("FAILED")]
    assert _check(events, {"t": _get("FAILED", last_error=unanswered)}).ok
    assert not _check(events, {"t": _get("FAILED", last_error="delivery failed after 1 attempt: refused")}).ok
    assert not _check([_event("DELIVERED")], {"t": _get("FAILED", last_error=unanswered)}).ok  # its FAILED missing



def test_a_cancelled_timer_without_its_outcome_is_missing_in_a_group_or_not():
    status, record = _get("CANCELLED")
    for stored in (record, {**record, "group": "tenant-1"}):
        report = _check([], {"t": (status, stored)})
        assert not report.ok and report.outcomes_missing == 1


@pytest.fixture
def no_pause(monkeypatch):
    monkeypatch.setattr(chaos_settle, "POLL_SECONDS", 0)


def test_the_wait_for_outcomes_ends_once_none_is_missing(no_pause):
    left = [{"a", "b"}, {"b"}, set()]
    assert wait_for_outcomes(lambda: left.pop(0), lambda: 0, lambda: True, 12, print) == set()


def test_the_wait_for_outcomes_ends_with_what_is_missing_once_nothing_is_under_way_twice_in_a_row(no_pause):
    busy = [True, False, True, False, False, True]
    assert wait_for_outcomes(lambda: {"a"}, lambda: 0, lambda: busy.pop(0), 12, print) == {"a"}
    assert busy == [True]


def test_the_wait_for_outcomes_ends_after_a_stall_without_an_event_however_busy(no_pause):
    assert wait_for_outcomes(lambda: {"a"}, lambda: 0, lambda: True, 0, print) == {"a"}
