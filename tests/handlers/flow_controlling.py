"""Limited targets as the handler tests make and drive them: a target added with ``flowControl``, a schedule created
for it, and the dispatcher handed each delayer message alone at the instant it can be received (so that every start
happens at its exact slot on the virtual clock)."""

from __future__ import annotations

import json
import os

from scheduler_runtime.aws import context
from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits

from .conftest import DELAYER_VISIBILITY_SECONDS, call_api, promote
from .dispatching import dispatch, receive
from .rescheduling import patch
from .sweeping import sweep_at
from .virtual_time import START_MS, now_ms, receivable_instants, virtual


def limit(aws, monkeypatch, name: str, flow_control: dict, queue_url: str | None = None,
          description: dict | None = None) -> None:
    """Add target ``name`` with these limits to the deployment: ``description``, else an SQS queue (the target queue
    unless told)."""
    targets = json.loads(os.environ["TARGETS"])
    base = description or {"type": "sqs", "queueUrl": queue_url or aws.target_url, "fifo": False}
    targets[name] = {**base, "flowControl": flow_control}
    monkeypatch.setenv("TARGETS", json.dumps(targets))
    context._contexts.clear()


class SlotWrites:
    """Counts the writes that take slots (they move ``tat``) on each limited item, by its key."""

    def __init__(self) -> None:
        self.by_item: dict[str, int] = {}
        context.current().flow_dynamodb.meta.events.register("before-send.dynamodb.UpdateItem", self)

    def __call__(self, request, **_) -> None:
        body = json.loads(request.body)
        if f"{flow.TAT} = " in body["UpdateExpression"]:
            key = body["Key"]["pk"]["S"]
            self.by_item[key] = self.by_item.get(key, 0) + 1


def dispatch_received_together(aws) -> list[dict]:
    """Every delayer message receivable now, handed to the dispatcher in one batch; what reached the target."""
    messages = aws.receive(aws.delayer_url)
    assert dispatch(*(receive(message, 1) for message in messages)) == {"batchItemFailures": []}
    for message in messages:
        aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    return [json.loads(m["body"]) for m in aws.take(aws.target_url)]


def with_flow_queue(aws, monkeypatch) -> str:
    """Give the deployment a flow queue (as the construct does once a target has limits): its URL."""
    url: str = aws.sqs.create_queue(
        QueueName="flow", Attributes={"VisibilityTimeout": str(DELAYER_VISIBILITY_SECONDS)})["QueueUrl"]
    monkeypatch.setenv("FLOW_QUEUE_URL", url)
    context._contexts.clear()
    return url


def slots(flow_control: dict, count: int, first_ms: int = 0) -> list[int]:
    """The first ``count`` start slots (epoch ms) of a target with these limits, idle until ``first_ms``: one
    interval apart (the period and a start tolerance over the rate), each rounded up to the millisecond."""
    interval_us = FlowLimits.of({"flowControl": flow_control}).interval_us
    assert interval_us is not None
    return [first_ms + -(-(k * interval_us) // 1000) for k in range(count)]


def create(schedule_id: str, due_ms: int, target: str, **extra) -> None:
    status, answer = call_api("POST", "/schedules", {"id": schedule_id, "dueAt": due_ms / 1000, "target": target,
                                                     "payload": {"n": schedule_id}, **extra})
    assert status == 201, answer


def dispatch_one_at_a_time(aws, until_ms: int, queue_url: str | None = None) -> list[dict]:
    """Hand the dispatcher each message of the delayer queue (or ``queue_url``) alone, at the instant it can be
    received, until ``until_ms``: what reached the target queue, in order."""
    queue_url = queue_url or aws.delayer_url
    delivered = []
    while True:
        [message] = aws.receive(queue_url, max_messages=1) or [None]
        if message is None:
            instants = receivable_instants(queue_url)
            if not instants or instants[0] > until_ms:
                return delivered
            virtual().move_to(max(instants[0], virtual().now_ms()))  # slow writes may have moved it past
            continue
        answer = dispatch(receive(message, int(message["attributes"]["ApproximateReceiveCount"])))
        if not answer["batchItemFailures"]:
            aws.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["receiptHandle"])
        delivered += [json.loads(m["body"]) for m in aws.take(aws.target_url)]


MINUTE_MS = 60_000
SWEEP_OFFSET_MS = 30_400
"""The sweeper's rule runs once a minute, here 30.4 s past each minute."""


def created(aws, schedule_id: str, target: str) -> int:
    """A timer 5 s ahead, of group ``acme``: the create sends its message."""
    due_ms = now_ms() + 5000
    create(schedule_id, due_ms, target, group="acme")
    return due_ms


def created_beyond_the_window(aws, schedule_id: str, target: str) -> int:
    """A timer 15 minutes ahead: it waits in the timers table until the sweep and the enqueuer send its message."""
    due_ms = START_MS + 15 * MINUTE_MS
    create(schedule_id, due_ms, target, group="acme")
    return swept(aws, due_ms)


def rescheduled(aws, schedule_id: str, target: str) -> int:
    """A timer 30 minutes ahead, moved to 20 s ahead: the reschedule sends its message."""
    create(schedule_id, START_MS + 30 * MINUTE_MS, target, group="acme")
    due_ms = now_ms() + 20_000
    assert patch(schedule_id, {"dueAt": due_ms / 1000})[0] == 200
    return due_ms


def rescheduled_beyond_the_window(aws, schedule_id: str, target: str) -> int:
    """A timer 30 minutes ahead, moved to 10 minutes ahead: the sweep and the enqueuer send its message."""
    create(schedule_id, START_MS + 30 * MINUTE_MS, target, group="acme")
    due_ms = START_MS + 10 * MINUTE_MS
    assert patch(schedule_id, {"dueAt": due_ms / 1000})[0] == 200
    return swept(aws, due_ms)


def swept(aws, due_ms: int) -> int:
    """The sweep in the minute before ``due_ms`` claims the timer, and the enqueuer sends its message."""
    assert sweep_at(due_ms - MINUTE_MS + SWEEP_OFFSET_MS) == 1
    assert promote(aws) == []  # sent with a delay: not receivable yet
    return due_ms


MADE = [created, created_beyond_the_window, rescheduled, rescheduled_beyond_the_window]
"""Each way a one-shot timer's delayer message is made (for ``target``, of group ``acme``), answering its due time."""
MADE_IDS = ["create", "long-create", "reschedule", "long-reschedule"]
