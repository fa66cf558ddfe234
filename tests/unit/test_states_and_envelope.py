import json

import pytest

from scheduler_runtime.core import states
from scheduler_runtime.core.envelope import TimerRef, build_envelope, message_tag


@pytest.mark.parametrize(
    "stored, outcome",
    [(states.SCHEDULED, "cancel"), (states.QUEUED, "cancel"), (states.CANCELLED, "already"),
     (states.FIRED, "conflict"), (states.FAILED, "conflict")],
)
def test_cancel_outcome(stored, outcome):
    assert states.cancel_outcome(stored) == outcome


def test_envelope_has_exactly_the_contract_fields():
    envelope = build_envelope("order-1", 1_795_255_200_250, 1_795_255_200_260, 2, '{"a":[1]}', "default")
    assert envelope == {
        "id": "order-1",
        "dueAt": "2026-11-21T10:00:00.250Z",
        "firedAt": "2026-11-21T10:00:00.260Z",
        "attempt": 2,
        "dedupeKey": "order-1@1795255200250",
        "payload": {"a": [1]},
        "target": "default",
    }


def test_timer_ref_round_trips_and_carries_a_token_but_no_payload():
    ref = TimerRef("order-1", 1_795_255_200_250, "tok-123", 1_795_255_100_000)
    body = ref.to_message_body()
    assert TimerRef.from_message_body(body) == ref
    assert set(json.loads(body)) == {"id", "dueMs", "token", "createdMs"}


@pytest.mark.parametrize("member", [*states.Status, *states.DefinitionStatus, *states.Refusal])
def test_every_status_and_refusal_reads_as_its_value_in_logs_json_and_comparisons(member):
    value = member.value
    assert member == value and hash(member) == hash(value) and isinstance(member, str)
    assert (str(member), f"{member}", "%s" % member, json.dumps(member)) == (value, value, value, json.dumps(value))


def test_a_refusal_for_a_stored_status_is_that_status():
    assert [states.Refusal(status) for status in (states.CANCELLED, states.FAILED)] == [states.Refusal.CANCELLED,
                                                                                           states.Refusal.FAILED]
    assert states.Refusal(states.DefinitionStatus.DELETED) is states.Refusal.DELETED


def test_the_message_tag_tells_messages_apart_and_keeps_one_across_its_redeliveries():
    assert message_tag("a") == message_tag("a") != message_tag("b") and len(message_tag("a")) == 8
