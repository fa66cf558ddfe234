"""The scale simulation's batching window: a poller that receives a message gathers what becomes visible
during its window, so messages due in the same second share one invocation, each still delivered at its
due time; and a batch that fills is invoked before its window has passed."""

from __future__ import annotations

import math

from bench.scale import params, scenarios
from bench.scale.pipeline import Delivery


def _one_poller(**change: float) -> dict:
    p = params.aws(lat_ddb_write_s=0.0, lat_sqs_s=0.0, lat_invoke_s=0.0, lat_target_s=0.0, lat_cold_start_s=0.0,
                   cpu_per_delivery_s=0.0, esm_start=1, esm_max=1, esm_step_per_min=0)
    p.update(change)
    return p


def test_a_window_gathers_messages_due_in_the_same_second_into_one_invocation_delivered_at_their_due_times():
    due = [11.0 + k / 10 for k in range(10)]
    visible = [d - 1.0 - 0.05 for d in due]  # sent a second (the lead) and a little more early
    out = Delivery(_one_poller(esm_window_s=1.0, esm_batch=100), due, visible, math.inf).run()
    assert out.batches == [10]  # all became visible within the first one's window
    assert min(out.lateness) >= 0 and max(out.lateness) < 1e-9  # each waited for its own due time
    assert out.billed_ms == [math.ceil((due[-1] - visible[0] - 1.0) * 1000)]  # invoked when the window passed


def test_without_a_window_the_same_messages_are_invoked_as_they_surface():
    due = [11.0 + k / 10 for k in range(10)]
    out = Delivery(_one_poller(esm_batch=100), due, [d - 1.05 for d in due], math.inf).run()
    assert len(out.batches) > 1


def test_a_full_batch_is_invoked_before_its_window_passes():
    due = [11.0] * 5
    out = Delivery(_one_poller(esm_window_s=5.0, esm_batch=5), due, [10.0] * 5, math.inf).run()
    assert out.batches == [5] and out.started == [10.0]


def test_second_precision_is_never_early_and_at_most_a_second_late_without_a_window():
    row = scenarios.poisson(params.aws(), 10, 60, pollers="scaled", second=True, warmup_s=5.0)
    assert row["early"] == 0 and row["lateness_ms"]["max"] < 1000 + 100
