"""The deployment's delay rule: a message surfaces early by at most the lead plus a second with
SUB_SECOND precision, never before its due time with SECOND, and the dispatcher waits for anything that
arrives within the lead plus a second of its due time and puts back what is earlier."""

import pytest

from scheduler_runtime.core.contract import SQS_MAX_DELAY_SECONDS
from scheduler_runtime.core.window import EARLY_TOLERANCE_MS, DelayRule

NOW = 1_000_000


@pytest.mark.parametrize("lead_s", [0, 1, 5])
def test_with_a_lead_a_message_surfaces_between_the_lead_and_a_second_more_early(lead_s):
    rule = DelayRule.of(lead_s)
    for remaining_ms in range(lead_s * 1000, 20_000, 37):
        surfaces = NOW + rule.delay_seconds(NOW + remaining_ms, NOW) * 1000
        early_ms = NOW + remaining_ms - surfaces
        assert lead_s * 1000 <= early_ms < (lead_s + 1) * 1000


def test_a_message_due_within_the_lead_is_sent_at_once_and_the_longest_delay_is_capped():
    rule = DelayRule.of(2)
    assert rule.delay_seconds(NOW + 1_500, NOW) == 0
    assert rule.delay_seconds(NOW - 60_000, NOW) == 0
    assert rule.delay_seconds(NOW + 5_000_000, NOW) == SQS_MAX_DELAY_SECONDS


def test_second_precision_never_surfaces_before_the_due_time_nor_a_second_after_it():
    rule = DelayRule.of(1, "SECOND")  # the batching window gathers; it is no lead
    assert rule.lead_ms == 0
    for remaining_ms in range(1, 20_000, 37):
        surfaces = NOW + rule.delay_seconds(NOW + remaining_ms, NOW) * 1000
        assert 0 <= surfaces - (NOW + remaining_ms) < 1000


def test_the_dispatcher_waits_within_the_lead_and_a_second_and_puts_back_what_is_earlier():
    rule = DelayRule.of(1)
    assert rule.tolerance_ms == EARLY_TOLERANCE_MS + 1000
    assert rule.timing(NOW + 1_900, NOW).wait_ms == 1_900 and not rule.timing(NOW + 1_900, NOW).put_back
    assert rule.timing(NOW + 2_000, NOW).wait_ms == 2_000
    back = rule.timing(NOW + 2_001, NOW)
    assert back.put_back and back.wait_ms == 0
    assert back.put_back_seconds == 1  # surfaces again about the lead early: within the tolerance
    assert rule.timing(NOW - 5, NOW).wait_ms == 0


def test_without_a_lead_the_rule_is_the_one_before_it():
    rule = DelayRule.of(0)
    assert rule == DelayRule() and rule.tolerance_ms == EARLY_TOLERANCE_MS
    assert rule.delay_seconds(NOW + 14_500, NOW) == 14
