"""Limited targets as the handler tests make and drive them: a target added with ``flowControl``, a schedule created
for it, and the dispatcher handed each delayer message alone at the instant it can be received (so that every start
happens at its exact slot on the virtual clock)."""

from __future__ import annotations

import json
import os

from scheduler_runtime.aws import context
from scheduler_runtime.core.flow import FlowLimits

from .conftest import call_api
from .dispatching import dispatch, receive
from .virtual_time import receivable_instants, virtual


def limit(aws, monkeypatch, name: str, flow_control: dict, queue_url: str | None = None,
          description: dict | None = None) -> None:
    """Add target ``name`` with these limits to the deployment: ``description``, else an SQS queue (the target queue
    unless told)."""
    targets = json.loads(os.environ["TARGETS"])
    base = description or {"type": "sqs", "queueUrl": queue_url or aws.target_url, "fifo": False}
    targets[name] = {**base, "flowControl": flow_control}
    monkeypatch.setenv("TARGETS", json.dumps(targets))
    context._contexts.clear()


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


def dispatch_one_at_a_time(aws, until_ms: int) -> list[dict]:
    """Hand the dispatcher each delayer message alone, at the instant it can be received, until ``until_ms``:
    what reached the target queue, in order."""
    delivered = []
    while True:
        [message] = aws.receive(aws.delayer_url, max_messages=1) or [None]
        if message is None:
            instants = receivable_instants(aws.delayer_url)
            if not instants or instants[0] > until_ms:
                return delivered
            virtual().move_to(max(instants[0], virtual().now_ms()))  # slow writes may have moved it past
            continue
        answer = dispatch(receive(message, int(message["attributes"]["ApproximateReceiveCount"])))
        if not answer["batchItemFailures"]:
            aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
        delivered += [json.loads(m["body"]) for m in aws.take(aws.target_url)]
