import pytest

from scheduler_runtime.core.window import (
    EARLY_TOLERANCE_MS,
    SQS_MAX_DELAY_SECONDS,
    claim_cutoff_ms,
    dispatch_timing,
    enqueue_delay_seconds,
    is_within_window,
)

NOW = 1_000_000


def test_claim_window():
    assert claim_cutoff_ms(NOW, 870) == NOW + 870_000
    assert is_within_window(NOW + 870_000, NOW, 870)
    assert not is_within_window(NOW + 870_001, NOW, 870)
    assert is_within_window(NOW - 5_000_000, NOW, 870)  # overdue is always within


@pytest.mark.parametrize(
    "remaining_ms, delay",
    [(-10_000, 0), (0, 0), (999, 0), (1_000, 1), (1_999, 1), (14_500, 14), (900_000, 900), (5_000_000, SQS_MAX_DELAY_SECONDS)],
)
def test_enqueue_delay_floors_and_caps(remaining_ms, delay):
    assert enqueue_delay_seconds(NOW + remaining_ms, NOW) == delay


def test_message_never_surfaces_after_due_nor_more_than_a_second_early():
    for remaining_ms in range(-3_000, 905_000, 97):
        delay = enqueue_delay_seconds(NOW + remaining_ms, NOW)
        surfaces_at = NOW + delay * 1000
        if remaining_ms <= SQS_MAX_DELAY_SECONDS * 1000:
            assert surfaces_at <= max(NOW, NOW + remaining_ms)
            assert NOW + remaining_ms - surfaces_at < 1000
        else:
            assert delay == SQS_MAX_DELAY_SECONDS


def test_dispatch_delivers_due_and_overdue_at_once():
    assert dispatch_timing(NOW, NOW).wait_ms == 0 and not dispatch_timing(NOW, NOW).put_back
    assert dispatch_timing(NOW - 60_000, NOW).wait_ms == 0


def test_dispatch_waits_out_a_sub_second_remainder():
    timing = dispatch_timing(NOW + 400, NOW)
    assert timing.wait_ms == 400 and not timing.put_back
    assert dispatch_timing(NOW + EARLY_TOLERANCE_MS, NOW).wait_ms == EARLY_TOLERANCE_MS


def test_dispatch_puts_back_what_is_more_than_a_second_early():
    timing = dispatch_timing(NOW + EARLY_TOLERANCE_MS + 1, NOW)
    assert timing.put_back and timing.put_back_seconds == 1 and timing.wait_ms == 0
    assert dispatch_timing(NOW + 3_600_000, NOW).put_back_seconds == SQS_MAX_DELAY_SECONDS


def test_never_early():
    """Whatever the dispatcher does, a delivery cannot start before the due time."""
    for remaining_ms in range(-2_000, 20_000, 7):
        timing = dispatch_timing(NOW + remaining_ms, NOW)
        if timing.put_back:
            assert timing.put_back_seconds * 1000 <= remaining_ms  # surfaces again no later than due
        else:
            assert timing.wait_ms >= remaining_ms
