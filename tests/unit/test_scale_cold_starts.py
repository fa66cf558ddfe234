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
