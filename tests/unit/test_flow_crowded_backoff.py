"""How long a delivery waits when its item's writes are refused for capacity again and again (pure): a second the
first time, then up to twice as long each time in a row, never past the most, and a crowd refused together spread
over the later half of each ceiling rather than sent back together."""

from __future__ import annotations

from scheduler_runtime.core.flow import CROWDED_BACKOFF_MAX_SECONDS, LOOK_AGAIN_SECONDS, crowded_delay_seconds


def test_the_first_refusal_waits_one_look_again_and_each_after_it_half_to_all_of_a_doubling_ceiling():
    assert crowded_delay_seconds(1, "any") == LOOK_AGAIN_SECONDS
    for times in range(2, 12):
        ceiling = min(CROWDED_BACKOFF_MAX_SECONDS, 2 ** (times - 1))
        for n in range(200):
            assert ceiling / 2 <= crowded_delay_seconds(times, f"timer-{n}") <= ceiling


def test_a_crowd_refused_together_comes_back_spread_out_and_one_delivery_waits_the_same_each_run():
    waits = [crowded_delay_seconds(8, f"timer-{n}") for n in range(1000)]
    assert len(set(waits)) == CROWDED_BACKOFF_MAX_SECONDS // 2  # every second from 33 to 64
    assert max(waits.count(wait) for wait in set(waits)) < 1000 / 10
    assert waits == [crowded_delay_seconds(8, f"timer-{n}") for n in range(1000)]
