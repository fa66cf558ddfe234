"""The kit's redrive: a schedule parked after its target failed is sent back for delivery once the target
works again, with its dedupeKey and the next attempt."""

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
