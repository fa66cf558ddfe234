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
    redriven = Redriven(["lost", "keys", "gone", "again", "kept", "ok"], mended_ms=1_000_000,
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
    assert (report.redriven, report.redrive_parked_again, report.redrive_skipped, report.lost) == (2, 1, 1, 2)


def test_the_group_check_flags_a_member_delivered_after_the_cancel_and_a_later_member_never_delivered():
    grouped = Grouped("g", ["g-short", "g-tick"], cancelled_ms=1_002_000, stopped=2, joined_after="g-after")
    recorder = Recorder([Delivery(_envelope("g-short", 1_001_000), 1_001_010),  # before the cancel: fine
                         Delivery(_envelope("g-tick", 1_002_000), 1_002_050)])  # after its answer
    report = _report()
    check_groups(report, [grouped], recorder)
    assert sorted(report.violations) == ["g-after: created in group g after its cancel, never delivered",
                                         "g-tick: delivered 50 ms after its group g was cancelled"]
    assert report.lost == 1 and (report.group_cancels, report.group_members_stopped) == (1, 2)
    report = _report()
    check_groups(report, [grouped], Recorder([Delivery(_envelope("g-short", 1_001_000), 1_001_010),
                                              Delivery(_envelope("g-after", 1_003_000), 1_003_010)]))
    assert report.ok
