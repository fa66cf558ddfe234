"""Periodic occurrences under the faults the chaos run found losing them (on in-process moto): an advance
whose answer is lost, and a dispatcher that dies between the advance and the target call while the
definition moves on before SQS hands the message back."""

from __future__ import annotations

import json

import pytest

from .conftest import call_api, faulty
from .test_periodic_handlers import delivered, dispatch, occurrence, put


class Crash(BaseException):
    """The dispatcher's process dies: nothing of the runtime can catch it."""


def test_an_advance_whose_answer_is_lost_still_delivers_its_occurrence_once_and_the_chain_goes_on(aws):
    put("lost-answer", {"every": 2, "payload": 1})
    message = occurrence(aws)

    def applied_then_answer_lost(real, **kwargs):
        real.update_item(**kwargs)  # applied; its answer is lost, so the SDK sends it again:
        return real.update_item(**kwargs)  # the retry fails its condition (the token moved on)

    with faulty("dynamodb", update_item=applied_then_answer_lost):
        assert dispatch(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    assert envelope["attempt"] == 1
    following = occurrence(aws)  # armed before the advance, and still the definition's next occurrence
    assert dispatch(following) == {"batchItemFailures": []}
    assert [e["dedupeKey"] for e in delivered(aws)] != [envelope["dedupeKey"]]
    assert call_api("GET", "/periodic/lost-answer")[1]["firedCount"] == 2


def test_an_occurrence_whose_dispatcher_died_after_the_advance_is_delivered_when_its_message_returns(aws):
    put("crashy", {"every": 1, "payload": 1})
    first = occurrence(aws)

    def die_at_the_target(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise Crash()
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=die_at_the_target), pytest.raises(Crash):
        dispatch(first)  # advanced (the next occurrence armed), then died before the target call
    assert delivered(aws) == []
    second = occurrence(aws)
    assert dispatch(second) == {"batchItemFailures": []}  # the definition moves past the first one's token
    [delivered_second] = delivered(aws)
    # SQS hands the first message back after its visibility timeout (a receive count of 2): delivered now.
    assert dispatch({**first}, receive_count=2) == {"batchItemFailures": []}
    [late] = delivered(aws)
    assert late["dueAt"] < delivered_second["dueAt"] and late["attempt"] == 2
    assert late["dedupeKey"] == f"crashy@{json.loads(first['body'])['dueMs']}"


def test_a_first_receive_of_an_old_token_and_an_old_version_stay_strays(aws):
    put("strays", {"every": 1, "payload": 1})
    first = occurrence(aws)
    assert dispatch(first) == {"batchItemFailures": []}
    second = occurrence(aws)
    assert dispatch(second) == {"batchItemFailures": []}
    assert len(delivered(aws)) == 2
    # The first message again, as a first receive (a duplicate of an ambiguous send): not delivered.
    assert dispatch({**first, "messageId": "copy"}, receive_count=1) == {"batchItemFailures": []}
    put("strays", {"every": 1, "payload": 2})  # replaced: a new version
    assert dispatch({**second}, receive_count=2) == {"batchItemFailures": []}
    assert delivered(aws) == []
