"""A timer's whole path through the handlers (api, sweeper, enqueuer, dispatcher) on virtual time: each instant
it is claimed, sent, received and delivered at is exact, and nothing waits on the wall clock."""

from __future__ import annotations

import json

from .conftest import DELAYER_VISIBILITY_SECONDS, call_api, faulty, promote, service_error, status_of
from .dispatching import dispatch, dispatch_all
from .sweeping import sweep_at
from .virtual_time import START_MS, iso, receivable_instants, step_to_next_message

MINUTE_MS = 60_000
SWEEP_OFFSET_MS = 30_400
"""The sweeper's rule runs once a minute, here 30.4 s past each minute (a rule's runs keep the offset it got)."""


def test_a_timer_fifteen_minutes_ahead_is_claimed_in_its_last_minute_and_delivered_at_its_due_instant(
        aws, virtual_clock):
    status, created = call_api("POST", "/schedules", {"id": "quarter", "delaySeconds": 900, "payload": {"n": 1}})
    due = START_MS + 15 * MINUTE_MS
    assert (status, created["status"], created["dueAt"]) == (201, "SCHEDULED", iso(due))
    # Each minute's sweep leaves it until it is due within the 60-second window: the sweep at 00:14:30.4.
    claims = [sweep_at(START_MS + minute * MINUTE_MS + SWEEP_OFFSET_MS) for minute in range(15)]
    assert claims == [0] * 14 + [1]
    assert promote(aws) == [] and status_of("quarter") == "QUEUED"
    # Sent with the whole seconds left (29), it surfaces 0.6 s early; the dispatcher waits out the rest.
    assert receivable_instants(aws.delayer_url) == [due - 600]
    assert step_to_next_message(aws.delayer_url, within_seconds=30) == due - 600
    [envelope] = dispatch_all(aws)
    assert (envelope["id"], envelope["dueAt"], envelope["firedAt"]) == ("quarter", iso(due), iso(due))
    assert virtual_clock.now_ms() == due and status_of("quarter") == "FIRED"


def test_a_failed_delivery_is_tried_again_once_the_delayer_queues_visibility_timeout_has_passed(aws, virtual_clock):
    assert call_api("POST", "/schedules", {"id": "again", "delaySeconds": 10, "payload": 1})[0] == 201
    due = START_MS + 10_000
    assert step_to_next_message(aws.delayer_url, within_seconds=10) == due
    [message] = aws.receive(aws.delayer_url)

    def target_down(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise service_error("SendMessage", "InternalError")
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=target_down):
        assert dispatch(message) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    # Not deleted, the message is handed out again when its visibility timeout (6 minutes) ends, not before.
    retry_at = due + DELAYER_VISIBILITY_SECONDS * 1000
    assert receivable_instants(aws.delayer_url) == [retry_at]
    assert step_to_next_message(aws.delayer_url, within_seconds=DELAYER_VISIBILITY_SECONDS) == retry_at
    [again] = aws.receive(aws.delayer_url)
    assert (again["messageId"], again["attributes"]["ApproximateReceiveCount"]) == (message["messageId"], "2")
    assert dispatch(again) == {"batchItemFailures": []}
    [envelope] = [json.loads(m["body"]) for m in aws.receive(aws.target_url)]
    assert (envelope["attempt"], envelope["dueAt"], envelope["firedAt"]) == (2, iso(due), iso(retry_at))
    assert iso(retry_at) == "2030-01-01T00:06:10.000Z"


def test_a_timer_due_past_the_window_is_claimed_by_the_sweep_a_minute_later_not_before(aws, virtual_clock):
    assert call_api("POST", "/schedules", {"id": "later", "delaySeconds": 75, "payload": 1})[1]["status"] == "SCHEDULED"
    due = START_MS + 75_000
    assert sweep_at(START_MS) == 0  # due 75 s ahead: past this sweep's 60-second window
    assert receivable_instants(aws.delayer_url) == [] and status_of("later") == "SCHEDULED"
    assert sweep_at(START_MS + MINUTE_MS) == 1  # the next sweep, a minute later, claims it
    assert promote(aws) == [] and receivable_instants(aws.delayer_url) == [due]  # sent with the 15 s left
    assert step_to_next_message(aws.delayer_url, within_seconds=15) == due
    [envelope] = dispatch_all(aws)
    assert (envelope["dueAt"], envelope["firedAt"]) == (iso(due), iso(due))


def test_a_cron_every_minute_fires_at_the_next_whole_minute_and_each_one_after(aws, virtual_clock):
    virtual_clock.move_to(START_MS + 20_500)
    status, answer = call_api("PUT", "/periodic/minutely", {"cron": "* * * * ? *", "payload": {"tick": True}})
    first = START_MS + MINUTE_MS
    assert (status, answer["nextDueAt"]) == (201, iso(first))
    # Sent with the whole seconds left (39), it surfaces half a second early and waits the rest out.
    assert step_to_next_message(aws.delayer_url, within_seconds=40) == first - 500
    [envelope] = dispatch_all(aws)
    assert (envelope["dueAt"], envelope["firedAt"]) == (iso(first), iso(first))
    assert envelope["dedupeKey"] == f"minutely@{first}"
    # The next one, armed when the first started (ARM_LEAD_MS before it was due), was past the window then: it
    # waits as a timer, which the minute's sweep claims and sends with the 29 s left.
    second = first + MINUTE_MS
    assert receivable_instants(aws.delayer_url) == [] and aws.count_items("TIMER#") == 1
    assert sweep_at(first + SWEEP_OFFSET_MS) == 1 and promote(aws) == []
    assert step_to_next_message(aws.delayer_url, within_seconds=30) == second - 600
    [envelope] = dispatch_all(aws)
    assert (envelope["dueAt"], envelope["firedAt"]) == (iso(second), iso(second))
    read = call_api("GET", "/periodic/minutely")[1]
    assert (read["firedCount"], read["lastFiredAt"], read["nextDueAt"]) == (2, iso(second), iso(second + MINUTE_MS))
