"""The ``--faults`` spec and the chaos checks, on their own: each check can fail."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from cdk_delayed_scheduler.local.chaos_checks import (
    ChaosReport, ClientCalls, Grouped, Moved, Paused, Planned, PlannedPeriodic, Redriven, check_groups, check_one_shots,
    check_pauses, check_periodic, check_redrive, check_reschedules)
from cdk_delayed_scheduler.local.cli import main
from cdk_delayed_scheduler.local.deliveries import Delivery, Recorder
from cdk_delayed_scheduler.local.faults import FAULT_KINDS, FaultSpecError, parse_spec


def test_all_sets_every_kind_and_later_parts_override():
    rates = parse_spec("all=0.1, crash=0")
    assert set(rates) == set(FAULT_KINDS) and rates["crash"] == 0 and rates["ddb-throttle"] == 0.1


@pytest.mark.parametrize(("spec", "words"), [
    ("", "at least one"), ("crash", "kind=rate"), ("nope=0.1", "unknown fault kind 'nope'"),
    ("crash=x", "must be a number"), ("crash=1.5", "from 0 to 1"),
])
def test_a_bad_spec_is_refused_naming_the_part_and_the_rule(spec, words):
    with pytest.raises(FaultSpecError, match=words):
        parse_spec(spec)


@pytest.mark.parametrize("command", ["local", "chaos"])
def test_the_cli_refuses_a_bad_spec_before_starting_anything(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--faults", "ddb-throttle=2"])
    assert exit_.value.code == 2 and "--faults: the rate of 'ddb-throttle' must be from 0 to 1" in capsys.readouterr().err


class _Api:
    """GET answers for the checks: id -> (status, body)."""

    def __init__(self, answers: dict) -> None:
        self.answers = answers

    def get(self, schedule_id: str) -> tuple[int, dict]:
        return self.answers.get(schedule_id, (404, {}))


def _envelope(schedule_id: str, due_ms: int, key: str = "k", attempt: int = 1) -> dict:
    due = datetime.fromtimestamp(due_ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"id": schedule_id, "dueAt": due, "dedupeKey": key, "attempt": attempt, "target": "default"}


def _checked(deliveries: list, creates: dict, cancels: dict | None = None, answers: dict | None = None,
             parked: dict | None = None) -> ChaosReport:
    recorder = Recorder([Delivery(envelope, received) for envelope, received in deliveries])
    calls = ClientCalls(creates=creates, cancels=cancels or {}, due_ms={i: 1_000_000 for i in creates})
    report = ChaosReport(timers=len(creates), periodic=0, seconds=0, faults={}, fault_stages={})
    timers = [Planned(i, "short", 1, False) for i in creates]
    check_one_shots(report, timers, calls, recorder, _Api(answers or {}).get, parked or {})
    return report


def test_checks_pass_a_clean_delivery():
    report = _checked([(_envelope("a", 1_000_000), 1_000_010)], {"a": [201]})
    assert report.ok and report.delivered == 1 and report.delivered_by_target == {"default": 1}


def test_checks_flag_a_delivery_to_another_target_than_the_one_named():
    report = _checked([({**_envelope("a", 1_000_000), "target": "topic"}, 1_000_010)], {"a": [201]})
    assert report.violations == ["a: delivered to another target than default"]


@pytest.mark.parametrize(("deliveries", "creates", "cancels", "words"), [
    ([(_envelope("a", 1_000_000), 999_999)], {"a": [201]}, {}, "early"),
    ([(_envelope("a", 1_000_000, "k1"), 1_000_001), (_envelope("a", 1_000_000, "k2"), 1_000_002)],
     {"a": [201]}, {}, "several dedupeKeys"),
    ([(_envelope("a", 1_000_000), 1_000_001)], {"a": [201]}, {"a": [200]}, "although its cancel"),
    ([], {"a": [201]}, {}, "lost"),
    ([], {"a": [503]}, {}, "neither gone nor delivered"),
])
def test_checks_flag_each_broken_promise(deliveries, creates, cancels, words):
    answers = {"a": (200, {"status": "SCHEDULED"})}
    report = _checked(deliveries, creates, cancels, answers)
    assert not report.ok and any(words in v for v in report.violations), report.violations


@pytest.mark.parametrize("status", ["FAILED", "FIRED"])  # FIRED: SQS's redrive parked the bare message
def test_a_failed_timer_counts_only_with_its_payload_reason_and_dead_letter(status):
    failed = {"a": (200, {"status": status, "lastError": "target failed", "payload": {}})}
    assert _checked([], {"a": [201]}, answers=failed, parked={"a": [{"reason": "x"}]}).ok
    assert not _checked([], {"a": [201]}, answers=failed, parked={}).ok
    no_reason = {"a": (200, {"status": status, "payload": {}})}
    assert not _checked([], {"a": [201]}, answers=no_reason, parked={"a": [{"reason": "x"}]}).ok


def test_a_create_never_answered_that_landed_and_was_parked_by_its_refusing_target_is_honoured_not_lost():
    never_answered = {"a": [None, 429, None, None, None, 429, None, None]}
    failed = {"a": (200, {"status": "FAILED", "lastError": "the target refuses poison timers", "payload": {}})}
    report = _checked([], never_answered, answers=failed, parked={"a": [{"reason": "x"}]})
    assert report.ok, report.violations
    assert (report.gave_up_creates, report.gave_up_honoured, report.dead_lettered) == (1, 1, 1)
    report = _checked([], never_answered, answers=failed, parked={})  # FAILED, but not in the dead-letter queue
    assert report.violations == ["a: create answered [None, 429, None, None, None, 429, None, None], then neither "
                                 "gone nor delivered (GET 200 FAILED)"]


def test_a_create_never_answered_that_landed_and_was_cancelled_by_its_client_is_honoured_not_lost():
    never_answered = {"a": [None] * 8}
    cancelled = {"a": (200, {"status": "CANCELLED", "payload": {}})}
    report = _checked([], never_answered, cancels={"a": [200]}, answers=cancelled)
    assert report.ok and (report.gave_up_honoured, report.cancelled) == (1, 1), report.violations
    assert not _checked([], never_answered, answers=cancelled).ok  # CANCELLED with no cancel sent: not this run's


def test_periodic_checks_flag_off_grid_early_after_delete_and_missing():
    recorder = Recorder([Delivery(_envelope("p", 1_000_000), 1_000_001),
                         Delivery(_envelope("p", 1_001_500), 1_001_400),  # off grid, and early
                         Delivery(_envelope("p", 1_004_000), 1_009_000)])  # after the DELETE
    report = ChaosReport(timers=0, periodic=1, seconds=0, faults={}, fault_stages={})
    check_periodic(report, [PlannedPeriodic("p", 1, kept=True)], {"p": 1_000_000}, {"p": 1_008_000}, 1_005_000,
                   {"p": 1}, recorder, {})
    words = " ".join(report.violations)
    assert "off its grid" in words and "early" in words and "after its DELETE" in words
    # 1_001_000, 1_002_000 and 1_003_000 never delivered: one passed over (skippedCount 1), two lost
    assert report.periodic_skipped == 1 and report.lost == 2


def _report() -> ChaosReport:
    return ChaosReport(timers=0, periodic=0, seconds=0, faults={}, fault_stages={})


@pytest.mark.parametrize(("status", "delivered_due", "words"), [
    (200, 1_000_000, "at its old due time although its reschedule was answered 200"),
    (409, 1_010_000, "at the due time of a reschedule answered 409"),
    (200, 1_005_000, "at neither its old nor its new due time"),
    (200, None, "never delivered"),
])
def test_the_reschedule_check_flags_a_delivery_at_the_wrong_due_time_or_none(status, delivered_due, words):
    deliveries = [] if delivered_due is None else [Delivery(_envelope("m", delivered_due), delivered_due + 5)]
    report = _report()
    check_reschedules(report, [Moved("m", 1_000_000, 1_010_000, status, 999_000)], Recorder(deliveries))
    assert not report.ok and any(words in v for v in report.violations), report.violations


@pytest.mark.parametrize(("status", "delivered_due"), [(200, 1_010_000), (409, 1_000_000)])
def test_the_reschedule_check_passes_a_delivery_at_the_due_time_its_answer_promised(status, delivered_due):
    report = _report()
    check_reschedules(report, [Moved("m", 1_000_000, 1_010_000, status, 999_000)],
                      Recorder([Delivery(_envelope("m", delivered_due), delivered_due + 5)]))
    assert report.ok and report.rescheduled + report.reschedule_refused == 1


def test_the_pause_check_flags_a_delivery_while_paused_and_after_the_delete_and_none_after_a_resume():
    paused = Paused("p", paused_ms=1_002_000, resumed_ms=1_004_000, deleted_ms=1_010_000)
    recorder = Recorder([Delivery(_envelope("p", 1_001_000), 1_001_010),  # before the pause: fine
                         Delivery(_envelope("p", 1_002_000), 1_002_010),  # while paused
                         Delivery(_envelope("p", 1_011_000), 1_011_010)])  # after the DELETE
    report = _report()
    check_pauses(report, [paused], recorder)
    words = " ".join(report.violations)
    assert "delivered while paused" in words and "after its DELETE" in words
    report = _report()
    check_pauses(report, [paused], Recorder([Delivery(_envelope("p", 1_001_000), 1_001_010)]))
    assert report.violations == ["p: nothing delivered after its resume"]
    report = _report()
    check_pauses(report, [paused], Recorder([Delivery(_envelope("p", 1_005_000, "k5"), 1_005_010),
                                             Delivery(_envelope("p", 1_006_000, "k6"), 1_006_010)]))
    assert report.ok and report.paused == report.resumed == 1 and report.delivered_after_resume == 2


def test_the_redrive_check_flags_a_lost_a_twice_keyed_and_a_not_parked_schedule():
    redriven = Redriven(["lost", "keys", "gone", "again", "kept", "ok"], refused_redrive_returned=True,
                        refused_redrive_moved={"ok"}, failed_again={"ok"}, mended_ms=1_000_000,
                        moved={"lost", "keys", "again", "ok"}, skipped={"gone": "cancelled", "kept": "a later failure"})
    recorder = Recorder([Delivery(_envelope("keys", 1_000_000, "k1", 2), 1_000_100),
                         Delivery(_envelope("keys", 1_000_000, "k2", 2), 1_000_200),
                         Delivery(_envelope("ok", 1_000_000, "k", 2), 1_000_100)])
    report = _report()
    check_redrive(report, redriven, recorder, parked={"again": [{}], "kept": [{}]})
    assert sorted(report.violations) == [
        "gone: not redriven (cancelled) and not left in the dead-letter queue",
        "keys: 1970-01-01T00:16:40.000Z delivered under several dedupeKeys",
        "lost: redriven, then neither delivered nor parked again"]
    assert (report.redriven, report.redrive_parked_again, report.redrive_skipped, report.lost) == (2, 2, 1, 2)


def test_the_redrive_check_flags_a_redrive_while_the_target_refused_that_hung_moved_none_or_tried_again_and_again():
    ids = ["again-and-again", "not-parked", "once"]
    recorder = Recorder([Delivery(_envelope(i, 1_000_000, "k", 3), 1_200_000) for i in ids])
    refused = [(i, 999_000, 1) for i in ids]  # the first attempt, before the redrive
    refused += [("again-and-again", 1_100_100, 2), ("again-and-again", 1_100_200, 3), ("again-and-again", 1_100_300, 4),
                ("once", 1_100_100, 2), ("once", 1_100_150, 2)]  # "once": an SDK's retry of the same invocation
    redriven = Redriven(ids, refused_redrive_ms=1_100_000, refused_redrive_returned=True,
                        refused_redrive_moved=set(ids), failed_again={"again-and-again", "once"}, refused=refused,
                        mended_ms=1_150_000, moved=set(ids))
    report = _report()
    check_redrive(report, redriven, recorder, parked={})
    assert sorted(report.violations) == [
        "again-and-again: redriven once while its target refused, then tried in 3 attempts (attempt 2, 3, 4...)",
        "not-parked: redriven while its target refused, then not parked again"]
    assert (report.redriven, report.redrive_parked_again, report.lost) == (3, 2, 0)
    hung = Redriven(ids, refused_redrive_returned=False, mended_ms=1_150_000, moved=set(ids))
    report = _report()
    check_redrive(report, hung, recorder, parked={})
    assert report.violations == ["the redrive while the target still refused did not return"]
    moved_none = Redriven(ids, refused_redrive_returned=True, mended_ms=1_150_000, moved=set(ids))
    report = _report()
    check_redrive(report, moved_none, recorder, parked={})
    assert report.violations == ["the redrive while the target still refused moved none of the parked timers"]


def test_the_group_check_flags_a_member_delivered_after_the_cancel_and_a_later_member_never_delivered():
    grouped = Grouped("g", ["g-short", "g-tick"], cancelled_ms=1_002_000, stopped=2, joined_after="g-after")
    recorder = Recorder([Delivery(_envelope("g-short", 1_001_000), 1_001_010),  # before the cancel: fine
                         Delivery(_envelope("g-tick", 1_002_000), 1_002_050)])  # after its answer
    waiting = _Api({"g-after": (200, {"status": "QUEUED", "payload": {}})}).get
    report = _report()
    check_groups(report, [grouped], recorder, waiting, {})
    assert sorted(report.violations) == ["g-after: created in group g after its cancel, never delivered (GET 200 QUEUED)",
                                         "g-tick: delivered 50 ms after its group g was cancelled"]
    assert report.lost == 1 and (report.group_cancels, report.group_members_stopped) == (1, 2)
    report = _report()
    check_groups(report, [grouped], Recorder([Delivery(_envelope("g-short", 1_001_000), 1_001_010),
                                              Delivery(_envelope("g-after", 1_003_000), 1_003_010)]), waiting, {})
    assert report.ok


def test_a_member_created_after_its_groups_cancel_whose_deliveries_kept_failing_counts_when_parked_with_its_reason():
    grouped = Grouped("g", ["g-short"], cancelled_ms=1_002_000, stopped=1, joined_after="g-after")
    # FIRED with a reason: each receive ended before its target was called (the group gate timed out under load),
    # and SQS's redrive parked the bare message
    fired = _Api({"g-after": (200, {"status": "FIRED", "lastError": "attempt 5 of 5: receive 5 ended without the "
                                                                     "dispatcher", "payload": {}})}).get
    report = _report()
    check_groups(report, [grouped], Recorder([]), fired, {"g-after": [{"reason": None}]})
    assert report.ok and report.dead_lettered == 1, report.violations
    report = _report()
    check_groups(report, [grouped], Recorder([]), fired, {})  # not in the dead-letter queue: lost
    assert report.lost == 1
