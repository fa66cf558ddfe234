"""Per-group limits on the local engine, end to end, measured at the receivers.

One limit set cannot make a rate and a cap bind at once, so one engine has two targets, every timer due in the same
second ``D``, each loaded so that the limits checked on it bind (without each, its receiver would see more):

- the default target, bound by rates (:data:`RATE_LIMITS`, calls of :data:`HOLD_SECONDS`): group ``big``, 40
  timers; groups ``small-1`` .. ``small-4``, 5 each; 8 timers without a group, held to the target's limits alone;
- ``long``, a named target bound by caps (:data:`IN_FLIGHT_LIMITS`, calls of :data:`LONG_HOLD_SECONDS`): group
  ``long-1``, 14 timers; ``long-2`` and ``long-3``, 6 each.

Each receiver (:class:`~cdk_delayed_scheduler.local.gauge.Gauge`) holds each call, so that calls inside it at once
are real. Each id names its group (``big-07``, ``small-2-03``, ``none-04``, ``long-1-05``), so arrivals and passages
split by group by id. Each cap is also seen reached, not only never exceeded: that many calls inside at once. A rate
is not: a window holding the full rate needs its starts at their slots to the end, which a loaded machine does not
keep (late starts take new slots, leaving the missed ones empty).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import LambdaTarget, Recorder
from cdk_delayed_scheduler.local.gauge import (ARRIVAL_ALLOWANCE_MS, Gauge, Passage, arrivals, most_in_a_window,
                                              most_inside, repeats)


pytestmark = pytest.mark.e2e
GROUP_RATE = {"rate": 4}
RATE_LIMITS = {"rate": 12, "perGroup": GROUP_RATE}
"""The default target's. Five groups at 4 a second demand 20, and the 8 without a group come at once: the target's
12 binds from ``D`` until the backlog they make is worked off (some twenty starts past the small groups' last group
slot, about three seconds); the big group then goes on alone, demanding 4 of the 12, and its own rate binds. Without
the target's rate the receiver would see the groups' 20 a second and the burst; without a group's, a group would
take the target's 12. Calls of 30 ms at that pace leave the receiver all but idle: only the rates bind."""
GROUP_CAPS = {"maxInFlight": 2, "rate": 10}
IN_FLIGHT_LIMITS = {"maxInFlight": 3, "perGroup": GROUP_CAPS}
"""``long``'s. A group's rate (a start each 105 ms) and calls of :data:`LONG_HOLD_SECONDS` would put four of a group
inside at once and twelve of the three groups: both caps bind (the groups' 2 each make 6, over the target's 3).
``long-1`` has more timers than the others together, so it goes on alone at the end, when only its own cap binds."""
HOLD_SECONDS = 0.03
"""How long the default target takes a call: at its 12 a second, calls that short leave it all but idle."""
LONG_HOLD_SECONDS = 0.4
RATE_TARGET, IN_FLIGHT_TARGET = "default", "long"
BIG = "big"
SMALL = [f"small-{n}" for n in range(1, 5)]
LONG = [f"long-{n}" for n in range(1, 4)]
NO_GROUP = "none"
"""How the ids of the timers without a group begin (not a group: they are created without one)."""
TIMERS = {RATE_TARGET: {BIG: 40, **{group: 5 for group in SMALL}, NO_GROUP: 8},
          IN_FLIGHT_TARGET: {LONG[0]: 14, LONG[1]: 6, LONG[2]: 6}}
CREATE_LEAD_SECONDS = 8
"""How far ahead of their due second the 94 timers are created: a third of the engine's flow-control test's 280, for
which twelve seconds cover a machine the whole suite loads (the test fails, saying so, if the creates take longer)."""
SMALL_AHEAD_SECONDS = 4
"""How long before the big group's last each small group's last must arrive. At their group's rate a small group
needs four group intervals after ``D``, and behind the target's backlog about three seconds in all; the big group
needs 39 (over ten seconds), its slots taken from ``D`` on. Held behind the big one, a small group would end about
when it ends. Four seconds leaves the small groups three seconds of delay beyond any of the big group's (moto
answering the burst's first writes slowly, a delivery put back to wait surfacing up to a second after its slot); a
loaded machine slows the big group more than the small ones (its late starts leave group slots empty)."""


def group_of(schedule_id: str) -> str:
    """The group an id names (:data:`NO_GROUP` for a timer without one): all of it but its number."""
    return schedule_id.rsplit("-", 1)[0]


def ids_of(target: str) -> set[str]:
    return {f"{group}-{n:02d}" for group, count in TIMERS[target].items() for n in range(count)}


@dataclass
class Receiver:
    """One target's receiver: what arrived, and the calls inside it."""

    recorder: Recorder
    gauge: Gauge

    @classmethod
    def holding(cls, hold_seconds: float) -> "Receiver":
        recorder = Recorder()
        return cls(recorder, Gauge(recorder, hold_seconds))

    def arrivals_of(self, group: str) -> list[tuple[int, str]]:
        """The group's arrivals, ``(arrived_ms, id)`` in the order they came."""
        return [arrival for arrival in arrivals(self.recorder) if group_of(arrival[1]) == group]

    def passages_of(self, group: str) -> list[Passage]:
        return [passage for passage in self.gauge.passages if group_of(passage.schedule_id) == group]

    def last_ms(self, group: str) -> int:
        return self.arrivals_of(group)[-1][0]


@dataclass
class Run:
    due_ms: int
    receivers: dict[str, Receiver]
    """By target."""


def bodies(target: str, due_s: int) -> list[dict]:
    named = {} if target == RATE_TARGET else {"target": target}
    return [{"id": f"{group}-{n:02d}", "dueAt": due_s, "payload": {"group": group, "n": n}, **named,
             **({} if group == NO_GROUP else {"group": group})}
            for group, count in TIMERS[target].items() for n in range(count)]


@pytest.fixture(scope="module")
def run() -> Run:
    receivers = {RATE_TARGET: Receiver.holding(HOLD_SECONDS), IN_FLIGHT_TARGET: Receiver.holding(LONG_HOLD_SECONDS)}
    options = EngineOptions(target=receivers[RATE_TARGET].gauge, flow_control=RATE_LIMITS, shard_count=1,
                            targets={IN_FLIGHT_TARGET: LambdaTarget(receivers[IN_FLIGHT_TARGET].gauge,
                                                                    flow_control=IN_FLIGHT_LIMITS)})
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        due_s = math.ceil(time.time()) + CREATE_LEAD_SECONDS
        every_body = [body for target in TIMERS for body in bodies(target, due_s)]
        for start in range(0, len(every_body), contract.MAX_BATCH_SIZE):
            batch = every_body[start:start + contract.MAX_BATCH_SIZE]
            status, answer = api.raw("createScheduleBatch", {"schedules": batch})
            assert status == 200 and all(result["status"] == 201 for result in answer["results"]), answer
        assert time.time() < due_s, "the creates took longer than the lead they were given"
        for target, receiver in receivers.items():
            receiver.recorder.wait_for(ids_of(target), 60)  # what did not arrive is for the tests to say
        engine.wait_until_quiet(30)  # a repeat has arrived by now
    return Run(due_s * 1000, receivers)


@pytest.mark.parametrize("target", TIMERS)
def test_every_timer_arrives_once_by_its_dedupe_key_none_early(run, target):
    """At least once: a repeat (same ``dedupeKey``) is allowed, and counted in the message."""
    recorder = run.receivers[target].recorder
    keys = Counter(delivery.envelope["dedupeKey"] for delivery in recorder.deliveries)
    assert set(recorder.by_id()) == ids_of(target)
    assert len(keys) == len(ids_of(target)), f"{repeats(recorder)} repeats"
    assert min(delivery.lateness_ms for delivery in recorder.deliveries) >= 0


def most_starts(arrivals_seen: list[tuple[int, str]]) -> int:
    """The most arrivals in any window of one second less :data:`ARRIVAL_ALLOWANCE_MS`, as the engine's flow-control test counts
    a rate, for the jitter between a start and its arrival."""
    return most_in_a_window(arrivals_seen, 1000 - ARRIVAL_ALLOWANCE_MS)[0]


def test_each_group_starts_at_most_its_rate_in_any_second_window(run):
    receiver = run.receivers[RATE_TARGET]
    most = {group: most_starts(receiver.arrivals_of(group)) for group in [BIG, *SMALL]}
    assert max(most.values()) <= GROUP_RATE["rate"], most


def test_the_target_starts_at_most_its_rate_in_any_second_window_over_all_groups(run):
    assert most_starts(arrivals(run.receivers[RATE_TARGET].recorder)) <= RATE_LIMITS["rate"]


def test_a_group_has_at_most_its_max_in_flight_under_way_at_once_and_one_reaches_it(run):
    receiver = run.receivers[IN_FLIGHT_TARGET]
    most = {group: most_inside(receiver.passages_of(group))[0] for group in LONG}
    assert max(most.values()) == GROUP_CAPS["maxInFlight"], most


def test_the_target_has_at_most_its_max_in_flight_under_way_at_once_over_all_groups_and_reaches_it(run):
    assert most_inside(run.receivers[IN_FLIGHT_TARGET].gauge.passages)[0] == IN_FLIGHT_LIMITS["maxInFlight"]


def test_the_small_groups_are_not_held_behind_the_big_one(run):
    receiver = run.receivers[RATE_TARGET]
    big_last_ms = receiver.last_ms(BIG)
    ahead = {group: (big_last_ms - receiver.last_ms(group)) / 1000 for group in SMALL}
    assert min(ahead.values()) >= SMALL_AHEAD_SECONDS, f"seconds before the big group's last: {ahead}"


def test_the_big_groups_last_arrives_no_earlier_than_its_rate_allows(run):
    """39 group intervals after ``D`` (one period over the rate each), less :data:`ARRIVAL_ALLOWANCE_MS`: its rate held to the
    end."""
    allowed_ms = run.due_ms + (TIMERS[RATE_TARGET][BIG] - 1) * 1000 // GROUP_RATE["rate"]
    last_ms = run.receivers[RATE_TARGET].last_ms(BIG)
    assert last_ms >= allowed_ms - ARRIVAL_ALLOWANCE_MS, f"{allowed_ms - last_ms} ms before the rate allows"
