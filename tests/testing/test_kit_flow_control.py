"""A limited target in the testing kit (``local_scheduler(flow_control=...)``, ``LambdaTarget(flow_control=...)``):
timers due together start one interval apart, to the millisecond on the kit's clock, the client reads the target's
waiting count, and a paused target receives nothing until it is resumed."""

from datetime import timedelta

import pytest

from cdk_delayed_scheduler.local.deliveries import LambdaTarget
from cdk_delayed_scheduler.testing import local_scheduler as run_local_scheduler

pytestmark = pytest.mark.local_scheduler(flow_control={"rate": 1, "periodSeconds": 10})
INTERVAL = timedelta(seconds=10.05)
"""One start every ten seconds: the period and the 50 ms start tolerance, over the rate."""


def test_timers_due_together_start_one_interval_apart_and_the_client_reads_those_waiting(local_scheduler):
    timers = local_scheduler.client
    due = timers.schedule(timedelta(minutes=1), {}, id="mail-0").due_at
    for n in range(1, 4):
        timers.schedule(due, {}, id=f"mail-{n}")

    local_scheduler.advance(minutes=1)
    assert len(local_scheduler.deliveries()) == 1
    assert timers.get_target("default").waiting == 3  # each holds a slot, ten seconds apart
    local_scheduler.advance(seconds=45)
    fired = sorted(delivery.envelope.fired_at - due for delivery in local_scheduler.deliveries())
    assert len(fired) == 4 and fired[0] == timedelta(0)
    assert all(later - earlier >= INTERVAL for earlier, later in zip(fired, fired[1:]))  # never two in ten seconds
    assert all(offset % INTERVAL == timedelta(0) for offset in fired)  # each at a slot, to the millisecond
    assert timers.get_target("default").waiting == 0


def test_a_new_scheduler_does_not_inherit_the_lead_an_earlier_one_learned():
    """An engine that ran before in this process (a loaded one: its writes slow) raised the process's lead, which
    asks new slots ahead of now; a new scheduler's sandboxes start from nothing learned: its first start is at its
    due time, to the millisecond."""
    from scheduler_runtime.aws import flow

    flow.Lead.ms = 500  # as an earlier engine's slow writes left it
    with run_local_scheduler(flow_control={"rate": 1, "periodSeconds": 10}) as scheduler:
        due = scheduler.client.schedule(timedelta(minutes=1), {}, id="first").due_at
        scheduler.advance(minutes=1)
        [delivery] = scheduler.deliveries()
        assert delivery.envelope.fired_at == due


def test_a_paused_target_receives_nothing_until_it_is_resumed_then_everything_that_waited(local_scheduler):
    timers = local_scheduler.client
    assert timers.pause_target("default").state == "PAUSED"
    for n in range(3):
        timers.schedule(timedelta(minutes=1), {}, id=f"held-{n}")
    local_scheduler.advance(minutes=5)
    assert local_scheduler.deliveries() == []
    assert [timers.get(f"held-{n}").status for n in range(3)] == ["QUEUED"] * 3

    timers.resume_target("default")
    local_scheduler.advance(seconds=40)  # it looks again within 5 s, then one start every ten seconds
    assert sorted(d.envelope.id for d in local_scheduler.deliveries()) == ["held-0", "held-1", "held-2"]


def test_a_named_target_takes_its_limits_from_its_lambda_target():
    with run_local_scheduler(targets={"mailer": LambdaTarget(lambda envelope, context: None,
                                                             flow_control={"maxInFlight": 1})}) as scheduler:
        target = scheduler.client.get_target("mailer")
        assert (target.flow_control, target.in_flight, target.waiting) == ({"maxInFlight": 1}, 0, None)
