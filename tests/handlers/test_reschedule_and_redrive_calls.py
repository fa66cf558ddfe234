"""The AWS requests a reschedule and a redrive make, recorded as botocore sends them, on in-process moto through the
api and dispatcher handlers and the operator's redrive: exactly the ones ``bench/operation_costs.py`` prices in
docs/benchmarks.md, in the reschedule's order (the fixture's window is 60 s)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import pytest

from bench.operation_costs import (REDRIVE_BATCH, REDRIVE_RUN_END, REDRIVE_TEN, RESCHEDULE_EXTRAS, RESCHEDULES,
                                   STRAY_DROP)

from .aws_calls import aws_calls
from .dispatching import dispatch_all
from .redriving import park, run
from .rescheduling import create, patch

pytestmark = pytest.mark.usefixtures("virtual_clock")

WITHIN, BEYOND = 40, 7200
"""A new due time's delay: within the window (and past the announce's bound), beyond it."""

Body = Callable[[dict], dict]
SETUPS: dict[str, tuple[float, Body]] = {
    "from QUEUED to a due time within the window": (30, lambda _: {"delaySeconds": WITHIN}),
    "from QUEUED to a due time beyond the window": (30, lambda _: {"delaySeconds": BEYOND}),
    "from SCHEDULED to a due time within the window": (3600, lambda _: {"delaySeconds": WITHIN}),
    "from SCHEDULED to a due time beyond the window": (3600, lambda _: {"delaySeconds": BEYOND}),
    "to a new payload at the same due time": (3600, lambda created: {"dueAt": created["dueAt"], "payload": "new"}),
}
"""Each priced case: the created schedule's delay, and the PATCH body (from the create's answer)."""


def reschedule_calls(schedule_id: str, created_in_s: float, body: Body, **create_extra: Any) -> list[str]:
    """The requests of one PATCH of a schedule created ``created_in_s`` ahead."""
    created = create(schedule_id, created_in_s, **create_extra)
    with aws_calls() as made:
        status, _ = patch(schedule_id, body(created))
    assert status == 200
    return made


def test_every_priced_reschedule_case_is_counted_here():
    assert set(SETUPS) == set(RESCHEDULES)


@pytest.mark.parametrize("case", list(RESCHEDULES))
def test_a_reschedule_makes_exactly_the_priced_requests_in_order(aws, case):
    assert reschedule_calls("r", *SETUPS[case]) == list(RESCHEDULES[case])


def test_a_new_due_time_that_may_surface_before_the_update_adds_one_write_and_a_group_one_read(aws):
    announce, group_read = RESCHEDULE_EXTRAS.values()
    soon = reschedule_calls("soon", 30, lambda _: {"delaySeconds": 5})
    assert Counter(soon) == Counter(RESCHEDULES["from QUEUED to a due time within the window"]) + Counter(announce)
    in_group = reschedule_calls("member", 3600, lambda _: {"delaySeconds": BEYOND}, group="g1")
    assert Counter(in_group) == Counter(RESCHEDULES["from SCHEDULED to a due time beyond the window"]) + Counter(
        group_read)


def test_the_old_message_a_reschedule_from_queued_leaves_costs_the_dispatcher_one_refused_write(aws):
    create("moved", 0)  # its message surfaces at once
    assert patch("moved", {"delaySeconds": WITHIN})[0] == 200
    with aws_calls() as made:
        assert dispatch_all(aws) == []
    assert made == list(STRAY_DROP)


def test_a_redrive_of_a_full_batch_reads_and_rearms_each_delivery_and_receives_sends_and_deletes_once(aws):
    for n in range(REDRIVE_BATCH):
        park(aws, f"parked-{n}")
    with aws_calls() as made:
        report = run(aws)
    assert len(report.moved) == REDRIVE_BATCH and report.skipped == []
    assert Counter(made) == REDRIVE_TEN + REDRIVE_RUN_END
