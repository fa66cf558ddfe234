"""Per-group limits on a limited target (``flowControl.perGroup``), on virtual time: each group's starts keep its
own rate and places, a group with many deliveries enters the target's queue at its own rate (so another group's
few are not held behind them), the target's own limits hold over all, and a delivery without a group is held to the
target's alone."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from scheduler_runtime.aws.flow import FlowStore
from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits
from scheduler_runtime.core.timeparse import parse_rfc3339 as ms

from .conftest import call_api, call_direct
from .dispatching import dispatch, receive
from .flow_controlling import create, dispatch_one_at_a_time, limit
from .virtual_time import now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
SHARED = {"rate": 10, "perGroup": {"rate": 1, "periodSeconds": 2}}


def interval_ms(flow_control: dict) -> float:
    interval = FlowLimits.of({"flowControl": flow_control}).interval_us
    assert interval is not None
    return interval / 1000


def starts_by_group(delivered: list[dict]) -> dict[str | None, list[int]]:
    by_group: dict[str | None, list[int]] = defaultdict(list)
    for envelope in delivered:
        by_group[envelope["id"].split("-")[0] if "-" in envelope["id"] else None].append(ms(envelope["firedAt"]))
    return by_group


def gaps(instants: list[int]) -> list[int]:
    ordered = sorted(instants)
    return [later - earlier for earlier, later in zip(ordered, ordered[1:])]


def test_each_group_keeps_its_own_rate_and_a_small_group_is_not_held_behind_a_big_one(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", SHARED)
    due_ms = now_ms() + 5000
    for n in range(6):
        create(f"big-{n}", due_ms, "mailer", group="big")
    for n in range(2):
        create(f"small-{n}", due_ms, "mailer", group="small")
    create("plain", due_ms, "mailer")  # no group: the target's rate alone
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert sorted(e["id"] for e in delivered) == sorted([f"big-{n}" for n in range(6)] + ["small-0", "small-1",
                                                                                          "plain"])
    by_group = starts_by_group(delivered)
    group_interval = interval_ms(SHARED["perGroup"])
    assert min(gaps(by_group["big"]) + gaps(by_group["small"])) >= group_interval  # each group's own rate
    assert min(gaps([at for starts in by_group.values() for at in starts])) >= interval_ms({"rate": 10})
    # its second start a group interval or two on (one more when a start of its group came late to its target slot
    # and its pace was refused), not behind the big group's six
    assert max(by_group["small"]) - due_ms < 3 * group_interval
    assert max(by_group["big"]) - due_ms >= 5 * group_interval
    assert by_group[None][0] - due_ms < group_interval  # the delivery without a group waits for no group
    assert min(at for starts in by_group.values() for at in starts) >= due_ms


def test_a_group_whose_place_is_held_waits_while_another_group_starts(aws, monkeypatch):
    limits = {"maxInFlight": 4, "perGroup": {"maxInFlight": 1}}
    limit(aws, monkeypatch, "worker", limits)
    store = FlowStore(aws.ddb, aws.table)
    busy = store.acquire(flow.group_place("worker", "busy"), FlowLimits(max_in_flight=1), now_ms(),
                         now_ms() + 20_000)  # a delivery of the group under way, whose dispatcher died
    assert busy is not None
    due_ms = now_ms() + 5000
    create("busy-1", due_ms, "worker", group="busy")
    create("idle-1", due_ms, "worker", group="idle")
    virtual().move_to(due_ms)
    first = dispatch_one_at_a_time(aws, due_ms + 10_000)
    assert [e["id"] for e in first] == ["idle-1"]
    assert call_api("GET", "/schedules/busy-1")[1]["status"] == "QUEUED"  # waiting in its message
    later = dispatch_one_at_a_time(aws, due_ms + 60_000)  # the held place ends by itself 20 s on
    assert [e["id"] for e in later] == ["busy-1"]
    assert due_ms + 15_000 <= ms(later[0]["firedAt"]) <= due_ms + 15_000 + 1000 * flow.LOOK_AGAIN_SECONDS


def test_a_group_rate_only_target_limits_groups_and_leaves_deliveries_without_a_group_free(aws, monkeypatch):
    limits = {"perGroup": {"rate": 1, "periodSeconds": 5}}
    limit(aws, monkeypatch, "pager", limits)
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"tenant-{n}", due_ms, "pager", group="tenant")
        create(f"free{n}", due_ms, "pager")
    virtual().move_to(due_ms)
    delivered = dispatch_one_at_a_time(aws, due_ms + 60_000)
    by_group = starts_by_group(delivered)
    assert min(gaps(by_group["tenant"])) >= interval_ms(limits["perGroup"]) and len(by_group["tenant"]) == 3
    assert sorted(by_group[None]) == [due_ms] * 3  # at once: the target itself has no limit


TENANTS = {"rate": 10, "maxInFlight": 4, "perGroup": {"rate": 1, "periodSeconds": 2, "maxInFlight": 2}}


def read_group(name: str, group: str) -> dict:
    status, body = call_direct("GET", f"/targets/{name}?group={group}")
    assert status == 200, body
    return body


def test_a_groups_own_counts_are_read_with_group_judged_by_its_per_group_limits(aws, monkeypatch):
    limit(aws, monkeypatch, "tenants", TENANTS)
    due_ms = now_ms() + 5000
    for n in range(4):
        create(f"big-{n}", due_ms, "tenants", group="big")
    create("small-0", due_ms, "tenants", group="small")
    virtual().move_to(due_ms)
    store = FlowStore(aws.ddb, aws.table)  # a delivery of big under way, whose dispatcher died
    assert store.acquire(flow.group_place("tenants", "big"), FlowLimits(max_in_flight=2), now_ms(),
                         now_ms() + 30_000) is not None
    for message in aws.receive(aws.delayer_url):  # one round at the due instant: each takes its group's slot
        dispatch(receive(message, 1))
    virtual().move_to(due_ms + 1000)
    assert sorted(json.loads(m["body"])["id"] for m in aws.take(aws.target_url)) == ["big-0", "small-0"]
    # big-0 started at D (one of big's two places free), big-1..3 hold big's slots at D+2, D+4 and D+6 s
    assert read_group("tenants", "big") == {"name": "tenants", "group": "big", "state": "ACTIVE",
                                            "flowControl": TENANTS, "waiting": 3, "inFlight": 1, "heldUntil": None}
    assert (read_group("tenants", "small")["waiting"], read_group("tenants", "small")["inFlight"]) == (0, 0)
    assert (read_group("tenants", "quiet")["waiting"], read_group("tenants", "quiet")["inFlight"]) == (0, 0)
    assert "group" not in call_api("GET", "/targets/tenants")[1]  # the target's own counts, as before


def test_a_group_read_of_a_target_that_keeps_no_group_state_or_a_bad_parameter_is_400_naming_it(aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", {"rate": 1})
    limit(aws, monkeypatch, "tenants", TENANTS)
    for path, field in (("/targets/mailer?group=g1", "group"), ("/targets/default?group=g1", "group"),
                        ("/targets/tenants?group=" + "x" * 65, "group"), ("/targets/tenants?group=a%20b", "group"),
                        ("/targets/tenants?limit=3", "limit")):
        status, answer = call_direct("GET", path)
        assert (status, answer["field"]) == (400, field), (path, answer)
    assert "perGroup" in call_direct("GET", "/targets/mailer?group=g1")[1]["message"]


def test_members_refused_by_their_groups_pace_keep_their_group_slots_and_the_group_its_rate(aws, monkeypatch):
    """Another sandbox's start of the group lands just after the second member's group slot, before its target slot
    (as when a member wakes late, behind the next one's target slot): the members refused by the group's pace keep
    their group slots and take target slots from the instant the group allows, so the group's next two starts come
    one group interval apart from there (within one target interval), not a group interval later each, as when a
    refused member went to the back of its group's queue."""
    limits = {"rate": 10, "perGroup": {"rate": 1, "periodSeconds": 2}}
    limit(aws, monkeypatch, "mailer", limits)
    group_ms, target_ms = interval_ms(limits["perGroup"]), interval_ms({"rate": 10})
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"acme-{n}", due_ms, "mailer", group="acme")
    virtual().move_to(due_ms)
    first = dispatch_one_at_a_time(aws, due_ms + 1000)  # one starts; the others wait for their group slots
    assert len(first) == 1
    elsewhere_ms = due_ms + round(group_ms) + 50
    store = FlowStore(aws.ddb, aws.table)
    assert store.pace(flow.group_place("mailer", "acme"), round(group_ms * 1000), elsewhere_ms) is None
    rest = dispatch_one_at_a_time(aws, due_ms + 60_000)
    starts = sorted([ms(e["firedAt"]) for e in first + rest] + [elsewhere_ms])
    assert len(rest) == 2 and min(gaps(starts)) >= group_ms  # the group's rate, the start elsewhere counted
    assert starts[-1] <= elsewhere_ms + 2 * group_ms + target_ms  # 6,305 ms after due (8,200 going back)
