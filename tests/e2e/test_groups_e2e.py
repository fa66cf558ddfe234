"""Groups end to end through the engine's HTTP API: ``DELETE /groups/{group}`` stops a group's short, long and
periodic members created before it (nothing of them arrives after its answer), not the ones created after it nor
other groups, and the ``group=`` listings page through the waiting members."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client

from .conftest import all_pages, wait_until

pytestmark = pytest.mark.e2e
WINDOW = 6


@dataclass
class Run:
    arrivals: list = field(default_factory=list)  # (arrival s since the start, envelope id)
    cancel: tuple = ()  # (status, body)
    cancel_answered_s: float = 0.0
    cancel_took_s: float = 0.0
    repeat: tuple = ()
    before_sweep: dict = field(default_factory=dict)  # id -> GET status, read right after the cancel's answer
    after: dict = field(default_factory=dict)  # id -> GET status at the end
    periodic_after: tuple = ()
    listed_before: list = field(default_factory=list)
    listed_after: list = field(default_factory=list)
    listed_periodic_after: tuple = ()


@pytest.fixture(scope="module")
def run() -> Run:
    result, lock = Run(), threading.Lock()
    start = time.time()

    def target(envelope: dict) -> None:
        with lock:
            result.arrivals.append((time.time() - start, envelope["id"]))

    options = EngineOptions(target=target, delay_window=WINDOW, sweep_interval=0.5, shard_count=2)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)

        def create(schedule_id: str, in_seconds: float, group: str | None) -> None:
            body = {"id": schedule_id, "dueAt": round(time.time() + in_seconds, 3), "payload": schedule_id,
                    **({"group": group} if group else {})}
            status, answer = api.raw("createSchedule", body)
            assert status == 201, answer

        for n in range(12):
            create(f"short-{n}", 4.5 + 0.05 * n, "user-1")
        create("long", WINDOW + 3, "user-1")
        create("other-group", 2.5, "user-2")
        create("no-group", 2.5, None)
        status, answer = api.raw("putPeriodic", {"every": 1, "payload": "beat", "group": "user-1"}, id="beat")
        assert status == 201, answer
        result.listed_before = [item["id"] for _, page in all_pages(api, "listSchedules", group="user-1", limit=5)
                                for item in page["items"]]
        asked = time.time()
        result.cancel = api.raw("cancelGroup", group="user-1")
        result.cancel_answered_s = time.time() - start
        result.cancel_took_s = time.time() - asked
        result.before_sweep = {i: api.raw("getSchedule", id=i)[1]["status"] for i in ("short-0", "long")}
        result.repeat = api.raw("cancelGroup", group="user-1")
        create("after-cancel", 1, "user-1")
        wait_until(lambda: time.time() - start > WINDOW + 4, WINDOW + 10, "the long member's due time did not pass")
        engine.wait_until_quiet(timeout=30)
        ids = [f"short-{n}" for n in range(12)] + ["long", "other-group", "no-group", "after-cancel"]
        result.after = {i: api.raw("getSchedule", id=i)[1]["status"] for i in ids}
        result.periodic_after = api.raw("getPeriodic", id="beat")
        result.listed_after = [item["id"] for _, page in all_pages(api, "listSchedules", group="user-1")
                               for item in page["items"]]
        result.listed_periodic_after = api.raw("listPeriodic", query={"group": "user-1"})
    return result


def test_the_cancel_answers_the_counts_it_stopped_after_its_settle(run):
    status, body = run.cancel
    assert status == 200 and body["group"] == "user-1"
    assert body["stopped"] == {"schedules": 13, "periodic": 1}
    assert run.cancel_took_s >= 1.0  # the fence: no start read before its write can still be starting
    assert run.repeat[0] == 200 and run.repeat[1]["stopped"] == {"schedules": 0, "periodic": 0}


def test_nothing_of_a_member_created_before_the_cancel_arrives_after_its_answer(run):
    late = [(at, i) for at, i in run.arrivals if at > run.cancel_answered_s
            and (i.startswith("short-") or i in ("long", "beat"))]
    assert late == []
    assert not any(i.startswith("short-") or i == "long" for _, i in run.arrivals)  # all due after the answer


def test_other_groups_ungrouped_and_later_members_are_delivered(run):
    delivered = {i for _, i in run.arrivals}
    assert {"other-group", "no-group", "after-cancel"} <= delivered
    assert all(run.after[i] == "FIRED" for i in ("other-group", "no-group", "after-cancel"))


def test_stopped_members_read_cancelled_at_once_and_the_sweep_writes_it(run):
    assert run.before_sweep == {"short-0": "CANCELLED", "long": "CANCELLED"}
    assert {run.after[f"short-{n}"] for n in range(12)} | {run.after["long"]} == {"CANCELLED"}
    assert run.periodic_after[0] == 404


def test_the_group_listing_paged_the_waiting_members_then_has_none_left(run):
    assert run.listed_before == [f"short-{n}" for n in range(12)] + ["long"]
    assert run.listed_after == []
    status, body = run.listed_periodic_after
    assert status == 200 and body["items"] == []
