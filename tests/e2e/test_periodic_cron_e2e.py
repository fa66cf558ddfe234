"""Cron schedules in two time zones, end to end: each fires at the whole minute. The run waits up to a
minute for it (``cron_run.py``), so the session starts it early (see ``tests/conftest.py``); run
alone, this module starts it itself."""

from __future__ import annotations

import json

import pytest

from cdk_delayed_scheduler.local.api_calls import parse_due_ms

from ..conftest import CRON

pytestmark = pytest.mark.e2e


def test_cron_in_two_time_zones_fires_at_the_whole_minute_in_each():
    code, text = CRON.output(timeout=180)
    assert code == 0, text[-4000:]
    report = json.loads(text.strip().splitlines()[-1])
    next_minute = report["nextMinute"]
    assert all(status == 201 for status, _ in report["answers"].values()), report["answers"]
    assert {answer["nextDueAt"] for _, answer in report["answers"].values()} == {next_minute}
    assert report["delivered"], report
    assert sorted(d["envelope"]["id"] for d in report["deliveries"]) == ["Asia-Kathmandu", "UTC"]
    for delivery in report["deliveries"]:
        assert delivery["envelope"]["dueAt"] == next_minute
        assert 0 <= delivery["latenessMs"] < 1000
    # The next occurrence of each is the same wall time a day later (no clock change in either zone).
    for zone, read in report["reads"].items():
        assert parse_due_ms(read["nextDueAt"]) - parse_due_ms(read["lastDueAt"]) == 86_400_000, zone
