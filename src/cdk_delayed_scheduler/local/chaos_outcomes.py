"""The outcome check of ``cdk-delayed-scheduler chaos`` (see :mod:`.chaos`): the outcome events its outcomes target
received, against how each timer ended.

The run's engine sends every outcome kind (``CANCELLED`` included) to a recorder, through the same faults as the
deliveries: the delayer queue's sends and receives, the dispatcher, the outcomes target itself. Once the run has
settled, :func:`check_outcomes` holds that

- every accepted one-shot timer (``GET /schedules/{id}`` answers 200) has its outcome: arrived, or parked in the
  dead-letter queue (a message whose body is ``{"outcome": {...}}``, with a reason starting ``outcome:`` where the
  dispatcher parked it, without one where SQS's redrive moved it after a last receive that ended without the
  dispatcher). One whose own delivery message SQS's redrive moved there (no reason: no function ended it) has none
  yet: it gets its outcome once it is redriven (counted in ``outcomes_awaiting_redrive``);
- every outcome event, arrived or parked, reads as an :class:`~cdk_delayed_scheduler.outcome.Outcome`, and all
  those of one ``dedupeKey`` have one kind (repeats allowed): one final kind per occurrence, periodic ones included.
  A timer the run redrove after it was parked is the exception: its redrive reopened it, so a ``FAILED`` outcome
  may come before the one it ended with;
- a one-shot's kind is what ``GET`` answers: ``FIRED`` -> ``DELIVERED``, ``CANCELLED`` -> ``CANCELLED``, ``FAILED``
  with a ``lastError`` starting ``stale`` -> ``STALE``, any other ``FAILED`` -> ``FAILED``; its ``dueAt`` is GET's
  (a reschedule answered 200 moves the occurrence). One still pending (``SCHEDULED``, ``QUEUED``) is reported.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .._contract import contract
from ..client import Schedule, ScheduleStatus
from ..outcome import Outcome, OutcomeKind
from .chaos_checks import ChaosReport

MARKER: str = contract.OUTCOMES["marker"]
"""The field of a delayer or dead-letter message's body that holds an outcome event: ``{"outcome": {...}}``."""
Read = tuple[int | None, dict[str, Any]]
"""``GET /schedules/{id}``'s status and body."""


def expected_kind(record: Mapping[str, Any]) -> OutcomeKind | None:
    """The outcome kind of a one-shot as ``GET`` reads it; None while it is pending."""
    schedule = Schedule.from_json(record)
    if schedule.status == ScheduleStatus.FIRED:
        return OutcomeKind.DELIVERED
    if schedule.status == ScheduleStatus.CANCELLED:
        return OutcomeKind.CANCELLED
    if schedule.status == ScheduleStatus.FAILED:
        return OutcomeKind.STALE if schedule.stale else OutcomeKind.FAILED
    return None


def parked_outcomes(parked: Mapping[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The outcome events in the dead-letter queue, of :func:`.chaos_checks.dead_lettered`'s messages."""
    return [message["body"][MARKER] for messages in parked.values() for message in messages
            if isinstance(message["body"].get(MARKER), dict)]


ENDED_UNANSWERED = "ended without a delivery"
"""What the reason of a park on a retry's receive says when the receive before it ended without an answer."""


def awaiting_redrive(schedule_id: str, parked: Mapping[str, list[dict[str, Any]]]) -> bool:
    """Whether SQS's redrive parked a delivery message of ``schedule_id`` (one without a reason: no function ended
    it, so no outcome was sent; its redrive ends it)."""
    return any(message["reason"] is None and MARKER not in message["body"] for message in parked.get(schedule_id, []))


def check_outcomes(report: ChaosReport, events: list[dict[str, Any]], reads: Mapping[str, Read],
                   parked: Mapping[str, list[dict[str, Any]]], redriven: Iterable[str] = ()) -> None:
    """Check the outcome events that arrived (``events``) and those parked (in ``parked``, as
    :func:`.chaos_checks.dead_lettered` reads the dead-letter queue) against ``reads``, each one-shot timer's
    ``GET`` as the run's client read it once settled; ``redriven``: the timers the run redrove. Fills the report's
    outcome figures and adds a violation for each outcome missing or of the wrong kind."""
    arrived = _read(report, events, "arrived")
    stored = _read(report, parked_outcomes(parked), "parked")
    report.outcomes_received = len(events)
    report.outcomes_parked = len(stored)
    report.outcome_repeats = len(arrived) - len({outcome.repeat_key for outcome in arrived})
    for outcome in arrived:
        report.outcomes_by_kind[outcome.kind.value] = report.outcomes_by_kind.get(outcome.kind.value, 0) + 1
    reopened = set(redriven)
    by_key: dict[str, list[Outcome]] = {}
    by_id: dict[str, list[Outcome]] = {}
    for outcome in arrived + stored:
        by_key.setdefault(outcome.dedupe_key, []).append(outcome)
        by_id.setdefault(outcome.id, []).append(outcome)
    for key, outcomes in sorted(by_key.items()):  # a one-shot's are judged against its GET below
        kinds = {outcome.kind for outcome in outcomes}
        if len(kinds) > 1 and outcomes[0].id not in reads:
            _mismatch(report, f"{key}: outcome events of several kinds ({_names(kinds)})")
    for schedule_id, (status, record) in sorted(reads.items()):
        _check_one_shot(report, schedule_id, status, record, by_id.get(schedule_id, []), parked,
                        schedule_id in reopened)


def _check_one_shot(report: ChaosReport, schedule_id: str, status: int | None, record: dict[str, Any],
                    outcomes: list[Outcome], parked: Mapping[str, list[dict[str, Any]]], reopened: bool) -> None:
    """One timer's outcomes (arrived and parked) against its ``GET``."""
    if status != 200:
        if outcomes:
            _mismatch(report, f"{schedule_id}: outcome {_names({o.kind for o in outcomes})} for a timer GET answers "
                              f"{status}")
        return
    expected = expected_kind(record)
    if expected is None:
        report.outcomes_missing += 1
        report.violations.append(f"{schedule_id}: still {record.get('status')} at the end, no outcome")
        return
    if not outcomes:
        if awaiting_redrive(schedule_id, parked):
            report.outcomes_awaiting_redrive += 1
        else:
            report.outcomes_missing += 1
            report.violations.append(f"{schedule_id}: ended {expected.value} (GET {record.get('status')}), but no "
                                     f"outcome event arrived or was parked")
        return
    kinds = {outcome.kind for outcome in outcomes}
    allowed = {expected, OutcomeKind.FAILED} if reopened else {expected}
    if expected is OutcomeKind.FAILED and ENDED_UNANSWERED in str(record.get("lastError", "")):
        # parked on its last attempt after a receive that ended without the dispatcher's answer: that receive may
        # have delivered it (its DELIVERED sent, then its batch failed), which the record cannot tell
        allowed.add(OutcomeKind.DELIVERED)
    if expected not in kinds and not kinds - allowed and awaiting_redrive(schedule_id, parked):
        # what arrived may stand beside its final outcome, which the message SQS parked brings when redriven (the
        # receive that ended it died before sending it, and none came after)
        report.outcomes_awaiting_redrive += 1
        return
    if expected not in kinds or kinds - allowed:
        several = "outcome events of several kinds" if len(kinds) > 1 else "an outcome event"
        _mismatch(report, f"{schedule_id}: {several} ({_names(kinds)}), but GET reads {record.get('status')} "
                          f"({expected.value})")
    due_at = Schedule.from_json(record).due_at
    elsewhere = sorted({outcome.dedupe_key for outcome in outcomes if outcome.due_at != due_at})
    if elsewhere:
        _mismatch(report, f"{schedule_id}: outcome events for another due time than GET's {record.get('dueAt')} "
                          f"({', '.join(elsewhere)})")


def _read(report: ChaosReport, events: list[dict[str, Any]], where: str) -> list[Outcome]:
    """``events`` as :class:`Outcome` (the shipped reader); one that does not read is a mismatch."""
    outcomes = []
    for event in events:
        try:
            outcomes.append(Outcome.from_json(event, f"an outcome event {where}"))
        except ValueError as exc:
            _mismatch(report, f"{event.get('id', '?')}: {exc}")
    return outcomes


def _mismatch(report: ChaosReport, violation: str) -> None:
    report.outcome_mismatches += 1
    report.violations.append(violation)


def _names(kinds: set[OutcomeKind]) -> str:
    return ", ".join(sorted(kind.value for kind in kinds))
