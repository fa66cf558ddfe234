"""How many occurrences a pause passed over (``Spec.count_between``), checked against the occurrences
walked one by one, and the ``PATCH /periodic/{id}`` body's rules."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_runtime.core.periodic import Spec, validate_state
from scheduler_runtime.core.timeparse import parse_rfc3339
from scheduler_runtime.core.validation import ApiError


def walked(spec: Spec, first_ms: int, until_ms: int) -> int:
    """The occurrences in [first_ms, until_ms), one by one, as the dispatcher's catch-up walks them."""
    count, due = 0, first_ms
    while due is not None and due < until_ms:
        count += 1
        due = spec.catch_up(due, due)[2]
    return count


@given(every=st.integers(1, 5000), steps=st.integers(0, 40), extra=st.integers(0, 4999),
       end=st.one_of(st.none(), st.integers(1, 60)))
def test_every_counts_each_occurrence_from_the_first_passed_over_until_the_resume_or_the_end(every, steps, extra, end):
    first = 1_800_000_000_000
    spec = Spec(every_ms=every * 1000, end_ms=None if end is None else first + end * every * 1000)
    until = first + steps * every * 1000 + extra
    assert spec.count_between(first, until) == walked(spec, first, until)


def test_cron_counts_local_minutes_across_a_daylight_saving_change():
    # Europe/Paris skips 02:00-03:00 on 2030-03-31: "every 30 minutes" makes 2 fewer occurrences that night.
    spec = Spec(cron="0/30 * * * ? *", time_zone="Europe/Paris")
    first, until = parse_rfc3339("2030-03-30T23:00:00Z"), parse_rfc3339("2030-03-31T03:00:00Z")
    assert spec.count_between(first, until) == walked(spec, first, until) == 8
    assert spec.count_between(until, first) == 0
    ended = Spec(cron="0/30 * * * ? *", end_ms=parse_rfc3339("2030-03-31T00:00:00Z"))
    assert ended.count_between(first, until) == 2


@pytest.mark.parametrize(("body", "field"), [
    ({}, "state"), ({"state": "STOPPED"}, "state"), ({"state": "ENDED"}, "state"), ({"state": None}, "state"),
    ({"state": "PAUSED", "payload": 1}, "payload"),
])
def test_a_patch_body_names_its_one_field_and_the_states_it_takes(body, field):
    with pytest.raises(ApiError) as refused:
        validate_state(body)
    assert (refused.value.status, refused.value.field) == (400, field)
    assert validate_state({"state": "PAUSED"}) == "PAUSED" and validate_state({"state": "ACTIVE"}) == "ACTIVE"
