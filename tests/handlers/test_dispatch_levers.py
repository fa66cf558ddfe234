"""The cost levers of delivery, never early: a message sent to surface early by the dispatcher mapping's
batching window (the lead) is waited for, not put back, and delivered at its due time; ``SECOND``
precision sends for the seconds left rounded up and delivers on arrival; a batch of messages due in the
same second is delivered by one invocation, each message at its own due time."""

from __future__ import annotations

import json
import math

import pytest

from scheduler_runtime.aws import delivery as delivery_module
from scheduler_runtime.handlers import dispatcher

from .conftest import call_api, faulty, schedule, status_of, store
from .virtual_time import iso, now_ms, step_to_next_message

pytestmark = pytest.mark.usefixtures("virtual_clock")

LEAD_SECONDS = 1


def _sends(sent: list):
    """A ``send_message`` override that records when each send starts (ms) and its parameters."""

    def send(real, **kwargs):
        sent.append((now_ms(), kwargs))
        return real.send_message(**kwargs)

    return send


@pytest.fixture
def lead(aws, monkeypatch):
    """A deployment whose dispatcher mapping gathers batches for a second."""
    monkeypatch.setenv("DISPATCHER_MAX_BATCHING_WINDOW_SECONDS", str(LEAD_SECONDS))
    return aws


def test_a_message_sent_with_the_lead_surfaces_early_by_it_and_is_delivered_at_its_due_time(lead):
    aws = lead
    sent: list = []
    with faulty("sqs", send_message=_sends(sent)):
        schedule("lead", 3.5)
    [(sent_ms, message)] = sent
    due_ms = json.loads(message["MessageBody"])["dueMs"]
    # the whole seconds left less the lead, rounded down: it surfaces between the lead and a second more early
    assert message["DelaySeconds"] == math.floor((due_ms - sent_ms) / 1000 - LEAD_SECONDS) == 2
    assert step_to_next_message(aws.delayer_url, within_seconds=3) == due_ms - 1500
    messages = aws.receive(aws.delayer_url)
    deliveries: list = []
    with faulty("sqs", send_message=_sends(deliveries)):
        assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    [(delivered_at, delivery)] = deliveries  # delivered by this invocation, not put back, at its due time
    assert delivered_at == due_ms and json.loads(delivery["MessageBody"])["firedAt"] == iso(due_ms)
    assert status_of("lead") == "FIRED"


def _dispatch_a_copy_now(schedule_id: str) -> tuple[object, list]:
    """Hand the dispatcher, at once, a copy of the message ``schedule_id``'s create sent (its record's due
    time and token), as if it had surfaced now; the record and the sends it made (ms, parameters)."""
    record = store().get(schedule_id)
    body = json.dumps({"id": schedule_id, "dueMs": record.due_ms, "token": record.token, "createdMs": record.created_ms})
    sent: list = []
    with faulty("sqs", send_message=_sends(sent)):
        assert dispatcher.handler({"Records": [{"messageId": "m1", "body": body,
                                                "attributes": {"ApproximateReceiveCount": "1"}}]}) == {
            "batchItemFailures": []}
    return record, sent


def test_a_message_earlier_than_the_lead_and_a_second_is_put_back_by_the_same_rule(lead):
    schedule("far", 30)
    record, sent = _dispatch_a_copy_now("far")
    [(at_ms, put_back)] = sent
    assert put_back["QueueUrl"] == lead.delayer_url
    assert put_back["DelaySeconds"] == (record.due_ms - at_ms - LEAD_SECONDS * 1000) // 1000 == 29
    assert status_of("far") == "QUEUED"


def test_second_precision_sends_for_the_seconds_left_rounded_up_and_delivers_on_arrival(aws, monkeypatch):
    monkeypatch.setenv("PRECISION", "SECOND")
    sent: list = []
    with faulty("sqs", send_message=_sends(sent)):
        schedule("sec", 1.3)
    [(sent_at, message)] = sent
    due_ms = json.loads(message["MessageBody"])["dueMs"]
    assert message["DelaySeconds"] == math.ceil((due_ms - sent_at) / 1000) == 2  # surfaces at its due time or later
    assert step_to_next_message(aws.delayer_url, within_seconds=2) == sent_at + 2000
    messages = aws.receive(aws.delayer_url)
    waits: list = []
    real_wait = delivery_module.wait_until
    monkeypatch.setattr(delivery_module, "wait_until",
                        lambda clock, at: (waits.append(at - clock.now_ms()), real_wait(clock, at))[-1])
    deliveries: list = []
    with faulty("sqs", send_message=_sends(deliveries)):
        assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    [(delivered_at, _)] = deliveries
    assert delivered_at == sent_at + 2000  # on arrival, 0.7 s after its due time
    assert waits == [due_ms - delivered_at]  # nothing left to wait out: delivered on arrival
    assert status_of("sec") == "FIRED"


def test_second_precision_still_waits_for_a_message_that_arrives_early(aws, monkeypatch):
    monkeypatch.setenv("PRECISION", "SECOND")
    schedule("early", 0.8)  # its own message is delayed a whole second: this copy arrives before it
    record, deliveries = _dispatch_a_copy_now("early")
    [(delivered_at, kwargs)] = deliveries
    assert kwargs["QueueUrl"] == aws.target_url and delivered_at == record.due_ms


def test_a_batch_of_many_messages_due_in_the_same_second_shares_one_invocation(lead):
    aws = lead
    base_ms = (math.floor(now_ms() / 1000) + 4) * 1000  # a whole second, 3 s after the lead
    ids = [f"same{i}" for i in range(40)]
    for start in range(0, len(ids), 10):
        status, answer = call_api("POST", "/schedule-batches", {"schedules": [
            {"id": i, "dueAt": (base_ms + 20 * k) / 1000, "payload": {"k": k}}
            for k, i in enumerate(ids) if start <= k < start + 10]})
        assert status == 200 and {r["status"] for r in answer["results"]} == {201}
    # Every one is sent with the same whole seconds less the lead: all surface together, before the first is due.
    assert step_to_next_message(aws.delayer_url, within_seconds=3) == base_ms - 1000
    records = [record for _ in range(4) for record in aws.receive(aws.delayer_url)]
    assert len(records) == len(ids)
    deliveries: list = []
    with faulty("sqs", send_message=_sends(deliveries)):
        assert dispatcher.handler({"Records": records}) == {"batchItemFailures": []}
    envelopes = [json.loads(kwargs["MessageBody"]) for _, kwargs in deliveries]
    assert sorted(e["id"] for e in envelopes) == sorted(ids)  # one invocation delivered all forty
    assert all(e["firedAt"] >= e["dueAt"] for e in envelopes)  # each at its own due time, never before
    assert {status_of(i) for i in ids} == {"FIRED"}


def test_a_reschedule_within_the_window_sends_its_message_with_the_lead_as_a_create_does(lead):
    schedule("moved", 30)
    sent: list = []
    with faulty("sqs", send_message=_sends(sent)):
        status, answer = call_api("PATCH", "/schedules/moved", {"delaySeconds": 8.5})
    assert status == 200, answer
    [(sent_ms, message)] = sent
    due_ms = json.loads(message["MessageBody"])["dueMs"]
    # the whole seconds left less the lead, rounded down (without the lead it would surface a window late)
    assert message["DelaySeconds"] == math.floor((due_ms - sent_ms) / 1000) - LEAD_SECONDS == 7
