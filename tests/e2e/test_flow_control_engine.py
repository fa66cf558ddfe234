"""Flow control on the local engine, end to end, measured at the receivers.

One engine, three targets, every timer due in the same second ``D``:

- the default target, limited to ``{"rate": 20, "maxInFlight": 4}`` (``EngineOptions.flow_control``), receives
  200 timers; it takes 30 ms a call, so that deliveries under way at once are real, and counts them;
- ``free``, a callable without limits, receives 20: it must not wait behind the limited target;
- ``slow``, a ``LambdaTarget`` limited to ``{"rate": 5}``, receives 60, of which the last ten still waiting for
  room just after ``D`` are cancelled: a cancel still wins while a delivery waits for room.

The dispatcher's timeout is the default (5 s, a 30 s visibility timeout): a delivery waits in the dispatcher up to a
second for its start slot and another for a place among ``maxInFlight``, which a short timeout's visibility timeout
would not cover (its message would be handed out again meanwhile).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import LambdaTarget, QueueTarget, Recorder
from cdk_delayed_scheduler.local.gauge import (ARRIVAL_ALLOWANCE_MS, Gauge, most_in_a_window,
                                              most_inside, repeats, starts)

pytestmark = pytest.mark.e2e
LIMITS = {"rate": 20, "maxInFlight": 4}
LIMITED, FREE, SLOW = 200, 20, 60
SLOW_RATE = 5
CANCELLED = 10
HOLD_SECONDS = 0.03
"""How long the limited target takes a call: 4 in flight at 30 ms could take 133 a second, so the rate binds."""
CREATE_LEAD_SECONDS = 12
"""How far ahead of their due second the 280 timers are created: a few seconds on a quiet machine, more when the whole
suite loads it (the test fails, saying so, if the creates take longer)."""
FREE_LATENESS_MS = 5000
"""The most the target without limits may be late: held back by the limited targets' backlogs, it would be up to ten
seconds late; beside them, it shares the engine's moto, which their writes (about five a limited delivery, 25
deliveries a second) keep near its cap, so its deliveries take up to a few seconds on a machine the whole suite
loads, not the tens of ms of a quiet engine; held back, they would wait out the seven seconds of backlog left."""
FREE_AFTER_SECONDS = 3
"""The target without limits has its timers due this long after the burst: while the limited targets work through
their backlogs (ten seconds and more), not in the burst's own second, whose 280 first writes the engine's moto
(about 130 conditional writes a second) takes seconds to answer whatever the limits."""
LAST_MARGIN_SECONDS = 20
"""How much later than the rate allows (200 at 20 a second: ``D`` + 10 s) the last may arrive: the burst's first
seconds, when moto answers the 280 messages' first writes slowly, and a message put back to wait that surfaces up to
a second after its slot, each delay a start by at most a few seconds; twenty bounds their sum on a loaded
machine. A rate that did not bind is seen by the windows, and by the last arriving no earlier than 199 intervals
after ``D``."""


@dataclass
class Run:
    due_ms: int
    limited: Recorder
    gauge: Gauge
    free: Recorder
    slow: Recorder
    cancelled: dict[str, tuple[str, int]]
    """Each cancelled id: its status read just before the cancel, and the cancel's HTTP status."""
    started_before_cancel: set[str]
    """Ids whose cancel was answered 409: their delivery had started."""
    final: dict[str, str]
    """The status GET answers at the end, of every slow id."""
    targets: dict
    flow_queue: tuple[str | None, str | None]
    """The engine's flow queue, and the functions' ``FLOW_QUEUE_URL``."""


def _arrivals_ms(recorder: Recorder) -> list[int]:
    return sorted(delivery.received_ms for delivery in recorder.deliveries)


@pytest.fixture(scope="module")
def run() -> Run:
    limited, free, slow = Recorder(), Recorder(), Recorder()
    gauge = Gauge(limited, HOLD_SECONDS)
    options = EngineOptions(target=gauge, flow_control=LIMITS, shard_count=1,
                            targets={"free": free, "slow": LambdaTarget(lambda envelope, context: slow(envelope),
                                                                        flow_control={"rate": SLOW_RATE})})
    with Engine(options) as engine:
        targets = json.loads(os.environ[contract.ENV.targets])
        flow_queue = (engine.flow_queue_url, os.environ.get(contract.ENV.flow_queue_url))
        api = raw_client(engine.api_url)
        due_s = math.ceil(time.time()) + CREATE_LEAD_SECONDS
        bodies = ([{"id": f"limited-{n}", "dueAt": due_s, "payload": {"n": n}} for n in range(LIMITED)]
                  + [{"id": f"free-{n}", "dueAt": due_s + FREE_AFTER_SECONDS, "payload": {"n": n}, "target": "free"}
                     for n in range(FREE)]
                  + [{"id": f"slow-{n:02d}", "dueAt": due_s, "payload": {"n": n}, "target": "slow"} for n in range(SLOW)])
        for start in range(0, len(bodies), contract.MAX_BATCH_SIZE):
            status, answer = api.raw("createScheduleBatch", {"schedules": bodies[start:start + contract.MAX_BATCH_SIZE]})
            assert status == 200 and all(result["status"] == 201 for result in answer["results"]), answer
        assert time.time() < due_s, "the creates took longer than the lead they were given"

        time.sleep(max(0.0, due_s + 1 - time.time()))  # real time: the cancels go just after the due second
        cancelled: dict[str, tuple[str, int]] = {}
        started: set[str] = set()
        arrived = set(slow.by_id())
        for schedule_id in sorted((f"slow-{n:02d}" for n in range(SLOW)), reverse=True):
            if len(cancelled) == CANCELLED:
                break
            if schedule_id in arrived:
                continue
            seen = api.raw("getSchedule", id=schedule_id).body["status"]
            status = api.raw("cancelSchedule", id=schedule_id).status
            if status == 409:  # its delivery started between the read and the cancel: not a waiting one
                started.add(schedule_id)
            else:
                cancelled[schedule_id] = (seen, status)

        every_one = ({f"limited-{n}" for n in range(LIMITED)}, {f"free-{n}" for n in range(FREE)},
                     {f"slow-{n:02d}" for n in range(SLOW)} - set(cancelled))
        for recorder, ids in zip((limited, free, slow), every_one):
            recorder.wait_for(ids, 60)  # what did not arrive is for the tests to say
        engine.wait_until_quiet(30)  # a repeat, or a cancelled one wrongly delivered, has arrived by now
        final = {f"slow-{n:02d}": api.raw("getSchedule", id=f"slow-{n:02d}").body["status"] for n in range(SLOW)}
    return Run(due_s * 1000, limited, gauge, free, slow, cancelled, started, final, targets, flow_queue)


def test_the_limits_are_rendered_in_the_targets_descriptions(run):
    assert run.targets["default"]["flowControl"] == LIMITS
    assert run.targets["slow"]["flowControl"] == {"rate": SLOW_RATE}
    assert "flowControl" not in run.targets["free"]


def test_an_engine_with_a_limited_target_has_a_flow_queue_and_tells_every_function(run):
    made, told = run.flow_queue
    assert made is not None and made.endswith("-flow") and told == made


def test_every_limited_timer_arrives_by_its_dedupe_key_none_early(run):
    """At least once: a repeat (same ``dedupeKey``) is allowed, and counted in :func:`repeats`."""
    keys = Counter(delivery.envelope["dedupeKey"] for delivery in run.limited.deliveries)
    assert {delivery.envelope["id"] for delivery in run.limited.deliveries} == {f"limited-{n}" for n in range(LIMITED)}
    assert len(keys) == LIMITED, f"{repeats(run.limited)} repeats"
    assert min(delivery.lateness_ms for delivery in run.limited.deliveries) >= 0


@pytest.mark.parametrize("target, rate", [("limited", LIMITS["rate"]), ("slow", SLOW_RATE)])
def test_at_most_rate_starts_in_any_second_window(run, target, rate):
    """Counted by the starts the deliveries arrived with (their ``firedAt``), in windows of a whole second: the
    runtime starts each within 50 ms after its slot, the slots (1 s + 50 ms) / rate apart, so ``rate`` + 1 starts
    span a second at least. At the receiver the engine's hop can bring two arrivals closer than their starts by
    more than a loaded machine's allowance; a limit that did not hold shows in the starts themselves."""
    assert most_in_a_window(starts(getattr(run, target)), 1000)[0] <= rate


def test_at_most_max_in_flight_under_way_at_once(run):
    assert most_inside(run.gauge.passages)[0] <= LIMITS["maxInFlight"]


def test_the_last_arrives_about_when_the_rate_allows(run):
    last_ms = _arrivals_ms(run.limited)[-1]
    allowed_ms = run.due_ms + 1000 * LIMITED // LIMITS["rate"]
    assert last_ms <= allowed_ms + LAST_MARGIN_SECONDS * 1000, f"{last_ms - allowed_ms} ms after what the rate allows"
    # the rate held to the end: 199 intervals after the due second
    assert last_ms >= allowed_ms - 1000 - ARRIVAL_ALLOWANCE_MS


def test_a_target_without_limits_is_not_held_back_by_a_limited_one(run):
    lateness = [delivery.lateness_ms for delivery in run.free.deliveries]
    assert len({delivery.envelope["id"] for delivery in run.free.deliveries}) == FREE
    assert 0 <= min(lateness) and max(lateness) < FREE_LATENESS_MS, sorted(lateness)


def test_a_cancel_wins_while_its_delivery_waits_for_room(run):
    assert len(run.cancelled) == CANCELLED
    assert all(seen == "QUEUED" and status == 200 for seen, status in run.cancelled.values()), run.cancelled
    assert not set(run.slow.by_id()) & set(run.cancelled)
    assert {run.final[schedule_id] for schedule_id in run.cancelled} == {"CANCELLED"}
    others = set(run.final) - set(run.cancelled)
    assert {run.final[schedule_id] for schedule_id in others} == {"FIRED"} and others <= set(run.slow.by_id())


@pytest.mark.parametrize("given, message", [
    (lambda limits: EngineOptions(flow_control=limits), r"^flow_control: rate must be a whole number, 1-100000, got 0$"),
    (lambda limits: QueueTarget(flow_control=limits), r"^flow_control: rate must be a whole number"),
    (lambda limits: LambdaTarget(flow_control=limits), r"^flow_control: rate must be a whole number"),
    (lambda limits: EngineOptions(flow_control={"maxInFlight": 5, "perGroup": limits}),
     r"^flow_control: perGroup.rate must be a whole number, 1-100000, got 0$"),
    (lambda limits: QueueTarget(flow_control={"perGroup": limits}), r"^flow_control: perGroup.rate must be a whole"),
])
def test_limits_out_of_bounds_are_refused_naming_flow_control(given, message):
    with pytest.raises(ValueError, match=message):
        given({"rate": 0})


def test_the_outcomes_target_takes_no_limits_as_the_construct_refuses_them():
    with pytest.raises(ValueError, match=r"^outcomes: the outcomes target takes no flow_control"):
        EngineOptions(outcomes=QueueTarget(flow_control={"maxInFlight": 1}))
