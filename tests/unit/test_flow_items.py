"""How a target's limits spread over items (pure): one item up to ``STARTS_PER_ITEM`` starts a second, more above
it, never more items than places or starts a period, and shares that add up to the target's limits exactly."""

from __future__ import annotations

import pytest

from scheduler_runtime.core.flow import STARTS_PER_ITEM, FlowLimits


@pytest.mark.parametrize(("limits", "items"), [
    (FlowLimits(rate=STARTS_PER_ITEM), 1),
    (FlowLimits(rate=STARTS_PER_ITEM + 1), 2),
    (FlowLimits(rate=1000), 4),
    (FlowLimits(rate=100_000), 400),
    (FlowLimits(rate=5000, period_seconds=10), 2),
    (FlowLimits(rate=1000, max_in_flight=3), 3),
    (FlowLimits(max_in_flight=1000), 1),
])
def test_a_target_has_one_item_for_each_share_of_starts_a_second_one_item_can_serve(limits, items):
    assert limits.items == items


@pytest.mark.parametrize("rate", [251, 999, 1000, 1001, 4321, 100_000])
@pytest.mark.parametrize("max_in_flight", [None, 2, 7, 1000])
def test_the_items_shares_add_up_to_the_targets_limits_and_each_has_room_for_a_start(rate, max_in_flight):
    limits = FlowLimits(rate=rate, max_in_flight=max_in_flight, per_group=FlowLimits(rate=5))
    shares = [share for _, share in limits.each_item("mailer")]
    assert len(shares) == limits.items
    assert sum(share.rate or 0 for share in shares) == rate
    assert max(s.rate or 0 for s in shares) - min(s.rate or 0 for s in shares) <= 1
    if max_in_flight is not None:
        assert sum(share.max_in_flight or 0 for share in shares) == max_in_flight
        assert min(share.max_in_flight or 0 for share in shares) >= 1
    assert all(share.per_group == limits.per_group for share in shares)  # a group's own item is not spread


def test_a_schedule_always_uses_the_same_item_and_the_first_item_keeps_the_targets_name():
    limits = FlowLimits(rate=1000)
    names = [name for name, _ in limits.each_item("mailer")]
    assert names == ["mailer", "mailer~1", "mailer~2", "mailer~3"]
    used = {limits.item_for("mailer", f"timer-{n}")[0] for n in range(200)}
    assert used == set(names)
    assert all(limits.item_for("mailer", f"timer-{n}") == limits.item_for("mailer", f"timer-{n}") for n in range(50))
    assert FlowLimits(rate=10).item_for("mailer", "timer-1") == ("mailer", FlowLimits(rate=10))
