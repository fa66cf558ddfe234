"""The monthly bill's arithmetic (bench/monthly.py), each against a figure worked out by hand."""

from __future__ import annotations

import pytest

from bench import monthly
from bench.pricing import PRICES, SECONDS_PER_MONTH

HOURS = SECONDS_PER_MONTH / 3600


def _floor(od: float = 0.5, queries_prov: float = 0.02) -> dict:
    """An idle floor of ``od`` on demand whose sweeper Queries cost ``queries_prov`` provisioned."""
    return {"items": [{"item": "sweeper Queries, on demand", "usd": 0.04},
                      {"item": "sweeper Queries, provisioned", "usd": queries_prov},
                      {"item": "the rest", "usd": od - 0.04}],
            "total_on_demand": od, "total_provisioned": od - 0.04 + queries_prov}


def _per_million(wru_od: float, wru_prov: float, other: float) -> dict:
    """A per-million bill: one write line and ``other`` dollars of lines that bill the same either way."""
    rows = [{"unit": "WRU", "usd_od": wru_od, "usd_prov": wru_prov}, {"unit": "requests", "usd_od": other, "usd_prov": other}]
    return {"rows": rows, "total_on_demand": wru_od + other, "total_provisioned": wru_prov + other}


def test_eventbridge_scheduler_bills_nothing_within_its_free_14_million_a_month():
    assert monthly.eventbridge_scheduler_monthly(1_000_000) == 0.0
    assert monthly.eventbridge_scheduler_monthly(14_000_000) == 0.0


def test_eventbridge_scheduler_bills_each_million_beyond_the_free_tier_at_one_dollar():
    assert monthly.eventbridge_scheduler_monthly(15_000_000) == pytest.approx(1.0)
    assert monthly.eventbridge_scheduler_monthly(1_000_000_000) == pytest.approx(986.0)


def test_the_on_demand_month_is_the_per_million_price_times_the_volume_plus_the_floor_and_storage():
    bill = monthly.bill_for(100_000_000, _per_million(1.25, 0.52, 0.75), _floor(od=0.5), stored_gb=2.0)
    storage = 2.0 * (PRICES["ddb_storage_gb_month"] + PRICES["ddb_pitr_gb_month"])  # 0.90 with point-in-time recovery
    assert bill["storage"] == pytest.approx(0.90)
    assert bill["on_demand"] == pytest.approx(100 * 2.00 + 0.5 + storage)


def test_point_in_time_recovery_adds_its_price_per_gb_month_to_storage():
    assert monthly.storage_per_gb_month(pitr=True) - monthly.storage_per_gb_month(pitr=False) == pytest.approx(0.20)


def test_provisioned_capacity_never_falls_below_the_constructs_five_units_on_the_table_and_its_group_index():
    # 1,000 timers a month consume almost nothing: each capacity is billed at the construct's 5 units, on the
    # table and on the group index every table has
    bill = monthly.bill_for(1_000, _per_million(1.25, 0.52, 0.75), _floor(), stored_gb=0.0)
    assert bill["provisioned_units"]["WRU"] == pytest.approx(2 * 5 * PRICES["ddb_prov_wcu_hour"] * HOURS)  # $4.68
    assert bill["provisioned_units"]["RRU"] == pytest.approx(2 * 5 * PRICES["ddb_prov_rcu_hour"] * HOURS)  # $0.936


def test_provisioned_capacity_above_the_floor_is_what_the_month_consumes_at_the_stated_utilisation():
    # 1 B timers at $0.52 per million provisioned write lines: $520 of write capacity, far above the 5 units,
    # and the group index's own 5
    bill = monthly.bill_for(1_000_000_000, _per_million(1.25, 0.52, 0.75), _floor(), stored_gb=0.0)
    index_floor = 5 * PRICES["ddb_prov_wcu_hour"] * HOURS  # the group index's 5 units: ungrouped timers leave it idle
    assert bill["provisioned_units"]["WRU"] == pytest.approx(520.0 + index_floor)
    assert bill["provisioned"] == pytest.approx(1000 * 0.75 + 520.0 + index_floor + bill["provisioned_units"]["RRU"]
                                                + (_floor()["total_provisioned"] - 0.02))


def test_rest_api_detailed_metrics_are_five_per_route_of_the_contract():
    from scheduler_runtime.core import contract

    rest = monthly.idle_floor({"empty_ms": 50, "queries": 16}, "rest")
    http = monthly.idle_floor({"empty_ms": 50, "queries": 16}, "http")
    metrics = next(i for i in rest["items"] if i["item"] == "REST API detailed metrics")
    assert metrics["usd"] == pytest.approx(len(contract.ROUTES) * 5 * PRICES["cw_metric_month"])
    assert rest["total_on_demand"] - http["total_on_demand"] == pytest.approx(metrics["usd"])


def test_a_customer_managed_key_costs_its_monthly_fee_plus_one_data_key_request_per_principal_and_reuse_period():
    kms = monthly.kms_key_monthly(("api", "dispatcher"))
    assert kms["requests"] == 2 * SECONDS_PER_MONTH / 300  # 17,280
    assert kms["total"] == pytest.approx(1.00 + 17_280 / 10_000 * 0.03)
