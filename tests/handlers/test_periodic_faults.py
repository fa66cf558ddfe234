"""Periodic occurrences under the faults the chaos run found losing them (on in-process moto): an advance
whose answer is lost; a dispatcher that dies between the advance and the target call while the
definition moves on before SQS hands the message back; and an advance slower than the next
occurrence's read, or failed after the next occurrence was armed."""

from __future__ import annotations

import json

import pytest

from .conftest import call_api, faulty, service_error
from .dispatching import dispatch_as_received
from .periodic_timers import delivered, landing_in_the_first_wait_after_a_read, occurrence, put
from .virtual_time import iso

pytestmark = pytest.mark.usefixtures("virtual_clock")


class Crash(BaseException):
    """The dispatcher's process dies: nothing of the runtime can catch it."""


def test_an_advance_whose_answer_is_lost_still_delivers_its_occurrence_once_and_the_chain_goes_on(aws):
    put("lost-answer", {"every": 2, "payload": 1})
    message = occurrence(aws)

    def applied_then_answer_lost(real, **kwargs):
        real.update_item(**kwargs)  # applied; its answer is lost, so the SDK sends it again:
        return real.update_item(**kwargs)  # the retry fails its condition (the token moved on)

    with faulty("dynamodb", update_item=applied_then_answer_lost):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    assert envelope["attempt"] == 1
    following = occurrence(aws)  # armed before the advance, and still the definition's next occurrence
    assert dispatch_as_received(following) == {"batchItemFailures": []}
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
        dispatch_as_received(first)  # advanced (the next occurrence armed), then died before the target call
    assert delivered(aws) == []
    second = occurrence(aws)
    assert dispatch_as_received(second) == {"batchItemFailures": []}  # the definition moves past the first one's token
    [delivered_second] = delivered(aws)
    # SQS hands the first message back after its visibility timeout (a receive count of 2): delivered now.
    assert dispatch_as_received({**first}, receive_count=2) == {"batchItemFailures": []}
    [late] = delivered(aws)
    assert late["dueAt"] < delivered_second["dueAt"] and late["attempt"] == 2
    assert late["dedupeKey"] == f"crashy@{json.loads(first['body'])['dueMs']}"


def test_a_first_receive_of_an_old_token_and_an_old_version_stay_strays(aws):
    put("strays", {"every": 1, "payload": 1})
    first = occurrence(aws)
    assert dispatch_as_received(first) == {"batchItemFailures": []}
    second = occurrence(aws)
    assert dispatch_as_received(second) == {"batchItemFailures": []}
    assert len(delivered(aws)) == 2
    # The first message again, as a first receive (a duplicate of an ambiguous send): not delivered.
    assert dispatch_as_received({**first, "messageId": "copy"}, receive_count=1) == {"batchItemFailures": []}
    put("strays", {"every": 1, "payload": 2})  # replaced: a new version
    assert dispatch_as_received({**second}, receive_count=2) == {"batchItemFailures": []}
    assert delivered(aws) == []


def test_an_occurrence_read_before_its_predecessors_slow_advance_landed_waits_for_it(aws, virtual_clock, monkeypatch):
    """The next occurrence is armed before the advance, so a late dispatcher whose advance is slow
    (throttled, retried) can let that message be read before the advance lands. It used to be dropped
    as a stray, which ended the chain for good."""
    put("slow-advance", {"every": 1, "payload": 1})
    first = occurrence(aws)
    due_ms = json.loads(first["body"])["dueMs"]
    second: list = []
    slow: list = []

    def advance_landing_while_the_next_occurrence_waits(real, **kwargs):
        if slow:  # every write after the first occurrence's advance
            return real.update_item(**kwargs)
        # The first occurrence's advance, slow: the next occurrence (armed with no delay) is read before it lands,
        # and it lands in that dispatcher's first wait after the read.
        with landing_in_the_first_wait_after_a_read(virtual_clock, monkeypatch,
                                                    lambda: real.update_item(**kwargs)) as advance:
            slow.append(advance)
            second.append(occurrence(aws))
            assert dispatch_as_received(second[0]) == {"batchItemFailures": []}
        return advance.landed[0]

    virtual_clock.move_to(due_ms + 700)  # a late dispatcher
    with faulty("dynamodb", update_item=advance_landing_while_the_next_occurrence_waits):
        assert dispatch_as_received(first) == {"batchItemFailures": []}
    assert json.loads(second[0]["body"])["dueMs"] == due_ms + 1000
    # Read while the definition still waited for the first occurrence, then once the advance had landed.
    assert [d.next_due_ms for d in slow[0].read] == [due_ms, due_ms + 1000]
    # Both are delivered, each at its own instant, and the chain goes on: the third is armed.
    envelopes = delivered(aws)
    assert [(e["dedupeKey"], e["firedAt"]) for e in envelopes] == [
        (f"slow-advance@{due_ms + 1000}", iso(due_ms + 1000)), (f"slow-advance@{due_ms}", iso(due_ms + 700))]
    [third] = aws.wait_for_messages(aws.delayer_url)
    assert json.loads(third["body"])["dueMs"] == due_ms + 2000


def test_an_occurrence_whose_predecessor_failed_before_its_advance_is_put_back_then_dropped_once_re_armed(aws):
    put("stalled", {"every": 1, "payload": 1})
    first = occurrence(aws)
    with faulty("dynamodb", update_item=lambda real, **kwargs: (_ for _ in ()).throw(
            service_error("UpdateItem", "ProvisionedThroughputExceededException"))):
        # armed the next occurrence, then its advance failed: SQS hands it back later
        failed = dispatch_as_received(first)
    assert failed == {"batchItemFailures": [{"itemIdentifier": first["messageId"]}]}
    second = occurrence(aws)
    assert dispatch_as_received(second) == {"batchItemFailures": []}
    assert delivered(aws) == []
    [put_back] = aws.wait_for_messages(aws.delayer_url, 3)  # the same occurrence, sent again for later
    assert json.loads(put_back["body"]) == json.loads(second["body"])
    assert dispatch_as_received(first, receive_count=2) == {"batchItemFailures": []}  # back: delivered, and re-armed
    assert len(delivered(aws)) == 1
    assert dispatch_as_received(put_back) == {"batchItemFailures": []}  # now a stray: the next one has a new token
    assert delivered(aws) == []
