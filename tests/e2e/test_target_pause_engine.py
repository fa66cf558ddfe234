"""A target paused on the local engine, end to end, measured at the receiver in real time.

The default target is limited to ``{"maxInFlight": 4}`` (``EngineOptions.flow_control``) and paused through the API
before 20 timers due two seconds later are created. For :data:`PAUSED_FOR_SECONDS` past their due time the target
receives nothing, while every delivery waits in its message; then it is resumed, and all 20 arrive, each exactly
once, none before its due time or the resume.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.client import Target, TargetState
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

pytestmark = pytest.mark.e2e
LIMITS = {"maxInFlight": 4}
TIMERS = 20
LEAD_SECONDS = 2
PAUSED_FOR_SECONDS = 4
"""How long past the due time the target stays paused: real time, the point of the test (a pause that let
deliveries through would show them arriving within it)."""


@dataclass
class Run:
    due_ms: int
    paused: Target
    while_paused: list
    """What had arrived when the resume was sent."""
    read_while_paused: Target
    resumed_ms: int
    """When the resume was sent."""
    resumed: Target
    recorder: Recorder


@pytest.fixture(scope="module")
def run() -> Run:
    recorder = Recorder()
    with Engine(EngineOptions(target=recorder, flow_control=LIMITS, shard_count=1)) as engine:
        api = raw_client(engine.api_url)
        paused = api.pause_target(contract.DEFAULT_TARGET_NAME)
        due_s = math.ceil(time.time()) + LEAD_SECONDS
        bodies = [{"id": f"paused-{n:02d}", "dueAt": due_s, "payload": {"n": n}} for n in range(TIMERS)]
        for start in range(0, TIMERS, contract.MAX_BATCH_SIZE):
            status, answer = api.raw("createScheduleBatch", {"schedules": bodies[start:start + contract.MAX_BATCH_SIZE]})
            assert status == 200 and all(result["status"] == 201 for result in answer["results"]), answer
        time.sleep(max(0.0, due_s + PAUSED_FOR_SECONDS - time.time()))  # real time: nothing may arrive meanwhile
        while_paused = list(recorder.deliveries)
        read_while_paused = api.get_target(contract.DEFAULT_TARGET_NAME)
        resumed_ms = time.time_ns() // 1_000_000
        resumed = api.resume_target(contract.DEFAULT_TARGET_NAME)
        recorder.wait_for({body["id"] for body in bodies}, 10)  # what did not arrive is for the tests to say
        engine.wait_until_quiet(10)  # a repeat has arrived by now
    return Run(due_s * 1000, paused, while_paused, read_while_paused, resumed_ms, resumed, recorder)


def test_the_pause_and_the_resume_answer_the_state_they_wrote(run):
    assert (run.paused.state, run.paused.flow_control, run.paused.in_flight) == (TargetState.PAUSED, LIMITS, 0)
    assert run.read_while_paused.state is TargetState.PAUSED and run.read_while_paused.waiting is None
    assert run.resumed.state is TargetState.ACTIVE


def test_nothing_arrives_while_the_target_is_paused(run):
    assert run.while_paused == []


def test_after_the_resume_every_timer_arrives_exactly_once_none_early(run):
    deliveries = run.recorder.deliveries
    assert Counter(d.envelope["id"] for d in deliveries) == Counter({f"paused-{n:02d}": 1 for n in range(TIMERS)})
    assert len({d.envelope["dedupeKey"] for d in deliveries}) == TIMERS
    assert min(d.received_ms for d in deliveries) >= run.resumed_ms
    assert min(d.lateness_ms for d in deliveries) >= 0
