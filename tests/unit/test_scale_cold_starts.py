"""The scale simulation's cold starts: an execution environment idle longer than Lambda keeps it is gone, so
the next invocation starts cold and its init delays a message that surfaced too late to cover it; a lead of one
cold start covers it, and a warm dispatcher waits the lead out, billed. Each against a figure worked out by hand."""

from __future__ import annotations

import math

import pytest

from bench.scale import params, scenarios
from bench.scale.pipeline import Delivery


def _one_poller(**change: float) -> dict:
    """One poller, one message a batch, only a 0.4 s init taking time."""
    p = params.aws(lat_ddb_write_s=0.0, lat_sqs_s=0.0, lat_invoke_s=0.0, lat_target_s=0.0, lat_cold_start_s=0.4,
                   cpu_per_delivery_s=0.0, esm_start=1, esm_max=1, esm_step_per_min=0, esm_batch=1)
    p.update(change)
    return p


@pytest.mark.parametrize(("gap_s", "cold"), [(200.0, [True, False]), (400.0, [True, True])])
def test_an_environment_idle_longer_than_lambda_keeps_it_starts_cold_again(gap_s, cold):
    # two messages, each surfacing 0.1 s before its due time: a cold start makes it 0.3 s late, a warm one on time
    due = [1000.0, 1000.0 + gap_s]
    out = Delivery(_one_poller(lambda_idle_keep_s=300.0), due, [d - 0.1 for d in due], math.inf).run()
    assert out.cold == cold
    assert out.lateness == pytest.approx([0.3 if c else 0.0 for c in cold])


def test_each_environment_expires_by_its_own_idle_time():
    # three at once make three environments; at 1450 s only the one used again at 1200 s is still kept
    p = _one_poller(esm_start=3, esm_max=3, lambda_idle_keep_s=300.0, lat_cold_start_s=0.0)
    due = [1000.0] * 3 + [1200.0, 1450.0, 1450.0]
    out = Delivery(p, due, due, math.inf).run()
    assert out.cold == [True, True, True, False, False, True]


def test_a_lead_of_one_cold_start_covers_the_init_and_is_waited_out_when_warm():
    no_lead, lead = (scenarios.poisson(_one_poller(), 1 / 600, 0.0, lead_s=s, min_timers=300) for s in (0.0, 0.4))
    assert no_lead["cold_starts"] == lead["cold_starts"] > 0.5 * lead["invocations"]  # e^-0.5 of the gaps exceed 300 s
    assert no_lead["lateness_ms"]["max"] == pytest.approx(400, abs=10)  # surfaced just before due: the whole init
    assert lead["lateness_ms"]["max"] == pytest.approx(0, abs=1e-6) and lead["early"] == no_lead["early"] == 0
    # a warm invocation waits 0.4 s more; a cold one what its init does not cover: 0.4 s less 0.4 s at most
    added = lead["cost"]["billed_ms_per_timer"] - no_lead["cost"]["billed_ms_per_timer"]
    warm_share = 1 - lead["cold_starts"] / lead["invocations"]
    assert 400 * warm_share < added < 400 * warm_share + 400 * (1 - warm_share)


def _sparse(**change) -> dict:
    """300 due times one every 10 minutes on one poller (about 59 % of the gaps longer than Lambda keeps an idle
    environment)."""
    return scenarios.poisson(_one_poller(**change), 1 / 600, 0.0, min_timers=300)


def test_without_a_warming_rule_the_figures_are_as_before():
    # the figures of this seed before pings were simulated; warm_every_s None is the same as absent
    for row in (_sparse(), _sparse(warm_every_s=None)):
        assert (row["timers"], row["invocations"], row["cold_starts"]) == (304, 304, 178)
        assert row["lateness_ms"]["p99"] == pytest.approx(380.2586125966627)
        assert row["lateness_ms"]["max"] == pytest.approx(396.48075788863935)
        assert row["cost"]["billed_ms_per_timer"] == pytest.approx(329.7236842105263)
        assert (row["pings"], row["ping_cold_starts"]) == (0, 0)


def test_a_ping_every_4_minutes_keeps_an_environment_for_sparse_traffic():
    from bench.scale import SPARSE_TARGET_MS

    cold, warm = _sparse(), _sparse(warm_every_s=240.0)
    assert cold["lateness_ms"]["p99"] > SPARSE_TARGET_MS
    assert warm["cold_starts"] <= 0.01 * warm["invocations"] and warm["lateness_ms"]["p99"] <= SPARSE_TARGET_MS
    assert warm["early"] == 0 and warm["invocations"] == cold["invocations"]
    # a warm invocation waits out its whole remainder, billed, where a cold one's init (not billed) covered part of it
    assert warm["cost"]["billed_ms_per_timer"] > cold["cost"]["billed_ms_per_timer"]


def test_pings_are_counted_apart_from_the_mappings_invocations():
    # pings at 0, 240, ..., 1680 s (the last the rule fires after the last delivery): only the first starts cold,
    # and each message, 600 s after the last, finds the environment a ping used
    due = [1000.0, 1600.0]
    pinged = Delivery(_one_poller(lambda_idle_keep_s=300.0, warm_every_s=240.0), due, [d - 0.1 for d in due],
                      math.inf).run()
    assert pinged.pings == [240.0 * k for k in range(8)] and pinged.ping_cold == [True] + [False] * 7
    assert pinged.cold == [False, False] and pinged.lateness == pytest.approx([0.0, 0.0])
    assert pinged.batches == [1, 1] and len(pinged.billed_ms) == 2  # the mapping's invocations alone
    assert Delivery(_one_poller(lambda_idle_keep_s=300.0), due, [d - 0.1 for d in due], math.inf).run().cold == [True, True]


def test_a_ping_while_the_only_environment_is_busy_starts_another_and_counts_toward_concurrency():
    # the message's invocation holds the environment from 999.9 s to 1000.0 s; the ping at 999.95 s needs another,
    # and the one at 1999.9 s (the rule's last) finds both kept
    p = _one_poller(lambda_idle_keep_s=math.inf, warm_every_s=999.95)
    out = Delivery(p, [1000.0], [999.9], math.inf).run()
    assert out.cold == [False] and out.ping_cold == [True, True, False] and out.peak_concurrency == 2


def _sparse_section(rows: list[dict]) -> tuple[str, str]:
    from bench import report_scale
    from bench.render import fill, parts

    d = {"sparse": rows, "profile": params.aws(), "sparse_target_ms": 100.0}
    texts = parts("scale")
    summary = report_scale._sparse_summary(d)
    return fill(texts, "sparse", report_scale._sparse(d)), fill(texts, summary["part"], summary)


def test_the_sparse_part_renders_the_pinged_rows_and_runs_recorded_before_pings():
    rows = scenarios.cold_start_lead(params.aws(), 1.0, 10.0, 1.0, 0.4)  # small: due times one a second
    assert [(r["lead_s"], r["warm_every_s"]) for r in rows] == [(0.0, None), (0.4, None), (0.0, 240.0)] * 2
    assert [r["pings"] > 0 for r in rows] == [False, False, True] * 2 and len({frozenset(r) for r in rows}) == 1
    text, summary = _sparse_section(rows)
    assert text.count("kept warm by a ping every 240 s |") == 2 and "**A lead instead.** Sent to surface 0.4 s" in text
    # 10,800 pings a 30-day month, each a request ($0.20 per million) and 2 ms at 128 MB ($0.0000133334 per GB-s)
    assert "10,800 invocations a month of 2 ms billed each: $0.0022 a month" in text
    assert "kept warm by a ping every 4 minutes, p99 lateness |" in summary and "| no ping: " in summary
    recorded = [{k: v for k, v in r.items() if k not in ("warm_every_s", "pings", "ping_cold_starts")}
                for r in rows if not r["warm_every_s"]]
    text, summary = _sparse_section(recorded)
    assert "As sent today: " in text and "kept warm" not in text and text.count("| none |") == 4
    assert "sparse traffic, one timer every 10 minutes, p99 lateness |" in summary and "sent 0.4 s earlier" in summary
