"""A dispatcher batch's deliveries of one group, on a target with per-group rates, on virtual time: they take their
group slots in one write on the group's item (not one each), in due order, one group interval apart, and start at
them; a group with one delivery in the batch, and a deployment without per-group rates, take theirs as before."""

from __future__ import annotations

import pytest

from scheduler_runtime.aws import context
from scheduler_runtime.aws.flow import FlowStore
from scheduler_runtime.core import flow
from scheduler_runtime.core.flow import FlowLimits
from scheduler_runtime.core.timeparse import parse_rfc3339 as ms

from .flow_controlling import SlotWrites, create, dispatch_one_at_a_time, dispatch_received_together, limit, slots
from .virtual_time import now_ms, virtual

pytestmark = pytest.mark.usefixtures("virtual_clock")
GROUPED = {"perGroup": {"rate": 1}}
"""Each group one start a second; the target no rate of its own (so no other group takes a group's target slot)."""


def test_a_batchs_deliveries_of_one_group_take_their_group_slots_in_one_write_and_start_at_them_in_due_order(
        aws, monkeypatch):
    limit(aws, monkeypatch, "mailer", GROUPED)
    writes = SlotWrites()
    due_ms = now_ms() + 5000
    for n in (3, 1, 0, 2):  # created out of order: due 10 ms apart, big-0 first
        create(f"big-{n}", due_ms + 10 * n, "mailer", group="big")
    create("small-0", due_ms, "mailer", group="small")
    virtual().move_to(due_ms + 30)
    delivered = dispatch_received_together(aws)
    delivered += dispatch_one_at_a_time(aws, due_ms + 60_000)
    starts = {envelope["id"]: ms(envelope["firedAt"]) for envelope in delivered}
    assert sorted(starts) == ["big-0", "big-1", "big-2", "big-3", "small-0"]
    # one write for the four group slots; the group alone in the batch took its own
    assert writes.by_item[flow.flow_key(flow.group_place("mailer", "big")).pk] == 1
    assert writes.by_item[flow.flow_key(flow.group_place("mailer", "small")).pk] == 1
    # in due order, one group interval apart from the first instant the group allows (the batch's now)
    assert [starts[f"big-{n}"] for n in range(4)] == slots(GROUPED["perGroup"], 4, due_ms + 30)
    assert starts["small-0"] == due_ms + 30


def test_a_target_without_per_group_rates_takes_no_group_slot(aws, monkeypatch):
    limits = {"rate": 10, "perGroup": {"maxInFlight": 1}}
    limit(aws, monkeypatch, "mailer", limits)
    writes = SlotWrites()
    due_ms = now_ms() + 5000
    for n in range(3):
        create(f"big-{n}", due_ms, "mailer", group="big")
    virtual().move_to(due_ms)
    delivered = dispatch_received_together(aws)
    delivered += dispatch_one_at_a_time(aws, due_ms + 60_000)
    assert sorted(envelope["id"] for envelope in delivered) == ["big-0", "big-1", "big-2"]
    assert flow.flow_key(flow.group_place("mailer", "big")).pk not in writes.by_item  # no group slot at all
    assert writes.by_item[flow.flow_key("mailer").pk] >= 1  # the target's slots


def test_slots_taken_together_are_one_interval_apart_from_the_first_the_item_allows(aws):
    store = FlowStore(context.current().flow_dynamodb, context.current().config.table_name)
    limits = FlowLimits(rate=1)
    interval_us = limits.interval_us
    assert interval_us is not None
    now = now_ms()
    idle = store.reserve_many("together", limits, now, 3)
    assert idle == slots({"rate": 1}, 3, now)
    assert store.reserve("together", limits, now) == slots({"rate": 1}, 4, now)[3]  # queued behind them
    queued = store.reserve_many("together", limits, now, 2)
    assert queued == slots({"rate": 1}, 6, now)[4:]
