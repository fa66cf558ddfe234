"""The kit's outcome events (``local_scheduler(outcomes=True)``): how each schedule ended, read with ``outcomes(id)``
on virtual time, one kind per ended occurrence, each complete as soon as the call that ended it returned."""

import re
from datetime import timedelta
from pathlib import Path

import pytest

from cdk_delayed_scheduler.client import RetryPolicy
from cdk_delayed_scheduler.outcome import Outcome, OutcomeKind
from cdk_delayed_scheduler.testing import local_scheduler as run_local_scheduler

pytestmark = pytest.mark.local_scheduler(outcomes=True)
TESTING_PAGE = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def test_a_delivered_schedule_gives_one_delivered_outcome_with_its_delivery(local_scheduler):
    timer = local_scheduler.client.schedule(timedelta(minutes=5), {"order": 42}, id="remind-1")

    local_scheduler.advance(minutes=4)
    assert local_scheduler.outcomes("remind-1") == []
    local_scheduler.advance(minutes=1)
    assert local_scheduler.outcomes("remind-1") == ["DELIVERED"]
    (outcome,) = local_scheduler.outcome_events("remind-1")
    (delivery,) = local_scheduler.deliveries()
    assert isinstance(outcome, Outcome) and outcome.kind is OutcomeKind.DELIVERED
    assert (outcome.due_at, outcome.dedupe_key, outcome.target, outcome.attempts) == (
        timer.due_at, delivery.envelope.dedupe_key, "default", 1)
    assert outcome.lateness == delivery.lateness and outcome.payload is None


def refuse(event, context):
    raise RuntimeError("the mail server is down")


@pytest.mark.local_scheduler(outcomes=True, target=refuse)
def test_a_target_that_keeps_failing_gives_failed_once_its_last_attempt_failed(local_scheduler):
    local_scheduler.client.schedule(timedelta(minutes=1), {}, id="remind-2", retry=RetryPolicy(max_attempts=2))

    local_scheduler.advance(minutes=1)
    assert local_scheduler.outcomes("remind-2") == []  # the second attempt waits out the visibility timeout
    local_scheduler.advance(minutes=1)
    assert local_scheduler.outcomes("remind-2") == ["FAILED"]
    (outcome,) = local_scheduler.outcome_events("remind-2")
    assert outcome.attempts == 2 and "maxAttempts 2 reached" in outcome.reason
    assert "the mail server is down" in outcome.last_error


def test_a_schedule_past_its_lateness_bound_gives_stale_and_is_never_delivered(local_scheduler):
    timers = local_scheduler.client
    timers.schedule(local_scheduler.now() - timedelta(seconds=30), {}, id="remind-3", max_lateness=timedelta(seconds=5))

    assert local_scheduler.outcomes("remind-3") == ["STALE"]
    assert local_scheduler.deliveries() == []
    assert timers.get("remind-3").status == "FAILED"
    assert local_scheduler.outcome_events("remind-3")[0].reason.startswith("stale")


def test_a_cancel_gives_cancelled_as_soon_as_it_is_answered(local_scheduler):
    local_scheduler.client.schedule(timedelta(hours=2), {}, id="remind-4")
    local_scheduler.client.cancel("remind-4")

    assert local_scheduler.outcomes("remind-4") == ["CANCELLED"]
    local_scheduler.advance(hours=3)
    assert local_scheduler.outcomes("remind-4") == ["CANCELLED"] and local_scheduler.deliveries() == []


def test_each_periodic_occurrence_gives_its_own_delivered_outcome(local_scheduler):
    local_scheduler.client.put_periodic("tick", {}, every=60)

    local_scheduler.advance(minutes=3)
    outcomes = local_scheduler.outcome_events("tick")
    assert local_scheduler.outcomes("tick") == ["DELIVERED"] * 3
    assert [o.dedupe_key for o in outcomes] == [d.envelope.dedupe_key for d in local_scheduler.deliveries()]
    assert len({o.dedupe_key for o in outcomes}) == 3
    assert local_scheduler.outcome_events() == outcomes  # every schedule's: only this one's here


@pytest.mark.local_scheduler(outcomes=True, outcomes_include_payload=True)
def test_outcomes_include_payload_puts_the_payload_in_each_outcome(local_scheduler):
    local_scheduler.client.schedule(timedelta(seconds=1), {"order": 7}, id="with-payload")
    local_scheduler.advance(seconds=1)
    assert [o.payload for o in local_scheduler.outcome_events("with-payload")] == [{"order": 7}]


@pytest.mark.local_scheduler(outcomes=False)
def test_without_outcomes_the_kit_records_none_and_says_how_to_ask(local_scheduler):
    with pytest.raises(ValueError, match=r"local_scheduler\(outcomes=True\)"):
        local_scheduler.outcomes("any")


def test_the_kit_is_the_outcomes_target_and_chooses_the_kinds_itself():
    with pytest.raises(ValueError, match="outcome_kinds cannot be set here"):
        with run_local_scheduler(outcomes=True, outcome_kinds=("FAILED",)):
            pass
    with pytest.raises(ValueError, match="outcomes must be True or False"):
        with run_local_scheduler(outcomes=print):
            pass


def test_the_testing_pages_outcome_example_runs_as_written():
    page = TESTING_PAGE.read_text(encoding="utf-8")
    code = re.search(r"```python\n(.*?)```", page.split("### Outcome events", 1)[1], re.S).group(1)
    names: dict = {}
    exec(compile(code, str(TESTING_PAGE), "exec"), names)  # noqa: S102 - the documented example, verbatim
    (test,) = [value for name, value in names.items() if name.startswith("test_")]
    (marker,) = test.pytestmark
    with run_local_scheduler(**marker.kwargs) as timers:
        test(timers)
