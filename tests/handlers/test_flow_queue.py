"""The flow queue, on virtual time: a deployment with limited targets has one, and every delayer message of a delivery
to a limited target waits there (however it was made: a create within the window or beyond it, a reschedule to
either, a batch, a periodic timer's occurrence), while every other timer's waits in the delayer queue; so a limited target's backlog is never
received among the other timers' messages. A limited delivery that reached the delayer queue all the same (sent
before the deployment had a flow queue, or by a redrive, which does not know the targets' limits) moves to the flow
queue when it is sent back to wait for its slot."""

from __future__ import annotations

import json

import pytest

from .conftest import call_api
from .dispatching import dispatch, receive
from .flow_controlling import MADE, MADE_IDS, create, dispatch_one_at_a_time, limit, slots, swept, with_flow_queue
from .virtual_time import iso, now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
WINDOW_MS = 60_000
"""The handler tests' delay window (``DELAY_WINDOW_SECONDS``)."""


@pytest.mark.parametrize("made", MADE, ids=MADE_IDS)
@pytest.mark.parametrize("target", ["mailer", "default"], ids=["limited", "unlimited"])
def test_a_limited_targets_delivery_waits_in_the_flow_queue_and_any_other_in_the_delayer_queue(
        aws, monkeypatch, made, target):
    flow_url = with_flow_queue(aws, monkeypatch)
    limit(aws, monkeypatch, "mailer", {"rate": 4, "perGroup": {"rate": 1}})
    due_ms = made(aws, "waiting", target)
    virtual().move_to(due_ms)
    waits_in, not_in = (flow_url, aws.delayer_url) if target == "mailer" else (aws.delayer_url, flow_url)
    assert aws.receive(not_in) == []
    [message] = aws.receive(waits_in)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [delivered] = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert (delivered["id"], delivered["firedAt"]) == ("waiting", iso(due_ms))


def test_a_batchs_timers_wait_each_in_its_own_targets_queue(aws, monkeypatch):
    flow_url = with_flow_queue(aws, monkeypatch)
    limit(aws, monkeypatch, "mailer", {"rate": 4})
    due_ms = now_ms() + 5000
    status, answer = call_api("POST", "/schedule-batches", {"schedules": [
        {"id": f"{target}-{n}", "dueAt": due_ms / 1000, "target": target, "payload": {"n": n}}
        for n in range(5) for target in ("mailer", "default")]})
    assert status == 200, answer
    virtual().move_to(due_ms)
    waiting = {url: sorted(json.loads(m["body"])["id"] for m in aws.receive(url))
               for url in (flow_url, aws.delayer_url)}
    assert waiting == {flow_url: [f"mailer-{n}" for n in range(5)], aws.delayer_url: [f"default-{n}" for n in range(5)]}


def test_a_limited_delivery_that_reached_the_delayer_queue_moves_to_the_flow_queue_to_wait_for_its_slot(
        aws, monkeypatch):
    flow_control = {"rate": 1}
    limit(aws, monkeypatch, "mailer", flow_control)
    due_ms = now_ms() + 5000
    for n in range(3):  # before the deployment had a flow queue: their messages wait in the delayer queue
        create(f"early-{n}", due_ms, "mailer")
    flow_url = with_flow_queue(aws, monkeypatch)
    virtual().move_to(due_ms)
    messages = aws.receive(aws.delayer_url)
    assert dispatch(*(receive(message, 1) for message in messages)) == {"batchItemFailures": []}
    for message in messages:
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    started = [json.loads(m["body"])["firedAt"] for m in aws.take(aws.target_url)]
    assert aws.receive(aws.delayer_url) == []  # the two whose slots were more than a second ahead moved
    started += [envelope["firedAt"] for envelope in dispatch_one_at_a_time(aws, due_ms + 60_000, flow_url)]
    assert started == [iso(slot) for slot in slots(flow_control, 3, due_ms)]


@pytest.mark.parametrize("every", [30, 600], ids=["next-within-the-window", "next-beyond-it"])
def test_a_periodic_timers_occurrences_to_a_limited_target_wait_in_the_flow_queue(aws, monkeypatch, every):
    from .periodic_timers import put

    flow_url = with_flow_queue(aws, monkeypatch)
    limit(aws, monkeypatch, "pager", {"rate": 4})
    first_ms = (now_ms() // 1000 + 5) * 1000
    put("tick", {"every": every, "startAt": first_ms / 1000, "payload": {}, "target": "pager"})
    fired = []
    for due_ms in (first_ms, first_ms + every * 1000):
        if due_ms - now_ms() > WINDOW_MS:  # beyond the window: the sweep and the enqueuer send its message
            swept(aws, due_ms)
        virtual().move_to(due_ms)
        assert aws.receive(aws.delayer_url) == []
        fired += [envelope["firedAt"] for envelope in dispatch_one_at_a_time(aws, due_ms, flow_url)]
    assert fired == [iso(first_ms), iso(first_ms + every * 1000)]
