"""The kit's redrive: a schedule parked after its target failed is sent back for delivery once the target
works again, with its dedupeKey and the next attempt; sent back while the target still fails, it is tried once
more and parked again, and the redrive returns."""

import threading
from datetime import timedelta

import pytest

from cdk_delayed_scheduler.client import RetryPolicy

BROKEN = {"now": True}


def flaky(event, context):
    if BROKEN["now"]:
        raise RuntimeError("down for maintenance")
    return {"ok": True}


@pytest.mark.local_scheduler(target=flaky)
def test_a_parked_schedule_is_redriven_through_the_kit_once_the_target_works(local_scheduler):
    BROKEN["now"] = True
    timers = local_scheduler.client
    timers.schedule(timedelta(minutes=1), {"order": 7}, id="parked", retry=RetryPolicy(max_attempts=1))
    local_scheduler.advance(minutes=1)
    assert timers.get("parked").status == "FAILED"
    assert [d.error for d in local_scheduler.deliveries()] == ["RuntimeError: down for maintenance"]

    BROKEN["now"] = False
    report = local_scheduler.redrive()
    assert [entry["id"] for entry in report.moved] == ["parked"] and report.skipped == []
    local_scheduler.wait_until_quiet()
    (delivery,) = [d for d in local_scheduler.deliveries() if d.error is None]
    assert delivery.envelope.attempt == 2 and delivery.envelope.dedupe_key.startswith("parked@")
    assert timers.get("parked").status == "FIRED"


def always_failing(event, context):
    raise RuntimeError("billing is down")


def returns_within(seconds: float, call, **arguments):
    """``call(**arguments)``'s answer; fails the test (rather than hang it) when it has not returned in ``seconds``."""
    answer: list = []
    worker = threading.Thread(target=lambda: answer.append(call(**arguments)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert answer, f"{call.__name__} did not return within {seconds} s"
    return answer[0]


@pytest.mark.local_scheduler(targets={"billing": always_failing}, max_receive_count=1)
def test_a_redrive_of_a_delivery_parked_again_at_once_returns_with_the_target_called_once_more(local_scheduler):
    timer = local_scheduler.client.schedule(timedelta(seconds=1), {"invoice": 7}, target="billing")
    local_scheduler.advance(seconds=2)
    assert local_scheduler.client.get(timer.id).status == "FAILED"

    report = returns_within(30, local_scheduler.redrive, ids=[timer.id])
    assert [entry["id"] for entry in report.moved] == [timer.id] and report.skipped == []
    assert [entry["id"] for entry in report.parked_again] in ([], [timer.id])  # as the run saw it, or after
    local_scheduler.wait_until_quiet()
    assert [d.envelope.attempt for d in local_scheduler.deliveries("billing")] == [1, 2]
    assert local_scheduler.client.get(timer.id).status == "FAILED"
    parked = local_scheduler.redrive(ids=[timer.id], dry_run=True)  # parked again: a run would move it
    assert [(entry["id"], entry["kind"]) for entry in parked.moved] == [(timer.id, "parked delivery")]
