"""The scale simulation's provisioned table: a fixed write capacity, and target tracking raising it."""

from __future__ import annotations

import pytest

from bench.scale import params, scenarios
from bench.scale.des import Bucket


def test_a_table_of_5_writes_a_second_fed_20_a_second_throttles_three_quarters():
    table = Bucket(5)
    asked = [i / 20 for i in range(20 * 60)]  # 20 writes a second, evenly, for a minute
    granted = sum(table.admit(t) for t in asked)
    assert granted == pytest.approx(5 * 60, abs=5)
    assert table.throttled / len(asked) == pytest.approx(0.75, abs=0.01)


def test_set_rate_pays_what_is_owed_at_the_new_rate():
    table = Bucket(5)
    assert table.take(0.0, 5) == 0.0  # a second's worth at once: 5 units owed until t=1
    table.set_rate(0.0, 10)  # the 5 owed take 0.5 s at 10 a second
    assert table.take(0.0, 10) == pytest.approx(0.5)  # (at 5 a second it would wait until t=2)


def test_fixed_5_wcu_refuses_creates_and_autoscaling_raises_the_capacity_stepwise():
    p = params.aws()
    fixed = scenarios.provisioned(p, 10, 300, p["ddb_provisioned_wcu"], autoscale=False)
    assert fixed["capacity_steps"] == [] and fixed["refused_creates"] > 0 and fixed["early"] == 0
    auto = scenarios.provisioned(p, 10, 300, p["ddb_provisioned_wcu"], autoscale=True)
    steps = [s["wcu"] for s in auto["capacity_steps"]]
    assert steps and steps == sorted(steps) and steps[0] <= p["ddb_provisioned_wcu"] / 0.7 + 1e-9
    assert auto["capacity_steps"][0]["t_s"] == pytest.approx(120)  # two one-minute points above the target
