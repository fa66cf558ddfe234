"""A dispatcher batch's first asks to one item of a limited target, on virtual time: deliveries due already take their
start slots in one write on the item (not one each), in due order, one interval apart, and start at them (one whose
slot is more than a second ahead waits for it in the queue, counted as waiting for room); one alone in the batch, a
message received again, one not due yet and a periodic occurrence take theirs as before; and a write refused for
capacity fails no message."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.aws import context
from scheduler_runtime.aws import flow as flow_store
from scheduler_runtime.core import flow
from scheduler_runtime.core.timeparse import parse_rfc3339 as ms

from .dispatching import dispatch, receive
from .flow_controlling import (SlotWrites, create, dispatch_one_at_a_time, dispatch_received_together, limit, slots,
                               with_flow_queue)
from .virtual_time import now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
LIMITS = {"rate": 1}
"""One start a second: slots 1,050 ms apart, so in a batch only the first starts in the dispatcher and the others go
back to wait for theirs (no two deliveries wait in the dispatcher at once: the virtual clock orders them exactly)."""


@pytest.fixture(autouse=True)
def quick_writes(monkeypatch) -> None:
    """The writes of virtual time take no time: the least lead, so no slot is asked ahead of now."""
    monkeypatch.setattr(flow_store.Lead, "ms", flow.LEAD_MIN_MS)


def _starts(delivered: list[dict]) -> dict[str, int]:
    return {envelope["id"]: ms(envelope["firedAt"]) for envelope in delivered}


def test_a_batchs_deliveries_due_to_one_target_take_their_slots_in_one_write_and_start_at_them_in_due_order(
        aws, monkeypatch):
    from scheduler_runtime import observability

    lines: list[str] = []
    monkeypatch.setattr(observability, "_metric_sink", lines.append)
    limit(aws, monkeypatch, "mailer", LIMITS)
    writes = SlotWrites()
    due_ms = now_ms() + 5000
    for n in (3, 1, 0, 2):  # created out of order: due 10 ms apart, late-0 first
        create(f"late-{n}", due_ms + 10 * n, "mailer")
    virtual().move_to(due_ms + 40)  # received late, all due: a backlog's first receive
    delivered = dispatch_received_together(aws)
    delivered += dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert writes.by_item == {flow.flow_key("mailer").pk: 1}  # the four slots in one write, none taken again
    starts = _starts(delivered)
    assert [starts[f"late-{n}"] for n in range(4)] == slots(LIMITS, 4, due_ms + 40)
    waited = sum(json.loads(line).get("WaitingForRoom", 0) for line in lines)
    assert waited == 3  # their slots more than a second ahead: they waited in the queue for them


def test_a_batchs_deliveries_taken_together_wait_for_their_slots_in_the_flow_queue(aws, monkeypatch):
    flow_url = with_flow_queue(aws, monkeypatch)
    limit(aws, monkeypatch, "mailer", LIMITS)
    due_ms = now_ms() + 5000
    for n in range(6):
        create(f"late-{n}", due_ms, "mailer")
    virtual().move_to(due_ms + 40)
    messages = aws.receive(flow_url)
    assert dispatch(*(receive(message, 1) for message in messages)) == {"batchItemFailures": []}
    for message in messages:
        aws.sqs.delete_message(QueueUrl=flow_url, ReceiptHandle=message["receiptHandle"])
    delivered = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    assert aws.receive(aws.delayer_url) == []
    delivered += dispatch_one_at_a_time(aws, due_ms + 60_000, flow_url)
    assert sorted(_starts(delivered).values()) == slots(LIMITS, 6, due_ms + 40)


@pytest.mark.parametrize("which", ["received again", "not due yet", "alone"])
def test_a_first_ask_not_due_received_again_or_alone_in_the_batch_takes_its_own_slot(aws, monkeypatch, which):
    limit(aws, monkeypatch, "mailer", LIMITS)
    asked: list[int] = []  # how many slots each ask took
    real = flow_store.FlowStore.reserve_many

    def counted(store, target, limits, now, count):
        asked.append(count)
        return real(store, target, limits, now, count)

    monkeypatch.setattr(flow_store.FlowStore, "reserve_many", counted)
    due_ms = now_ms() + 5000
    ids = ["only"] if which == "alone" else ["one", "two"]
    for schedule_id in ids:
        create(schedule_id, due_ms, "mailer")
    virtual().move_to(due_ms - 500 if which == "not due yet" else due_ms)
    messages = aws.receive(aws.delayer_url)
    count = 2 if which == "received again" else 1
    assert dispatch(*(receive(message, count) for message in messages)) == {"batchItemFailures": []}
    for message in messages:
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    delivered = [json.loads(m["body"]) for m in aws.take(aws.target_url)]
    delivered += dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert sorted(_starts(delivered)) == sorted(ids)
    assert asked == [1] * len(ids)  # each its own slot


@pytest.mark.parametrize("refusal", [flow_store.Crowded("injected"), RuntimeError("no connection")],
                         ids=["refused-for-capacity", "failed"])
def test_slots_taken_together_whose_write_is_refused_or_fails_fail_no_message_and_each_asks_on_its_own(
        aws, monkeypatch, refusal):
    limit(aws, monkeypatch, "mailer", LIMITS)

    real = flow_store.FlowStore.reserve_many

    def refused(store, target, limits, now, count):  # slots together refused; one slot at a time as before
        if count > 1:
            raise refusal
        return real(store, target, limits, now, count)

    monkeypatch.setattr(flow_store.FlowStore, "reserve_many", refused)
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"late-{n}", due_ms, "mailer")
    virtual().move_to(due_ms)
    delivered = dispatch_received_together(aws)
    delivered += dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert sorted(_starts(delivered).values()) == slots(LIMITS, 3, due_ms)
