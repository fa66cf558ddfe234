"""Issue 11's API findings (F3, F9, F12, F13), each through the api handler on in-process moto.

- F3: a batch item's own fault answers that item alone, and a client's retry of it creates nothing twice;
- F9: the same request is the same whatever its number spelling, and a replay answers the current status;
- F12: epoch seconds are read exactly (rounded up, never down), and a leap second is accepted;
- F13: a payload holding U+FFFE or U+FFFF (which SQS refuses) still reaches an SQS target and the DLQ,
  through a stand-in for SQS's character check (moto has none).
"""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta
from typing import Any

import pytest
from botocore.exceptions import ClientError

from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.client._models import Schedule
from cdk_delayed_scheduler.client._transport import Backoff
from scheduler_runtime.aws.context import current
from scheduler_runtime.handlers import dispatcher, sweeper

from .conftest import call_api, faulty, service_error, store, window
from .test_periodic_handlers import as_record, capture_delayer_sends, occurrence

# What SQS accepts in a message body or a string attribute: #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF.
_REFUSED_BY_SQS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _check_sqs_characters(kwargs: dict) -> None:
    """Raise as SQS does for a body or a string attribute with a character outside its set (moto does not)."""
    entries = kwargs.get("Entries") or [kwargs]
    for entry in entries:
        texts = [entry.get("MessageBody", "")]
        texts += [a.get("StringValue", "") for a in (entry.get("MessageAttributes") or {}).values()]
        for text in texts:
            if _REFUSED_BY_SQS.search(text):
                raise ClientError({"Error": {"Code": "InvalidMessageContents", "Message": "Invalid binary character"}},
                                  "SendMessage")


def _strict_send(then: Any = None):
    """A ``send_message`` override that refuses what SQS refuses, then sends (through ``then`` when given)."""

    def send(real, **kwargs):
        _check_sqs_characters(kwargs)
        return (then or (lambda client, **kw: client.send_message(**kw)))(real, **kwargs)

    return send


def _dispatch(message: dict, receive_count: int = 1) -> dict:
    message["attributes"]["ApproximateReceiveCount"] = str(receive_count)
    return dispatcher.handler({"Records": [message]})


def _record_of(put_item_kwargs: dict) -> str | None:
    """The schedule id of a record ``PutItem`` (None for any other write)."""
    pk = put_item_kwargs["Item"]["pk"]["S"]
    return pk.removeprefix("SCHEDULE#") if pk.startswith("SCHEDULE#") else None


# --- F3 -----------------------------------------------------------------------------------------

def test_f3_a_record_write_fault_on_one_batch_item_answers_that_item_alone(aws):
    def put_item(real, **kwargs):
        if _record_of(kwargs) in ("short-b", "long-d"):
            raise service_error("PutItem", "ProvisionedThroughputExceededException")
        return real.put_item(**kwargs)

    with faulty("dynamodb", put_item=put_item):
        status, body = call_api("POST", "/schedule-batches", {"schedules": [
            {"id": "short-a", "delaySeconds": 0, "payload": 1},
            {"id": "short-b", "delaySeconds": 0, "payload": 2},
            {"id": "long-c", "delaySeconds": 3600, "payload": 3},
            {"id": "long-d", "delaySeconds": 3600, "payload": 4},
        ]})
    assert status == 200
    assert [r["status"] for r in body["results"]] == [201, 500, 201, 500]
    assert body["results"][1]["body"] == {"message": "schedules[1]: internal error; nothing was accepted for this "
                                                     "schedule, retry it", "field": "schedules[1]"}
    assert [call_api("GET", f"/schedules/{i}")[0] for i in ("short-a", "short-b", "long-c", "long-d")] == [200, 404, 200, 404]


class _InProcess:
    """The typed client's transport, answered by the api handler in this process."""

    def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]:
        return call_api(method, path, body)


def test_f3_a_client_batch_retry_after_a_lost_answer_creates_nothing_twice(aws):
    client = SchedulerClient.__new__(SchedulerClient)
    client._setup(_InProcess(), "us-east-1", Backoff(3, 0.0, 0.0))
    lost: list[str] = []

    def put_item(real, **kwargs):
        answer = real.put_item(**kwargs)
        if _record_of(kwargs) and json.loads(kwargs["Item"]["payload"]["S"]) == {"n": 1} and not lost:
            lost.append(_record_of(kwargs))  # written, but its answer never comes back: the item answers 500
            raise service_error("PutItem")
        return answer

    with faulty("dynamodb", put_item=put_item):
        results = client.schedule_many([{"at": timedelta(hours=1, seconds=n), "payload": {"n": n}} for n in range(3)])
    assert all(isinstance(r, Schedule) for r in results) and lost == [results[1].id]
    assert aws.count_items("SCHEDULE#") == 3 and aws.count_items("TIMER#") == 3  # the retry was a replay
    assert [call_api("GET", f"/schedules/{r.id}")[1]["payload"] for r in results] == [{"n": n} for n in range(3)]


# --- F9 -----------------------------------------------------------------------------------------

def test_f9_delay_seconds_5_and_5_0_are_the_same_request(aws):
    status, first = call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5, "payload": 1}')
    assert status == 201
    assert call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5.0, "payload": 1}') == (200, first)
    assert call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5.000, "payload": 1}') == (200, first)
    assert call_api("POST", "/schedules", '{"id": "five", "delaySeconds": 5.001, "payload": 1}')[0] == 409
    status, defined = call_api("PUT", "/periodic/p5", '{"every": 60, "payload": 1}')
    assert status == 201
    assert call_api("PUT", "/periodic/p5", '{"every": 60.0, "payload": 1}') == (200, defined)


def test_f9_a_replay_answers_the_current_status_with_the_first_id_due_and_target(aws):
    bodies = {schedule_id: {"id": schedule_id, "delaySeconds": delay, "payload": 1, "target": target}
              for schedule_id, delay, target in (("cancelled", 0, "default"), ("fired", 0, "default"),
                                                 ("failed", 0, "broken"), ("claimed", 5, "default"))}
    created = {}
    for schedule_id, body in bodies.items():
        with window(1):
            status, created[schedule_id] = call_api("POST", "/schedules", body)
        assert status == 201
    assert call_api("DELETE", "/schedules/cancelled")[0] == 200
    messages = {json.loads(m["body"])["id"]: m for m in aws.receive(aws.delayer_url)}
    assert _dispatch(messages["fired"]) == {"batchItemFailures": []}
    assert _dispatch(messages["failed"], receive_count=3) == {"batchItemFailures": []}
    assert created["claimed"]["status"] == "SCHEDULED"
    assert sweeper.handler({})["claimed"] == 1  # the sweeper's window is 60 s: its timer is claimed

    for schedule_id, now in (("cancelled", "CANCELLED"), ("fired", "FIRED"), ("failed", "FAILED"), ("claimed", "QUEUED")):
        assert call_api("POST", "/schedules", bodies[schedule_id]) == (200, {**created[schedule_id], "status": now})
        assert call_api("GET", f"/schedules/{schedule_id}")[1]["status"] == now


# --- F12 ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("written, answered", [
    ("1763719200.12300001", "2025-11-21T10:00:00.124Z"),  # a float would make it .123: early
    ("1763719200.123", "2025-11-21T10:00:00.123Z"),
    ("1763719200.1230000000000000000000001", "2025-11-21T10:00:00.124Z"),
    ("1.7637192001229999e9", "2025-11-21T10:00:00.123Z"),
    ("1763719200.123" + "0" * 5000 + "1", "2025-11-21T10:00:00.124Z"),  # longer than int() reads: still no 500
    ('"2016-12-31T23:59:60Z"', "2016-12-31T23:59:59.999Z"),  # a leap second: the last millisecond of its minute
    ('"2016-12-31T18:59:60.5-05:00"', "2016-12-31T23:59:59.999Z"),
])
def test_f12_due_at_is_read_exactly_and_never_rounded_down(aws, written, answered):
    status, body = call_api("POST", "/schedules", f'{{"dueAt": {written}, "payload": 1}}')
    assert (status, body["dueAt"]) == (201, answered)


def test_f12_periodic_bounds_are_read_exactly_and_a_leap_second_elsewhere_is_refused(aws):
    status, body = call_api("PUT", "/periodic/exact", '{"every": 60, "startAt": 4102444800.00000001, '
                                                      '"endAt": "2100-06-30T23:59:60Z", "payload": 1}')
    assert status == 201
    assert (body["startAt"], body["endAt"]) == ("2100-01-01T00:00:00.001Z", "2100-06-30T23:59:59.999Z")
    status, body = call_api("PUT", "/periodic/leap", '{"every": 60, "startAt": "2100-01-01T12:30:60Z", "payload": 1}')
    assert (status, body["field"]) == (400, "startAt") and "leap second" in body["message"]


def test_f12_payload_numbers_round_trip_as_before(aws):
    text = '{"id": "nums", "delaySeconds": 600, "payload": {"x": 1.5, "y": [0.1, 1e5, -2.5e-7, 1.0], "n": 12345678901234567890}}'
    assert call_api("POST", "/schedules", text)[0] == 201
    assert store().get("nums").payload_json == '{"n":12345678901234567890,"x":1.5,"y":[0.1,100000.0,-2.5e-07,1.0]}'


# --- F13 ----------------------------------------------------------------------------------------

NONCHARACTERS = {"text": "a\ufffeb\uffffc", "also": ["\uffff", "é", "\U0001f600"]}


def test_f13_the_strict_sqs_stand_in_refuses_what_sqs_refuses(aws):
    with faulty("sqs", send_message=_strict_send()), pytest.raises(ClientError, match="InvalidMessageContents"):
        current().sqs.send_message(QueueUrl=aws.target_url, MessageBody="\uffff")


def test_f13_a_payload_sqs_refuses_raw_is_parked_in_the_dlq_intact_with_a_sendable_reason(aws):
    call_api("POST", "/schedules", {"id": "odd", "delaySeconds": 0, "payload": NONCHARACTERS})
    [message] = aws.receive(aws.delayer_url)

    def target_fails_with_odd_text(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise service_error("SendMessage", "Odd\uffff\x00Error")
        return _strict_send()(real, **kwargs)

    with faulty("sqs", send_message=target_fails_with_odd_text):
        assert _dispatch(message, receive_count=3) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == NONCHARACTERS
    assert "Odd\ufffd\ufffdError" in parked["messageAttributes"]["reason"]["stringValue"]
    assert call_api("GET", "/schedules/odd")[1]["status"] == "FAILED"


def test_f13_a_periodic_payload_sqs_refuses_raw_is_parked_in_the_dlq_intact(aws):
    start = round(time.time() + 0.5, 3)  # the first occurrence is due at once, not a period from now
    assert call_api("PUT", "/periodic/odd", {"every": 5, "startAt": start, "payload": NONCHARACTERS, "target": "broken"})[0] == 201
    message = occurrence(aws)
    sent: list = []
    with faulty("sqs", send_message=_strict_send(capture_delayer_sends(aws, sent))):
        for attempt in (1, 2, 3):
            assert _dispatch(message if attempt == 1 else as_record(sent[-1])) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == NONCHARACTERS and json.loads(parked["body"])["attempt"] == 3


@pytest.mark.parametrize("create", [
    lambda: call_api("POST", "/schedules", {"id": "odd", "delaySeconds": 0, "payload": NONCHARACTERS}),
    lambda: call_api("PUT", "/periodic/odd", {"every": 5, "startAt": round(time.time() + 0.3, 3), "payload": NONCHARACTERS}),
], ids=["one-shot", "periodic"])
def test_f13_a_payload_sqs_refuses_raw_reaches_an_sqs_target_intact(aws, create):
    assert create()[0] == 201
    message = occurrence(aws)
    with faulty("sqs", send_message=_strict_send(capture_delayer_sends(aws, []))):
        assert _dispatch(message) == {"batchItemFailures": []}
    [delivered] = aws.receive(aws.target_url)
    assert json.loads(delivered["body"])["payload"] == NONCHARACTERS
