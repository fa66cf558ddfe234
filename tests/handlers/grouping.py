"""Groups as the handler tests drive them: a schedule created in a group, the group's cancel through the api,
its sweep messages run through the dispatcher handler, and a fixture that makes the first of them prompt."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.core import groups
from scheduler_runtime.handlers import dispatcher

from .conftest import call_api
from .virtual_time import now_s, virtual


@pytest.fixture(autouse=True)
def prompt_sweep(monkeypatch):
    """The sweep's first message surfaces at once (not a few seconds out, which lets the index catch up on AWS)."""
    monkeypatch.setattr(groups, "SWEEP_FIRST_DELAY_SECONDS", 0)


def create(schedule_id: str, in_seconds: float, group: str | None = "g1", **extra) -> dict:
    body = {"id": schedule_id, "dueAt": round(now_s() + in_seconds, 3), "payload": {"id": schedule_id}, **extra}
    if group is not None:
        body["group"] = group
    status, answer = call_api("POST", "/schedules", body)
    assert status == 201, answer
    return answer


def cancel_call(group: str = "g1") -> tuple[int, dict]:
    """``DELETE /groups/{group}`` on virtual time, a millisecond after what the test did before it: a cancel stops
    the members stamped before it, to the millisecond, and one stamped in its own millisecond is not."""
    virtual().advance(0.001)
    return call_api("DELETE", f"/groups/{group}")


def cancel(group: str = "g1") -> dict:
    status, answer = cancel_call(group)
    assert status == 200, answer
    return answer


def sweep(aws) -> int:
    """Run the sweep messages waiting in the delayer queue (and the pages they chain) until none is left."""
    ran = 0
    while True:
        messages = []
        for message in aws.receive(aws.delayer_url):
            if groups.SWEEP_MARKER in json.loads(message["body"]):
                messages.append(message)
            else:  # a delivery's: visible again at once, for the test's own dispatch
                aws.sqs.change_message_visibility(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"],
                                                  VisibilityTimeout=0)
        if not messages:
            return ran
        assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
        ran += len(messages)
