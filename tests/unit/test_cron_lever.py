"""The cron-occurrence designs table in docs/benchmarks.md: today's row is what the Cost section measured, and each
design's price follows from its requests and the price table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cron_lever import DESIGNS, HOUR_S, TODAY, break_even_period_s, priced, sweep_reads
from bench.operation_costs import DELETE, PUT, UPDATE
from bench.pricing import PRICES
from bench.render import section_text

MEASURED = json.loads((Path(__file__).resolve().parents[2] / "docs" / "benchmarks.json").read_text())["cost"][
    "periodic_long"]
WRITE, READ = PRICES["ddb_od_per_million_wru"], PRICES["ddb_od_per_million_rru"]


def test_todays_row_makes_the_writes_the_cost_section_measured_beyond_the_window() -> None:
    measured = {name.split()[0]: count for name, count in MEASURED["writes"].items()}
    counted = TODAY.counter
    assert measured == {"PutItem": counted[PUT], "UpdateItem": counted[UPDATE], "DeleteItem": counted[DELETE]}
    assert priced()[0]["wru"] == MEASURED["wru"] and priced()[0]["rru"] == pytest.approx(MEASURED["rru"], abs=0.05)


def test_each_row_is_its_write_and_read_units_at_the_on_demand_prices() -> None:
    for row in priced():
        assert row["on_demand"] == pytest.approx(row["wru"] * WRITE + row["rru"] * READ)
        assert 0 < row["provisioned"] < row["on_demand"]


def test_sweeping_every_definition_costs_what_a_timer_item_does_at_the_break_even_period() -> None:
    today = TODAY.counter
    at_break_even = 2 * WRITE + (today["dynamodb.GetItem"] + sweep_reads(round(break_even_period_s()))) * READ
    assert at_break_even == pytest.approx(priced()[0]["on_demand"], rel=1e-3)
    assert sweep_reads(HOUR_S) == pytest.approx(7.5)  # 60 sweeps x a quarter of 4 KB x half a unit


def test_the_section_says_no_design_is_cheaper_only_while_none_is() -> None:
    text = section_text("cron_lever", {"cost": {"periodic_long": MEASURED}})
    cheaper = [row for row in priced()[1:] if row["on_demand"] < priced()[0]["on_demand"]]
    assert cheaper == [] and "No design in this table costs less than today's" in text
    assert len([line for line in text.splitlines() if line.startswith("| ") and "$" in line]) == len(DESIGNS)
