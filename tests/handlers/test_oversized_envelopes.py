"""Envelopes near an SQS target's size limit, through dispatcher handler events on in-process moto:
the envelope is compact JSON, so a 200 KB payload reaches a 256 KiB queue, and one that can never fit
its queue is parked at once with the reason (without its payload when the dead-letter queue cannot
take it either), for a one-shot and for a periodic occurrence alike."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import call_api, faulty, put_starting_soon, schedule
from .dispatching import dispatch, receive

pytestmark = pytest.mark.usefixtures("virtual_clock")

SQS_CLASSIC_MAX = 262_144  # a queue's maximum message size before SQS raised its default to 1 MiB


@pytest.fixture
def small_queue_target(aws, monkeypatch) -> str:
    """Target ``small``: a queue that takes at most 256 KiB a message. Its URL."""
    url = aws.sqs.create_queue(QueueName="small", Attributes={"MaximumMessageSize": str(SQS_CLASSIC_MAX)})["QueueUrl"]
    targets = json.loads(os.environ["TARGETS"])
    targets["small"] = {"type": "sqs", "queueUrl": url, "fifo": False}
    monkeypatch.setenv("TARGETS", json.dumps(targets))
    return url


def test_a_200_kb_compact_payload_reaches_a_256_kib_queue(aws, small_queue_target):
    payload = [1] * 100_000  # 200,001 bytes compact; 299,999 with json's default ", " separators
    schedule("compact", 0, target="small", payload=payload)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [delivered] = aws.receive(small_queue_target)
    assert json.loads(delivered["body"])["payload"] == payload


def test_an_envelope_that_can_never_fit_its_queue_is_parked_at_once_with_the_reason(aws, small_queue_target):
    payload = "x" * (SQS_CLASSIC_MAX - 100)  # accepted (at most 256 KiB serialized); its envelope is not
    schedule("too-big", 0, target="small", payload=payload)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}  # no pointless retries
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == payload
    reason = parked["messageAttributes"]["reason"]["stringValue"]
    assert "undeliverable" in reason and "shorter than 262144 bytes" in reason
    read = call_api("GET", "/schedules/too-big")[1]
    assert (read["status"], read["attempts"]) == ("FAILED", 1) and read["lastError"] == reason


def test_an_envelope_too_large_for_the_dead_letter_queue_too_is_parked_without_its_payload(aws, small_queue_target):
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MaximumMessageSize": str(SQS_CLASSIC_MAX)})
    payload = "x" * (SQS_CLASSIC_MAX - 100)
    schedule("too-big-twice", 0, target="small", payload=payload)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    body = json.loads(parked["body"])
    assert "payload" not in body and body["id"] == "too-big-twice" and body["attempt"] == 1
    assert "GET /schedules/too-big-twice" in parked["messageAttributes"]["reason"]["stringValue"]
    assert call_api("GET", "/schedules/too-big-twice")[1]["payload"] == payload


def test_a_periodic_occurrence_that_can_never_fit_is_parked_at_once_without_retry_messages(aws, small_queue_target):
    payload = "x" * (SQS_CLASSIC_MAX - 100)
    put_starting_soon("too-big", {"every": 60, "payload": payload, "target": "small"})
    [message] = aws.wait_for_messages(aws.delayer_url, timeout=5)
    sent: list = []

    def keep_delayer_sends(real, **kwargs):
        if kwargs["QueueUrl"] == aws.delayer_url:
            sent.append(json.loads(kwargs["MessageBody"]))
            return {"MessageId": "kept"}
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=keep_delayer_sends):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert not [body for body in sent if body.get("attempt")]  # no retry message
    [parked] = aws.receive(aws.dlq_url)
    assert "undeliverable" in parked["messageAttributes"]["reason"]["stringValue"]
    assert "undeliverable" in call_api("GET", "/periodic/too-big")[1]["lastError"]
