"""Messages that must not start a delivery, through dispatcher handler events on in-process moto: a
second message with a delivered schedule's token is never delivered, a stale one never fails it, a
retry of the same message still goes ahead, and the strays a client's ordinary retries leave behind
(an idempotent replay, a 409) are dropped without a warning."""

from __future__ import annotations

import json
import logging

import pytest

from .conftest import call_api, faulty, schedule, service_error
from .dispatching import dispatch, receive
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")


def warnings_of(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name.startswith("scheduler_runtime") and record.levelno >= logging.WARNING]


def dropped_strays(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if record.name == "scheduler_runtime" and json.loads(record.getMessage())["event"] == "stray_dropped"]


def test_the_strays_of_a_replay_and_a_conflict_are_dropped_below_warning_and_the_schedule_delivered_once(aws, caplog):
    caplog.set_level(logging.INFO, logger="scheduler_runtime")
    body = {"id": "retried", "dueAt": round(now_s(), 3), "payload": {"n": 1}}
    assert call_api("POST", "/schedules", body)[0] == 201
    assert call_api("POST", "/schedules", body)[0] == 200  # a client's retry: an idempotent replay
    assert call_api("POST", "/schedules", {**body, "payload": {"n": 2}})[0] == 409
    messages = aws.receive(aws.delayer_url)
    assert len(messages) == 3  # each create attempt sent its message before it met the record
    caplog.clear()
    assert dispatch(*(receive(message, 1) for message in messages)) == {"batchItemFailures": []}
    assert [json.loads(m["body"])["payload"] for m in aws.receive(aws.target_url)] == [{"n": 1}]
    assert len(dropped_strays(caplog)) == 2
    assert warnings_of(caplog) == []


def test_a_duplicate_message_with_the_same_token_is_not_delivered_again(aws, caplog):
    schedule("twice", 0, payload={"n": 1})
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert len(aws.receive(aws.target_url)) == 1
    # An ambiguous send made a second message with the same body: another messageId.
    caplog.set_level(logging.INFO, logger="scheduler_runtime")
    assert dispatch(receive(message, 1, message_id="duplicate")) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    read = call_api("GET", "/schedules/twice")[1]
    assert (read["status"], read["attempts"]) == ("FIRED", 1)
    assert len(dropped_strays(caplog)) == 1 and warnings_of(caplog) == []  # expected of an ambiguous send


def test_a_stale_duplicate_failing_on_its_last_receive_does_not_mark_a_delivered_schedule_failed(aws):
    schedule("kept", 0)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    aws.receive(aws.target_url)

    def target_down(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise service_error("SendMessage")
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=target_down):
        assert dispatch(receive(message, 3, message_id="stale")) == {"batchItemFailures": []}
    assert aws.receive(aws.dlq_url) == []
    assert call_api("GET", "/schedules/kept")[1]["status"] == "FIRED"


def test_the_same_message_received_again_is_still_retried(aws):
    schedule("again", 0, target="broken")
    [message] = aws.receive(aws.delayer_url)
    for receive_count in (1, 2):
        assert dispatch(receive(message, receive_count)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert call_api("GET", "/schedules/again")[1]["attempts"] == 2
