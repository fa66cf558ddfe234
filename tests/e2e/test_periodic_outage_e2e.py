"""An outage of the whole engine, end to end: the missed-occurrence policy of periodic timers."""

from __future__ import annotations

import time

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.client import Answer, SchedulerClient
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import external_moto, wait_until

pytestmark = pytest.mark.e2e


def _put(api: SchedulerClient, periodic_id: str, body: dict) -> Answer:
    return api.raw("putPeriodic", body, id=periodic_id)


def test_after_an_outage_the_latest_missed_occurrence_is_delivered_once_late_and_the_rest_counted(tmp_path):
    before, after = Recorder(), Recorder()
    with external_moto() as endpoint:
        base = dict(endpoint_url=endpoint, state_dir=tmp_path, delay_window=5, sweep_interval=0.5, shard_count=2)
        with Engine(EngineOptions(target=before, **base)) as engine:
            status, answer = _put(raw_client(engine.api_url), "beat", {"every": 1, "payload": "beat"})
            assert status == 201
            wait_until(lambda: len(before.deliveries) >= 2, 10, "the first engine did not deliver twice")
        stopped_ms = time.time_ns() // 1_000_000
        time.sleep(4.2)  # the outage: about four occurrences come due with nothing running
        with Engine(EngineOptions(target=after, **base)) as engine:
            restarted_ms = time.time_ns() // 1_000_000
            api = raw_client(engine.api_url)
            wait_until(lambda: len(after.deliveries) >= 3, 10, "the second engine did not take over")
            status, read = api.raw("getPeriodic", id="beat")
            api.raw("deletePeriodic", id="beat")

    first_due = parse_due_ms(answer["nextDueAt"])
    late, *following = sorted(after.deliveries, key=lambda d: d.received_ms)
    due = parse_due_ms(late.envelope["dueAt"])
    # One late delivery stands for the outage: the latest occurrence due when the engine came back.
    assert (due - first_due) % 1000 == 0 and stopped_ms < due <= restarted_ms + 1000
    assert late.lateness_ms >= 0 and late.envelope["dedupeKey"] == f"beat@{due}"
    # Then the grid goes on, one occurrence a second, none of the skipped ones delivered.
    dues = [parse_due_ms(d.envelope["dueAt"]) for d in following]
    assert dues == [due + 1000 * (k + 1) for k in range(len(dues))]
    delivered = [parse_due_ms(d.envelope["dueAt"]) for d in before.deliveries] + [due] + dues
    assert len(delivered) == len(set(delivered))
    assert status == 200 and read["skippedCount"] >= 3
    assert read["firedCount"] + read["skippedCount"] == (parse_due_ms(read["lastDueAt"]) - first_due) // 1000 + 1
