import json

import pytest

from scheduler_runtime.core import states
from scheduler_runtime.core.envelope import TimerRef, build_envelope


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
