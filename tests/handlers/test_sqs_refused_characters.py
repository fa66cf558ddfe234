"""A payload holding characters SQS refuses in a message (U+FFFE, U+FFFF) still reaches an SQS target
and the dead-letter queue intact, through the api and dispatcher handlers on in-process moto, with a
stand-in for SQS's character check (moto has none).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from botocore.exceptions import ClientError

from scheduler_runtime.aws.context import current

from .conftest import call_api, faulty, service_error
from .dispatching import as_record, capture_delayer_sends, dispatch_as_received
from .periodic_timers import occurrence
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")

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


NONCHARACTERS = {"text": "a\ufffeb\uffffc", "also": ["\uffff", "é", "\U0001f600"]}


def test_the_strict_sqs_stand_in_refuses_what_sqs_refuses(aws):
    with faulty("sqs", send_message=_strict_send()), pytest.raises(ClientError, match="InvalidMessageContents"):
        current().sqs.send_message(QueueUrl=aws.target_url, MessageBody="\uffff")


def test_a_payload_sqs_refuses_raw_is_parked_in_the_dlq_intact_with_a_sendable_reason(aws):
    call_api("POST", "/schedules", {"id": "odd", "delaySeconds": 0, "payload": NONCHARACTERS})
    [message] = aws.receive(aws.delayer_url)

    def target_fails_with_odd_text(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise service_error("SendMessage", "Odd\uffff\x00Error")
        return _strict_send()(real, **kwargs)

    with faulty("sqs", send_message=target_fails_with_odd_text):
        assert dispatch_as_received(message, receive_count=3) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == NONCHARACTERS
    assert "Odd\ufffd\ufffdError" in parked["messageAttributes"]["reason"]["stringValue"]
    assert call_api("GET", "/schedules/odd")[1]["status"] == "FAILED"


def test_a_periodic_payload_sqs_refuses_raw_is_parked_in_the_dlq_intact(aws):
    start = round(now_s() + 0.5, 3)  # the first occurrence is due at once, not a period from now
    assert call_api("PUT", "/periodic/odd", {"every": 5, "startAt": start, "payload": NONCHARACTERS, "target": "broken"})[0] == 201
    message = occurrence(aws)
    sent: list = []
    with faulty("sqs", send_message=_strict_send(capture_delayer_sends(aws, sent))):
        for attempt in (1, 2, 3):
            assert dispatch_as_received(message if attempt == 1 else as_record(sent[-1])) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == NONCHARACTERS and json.loads(parked["body"])["attempt"] == 3


@pytest.mark.parametrize("create", [
    lambda: call_api("POST", "/schedules", {"id": "odd", "delaySeconds": 0, "payload": NONCHARACTERS}),
    lambda: call_api("PUT", "/periodic/odd", {"every": 5, "startAt": round(now_s() + 0.3, 3), "payload": NONCHARACTERS}),
], ids=["one-shot", "periodic"])
def test_a_payload_sqs_refuses_raw_reaches_an_sqs_target_intact(aws, create):
    assert create()[0] == 201
    message = occurrence(aws)
    with faulty("sqs", send_message=_strict_send(capture_delayer_sends(aws, []))):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    [delivered] = aws.receive(aws.target_url)
    assert json.loads(delivered["body"])["payload"] == NONCHARACTERS
