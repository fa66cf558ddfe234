"""``Outcome.from_event`` / ``all_from_event`` read the outcome event out of what each kind of outcomes target hands
a consumer (the event itself, SQS and SNS events, an EventBridge event, and those nested), for every kind, with
each kind's own fields. The events are the runtime's own (``scheduler_runtime.core.outcomes.event``), so the
shapes cannot drift apart. Bad input, and a delivery envelope given instead, is a ``ValueError`` naming what is
wrong."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cdk_delayed_scheduler import client as client_module
from cdk_delayed_scheduler.outcome import Outcome, OutcomeKind
from scheduler_runtime.core import outcomes
from scheduler_runtime.core.contract import OUTCOME_KINDS
from scheduler_runtime.core.envelope import build_envelope

from .lambda_events import eventbridge_event, sns_event, sns_notification, sqs_record
from .subprocess_python import HEAVY, imports_none_of

DUE_MS = 1_795_000_000_250  # 2026-11-18T11:06:40.250Z
FIRED_MS = DUE_MS + 1_375
ENDED_MS = FIRED_MS + 80
ENVELOPE = build_envelope("order-42", DUE_MS, FIRED_MS, 2, '{"order": 42}', "default")


def utc(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, timezone.utc)


def event(kind: outcomes.Kind, *, group: str | None = None, attempts: int = 2, include_payload: bool = False,
          envelope: dict[str, Any] = ENVELOPE, **details: Any) -> dict[str, Any]:
    """The runtime's outcome event of ``envelope``'s occurrence, ended at ``ENDED_MS``."""
    return outcomes.event(kind, envelope, group, ENDED_MS, attempts, include_payload, **details)


DELIVERED = event(outcomes.Kind.DELIVERED, firedAt=ENVELOPE["firedAt"], latenessMs=1_375,
                  answer=outcomes.answer_summary(messageId="5fea7756-0ea4-451a-a703-a558b933e274"))
FAILED = event(outcomes.Kind.FAILED, reason="https://example.com/hook answered 410",
               lastError="https://example.com/hook answered 410")
STALE = event(outcomes.Kind.STALE, attempts=0, group="orders",
              reason="stale: it would start 31 s after its due time, past its bound of 5 s")
CANCELLED = event(outcomes.Kind.CANCELLED, attempts=0, group="orders", reason=str(outcomes.CancelReason.GROUP_CANCELLED))
SECOND = event(outcomes.Kind.DELIVERED, envelope=build_envelope("order-43", DUE_MS, FIRED_MS, 1, '"x"', "reminders"),
               firedAt=ENVELOPE["firedAt"], latenessMs=1_375)


def test_a_delivered_outcome_reads_its_delivery_time_lateness_and_answer() -> None:
    outcome = Outcome.from_event(DELIVERED)
    assert (outcome.kind, outcome.id, outcome.group, outcome.target) == (OutcomeKind.DELIVERED, "order-42", None,
                                                                         "default")
    assert (outcome.due_at, outcome.fired_at, outcome.ended_at) == (utc(DUE_MS), utc(FIRED_MS), utc(ENDED_MS))
    assert outcome.due_at.tzinfo is not None and outcome.lateness == timedelta(milliseconds=1_375)
    assert (outcome.dedupe_key, outcome.attempts) == (f"order-42@{DUE_MS}", 2)
    assert outcome.answer == {"messageId": "5fea7756-0ea4-451a-a703-a558b933e274"}
    assert (outcome.reason, outcome.last_error, outcome.payload) == (None, None, None)
    assert outcome.raw == DELIVERED and outcome.repeat_key == (f"order-42@{DUE_MS}", "DELIVERED")


def test_a_failed_outcome_reads_its_reason_and_last_error() -> None:
    outcome = Outcome.from_event(FAILED)
    assert (outcome.kind, outcome.reason, outcome.last_error) == (
        OutcomeKind.FAILED, "https://example.com/hook answered 410", "https://example.com/hook answered 410")
    assert (outcome.fired_at, outcome.lateness, outcome.answer) == (None, None, None)


def test_stale_and_cancelled_outcomes_read_their_reason_and_group() -> None:
    stale, cancelled = Outcome.from_event(STALE), Outcome.from_event(CANCELLED)
    assert (stale.kind, stale.group, stale.attempts, stale.last_error) == (OutcomeKind.STALE, "orders", 0, None)
    assert stale.reason is not None and stale.reason.startswith("stale: ")
    assert (cancelled.kind, cancelled.reason) == (OutcomeKind.CANCELLED, "group cancelled")
    assert stale.repeat_key == (f"order-42@{DUE_MS}", "STALE") != cancelled.repeat_key


def test_the_payload_comes_only_where_the_deployment_sends_it() -> None:
    with_payload = event(outcomes.Kind.FAILED, include_payload=True, reason="failed")
    assert Outcome.from_event(with_payload).payload == {"order": 42}
    assert Outcome.from_event(FAILED).payload is None and "payload" not in FAILED


def test_an_outcomes_lambda_functions_event_is_the_outcome_or_its_json_text() -> None:
    outcome = Outcome.from_event(DELIVERED)
    assert Outcome.from_event(json.dumps(DELIVERED)) == outcome  # an --outcomes-url POST's body, as text
    assert Outcome.all_from_event(DELIVERED) == [outcome]


def test_an_sqs_event_answers_one_outcome_per_record_in_order() -> None:
    sqs = {"Records": [sqs_record(json.dumps(DELIVERED), "m-1"), sqs_record(json.dumps(SECOND), "m-2")]}
    assert [outcome.id for outcome in Outcome.all_from_event(sqs)] == ["order-42", "order-43"]
    assert Outcome.from_event(sqs["Records"][1]) == Outcome.from_event(SECOND)
    with pytest.raises(ValueError, match=r"holds 2 records, not one: Outcome.all_from_event\(event\)"):
        Outcome.from_event(sqs)


@pytest.mark.parametrize("wrapped", [
    sns_event(json.dumps(STALE)),  # an SNS topic's Lambda subscription
    eventbridge_event(STALE),  # an EventBridge rule's Lambda target
    {"Records": [sqs_record(json.dumps(sns_notification(json.dumps(STALE))), "m-1")]},  # SNS in SQS, not raw
    {"Records": [sqs_record(json.dumps(eventbridge_event(STALE)), "m-1")]},  # an EventBridge rule's SQS target
], ids=["sns", "eventbridge", "sns-in-sqs", "eventbridge-in-sqs"])
def test_a_wrapped_outcome_is_found(wrapped: dict[str, Any]) -> None:
    assert Outcome.from_event(wrapped) == Outcome.from_event(STALE)
    assert Outcome.all_from_event(wrapped) == [Outcome.from_event(STALE)]


def test_outcomes_compare_by_their_fields_not_their_raw_text() -> None:
    assert Outcome.from_event(DELIVERED) != Outcome.from_event(SECOND)
    assert len({Outcome.from_event(DELIVERED), Outcome.from_event(json.dumps(DELIVERED))}) == 1  # hashable, frozen


def without(body: dict[str, Any], name: str) -> dict[str, Any]:
    return {key: value for key, value in body.items() if key != name}


@pytest.mark.parametrize("given, message", [
    ({**FAILED, "outcome": "LOST"}, r"^event's outcome must be one of DELIVERED, FAILED, STALE, CANCELLED, got 'LOST'"),
    ({**FAILED, "outcome": None}, "outcome must be one of DELIVERED"),
    (without(FAILED, "dedupeKey"), r"^event lacks dedupeKey \(an outcome event has outcome, id, target, dueAt"),
    ({"outcome": "FAILED", "id": "x"}, "lacks target, dueAt, dedupeKey, attempts, endedAt"),
    (without(DELIVERED, "latenessMs"), "is a DELIVERED outcome but lacks latenessMs"),
    (without(STALE, "reason"), "is a STALE outcome but lacks reason"),
    ({**FAILED, "attempts": -1}, "attempts must be an integer >= 0"),
    ({**FAILED, "attempts": True}, "attempts must be an integer >= 0"),
    ({**DELIVERED, "latenessMs": "1375"}, "latenessMs must be an integer >= 0"),
    ({**FAILED, "endedAt": "yesterday"}, "endedAt must be an RFC 3339 time"),
    ({**FAILED, "group": 7}, "group must be a non-empty string"),
    ({**DELIVERED, "answer": "ok"}, "answer must be a JSON object, got str"),
    ({"Records": [sqs_record("not json", "m-1")]}, r"event.Records\[0\].body is not JSON"),
    ({"Records": [sqs_record(json.dumps(FAILED), "m-1"), sqs_record("{}", "m-2")]},
     r"^event.Records\[1\].body has none of outcome \(an outcome event\), body \(an SQS record\)"),
    ({"Records": []}, "Records must be a non-empty list"),
    (eventbridge_event(None), "event.detail must be a JSON object, got NoneType"),
    ([FAILED], "event must be a JSON object, got list"),
])
def test_bad_input_is_a_value_error_naming_what_is_wrong(given: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Outcome.all_from_event(given)


@pytest.mark.parametrize("given", [
    ENVELOPE, json.dumps(ENVELOPE), {"Records": [sqs_record(json.dumps(ENVELOPE), "m-1")]}, eventbridge_event(ENVELOPE),
], ids=["lambda", "text", "sqs", "eventbridge"])
def test_a_delivery_envelope_is_refused_as_an_envelope_not_an_outcome(given: Any) -> None:
    with pytest.raises(ValueError, match=r"is a delivery envelope \(dueAt and dedupeKey but no outcome\), not an "
                                         r"outcome event: Envelope.from_event"):
        Outcome.from_event(given)


def test_the_outcome_kinds_are_the_contracts() -> None:
    assert tuple(kind.value for kind in OutcomeKind) == OUTCOME_KINDS


def test_the_client_exports_the_same_outcome_classes() -> None:
    assert (client_module.Outcome, client_module.OutcomeKind) == (Outcome, OutcomeKind)
    assert {"Outcome", "OutcomeKind"} <= set(client_module.__all__)


@pytest.mark.slow  # a child process: only a fresh interpreter shows what an import loads
def test_importing_the_outcome_imports_nothing_beyond_the_standard_library() -> None:
    done = imports_none_of("cdk_delayed_scheduler.outcome", (*HEAVY, "botocore", "scheduler_runtime"))
    assert done.returncode == 0, done.stderr
