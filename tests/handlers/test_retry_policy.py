"""A schedule's ``retry`` policy through the api and dispatcher handlers, on in-process moto: a delivery is
parked (dead-letter queue, payload and reason) when its ``maxAttempts`` or ``maxAgeSeconds`` is reached,
a schedule without one keeps the deployment's limits, and a periodic timer's occurrences honour theirs.

The conftest's deployment has ``MAX_RECEIVE_COUNT`` 3 and the default dispatcher timeout (60 s), so a
one-shot's next attempt comes a visibility timeout (360 s) after a failed one."""

from __future__ import annotations

import json

import pytest

from .conftest import call_api, faulty
from .dispatching import as_record, capture_delayer_sends, dispatch, dispatch_as_received, receive
from .periodic_timers import occurrence, put
from .retrying import create, stored
from .virtual_time import virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")


def parked_reason(aws, schedule_id: str) -> str:
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": schedule_id}
    reason: str = parked["messageAttributes"]["reason"]["stringValue"]
    return reason


def failed(message: dict) -> dict:
    return {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}


def test_a_schedule_with_max_attempts_2_is_parked_after_its_second_failed_attempt(aws):
    create("twice", {"maxAttempts": 2})
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == failed(message)
    assert aws.receive(aws.dlq_url) == []
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}  # MAX_RECEIVE_COUNT is 3: the policy parks
    reason = parked_reason(aws, "twice")
    assert reason.startswith("delivery failed after 2 attempts: maxAttempts 2 reached: ")
    read = call_api("GET", "/schedules/twice")[1]
    assert read["status"] == "FAILED" and read["attempts"] == 2 and "maxAttempts 2 reached" in read["lastError"]
    assert read["retry"] == {"maxAttempts": 2}
    assert stored(aws, "twice")["maxAttempts"] == {"N": "2"}  # one number attribute


def test_max_age_seconds_parks_a_delivery_whose_next_attempt_would_start_after_due_plus_the_age(aws):
    create("young", {"maxAgeSeconds": 600})
    create("brief", {"maxAgeSeconds": 60, "maxAttempts": 3})
    by_id = {json.loads(m["body"])["id"]: m for m in aws.receive(aws.delayer_url)}
    # The next attempt comes 360 s later: within 600 s of dueAt, so it is retried ...
    assert dispatch(receive(by_id["young"], 1)) == failed(by_id["young"])
    # ... but not within 60 s: parked after the first attempt, its attempts left unused.
    assert dispatch(receive(by_id["brief"], 1)) == {"batchItemFailures": []}
    assert parked_reason(aws, "brief").startswith("delivery failed after 1 attempt: maxAgeSeconds 60 exceeded: ")
    read = call_api("GET", "/schedules/brief")[1]
    assert read["status"] == "FAILED" and read["retry"] == {"maxAgeSeconds": 60, "maxAttempts": 3}


def test_a_late_schedule_still_gets_its_first_attempt_before_its_age_parks_it(aws):
    create("overdue", {"maxAgeSeconds": 600}, target="default", due_in=-3600)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [delivered] = aws.receive(aws.target_url)
    assert json.loads(delivered["body"])["id"] == "overdue"
    assert call_api("GET", "/schedules/overdue")[1]["status"] == "FIRED"


def test_a_schedule_without_retry_keeps_the_deployments_limits_and_stores_nothing_more(aws):
    create("plain", None)
    record = stored(aws, "plain")
    assert "maxAttempts" not in record and "maxAgeSeconds" not in record
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == failed(message)
    assert dispatch(receive(message, 2)) == failed(message)
    assert dispatch(receive(message, 3)) == {"batchItemFailures": []}
    assert parked_reason(aws, "plain").startswith("delivery failed after 3 attempts: maxAttempts 3 reached: ")
    assert "retry" not in call_api("GET", "/schedules/plain")[1]


def test_a_receive_past_max_attempts_is_parked_without_another_delivery(aws):
    """The dispatcher that had the last attempt allowed ended without an answer (a timeout): SQS hands the
    message out again, and it is parked, not delivered once more."""
    create("spent", {"maxAttempts": 1}, target="default")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 2)) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    assert parked_reason(aws, "spent").startswith("maxAttempts 1 reached: ")
    assert call_api("GET", "/schedules/spent")[1]["status"] == "FAILED"


def fail_twice(aws, periodic_id: str, retry: dict) -> tuple[list, dict]:
    """A periodic timer on a failing target with ``retry``: its first occurrence and the retry that
    attempt sends both dispatched. The delayer messages sent (next occurrence, retries), and the parked one."""
    put(periodic_id, {"every": 5, "payload": {"keep": "me"}, "target": "broken", "retry": retry})
    message = occurrence(aws, timeout=7)
    sent: list = []
    with faulty("sqs", send_message=capture_delayer_sends(aws, sent)):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
        assert [json.loads(s["MessageBody"]).get("attempt") for s in sent] == [None, 2]
        virtual().advance(sent[-1]["DelaySeconds"])  # the retry surfaces once its delay has passed
        assert dispatch_as_received(as_record(sent[-1])) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    return sent, parked


def test_a_periodic_timers_occurrence_honours_its_retry(aws):
    sent, parked = fail_twice(aws, "flaky-twice", {"maxAttempts": 2})
    assert len(sent) == 2  # no attempt 3, though MAX_RECEIVE_COUNT is 3
    assert json.loads(parked["body"])["attempt"] == 2
    assert "maxAttempts 2 reached" in parked["messageAttributes"]["reason"]["stringValue"]
    read = call_api("GET", "/periodic/flaky-twice")[1]
    assert read["retry"] == {"maxAttempts": 2} and "maxAttempts 2 reached" in read["lastError"]


def test_a_periodic_occurrence_is_parked_once_its_next_retry_would_start_past_its_age(aws):
    # Retries come 30 s, then 60 s, after a failed attempt: the second would start past 60 s.
    sent, parked = fail_twice(aws, "stale", {"maxAgeSeconds": 60})
    assert len(sent) == 2
    assert "after 2 attempts: maxAgeSeconds 60 exceeded" in parked["messageAttributes"]["reason"]["stringValue"]


class Killed(BaseException):
    """Lambda ending the dispatcher at its timeout: nothing after this point of the code runs."""


def test_a_periodic_occurrence_received_again_past_max_attempts_is_parked_without_another_delivery(
        aws):
    put("one-try", {"every": 5, "payload": {"keep": "me"}, "retry": {"maxAttempts": 1}})
    message = occurrence(aws, timeout=7)

    def killed_at_the_target(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise Killed()
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=killed_at_the_target), pytest.raises(Killed):
        dispatch_as_received(message)  # advanced, then ended during its only attempt
    assert dispatch_as_received(message, receive_count=2) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    [parked] = aws.receive(aws.dlq_url)
    assert parked["messageAttributes"]["reason"]["stringValue"].startswith("maxAttempts 1 reached: ")
    assert "maxAttempts 1 reached" in call_api("GET", "/periodic/one-try")[1]["lastError"]
