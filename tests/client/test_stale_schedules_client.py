"""``Schedule.stale`` through the client, over both transports: a schedule whose lateness bound passed before an
attempt could start reads ``FAILED`` and stale from ``get`` and from the listing (the local engine parks it with
the runtime's own reason), while a delivered one, and a ``FAILED`` one whose target failed it, are not stale."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from cdk_delayed_scheduler.client import Schedule, ScheduleStatus
from cdk_delayed_scheduler.client._models import STALE_REASON
from scheduler_runtime.core.retry import STALE

from ..e2e.conftest import wait_until
from .conftest import fresh_id

pytestmark = pytest.mark.e2e
DUE = "2030-01-01T00:00:00.000Z"


def test_a_schedule_past_its_lateness_bound_reads_stale_from_get_and_the_listing(client, local):
    overdue = datetime.now(timezone.utc) - timedelta(seconds=30)
    stale = client.schedule(overdue, {"order": 42}, id=fresh_id("stale"), max_lateness=timedelta(seconds=5))
    fresh = client.schedule(overdue, {"order": 43}, id=fresh_id("fresh"), max_lateness=timedelta(minutes=5))
    read = wait_until(lambda: (got := client.get(stale.id)).status == ScheduleStatus.FAILED and got, 15,
                      "the stale schedule FAILED")
    assert read.stale and read.last_error is not None and read.last_error.startswith("stale")
    assert wait_until(lambda: client.get(fresh.id).status == ScheduleStatus.FIRED, 15, "the bounded one fired")
    assert not client.get(fresh.id).stale
    listed = {item.id: item for item in client.list(status=ScheduleStatus.FAILED) if item.id == stale.id}
    assert listed[stale.id].stale
    assert stale.id not in local.recorder.by_id()  # never delivered


@pytest.mark.parametrize(("status", "last_error"), [
    ("FAILED", "Lambda function answered an error: boom (attempt 5 of 5)"),
    ("FAILED", None),
    ("FIRED", None),
    ("QUEUED", None),
])
def test_only_a_failed_schedule_whose_reason_says_stale_is_stale(status: str, last_error: str | None) -> None:
    body = {"id": "x", "dueAt": DUE, "status": status, **({"lastError": last_error} if last_error else {})}
    assert not Schedule.from_json(body).stale


def test_the_client_knows_the_runtimes_stale_reason() -> None:
    assert STALE_REASON == STALE
