"""Periodic timers end to end through the local engine's HTTP API: both paths, no drift, never early,
replacement, bounds, listing definitions, and DELETE in several states (invariant 4): before the first
occurrence (queued, or waiting as a timer), while a delivery is in flight, and after several occurrences.

One scenario runs every case at once (about 10 s); the tests then assert on what it recorded.
The window is 3 s, so an occurrence due later than that waits as a timer for the sweeper.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.client import Answer, SchedulerClient
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import all_pages, wait_until

pytestmark = pytest.mark.e2e
WINDOW = 3


@dataclass
class Scenario:
    recorder: Recorder
    answers: dict = field(default_factory=dict)  # name -> (status, body)
    deleted_at_ms: dict = field(default_factory=dict)  # id -> when its DELETE answered
    replaced_at_ms: int = 0
    pages: list = field(default_factory=list)
    tampered: tuple = ()
    final: dict = field(default_factory=dict)  # id -> GET /periodic/{id} at the end

    def deliveries(self, periodic_id: str) -> list:
        return sorted(self.recorder.by_id().get(periodic_id, []), key=lambda d: d.received_ms)


def _put(api: SchedulerClient, periodic_id: str, body: dict) -> Answer:
    return api.raw("putPeriodic", body, id=periodic_id)


@pytest.fixture(scope="module")
def scenario() -> Scenario:
    recorder = Recorder()
    slow_in_flight, slow_deleted = threading.Event(), threading.Event()

    def target(envelope: dict) -> None:
        recorder(envelope)
        if envelope["payload"] == "slow" and len(recorder.by_id()["slow"]) >= 2:
            slow_in_flight.set()
            slow_deleted.wait(15)  # a slow target: its DELETE arrives while this delivery is in flight

    run = Scenario(recorder)
    with Engine(EngineOptions(target=target, delay_window=WINDOW, sweep_interval=0.5, shard_count=4)) as engine:
        api = raw_client(engine.api_url)
        now = time.time()
        run.answers["tick"] = _put(api, "tick", {"every": 1, "payload": "tick"})
        run.answers["slow"] = _put(api, "slow", {"every": 1, "payload": "slow"})
        run.answers["long"] = _put(api, "long", {"every": 5, "payload": "long"})
        run.answers["waiting"] = _put(api, "waiting", {"every": 8, "payload": "waiting"})
        run.answers["bounded"] = _put(api, "bounded", {"every": 1, "payload": "bounded", "startAt": round(now + 2, 3),
                                                       "endAt": round(now + 4.5, 3)})
        run.answers["swap"] = _put(api, "swap", {"every": 1, "payload": "old"})
        run.answers["queued"] = _put(api, "queued", {"every": 2, "payload": "queued"})
        run.answers["replay"] = _put(api, "tick", {"every": 1, "payload": "tick"})
        run.answers["ended"] = _put(api, "ended", {"every": 1, "payload": 1, "endAt": round(now - 1, 3)})  # never fires
        for name, body in {"bad-every": {"every": 0, "payload": 1}, "bad-cron": {"cron": "0 9 * * MON *", "payload": 1},
                           "bad-zone": {"cron": "0 9 ? * MON *", "timeZone": "Paris", "payload": 1},
                           "too-big": {"every": 5, "payload": "x" * 262_144}}.items():
            run.answers[name] = _put(api, name, body)

        def delete(periodic_id: str) -> None:
            status, _ = api.raw("deletePeriodic", id=periodic_id)
            assert status == 200
            run.deleted_at_ms[periodic_id] = time.time_ns() // 1_000_000

        def delivered(periodic_id: str, count: int) -> bool:
            return len(recorder.by_id().get(periodic_id, [])) >= count

        delete("queued")  # its first occurrence waits in the delayer queue (due in 2 s, within the window)
        delete("waiting")  # its first occurrence waits as a timer (due in 8 s, beyond the window)
        assert slow_in_flight.wait(15), "no second delivery of slow"
        delete("slow")
        slow_deleted.set()
        wait_until(lambda: delivered("swap", 2), 15, "two occurrences of swap's first definition")
        run.answers["swap-new"] = _put(api, "swap", {"every": 1, "payload": "new"})
        run.replaced_at_ms = time.time_ns() // 1_000_000
        wait_until(lambda: delivered("tick", 5), 15, "five occurrences of tick")
        delete("tick")
        run.pages = all_pages(api, "listPeriodic", limit=2)
        token = run.pages[0][1]["nextToken"]
        tampered = f"{token[:-2]}{'00' if token[-2:] != '00' else '11'}"
        run.tampered = api.raw("listPeriodic", query={"limit": 2, "nextToken": tampered})
        wait_until(lambda: delivered("long", 2), 20, "two occurrences of long")
        for periodic_id in ("tick", "slow", "long", "waiting", "bounded", "swap", "queued"):
            run.final[periodic_id] = api.raw("getPeriodic", id=periodic_id)
        for periodic_id in ("long", "swap"):
            api.raw("deletePeriodic", id=periodic_id)
        engine.wait_until_quiet()
    return run


def test_puts_answer_201_then_200_for_the_same_body(scenario):
    status, tick = scenario.answers["tick"]
    assert status == 201 and tick["status"] == "ACTIVE" and tick["every"] == 1 and "payload" not in tick
    assert scenario.answers["replay"] == (200, tick)
    assert scenario.answers["swap-new"][0] == 200


def test_bad_definitions_get_400_or_413_naming_the_field(scenario):
    for name, field, status in (("bad-every", "every", 400), ("bad-cron", "cron", 400), ("bad-zone", "timeZone", 400),
                                ("too-big", "payload", 413), ("ended", "endAt", 400)):
        answer_status, body = scenario.answers[name]
        assert (answer_status, body["field"]) == (status, field) and body["message"]


def test_occurrences_are_never_early_and_follow_the_definition_without_drift(scenario):
    deliveries = scenario.deliveries("tick")
    assert len(deliveries) >= 4
    assert all(d.lateness_ms >= 0 for d in scenario.recorder.deliveries)
    first_due = parse_due_ms(scenario.answers["tick"][1]["nextDueAt"])
    dues = [parse_due_ms(d.envelope["dueAt"]) for d in deliveries]
    assert dues == [first_due + 1000 * k for k in range(len(dues))]  # one per second, on the grid
    keys = [d.envelope["dedupeKey"] for d in deliveries]
    assert len(set(keys)) == len(keys) and all(d.envelope["attempt"] == 1 for d in deliveries)
    late = sorted(d.lateness_ms for d in scenario.recorder.deliveries)
    assert late[len(late) // 2] < 500, late  # the median occurrence is well under a second late


def test_an_occurrence_beyond_the_window_waits_as_a_timer_and_is_delivered(scenario):
    deliveries = scenario.deliveries("long")
    assert len(deliveries) >= 2
    dues = [parse_due_ms(d.envelope["dueAt"]) for d in deliveries]
    assert dues[1] - dues[0] == 5000 and dues[0] == parse_due_ms(scenario.answers["long"][1]["nextDueAt"])
    status, read = scenario.final["long"]
    assert status == 200 and read["firedCount"] >= 2 and read["payload"] == "long"


def test_nothing_is_delivered_after_delete_is_answered(scenario):
    for periodic_id in ("queued", "waiting", "slow", "tick"):
        deleted_at = scenario.deleted_at_ms[periodic_id]
        after = [d for d in scenario.deliveries(periodic_id) if d.received_ms > deleted_at]
        assert after == [], f"{periodic_id}: delivered after its DELETE answered"
        assert scenario.final[periodic_id][0] == 404
    assert scenario.deliveries("queued") == [] and scenario.deliveries("waiting") == []
    assert len(scenario.deliveries("slow")) >= 2  # it was flowing when deleted


def test_a_replacement_takes_over_from_its_next_occurrence(scenario):
    deliveries = scenario.deliveries("swap")
    old = [d for d in deliveries if d.envelope["payload"] == "old"]
    new = [d for d in deliveries if d.envelope["payload"] == "new"]
    assert old and new
    assert all(d.received_ms <= scenario.replaced_at_ms for d in old)
    assert max(d.received_ms for d in old) < min(d.received_ms for d in new)


def test_start_and_end_bound_the_occurrences(scenario):
    dues = [parse_due_ms(d.envelope["dueAt"]) for d in scenario.deliveries("bounded")]
    start = parse_due_ms(scenario.answers["bounded"][1]["startAt"])
    assert dues == [start, start + 1000, start + 2000]
    status, read = scenario.final["bounded"]
    assert (status, read["status"], read["nextDueAt"], read["firedCount"]) == (200, "ENDED", None, 3)


def test_definitions_list_in_pages_with_a_checked_token(scenario):
    assert all(status == 200 for status, _ in scenario.pages)
    ids = [item["id"] for _, page in scenario.pages for item in page["items"]]
    assert ids == sorted(ids) and len(ids) == len(set(ids))
    assert {"long", "swap", "bounded"} <= set(ids) and not {"tick", "queued", "waiting", "ended"} & set(ids)
    assert all(len(page["items"]) <= 2 and "payload" not in page["items"][0] for _, page in scenario.pages)
    status, body = scenario.tampered
    assert (status, body["field"]) == (400, "nextToken")
