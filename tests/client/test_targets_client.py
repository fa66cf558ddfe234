"""Reading, pausing and resuming a target through the typed clients, sync and asyncio, against the testing kit's
engine (its clock moves only when the test advances it), over both transports: a paused target receives nothing
until ``resume_target``, then everything that waited; a target without limits reads ``ACTIVE`` with no counts and
cannot be paused; each group's limits read back in ``flow_control``, and a group's own counts with ``group``; the
errors map as every call's do."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Iterator

import pytest

from cdk_delayed_scheduler.client import (AsyncSchedulerClient, ConflictError, NotFoundError, SchedulerClient, Target,
                                          TargetState, ValidationError)
from cdk_delayed_scheduler.local.deliveries import LambdaTarget
from cdk_delayed_scheduler.local.engine import API_FUNCTION
from cdk_delayed_scheduler.testing import LocalScheduler, local_scheduler

from .async_calls import run
from .conftest import TRANSPORTS, client_for

pytestmark = pytest.mark.e2e
LIMITS = {"rate": 1, "periodSeconds": 2, "maxInFlight": 4}
"""The default target's limits; ``plain``, another target, has none."""
TENANTS = {"rate": 10, "perGroup": {"rate": 1, "maxInFlight": 2}}
"""The limits of ``tenants``, a target that also limits each of its groups."""
HELD_POLL = timedelta(seconds=5)
"""How often a delivery held back by a paused target looks again (``flow.HELD_POLL_SECONDS``)."""


@pytest.fixture(params=TRANSPORTS)
def on_the_kit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
               ) -> Iterator[tuple[LocalScheduler, SchedulerClient, str]]:
    """The testing kit's scheduler with a limited default target, a target without limits and one with per-group
    limits, a client of it over the transport, and the transport's name."""
    with local_scheduler(flow_control=LIMITS, targets={"plain": None, "tenants": LambdaTarget(flow_control=TENANTS)}
                         ) as timers:
        yield timers, client_for(request.param, timers.engine, monkeypatch), request.param


def _fields(target: Target) -> tuple[Any, ...]:
    return target.name, target.state, target.flow_control, target.waiting, target.in_flight, target.held_until


def test_a_paused_target_receives_nothing_until_resumed_then_everything_that_waited(on_the_kit) -> None:
    timers, client, _ = on_the_kit
    assert _fields(client.get_target("default")) == ("default", TargetState.ACTIVE, LIMITS, 0, 0, None)
    paused = client.pause_target("default")
    assert paused.state is TargetState.PAUSED and paused.raw["state"] == "PAUSED"
    assert _fields(client.pause_target("default")) == _fields(paused)  # again: nothing changes
    for n in range(3):
        client.schedule(timedelta(seconds=1), {"n": n}, id=f"held-{n}")
    timers.advance(seconds=12)
    assert timers.deliveries() == [] and client.get_target("default").state is TargetState.PAUSED
    resumed_at = timers.now()
    assert client.resume_target("default").state is TargetState.ACTIVE
    timers.advance(seconds=HELD_POLL.total_seconds() + 2 * 3)  # the next look, then one start every 2 s
    delivered = timers.deliveries()
    assert sorted(d.envelope.id for d in delivered) == ["held-0", "held-1", "held-2"]
    assert all(d.received_at >= resumed_at for d in delivered)


def test_a_target_without_limits_reads_active_with_no_counts_and_cannot_be_paused(on_the_kit) -> None:
    _, client, _ = on_the_kit
    assert _fields(client.get_target("plain")) == ("plain", TargetState.ACTIVE, None, None, None, None)
    with pytest.raises(ConflictError, match="has no flowControl") as refused:
        client.pause_target("plain")
    assert refused.value.field == "state"


def test_a_targets_per_group_limits_read_back_in_its_flow_control(on_the_kit) -> None:
    _, client, _ = on_the_kit
    assert _fields(client.get_target("tenants")) == ("tenants", TargetState.ACTIVE, TENANTS, 0, None, None)


def test_a_groups_own_counts_are_read_with_group_and_a_target_without_group_limits_refuses_one(on_the_kit) -> None:
    timers, client, _ = on_the_kit
    for n in range(3):
        client.schedule(timedelta(seconds=5), {"n": n}, id=f"acme-{n}", target="tenants", group="acme")
    timers.advance(seconds=6)  # due at 5 s, acme's slots a second apart: started at 5 and 6 s, one waits for 7 s
    assert len(timers.deliveries("tenants")) == 2
    acme = client.get_target("tenants", group="acme")
    assert _fields(acme) == ("tenants", TargetState.ACTIVE, TENANTS, 1, 0, None)
    assert acme.group == acme.raw["group"] == "acme"
    assert client.get_target("tenants").group is None
    with pytest.raises(ValidationError, match="perGroup") as refused:
        client.get_target("plain", group="acme")
    assert refused.value.field == "group"


def test_an_unknown_target_is_not_found_and_a_malformed_name_refused_before_sending(on_the_kit) -> None:
    _, client, _ = on_the_kit
    for call in (client.get_target, client.pause_target, client.resume_target):
        with pytest.raises(NotFoundError) as missing:
            call("nowhere")
        assert missing.value.field == "name"
        with pytest.raises(ValidationError) as malformed:
            call("no such/target")
        assert malformed.value.field == "name"


def test_the_asyncio_client_reads_pauses_and_resumes_a_target(on_the_kit, monkeypatch: pytest.MonkeyPatch) -> None:
    timers, _, transport = on_the_kit

    def make() -> AsyncSchedulerClient:
        if transport == "http":
            return AsyncSchedulerClient(timers.engine.api_url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", timers.engine.lambda_endpoint_url)
        return AsyncSchedulerClient.for_function(API_FUNCTION)

    async def calls(client: AsyncSchedulerClient) -> list[TargetState | str]:
        states = [(await client.pause_target("default")).state, (await client.get_target("default")).state,
                  (await client.resume_target("default")).state]
        with pytest.raises(ConflictError):
            await client.pause_target("plain")
        return states

    assert run(make, calls) == [TargetState.PAUSED, TargetState.PAUSED, TargetState.ACTIVE]
