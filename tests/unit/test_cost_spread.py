"""Pricing spread-out traffic from the simulated batch formation (bench/cost_spread.py, costmodel.usage)."""

from __future__ import annotations

import pytest

from bench import cost_spread, costmodel
from bench.pricing import SECONDS_PER_MONTH
from bench.scale import params, scenarios


def _plain() -> dict:
    """AWS defaults with every latency zero and no CPU: a dispatcher invocation lasts its wait alone."""
    return params.aws(lat_ddb_write_s=0.0, lat_sqs_s=0.0, lat_invoke_s=0.0, lat_target_s=0.0, lat_cold_start_s=0.0,
                      cpu_per_delivery_s=0.0)


def test_due_times_a_second_apart_are_priced_one_invocation_per_timer():
    f = scenarios.batch_formation(_plain(), 1.0, "max")
    assert f["invocations_per_timer"] > 0.97
    # each waits out a remainder uniform in [0, 1 s): about 500 ms billed per timer
    assert 450 < f["billed_ms_per_timer"] < 550


def test_dense_due_times_share_invocations():
    # with AWS's stated latencies, messages surface while a receive or an invocation is under way
    f = scenarios.batch_formation(params.aws(), 1000.0, "max", seconds=5.0)
    assert f["invocations_per_timer"] < 0.8
    assert f["mean_batch"] > 1.25


def test_occurrences_armed_ahead_wait_only_their_lead():
    f = scenarios.batch_formation(_plain(), 1.0, "max", early_s=0.25)
    assert f["billed_ms_per_invocation"] == pytest.approx(250, abs=2)


def _scenario(per_request: int = 10) -> dict:
    """A measured scenario reduced to what ``usage`` reads: one mapping receive per dispatcher invocation."""
    return {"per_request": per_request, "summary": {
        "billable": [{"caller": "esm:sqs:dispatcher", "service": "sqs", "operation": "ReceiveMessage", "item": "",
                      "unit": "dispatcher", "chunks_per_unit": 1.0, "wru_per_unit": 0.0, "rru_per_unit": 0.0}],
        "log_bytes_per_timer": {}, "request_bytes_mean": 1000.0, "metric_lines_per_dispatch": 1.0,
        "metric_line_bytes": 74.0, "functions": {"dispatcher": {"records_mean": 10.0}}}}


def test_a_simulated_formation_replaces_the_full_batch_for_the_dispatcher():
    s = _scenario()
    pools = {"dispatcher": [(10, 900.0)] * 5, "enqueuer": []}
    full = costmodel.usage(s, s, 10, pools, {"http": 0})
    assert full["lambda"]["dispatcher"] == {"invocations": 0.1, "billed_ms": pytest.approx(90.0)}
    assert full["sqs"]["ReceiveMessage (esm:sqs:dispatcher)"] == pytest.approx(0.1)
    formation = {"rate": 10, "pollers": "max", "early_s": None, "mean_batch": 1.25, "invocations_per_timer": 0.8,
                 "billed_ms_per_invocation": 520.0, "billed_ms_per_timer": 416.0}
    spread = costmodel.usage(s, s, 10, pools, {"http": 0}, formation=formation)
    assert spread["lambda"]["dispatcher"] == {"invocations": 0.8, "billed_ms": pytest.approx(416.0)}
    assert spread["sqs"]["ReceiveMessage (esm:sqs:dispatcher)"] == pytest.approx(0.8)
    assert spread["log_bytes"]["dispatcher EMF metric line"] == pytest.approx(8 * full["log_bytes"]["dispatcher EMF metric line"])


def test_each_price_takes_the_costlier_reading_of_the_mappings_scaling():
    cheap = {"rate": 10, "pollers": "scaled", "early_s": None, "invocations_per_timer": 0.7, "billed_ms_per_timer": 380.0}
    dear = {"rate": 10, "pollers": "max", "early_s": None, "invocations_per_timer": 0.9, "billed_ms_per_timer": 480.0}
    other_rate = {**dear, "rate": 100, "invocations_per_timer": 2.0}
    assert cost_spread.costlier([cheap, dear, other_rate], 10, early=False) is dear


def _cell(od: float, groups: dict) -> dict:
    return {"total_on_demand": od, "total_provisioned": od / 2,
            "groups": {g: {"usd_od": v, "usd_prov": v / 2} for g, v in groups.items()}}


def test_a_target_judged_in_every_column_is_missed_if_any_column_misses_it():
    cells = {"heavy": _cell(1.9, {"DynamoDB": 1.5, "Lambda": 0.4}),
             "10": _cell(2.6, {"DynamoDB": 1.5, "Lambda": 0.8, "SQS": 0.3})}
    t = next(t for t in cost_spread.judge({"periodic, daily cron (beyond the window)": cells}) if t["mode"] == "on_demand")
    assert not t["met"]
    assert t["worst"] == "10"
    assert t["alone"] == 2  # DynamoDB $1.50 + Lambda $0.80 already pass $2.00
    cells["10"] = _cell(1.95, {"DynamoDB": 1.5, "Lambda": 0.45})
    assert cost_spread.judge({"periodic, daily cron (beyond the window)": cells})[0]["met"]


def test_a_long_timer_is_stored_for_its_lead_and_every_record_for_the_history_retention():
    sizes = {"record": 1000.0, "timer": 200.0, "definition": 900.0, "periodic_timer": 200.0}
    month = SECONDS_PER_MONTH
    short = cost_spread.stored_gb("short, single creates", 1e6, sizes, 86_400)
    assert short == pytest.approx(1e6 * 1000 * 86_400 / month / 2**30)  # a day of records: 1/30 of a month
    long = cost_spread.stored_gb("long, single creates", 1e6, sizes, 86_400)
    assert long - short == pytest.approx(1e6 * 1200 * cost_spread.LONG_LEAD_DAYS * 86_400 / month / 2**30)
    daily = cost_spread.stored_gb("periodic, daily cron (beyond the window)", 30e6, sizes, 86_400)
    assert daily == pytest.approx(1e6 * 1100 / 2**30)  # a million definitions, each with its pending timer item


def test_the_scale_section_prices_the_dispatchers_emf_line_once_per_simulated_invocation():
    from bench.scale import cost
    from bench.scale.pipeline import Outcome

    # 1,000 timers alone in their invocations: 1,000 EMF lines of 200 bytes, $0.50 per GB: $0.10 per million timers
    out = Outcome(batches=[1] * 1000, billed_ms=[500] * 1000, receives=1000)
    without = cost.scenario({"other_usd_per_million_short": 1.0}, out, 1000, "short")
    with_emf = cost.scenario({"other_usd_per_million_short": 1.0, "emf_bytes_per_invocation": 200.0}, out, 1000, "short")
    assert with_emf["per_million"] - without["per_million"] == pytest.approx(0.10)
    headline = {"levels": {"heavy": 10}, "headline": {"short": {"rows": [
        {"group": "CloudWatch Logs", "item": "dispatcher EMF metric line", "quantity": 20.0, "usd_od": 0.01},
        {"group": "DynamoDB", "item": "PutItem record (api)", "quantity": 1.0, "usd_od": 0.625}]}}}
    assert cost.emf_bytes_per_invocation(headline) == 200.0  # 20 bytes a timer at ten a batch
    assert cost.other_per_million(headline)["short"] == 0.625  # the EMF line is priced per invocation instead
