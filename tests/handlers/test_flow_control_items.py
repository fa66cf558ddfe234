"""A target faster than one item serves, on virtual time: its limits spread over several items, each with its share
of the rate and the places, so that together they never allow more than the target's; each schedule always uses the
same item; a pause, a hold and ``GET /targets/{name}`` take every item; and a target within one item's share keeps
the one item it always had."""

from __future__ import annotations

import pytest

from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits
from scheduler_runtime.core.timeparse import parse_rfc3339

from .conftest import call_api, call_direct
from .flow_controlling import create, dispatch_one_at_a_time, limit, slots
from .https_receiver import Answer
from .limited_hook import hook, starts  # noqa: F401 - the receiver fixture
from .virtual_time import iso, now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
FAST = {"rate": 8, "periodSeconds": 10, "maxInFlight": 6}
"""Eight starts in ten seconds over four items (each given two, as :func:`small_items` sets it), six at once at most:
each item's slots are five seconds apart, so every delivery waits for its slot in the delayer queue and starts at it
exactly, as the harness hands the dispatcher one message at a time."""
SHARE = {"rate": 2, "periodSeconds": 10}


@pytest.fixture
def small_items(monkeypatch):
    """One item serves a start every five seconds: so a rate of 8 in ten seconds needs four, as a rate of 1,000 a
    second does on DynamoDB."""
    monkeypatch.setattr(flow, "STARTS_PER_ITEM", 0.2)


def _items_of(aws, target: str) -> list[str]:
    """The names of the target's items in the table (tests may scan; the runtime never does)."""
    names = [i["pk"]["S"].removeprefix(flow.KEY_PREFIX) for i in aws.ddb.scan(TableName=aws.table)["Items"]]
    return sorted(n for n in names if n == target or n.startswith(f"{target}{flow.ITEM_SEPARATOR}"))


def _ms(fired_at: str) -> int:
    return parse_rfc3339(fired_at)


def _busiest_period(instants_ms: list[int], period_ms: int) -> int:
    return max(sum(1 for other in instants_ms if start <= other < start + period_ms) for start in instants_ms)


def test_a_target_faster_than_one_item_spreads_its_starts_over_items_and_never_passes_its_rate(
        aws, monkeypatch, small_items):
    limit(aws, monkeypatch, "fast", FAST)
    limits = FlowLimits.of({"flowControl": FAST})
    assert limits is not None and limits.items == 4
    due_ms = now_ms() + 5000
    ids = [f"fast-{n}" for n in range(40)]
    for schedule_id in ids:
        create(schedule_id, due_ms, "fast")
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 120_000)
    assert sorted(e["id"] for e in delivered) == sorted(ids)
    fired = {e["id"]: e["firedAt"] for e in delivered}
    by_item: dict[str, list[str]] = {}
    for schedule_id in ids:
        by_item.setdefault(limits.item_for("fast", schedule_id)[0], []).append(schedule_id)
    assert sorted(by_item) == ["fast", "fast~1", "fast~2", "fast~3"] == _items_of(aws, "fast")
    for members in by_item.values():  # each item starts its own members at its own share: 2 in ten seconds
        share = limits.item_for("fast", members[0])[1]
        assert (share.rate, share.max_in_flight) in ((2, 2), (2, 1))
        assert sorted(fired[m] for m in members) == [iso(at) for at in slots(SHARE, len(members), due_ms)]
    starts_ms = sorted(_ms(fired[m]) for m in ids)
    assert _busiest_period(starts_ms, 10_000) == 8
    longest = max(len(members) for members in by_item.values())
    assert max(starts_ms) == slots(SHARE, longest, due_ms)[-1]  # the fullest item's last slot


def test_a_pause_stops_every_item_and_the_targets_read_sums_them(aws, monkeypatch, small_items):
    limit(aws, monkeypatch, "fast", FAST)
    due_ms = now_ms() + 5000
    for n in range(12):
        create(f"fast-{n}", due_ms, "fast")
    status, body = call_api("PATCH", "/targets/fast", {"state": "PAUSED"})
    assert (status, body["state"]) == (200, "PAUSED")
    assert len(_items_of(aws, "fast")) == 4
    virtual().move_to(due_ms)
    assert dispatch_one_at_a_time(aws, due_ms + 20_000) == []
    assert call_api("PATCH", "/targets/fast", {"state": "ACTIVE"})[0] == 200
    # each looks again within HELD_POLL_SECONDS: one starts on each item, the rest take their items' next slots
    assert len(dispatch_one_at_a_time(aws, virtual().now_ms() + flow.HELD_POLL_SECONDS * 1000)) == 4
    read = call_api("GET", "/targets/fast")[1]
    assert (read["state"], read["inFlight"]) == ("ACTIVE", 0)
    assert read["waiting"] == 12 - 4  # one start now on each of the four items; the rest wait for their slots
    delivered = dispatch_one_at_a_time(aws, virtual().now_ms() + 120_000)
    assert len(delivered) == 12 - 4 and call_api("GET", "/targets/fast")[1]["waiting"] == 0


def test_a_target_within_one_items_share_keeps_its_one_item(aws, monkeypatch):
    limit(aws, monkeypatch, "steady", {"rate": flow.STARTS_PER_ITEM, "maxInFlight": 50})
    due_ms = now_ms() + 5000
    for n in range(5):
        create(f"steady-{n}", due_ms, "steady")
    virtual().move_to(due_ms)
    assert len(dispatch_one_at_a_time(aws, due_ms + 10_000)) == 5
    assert _items_of(aws, "steady") == ["steady"]


def test_a_429_on_one_item_holds_every_item_of_the_target(aws, monkeypatch, hook):  # noqa: F811
    monkeypatch.setattr(flow, "STARTS_PER_ITEM", 5)  # the hook's rate of 10 a second over two items
    limits = FlowLimits.of({"flowControl": {"rate": 10}})
    assert limits is not None and limits.items == 2
    ids = [f"mail-{n}" for n in range(6)]
    first = ids[0]
    others = [i for i in ids if limits.item_for("hook", i)[0] != limits.item_for("hook", first)[0]]
    assert others, "the ids fall to both items"
    due_ms = now_ms() + 5000
    create(first, due_ms, "hook")
    hook.answers["/hook"] = Answer(429, headers={"Retry-After": "5"})
    virtual().move_to(due_ms)
    dispatch_one_at_a_time(aws, due_ms)
    assert starts(hook) == [(first, iso(due_ms))]
    hook.answers["/hook"] = Answer(200)
    for schedule_id in others:  # due a second into the hold, on the other item
        create(schedule_id, due_ms + 1000, "hook")
    dispatch_one_at_a_time(aws, due_ms + 60_000)
    later = starts(hook)[1:]
    assert sorted(i for i, _ in later) == sorted([first, *others])
    assert min(_ms(at) for _, at in later) >= due_ms + 5000  # none before the hold ended, on either item


def test_a_groups_counts_are_read_from_its_one_item_whatever_its_rate(aws, monkeypatch, small_items):
    group_limits = {"rate": 4, "periodSeconds": 10}  # past one item's share here: the target's would be spread
    limit(aws, monkeypatch, "fast", {**FAST, "perGroup": group_limits})
    assert FlowLimits.of({"flowControl": group_limits}).items == 2
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"acme-{n}", due_ms, "fast", group="acme")
    virtual().move_to(due_ms)
    assert len(dispatch_one_at_a_time(aws, due_ms)) == 1  # the first starts; two hold group slots ahead
    status, read = call_direct("GET", "/targets/fast?group=acme")
    assert (status, read["group"], read["waiting"]) == (200, "acme", 2)
    assert _items_of(aws, "fast#acme") == ["fast#acme"]
