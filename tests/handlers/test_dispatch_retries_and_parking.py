"""A one-shot's retries and its parking, through dispatcher handler events on in-process moto: its
record outlives every attempt its message has left, and whatever parks it (the dispatcher's own
dead-letter send, throttled, or SQS's redrive after a receive the dispatcher's timeout cut short)
leaves it findable with its payload and the reason."""

from __future__ import annotations

import json

import pytest

from .conftest import call_api, faulty, schedule, service_error
from .dispatching import dispatch, expire_as_ttl_would, receive
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")

VISIBILITY_SECONDS = 6 * 60  # the construct's default: 6 x a 60-second dispatcher timeout


# --- a record outlives every attempt its message has left ----------------------------------------


def test_a_fired_record_outlives_the_retry_that_comes_after_the_visibility_timeout(aws, monkeypatch):
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")  # the construct's least
    schedule("short-history", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    # The next receive comes a visibility timeout later; TTL has run meanwhile.
    assert expire_as_ttl_would(aws, now_s() + VISIBILITY_SECONDS + 5) == []
    assert dispatch(receive(message, 2)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert expire_as_ttl_would(aws, now_s() + VISIBILITY_SECONDS + 5) == []
    assert dispatch(receive(message, 3)) == {"batchItemFailures": []}  # the last receive (MAX_RECEIVE_COUNT 3)
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": "me"}
    assert "after 3 attempts" in parked["messageAttributes"]["reason"]["stringValue"]


def test_a_record_stays_readable_for_the_history_retention_after_its_message_can_last_be_parked(aws, monkeypatch):
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")
    schedule("parked-late", 0, target="broken")
    [message] = aws.receive(aws.delayer_url)
    began = now_s()
    dispatch(receive(message, 1))
    # Receives 2 and 3 may each end without the dispatcher (a timeout, throttling); SQS then parks the
    # message one visibility timeout after the last one. The record must still be there a retention later.
    parked_by = began + 3 * VISIBILITY_SECONDS
    assert expire_as_ttl_would(aws, parked_by + 60 - 5) == []
    assert call_api("GET", "/schedules/parked-late")[1]["status"] == "FIRED"


# --- whatever parks a schedule, it stays findable with its payload and a reason -----------------


class Killed(BaseException):
    """Lambda ending the dispatcher at its timeout: nothing after this point of the code runs."""


def redrive(aws, message: dict) -> dict:
    """What SQS's redrive parks once the receives ran out without the dispatcher: the bare message."""
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=message["body"])
    [parked] = aws.receive(aws.dlq_url)
    return json.loads(parked["body"])


def test_a_last_receive_whose_dead_letter_send_is_throttled_leaves_the_schedule_failed_with_its_reason(aws):
    schedule("throttled", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    dispatch(receive(message, 1))
    dispatch(receive(message, 2))

    def dlq_throttled(real, **kwargs):
        if kwargs["QueueUrl"] == aws.dlq_url:
            raise service_error("SendMessage", "ThrottlingException")
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=dlq_throttled):
        assert dispatch(receive(message, 3)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    bare = redrive(aws, message)
    assert "payload" not in bare
    status, read = call_api("GET", f"/schedules/{bare['id']}")
    assert status == 200 and read["status"] == "FAILED" and read["payload"] == {"keep": "me"}
    assert "after 3 attempts" in read["lastError"]


def test_a_park_whose_dead_letter_send_failed_is_made_when_its_message_comes_back_with_receives_left(aws):
    """maxAttempts 1: the first receive fails the delivery and writes FAILED, then its dead-letter send fails, so the
    message comes back while SQS still has receives left for it. Refused as FAILED and dropped, it left a FAILED
    schedule with nothing in the dead-letter queue (a redrive found nothing to send back)."""
    body = {"id": "unparked", "dueAt": now_s(), "target": "broken", "payload": {"keep": "me"},
            "retry": {"maxAttempts": 1}}
    assert call_api("POST", "/schedules", body)[0] == 201
    [message] = aws.receive(aws.delayer_url)

    def dlq_refused(real, **kwargs):
        if kwargs["QueueUrl"] == aws.dlq_url:
            raise service_error("SendMessage", "ThrottlingException")
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=dlq_refused):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert call_api("GET", "/schedules/unparked")[1]["status"] == "FAILED"
    assert aws.receive(aws.dlq_url) == []
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # back, with receives left: parked now
    [parked] = aws.receive(aws.dlq_url)
    envelope = json.loads(parked["body"])
    assert (envelope["id"], envelope["payload"], envelope["attempt"]) == ("unparked", {"keep": "me"}, 1)
    assert "attempt" in parked["messageAttributes"]["reason"]["stringValue"]


def test_a_last_receive_cut_short_by_the_dispatcher_timeout_leaves_the_schedule_findable_with_a_reason(aws, monkeypatch):
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")
    schedule("timed-out", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    dispatch(receive(message, 1))
    dispatch(receive(message, 2))

    def hang(real, **kwargs):
        raise Killed()

    with faulty("sqs", send_message=hang), pytest.raises(Killed):
        dispatch(receive(message, 3))
    # SQS parks the bare message one visibility timeout later; TTL has run by then, and a retention more.
    assert expire_as_ttl_would(aws, now_s() + VISIBILITY_SECONDS + 60 - 5) == []
    bare = redrive(aws, message)
    status, read = call_api("GET", f"/schedules/{bare['id']}")
    assert status == 200 and read["payload"] == {"keep": "me"} and read["attempts"] == 3
    assert read["status"] == "FIRED" and "receive 2 of 3 ended without a delivery" in read["lastError"]
