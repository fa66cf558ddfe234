"""The scale simulation's mechanics, each against a figure worked out by hand."""

from __future__ import annotations

import math
import random

import pytest

from bench.scale import params, scenarios
from bench.scale.des import Bucket, Server
from bench.scale.pipeline import Delivery


def _plain(**change: float) -> dict:
    """AWS defaults with every latency zero, no cold start, no CPU: only what a test sets takes time."""
    p = params.aws(lat_ddb_write_s=0.0, lat_sqs_s=0.0, lat_invoke_s=0.0, lat_target_s=0.0, lat_cold_start_s=0.0,
                   cpu_per_delivery_s=0.0)
    p.update(change)
    return p


def _fixed_pollers(k: int, **change: float) -> dict:
    return _plain(esm_start=k, esm_max=k, esm_step_per_min=0, **change)


def test_a_queue_is_drained_by_k_consumers_at_their_rate():
    # 100 messages visible and due at once, one a batch, 4 pollers, 0.1 s a delivery: 25 rounds of 0.1 s
    p = _fixed_pollers(4, esm_batch=1, lat_ddb_write_s=0.1)
    out = Delivery(p, [10.0] * 100, [10.0] * 100, math.inf).run()
    assert out.last_delivery_s == pytest.approx(2.5)
    assert out.peak_concurrency == 4
    assert len(out.lateness) == 100


def test_batches_fill_to_the_batch_size_when_messages_wait():
    p = _fixed_pollers(2, lat_ddb_write_s=0.1)
    out = Delivery(p, [10.0] * 200, [10.0] * 200, math.inf).run()
    assert out.batches == [10] * 20
    assert out.last_delivery_s == pytest.approx(1.0)  # 10 rounds of 2 invocations


def test_the_mapping_adds_its_scaling_step_each_second_while_messages_remain():
    # work that never ends within the look: every poller stays busy, so concurrency = pollers
    p = _plain(lat_ddb_write_s=1000.0)
    d = Delivery(p, [10.0] * 100_000, [10.0] * 100_000, math.inf)
    d.run(until=20.5)
    assert d.out.peak_concurrency == 5 + 5 * 10  # start 5, +300 a minute, ticks from t=1 while backlogged


def test_the_mapping_stops_at_its_maximum():
    p = _plain(lat_ddb_write_s=1000.0, esm_max=12)
    d = Delivery(p, [10.0] * 10_000, [10.0] * 10_000, math.inf)
    d.run(until=30.0)
    assert d.out.peak_concurrency == 12


def test_lambda_concurrency_caps_invocations_and_counts_throttles():
    p = _fixed_pollers(10, esm_batch=1, lat_ddb_write_s=0.5, lambda_account_concurrency=3)
    out = Delivery(p, [10.0] * 30, [10.0] * 30, math.inf).run()
    assert out.peak_concurrency == 3
    assert out.throttles["lambda"] > 0
    assert len(out.lateness) == 30


def test_table_throughput_paces_the_writes_and_counts_throttles():
    # 100 deliveries due at once, 20 WRU/s with a one-second bucket: 20 at once, the rest as the SDK retries
    # them (two retries, within 3 s) or, throttled three times, after the queue's visibility timeout
    p = _fixed_pollers(100, esm_batch=1)
    out = Delivery(p, [10.0] * 100, [10.0] * 100, ddb_wru=20).run()
    assert len(out.lateness) == 100 and min(out.lateness) >= 0
    assert sum(1 for x in out.lateness if x == 0) == 20
    assert out.throttles["dynamodb"] >= 3 * out.failed > 0
    assert max(out.lateness) >= p["visibility_s"]
    assert all(x < 3.1 or x >= p["visibility_s"] for x in out.lateness)


def test_no_delivery_is_early_though_messages_are_visible_up_to_a_second_before():
    rng = random.Random(7)
    due = sorted(10.0 + rng.random() * 5 for _ in range(3000))
    visible = [d - rng.random() for d in due]
    out = Delivery(params.aws(), due, visible, 40_000, start_pollers=50).run()
    assert len(out.lateness) == 3000
    assert min(out.lateness) >= 0


def test_sparse_due_times_reach_the_dispatcher_alone_and_wait_their_remainder():
    row = scenarios.poisson(params.aws(), rate=1.0, seconds=1.0, min_timers=300)
    assert row["early"] == 0
    assert row["mean_batch"] < 1.1
    # each invocation waits out a remainder uniform in [0, 1 s): about 500 ms billed per timer
    assert 400 < row["cost"]["billed_ms_per_timer"] < 600


def test_a_bucket_grants_its_burst_at_once_then_its_rate():
    b = Bucket(rate=10, burst=5)
    grants = [b.take(0.0) for _ in range(7)]
    assert grants[:5] == [0.0] * 5
    assert grants[5] == pytest.approx(0.1) and grants[6] == pytest.approx(0.2)
    assert b.throttled == 2
    assert not Bucket(rate=1, burst=1).admit(0.0, 2)


def test_one_server_answers_calls_in_turn():
    s = Server()
    assert [s.call(0.0, 0.01) for _ in range(3)] == pytest.approx([0.01, 0.02, 0.03])


def test_api_gateway_refuses_creates_beyond_its_rate_and_burst():
    row = scenarios.creates(_plain(api_ms=1.0), rate=20_000, seconds=2.0, ddb_wru=math.inf)
    # 10,000 a second plus the 5,000 burst, over 2 s
    assert row["accepted"] == pytest.approx(25_000, rel=0.02)
    assert row["throttles"]["apigateway"] == row["attempted"] - row["accepted"]


def test_the_engine_profile_is_one_moto_server_and_fixed_pollers():
    burst = {"ceiling": {"calls_per_s": {"UpdateItem": 100.0, "ReceiveMessage (10)": 1000.0,
                                         "DeleteMessageBatch (10)": 1000.0, "SendMessage": 500.0}},
             "by_size": {"1000": [{"dispatcher_workers": 16}]}}
    p = params.engine(burst)
    assert p["moto"] and p["esm_start"] == p["esm_max"] == 16 and p["esm_step_per_min"] == 0
    # 500 deliveries due at once, each one UpdateItem (10 ms) and 1/10 of a receive and a delete (1 ms each)
    out = Delivery(p, [10.0] * 500, [10.0] * 500, math.inf).run()
    assert out.last_delivery_s == pytest.approx(500 * 0.0102, rel=0.05)


def test_the_mapping_gives_back_pollers_while_its_receives_come_back_empty():
    p = _plain(lat_ddb_write_s=0.01)
    d = Delivery(p, [10.0 + k for k in range(60)], [10.0 + k for k in range(60)], math.inf, start_pollers=50,
                 scale_down=True)
    d.run(until=40.0)
    assert d.pollers == 5  # one message a second: one step (5) back a second, down to the start concurrency


def test_the_section_renders_each_scenario_its_calibration_and_the_verdict():
    from bench import scale
    from bench.render import section_text, summary_text

    d = scale.run(bursts=[2_000], raised_burst=2_000, rates=[10], poisson_s=1.0, periodic_n=600, periodic_s=2.0,
                  create_rates=[100], create_s=1.0, waiting_n=1_000)
    text = section_text("scale", {"scale": d})
    for row in d["rows"] + d["raised"]:
        assert row["scenario"].split(": ", 1)[-1] in text
    assert "the target is **met**" in text or "the target is **missed**" in text
    assert "| 1,000 |" in text and "| 10,000 |" in text  # the calibration's bursts
    assert text.count("docs.aws.amazon.com") >= 10  # the parameters' pages
    summary = summary_text("scale", {"scale": d})
    assert "2,000 timers due in one second" in summary and "within ±20 %" in summary


def test_the_dispatcher_is_priced_from_the_simulated_batches():
    from bench.scale import cost
    from bench.scale.pipeline import Outcome

    # 1,000 timers, each alone in an invocation billed 500 ms at 128 MB, each with one receive and one delete
    out = Outcome(batches=[1] * 1000, billed_ms=[500] * 1000, receives=1000)
    usd = cost.scenario({"other_usd_per_million_short": 1.0}, out, 1000, "short")
    per_invocation = 0.20 + 0.5 * 128 / 1024 * 13.3334 + 2 * 0.40  # request, GB-s, receive + delete (per million)
    assert usd["dispatcher_per_million"] == pytest.approx(per_invocation, rel=1e-4)
    assert usd["per_million"] == pytest.approx(per_invocation + 1.0, rel=1e-4)
    assert usd["invocations_per_timer"] == 1.0
