"""``Envelope.from_event`` / ``all_from_event`` read the delivery envelope out of what each target hands
a consumer: the envelope itself (a Lambda target), SQS and SNS events (shaped as AWS's sample events for
Lambda triggers), an EventBridge event, and those nested; bad input is a ``ValueError`` naming what is
wrong. End to end: the local engine delivers to a handler (``--target-handler``'s way) that uses it."""

from __future__ import annotations

import json
import sys
import textwrap
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterator

import pytest

from cdk_delayed_scheduler import client as client_module
from cdk_delayed_scheduler.envelope import Envelope
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.deliveries import handler_target
from scheduler_runtime.core.envelope import build_envelope

from ..e2e.conftest import wait_until
from .conftest import fresh_id
from .lambda_events import eventbridge_event, sns_event, sns_notification, sqs_record

DUE_MS = 1_795_000_000_250  # 2026-11-18T11:06:40.250Z
FIRED_MS = DUE_MS + 1_375
ENVELOPE = build_envelope("order-42", DUE_MS, FIRED_MS, 1, '{"order": 42, "action": "remind"}', "default")
SECOND = build_envelope("order-43", DUE_MS, FIRED_MS + 20, 2, '"plain text"', "reminders")


def expected(body: dict[str, Any]) -> Envelope:
    return Envelope(id=body["id"], due_at=datetime.fromtimestamp(DUE_MS / 1000, timezone.utc),
                    fired_at=datetime.fromisoformat(body["firedAt"].replace("Z", "+00:00")), attempt=body["attempt"],
                    dedupe_key=body["dedupeKey"], payload=body["payload"], target=body["target"])


def test_a_lambda_targets_event_is_the_envelope() -> None:
    envelope = Envelope.from_event(ENVELOPE)
    assert envelope == expected(ENVELOPE) and envelope.raw == ENVELOPE
    assert envelope.due_at.tzinfo is not None and envelope.due_at.microsecond == 250_000
    assert envelope.lateness == timedelta(milliseconds=1_375)
    assert envelope.dedupe_key == f"order-42@{DUE_MS}" and envelope.payload == {"order": 42, "action": "remind"}
    assert Envelope.from_event(json.dumps(ENVELOPE)) == envelope  # a --target-url POST's body, as text
    assert Envelope.all_from_event(ENVELOPE) == [envelope]


def test_an_sqs_event_answers_one_envelope_per_record_in_order() -> None:
    event = {"Records": [sqs_record(json.dumps(ENVELOPE), "m-1"), sqs_record(json.dumps(SECOND), "m-2")]}
    assert Envelope.all_from_event(event) == [expected(ENVELOPE), expected(SECOND)]
    assert [Envelope.from_event(record).id for record in event["Records"]] == ["order-42", "order-43"]
    with pytest.raises(ValueError, match=r"holds 2 records, not one: Envelope.all_from_event\(event\)"):
        Envelope.from_event(event)


def test_an_sqs_event_of_one_record_answers_its_envelope() -> None:
    assert Envelope.from_event({"Records": [sqs_record(json.dumps(SECOND), "m-1")]}) == expected(SECOND)


def test_an_sns_event_answers_its_messages_envelope() -> None:
    event = sns_event(json.dumps(ENVELOPE))
    assert Envelope.from_event(event) == expected(ENVELOPE)
    assert Envelope.all_from_event(event) == [expected(ENVELOPE)]


def test_an_eventbridge_event_answers_its_details_envelope() -> None:
    event = eventbridge_event(ENVELOPE)
    assert Envelope.from_event(event) == expected(ENVELOPE)
    assert Envelope.all_from_event(event) == [expected(ENVELOPE)]


@pytest.mark.parametrize("body", [
    json.dumps(sns_notification(json.dumps(ENVELOPE))),  # an SNS topic's SQS subscription, without raw delivery
    json.dumps(eventbridge_event(ENVELOPE)),  # an EventBridge rule's SQS target
], ids=["sns-in-sqs", "eventbridge-in-sqs"])
def test_an_envelope_wrapped_twice_is_found(body: str) -> None:
    assert Envelope.all_from_event({"Records": [sqs_record(body, "m-1")]}) == [expected(ENVELOPE)]


def without(name: str) -> dict[str, Any]:
    return {key: value for key, value in ENVELOPE.items() if key != name}


@pytest.mark.parametrize("event, message", [
    (without("dedupeKey"), r"^event lacks dedupeKey \(an envelope has id, dueAt, firedAt"),
    (without("payload"), "lacks payload"),
    ({"id": "x", "dueAt": ENVELOPE["dueAt"]}, "lacks firedAt, attempt, dedupeKey, payload, target"),
    ({**ENVELOPE, "attempt": "1"}, "attempt must be an integer >= 1"),
    ({**ENVELOPE, "attempt": 0}, "attempt must be an integer >= 1"),
    ({**ENVELOPE, "dueAt": "tomorrow"}, "dueAt must be an RFC 3339 time"),
    ({**ENVELOPE, "target": None}, "target must be a non-empty string"),
    ({"Records": [sqs_record("not json", "m-1")]}, r"event.Records\[0\].body is not JSON"),
    ({"Records": [sqs_record(json.dumps(ENVELOPE), "m-1"), sqs_record("{}", "m-2")]},
     r"event.Records\[1\].body has none of dueAt and dedupeKey"),
    ({"Records": []}, "Records must be a non-empty list"),
    ({"Records": [{"EventSource": "aws:sns", "Sns": {"Type": "Notification"}}]}, r"Records\[0\].Sns lacks Message"),
    (eventbridge_event(None), "event.detail must be a JSON object, got NoneType"),
    ({"hello": "world"}, "event has none of dueAt and dedupeKey"),
    ([ENVELOPE], "event must be a JSON object, got list"),
])
def test_bad_input_is_a_value_error_naming_what_is_wrong(event: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Envelope.all_from_event(event)


def test_the_client_exports_the_same_envelope() -> None:
    assert client_module.Envelope is Envelope


HANDLER = textwrap.dedent("""
    from cdk_delayed_scheduler.envelope import Envelope

    received = []

    def handler(event, context):
        received.append(Envelope.from_event(event))
""")


@pytest.fixture
def consumer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Engine, list[Envelope]]]:
    """An engine delivering, as ``--target-handler envelope_consumer:handler`` does, to a handler module."""
    (tmp_path / "envelope_consumer.py").write_text(HANDLER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "envelope_consumer", raising=False)
    target = handler_target("envelope_consumer:handler")
    with Engine(EngineOptions(target=target, delay_window=4, sweep_interval=0.5)) as engine:
        yield engine, sys.modules["envelope_consumer"].received
    sys.modules.pop("envelope_consumer", None)


def test_the_engine_delivers_to_a_handler_that_reads_the_envelope(consumer: tuple[Engine, list[Envelope]]) -> None:
    engine, received = consumer
    timers = client_module.SchedulerClient(engine.api_url, region="us-east-1", sign=False)
    soon = timers.schedule(timedelta(seconds=1), {"order": 42}, id=fresh_id("soon"))
    late = timers.schedule(datetime.now(timezone.utc) - timedelta(seconds=30), "overdue", id=fresh_id("late"))
    wait_until(lambda: len(received) >= 2, 20, "both deliveries")
    by_id = {envelope.id: envelope for envelope in received}
    first = by_id[soon.id]
    assert (first.due_at, first.payload, first.attempt, first.target) == (soon.due_at, {"order": 42}, 1, "default")
    assert first.dedupe_key == f"{soon.id}@{int(soon.due_at.timestamp() * 1000)}"
    assert timedelta(0) <= first.lateness < timedelta(seconds=5)  # never early
    assert by_id[late.id].payload == "overdue" and by_id[late.id].lateness >= timedelta(seconds=30)
