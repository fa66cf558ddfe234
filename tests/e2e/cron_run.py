"""Cron schedules in two time zones through the local engine, aimed at the next whole minute: prints
a JSON report of the answers, the deliveries and the definitions read afterwards, for
``test_periodic_cron_e2e.py``. EventBridge cron has minute resolution, so the run waits up to a
minute for it; the suite starts it when the session begins (see ``tests/conftest.py``).

    python tests/e2e/cron_run.py
"""

from __future__ import annotations

import datetime as dt
import json
from zoneinfo import ZoneInfo

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

ZONES = ("UTC", "Asia/Kathmandu")  # UTC+05:45: its hours start at a quarter to, in UTC


def periodic_id(zone: str) -> str:
    return zone.replace("/", "-")


def run() -> dict:
    recorder = Recorder()
    with Engine(EngineOptions(target=recorder, delay_window=90, sweep_interval=1, shard_count=2)) as engine:
        api = raw_client(engine.api_url)
        now = dt.datetime.now(dt.timezone.utc)
        ahead = 2 if now.second >= 57 else 1  # too close to the minute to PUT before it: aim at the one after
        next_minute = now.replace(second=0, microsecond=0) + dt.timedelta(minutes=ahead)
        answers = {}
        for zone in ZONES:
            local = next_minute.astimezone(ZoneInfo(zone))
            body = {"cron": f"{local.minute} {local.hour} ? * * *", "timeZone": zone, "payload": zone}
            answers[zone] = api.raw("putPeriodic", body, id=periodic_id(zone))
        delivered = recorder.wait_for({periodic_id(zone) for zone in ZONES}, timeout_seconds=75)
        reads = {zone: api.raw("getPeriodic", id=periodic_id(zone)).body for zone in ZONES}
    return {"nextMinute": next_minute.strftime("%Y-%m-%dT%H:%M:00.000Z"), "answers": answers, "delivered": delivered,
            "deliveries": [{"envelope": d.envelope, "latenessMs": d.lateness_ms} for d in recorder.deliveries],
            "reads": reads}


if __name__ == "__main__":
    print(json.dumps(run()))
