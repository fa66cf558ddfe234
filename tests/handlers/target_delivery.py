"""One schedule delivered to a target through the dispatcher handler, the reason it was parked with, and a
client operation that fails with an error code: for the tests of each kind of target."""

from __future__ import annotations

import json

from .conftest import call_api, schedule, service_error
from .dispatching import dispatch, receive

ACCOUNT = "123456789012"


def deliver_once(aws, schedule_id: str, target: str, payload=None) -> dict:
    """Schedule ``schedule_id`` due now for ``target`` and hand its delayer message to the dispatcher once."""
    schedule(schedule_id, 0, target=target, payload=payload)
    [message] = aws.receive(aws.delayer_url)
    return dispatch(receive(message, 1))


def parked_reason(aws, schedule_id: str) -> str:
    """The reason the dead-letter queue holds for ``schedule_id``, which GET reads as FAILED with it too."""
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["id"] == schedule_id
    reason = parked["messageAttributes"]["reason"]["stringValue"]
    read = call_api("GET", f"/schedules/{schedule_id}")[1]
    assert (read["status"], read["attempts"], read["lastError"]) == ("FAILED", 1, reason)
    return reason


def raises(code: str, operation: str):
    def fail(real, **kwargs):
        raise service_error(operation, code)
    return fail
