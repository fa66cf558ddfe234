"""Periodic timers through the api and dispatcher handlers, on in-process moto: the paths an outage,
a failing target, a replacement, a duplicate message or a DELETE take."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.aws.definitions import DefinitionStore
from scheduler_runtime.core.window import SETTLE_MS

from .conftest import call_api, faulty, put_starting_soon
from .dispatching import as_record, capture_delayer_sends, dispatch_as_received, expire_as_ttl_would
from .periodic_timers import delivered, occurrence, put
from .virtual_time import START_MS, iso, now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")


def test_after_an_outage_the_latest_missed_occurrence_is_delivered_once_and_the_rest_counted(aws, virtual_clock):
    answer = put("tick", {"every": 1, "payload": {"n": 1}})
    message = occurrence(aws)
    first_due = json.loads(message["body"])["dueMs"]
    assert first_due == START_MS + 1000 == virtual_clock.now_ms()  # a period after the PUT
    virtual_clock.advance(3.3)  # the dispatcher "was down": three more occurrences came due meanwhile
    assert dispatch_as_received(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    # The latest occurrence due when the dispatcher ran, delivered once, at once; the three before it, the
    # first one included, are counted as skipped.
    due = first_due + 3000
    assert (envelope["dueAt"], envelope["firedAt"]) == (iso(due), iso(first_due + 3300))
    assert envelope["dedupeKey"] == f"tick@{due}" and envelope["attempt"] == 1
    status, read = call_api("GET", "/periodic/tick")
    assert (read["firedCount"], read["skippedCount"], read["lastDueAt"]) == (1, 3, envelope["dueAt"])
    # The next occurrence is the first one after the dispatcher's now, on the definition's grid (no drift).
    [following] = aws.wait_for_messages(aws.delayer_url)
    assert json.loads(following["body"])["dueMs"] == due + 1000
    assert read["nextDueAt"] == iso(due + 1000) and answer["every"] == 1


def test_a_failed_delivery_is_retried_by_attempt_then_parked_while_the_next_occurrence_is_armed(aws):
    put("flaky", {"every": 5, "payload": {"keep": "me"}, "target": "broken"})
    message = occurrence(aws, timeout=7)
    sent: list = []
    with faulty("sqs", send_message=capture_delayer_sends(aws, sent)):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
        # Sent: the next occurrence (armed before the delivery), then the retry of this one.
        bodies = [json.loads(s["MessageBody"]) for s in sent]
        assert [b.get("attempt") for b in bodies] == [None, 2]
        assert bodies[0]["dueMs"] == bodies[1]["dueMs"] + 5000 and sent[1]["DelaySeconds"] == 30
        for attempt in (2, 3):
            retry = as_record(sent[-1])
            assert json.loads(retry["body"])["attempt"] == attempt
            assert dispatch_as_received(retry) == {"batchItemFailures": []}
    assert len(sent) == 3  # attempts 2 and 3 were sent; MAX_RECEIVE_COUNT (3) ends it
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": "me"} and json.loads(parked["body"])["attempt"] == 3
    assert "after 3 attempts" in parked["messageAttributes"]["reason"]["stringValue"]
    read = call_api("GET", "/periodic/flaky")[1]
    assert read["status"] == "ACTIVE" and read["firedCount"] == 1 and "after 3 attempts" in read["lastError"]


def test_a_replaced_definitions_queued_occurrence_and_retries_are_not_delivered(aws):
    put("swap", {"every": 1, "payload": "old"})
    old = occurrence(aws)
    assert put("swap", {"every": 1, "payload": "new"})["status"] == "ACTIVE"
    new = occurrence(aws)  # both are due now
    assert dispatch_as_received(old) == {"batchItemFailures": []} and delivered(aws) == []  # the old token: a stray
    assert dispatch_as_received(new) == {"batchItemFailures": []}
    assert [e["payload"] for e in delivered(aws)] == ["new"]
    # A retry of the old version is refused as well.
    stale = dict(json.loads(old["body"]), attempt=2)
    assert dispatch_as_received({**old, "body": json.dumps(stale)}) == {"batchItemFailures": []} and delivered(aws) == []


def test_the_same_body_again_changes_nothing_and_a_replacement_keeps_the_history(aws):
    first = put("same", {"every": 60, "payload": 1})
    assert call_api("PUT", "/periodic/same", {"every": 60, "payload": 1}) == (200, first)
    delayed = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert delayed["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"  # the replay armed nothing
    status, replaced = call_api("PUT", "/periodic/same", {"every": 30, "payload": 1})
    assert status == 200 and replaced["every"] == 30 and replaced["createdAt"] == first["createdAt"]


def test_a_duplicate_of_a_delivered_occurrence_is_delivered_again_with_the_same_dedupe_key(aws):
    put("dup", {"every": 2, "payload": 1})
    message = occurrence(aws)
    assert dispatch_as_received(message) == {"batchItemFailures": []}
    assert dispatch_as_received(message, receive_count=2) == {"batchItemFailures": []}  # SQS delivered it twice
    envelopes = delivered(aws)
    assert len(envelopes) == 2 and len({e["dedupeKey"] for e in envelopes}) == 1
    assert [e["attempt"] for e in envelopes] == [1, 2]
    assert call_api("GET", "/periodic/dup")[1]["firedCount"] == 1


def test_nothing_starts_after_delete_and_delete_waits_out_a_start_just_allowed(aws, virtual_clock):
    put("gone", {"every": 1, "payload": 1})
    message = occurrence(aws)
    assert call_api("DELETE", "/periodic/gone") == (200, {"id": "gone", "status": "DELETED"})
    assert dispatch_as_received(message) == {"batchItemFailures": []} and delivered(aws) == []
    assert call_api("GET", "/periodic/gone")[0] == 404
    assert call_api("DELETE", "/periodic/gone")[0] == 200  # idempotent: the tombstone answers again
    assert call_api("DELETE", "/periodic/never")[0] == 404

    put("settle", {"every": 1, "payload": 1})
    message = occurrence(aws)
    assert dispatch_as_received(message) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    began = virtual_clock.now_ms()
    assert iso(began) == envelope["firedAt"]
    assert call_api("DELETE", "/periodic/settle")[0] == 200
    assert virtual_clock.now_ms() == began + SETTLE_MS  # answered once the start allowed just before had settled
    # A re-created id starts afresh, and its version moves past the deleted one's retries.
    assert call_api("PUT", "/periodic/settle", {"every": 1, "payload": 2})[0] == 201


def test_a_delete_answered_between_an_occurrences_read_and_its_advance_stops_it(aws, monkeypatch):
    """The occurrence read its definition (ACTIVE) and goes on to arm the next one and advance; a DELETE
    answered in between makes the advance fail, so the target is never called, and the next occurrence
    it armed (a timer: ``every`` is past the window) is removed."""
    put_starting_soon("stopped", {"every": 3600, "payload": 1})
    message = occurrence(aws)  # due now
    read = DefinitionStore.get
    deletes: list = []

    def read_then_delete(store, periodic_id):
        definition = read(store, periodic_id)
        if not deletes:  # the occurrence's read: the DELETE is answered right after it
            deletes.append(call_api("DELETE", f"/periodic/{periodic_id}"))
        return definition

    with monkeypatch.context() as patched:
        patched.setattr(DefinitionStore, "get", read_then_delete)
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    assert deletes == [(200, {"id": "stopped", "status": "DELETED"})]
    assert delivered(aws) == []
    assert aws.count_items("TIMER#") == 0 and aws.receive(aws.delayer_url) == []  # no further occurrence
    assert call_api("GET", "/periodic/stopped")[0] == 404


def test_a_start_slower_than_its_deadline_is_not_delivered_but_sent_again(aws, virtual_clock):
    """The target is called only within START_DEADLINE_MS of the write that allowed it (DELETE's settle relies
    on it); a slower write sends the same attempt again instead, which then starts afresh."""
    put("late", {"every": 1, "payload": 1})
    message = occurrence(aws)

    def slow_update(real, **kwargs):
        virtual_clock.advance(0.6)  # longer than the start deadline
        return real.update_item(**kwargs)

    sent: list = []
    with faulty("dynamodb", update_item=slow_update), faulty("sqs", send_message=capture_delayer_sends(aws, sent)):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
    assert delivered(aws) == []
    [again] = [s for s in sent if json.loads(s["MessageBody"]).get("attempt")]
    assert json.loads(again["MessageBody"])["attempt"] == 1 and again["DelaySeconds"] == 0
    assert dispatch_as_received(as_record(again)) == {"batchItemFailures": []}
    [envelope] = delivered(aws)
    assert envelope["dueAt"] and envelope["attempt"] == 1


def test_a_replacement_racing_an_occurrence_keeps_its_count_and_a_delete_beats_a_stale_put(aws):
    put("race", {"every": 1, "payload": "old"})
    message = occurrence(aws)
    raced: list = []

    def put_item(real, **kwargs):
        if kwargs["Item"]["pk"]["S"].startswith("PERIODIC#") and not raced:
            raced.append(True)
            # an occurrence starts between the PUT's read and write
            assert dispatch_as_received(message) == {"batchItemFailures": []}
        return real.put_item(**kwargs)

    with faulty("dynamodb", put_item=put_item):
        status, answer = call_api("PUT", "/periodic/race", {"every": 1, "payload": "new"})
    assert raced and status == 200 and answer["firedCount"] == 1 and answer["lastFiredAt"]

    raced.clear()

    def put_after_delete(real, **kwargs):
        if kwargs["Item"]["pk"]["S"].startswith("PERIODIC#") and not raced:
            raced.append(call_api("DELETE", "/periodic/race")[0])  # a DELETE lands between the PUT's read and write
        return real.put_item(**kwargs)

    with faulty("dynamodb", put_item=put_after_delete):
        status, answer = call_api("PUT", "/periodic/race", {"every": 2, "payload": "newer"})
    # The stale replacement lost; the PUT decided again and created the timer afresh.
    assert raced == [200] and status == 201 and answer["firedCount"] == 0


def test_the_last_occurrence_of_an_ending_definition_is_still_retried_and_parked(aws, virtual_clock, monkeypatch):
    """An ENDED definition's TTL outlives its last occurrence's retries, as a one-shot's record outlives
    its message's, and they may start (only DELETED, or a replacement, stops them)."""
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")
    put_starting_soon("last", {"every": 60, "payload": {"keep": "me"}, "target": "broken"}, end_after=30)
    message = occurrence(aws)
    sent: list = []
    with faulty("sqs", send_message=capture_delayer_sends(aws, sent)):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
        assert call_api("GET", "/periodic/last")[1]["status"] == "ENDED"
        for attempt, delay in ((2, 30), (3, 60)):
            virtual_clock.advance(delay)  # the retry's delay
            assert expire_as_ttl_would(aws, now_s() + 5) == []
            retry = as_record(sent[-1])
            assert json.loads(retry["body"])["attempt"] == attempt
            assert dispatch_as_received(retry) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": "me"} and json.loads(parked["body"])["attempt"] == 3
    assert "after 3 attempts" in call_api("GET", "/periodic/last")[1]["lastError"]


def test_another_message_for_a_delivered_occurrence_is_not_delivered(aws):
    """As for a one-shot, the crash-redelivery path (the definition's lastToken) is for the same SQS
    message received again; a second message with the same token (an ambiguous send) is dropped."""
    put("once", {"every": 2, "payload": 1})
    message = occurrence(aws)
    assert dispatch_as_received(message) == {"batchItemFailures": []}
    assert dispatch_as_received({**message, "messageId": "duplicate"}, receive_count=1) == {"batchItemFailures": []}
    assert dispatch_as_received({**message, "messageId": "duplicate"}, receive_count=2) == {"batchItemFailures": []}
    assert len(delivered(aws)) == 1


def test_a_last_attempt_whose_dead_letter_send_fails_still_leaves_its_reason_on_the_definition(aws):
    """As for a one-shot, the reason is written before the park, so a bare message that SQS's redrive
    parks instead still names a definition that says why."""
    put("unparked", {"every": 5, "payload": {"keep": "me"}, "target": "broken"})
    message = occurrence(aws, timeout=7)
    sent: list = []
    with faulty("sqs", send_message=capture_delayer_sends(aws, sent)):
        assert dispatch_as_received(message) == {"batchItemFailures": []}
        assert dispatch_as_received(as_record(sent[-1])) == {"batchItemFailures": []}
        assert "attempt 1 of 3 did not deliver" in call_api("GET", "/periodic/unparked")[1]["lastError"]
        last = as_record(sent[-1])

    def dlq_throttled(real, **kwargs):
        if kwargs["QueueUrl"] == aws.dlq_url:
            raise RuntimeError("throttled")
        return capture_delayer_sends(aws, sent)(real, **kwargs)

    with faulty("sqs", send_message=dlq_throttled):
        assert dispatch_as_received(last) == {"batchItemFailures": [{"itemIdentifier": last["messageId"]}]}
    read = call_api("GET", "/periodic/unparked")[1]
    assert "after 3 attempts" in read["lastError"] and read["payload"] == {"keep": "me"}
