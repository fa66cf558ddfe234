"""Cron schedules in two time zones, end to end: each fires at the whole minute (up to a minute's wait)."""

from __future__ import annotations

import datetime as dt
import json
import time
from zoneinfo import ZoneInfo

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import ApiClient, parse_due_ms
from cdk_delayed_scheduler.local.deliveries import Recorder

pytestmark = pytest.mark.e2e


def test_cron_in_two_time_zones_fires_at_the_whole_minute_in_each():
    recorder = Recorder()
    with Engine(EngineOptions(target=recorder, delay_window=90, sweep_interval=1, shard_count=2)) as engine:
        api = ApiClient(engine.api_url)
        if dt.datetime.now(dt.timezone.utc).second >= 57:
            time.sleep(4)  # too close to the minute to PUT before it: aim at the one after
        next_minute = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        answers = {}
        for zone in ("UTC", "Asia/Kathmandu"):  # UTC+05:45: its hours start at a quarter to, in UTC
            local = next_minute.astimezone(ZoneInfo(zone))
            body = {"cron": f"{local.minute} {local.hour} ? * * *", "timeZone": zone, "payload": zone}
            answers[zone] = api.request("PUT", f"/periodic/{zone.replace('/', '-')}", json.dumps(body).encode())
        assert all(status == 201 for status, _ in answers.values())
        assert {a["nextDueAt"] for _, a in answers.values()} == {next_minute.strftime("%Y-%m-%dT%H:%M:00.000Z")}
        assert recorder.wait_for({"UTC", "Asia-Kathmandu"}, timeout_seconds=75)
        reads = {zone: api.request("GET", f"/periodic/{zone.replace('/', '-')}")[1] for zone in answers}
    for delivery in recorder.deliveries:
        assert delivery.envelope["dueAt"] == next_minute.strftime("%Y-%m-%dT%H:%M:00.000Z")
        assert 0 <= delivery.lateness_ms < 1000
    # The next occurrence of each is the same wall time a day later (no clock change in either zone).
    for zone, read in reads.items():
        assert parse_due_ms(read["nextDueAt"]) - parse_due_ms(read["lastDueAt"]) == 86_400_000, zone
