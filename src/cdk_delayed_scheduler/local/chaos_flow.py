"""The chaos run's limited target (see :mod:`.chaos`): a share of its one-shot timers, due in one burst, go to a
target limited to :data:`LIMITS`, whose receiver records when each call arrived and which calls were inside it at
once; :func:`check_flow` holds the limits there, under every fault kind.

The target is a :class:`~.deliveries.LambdaTarget` of the engine's (``targets.LambdaInvoke`` with ``flow_control``
when deployed), so every fault kind reaches its deliveries: the table's writes of its slots and places throttled or
their answers lost, the invoke throttled (tried again at once; three throttles in a row are the target saying slow
down, and the runtime holds it back whole) or its answer lost, the function failing or timing out, and the
dispatcher throttled, or dying mid-delivery (once its place is taken, the place stays held until its lease ends,
a visibility timeout later, and the message comes back then). Its receiver (:class:`~.gauge.Gauge`) takes
:data:`HOLD_SECONDS` a call. Once the run has settled, :func:`check_flow` holds at the receiver:

- **the rate**: at most ``rate`` arrivals in any window of one period less
  :data:`~.gauge.ARRIVAL_ALLOWANCE_MS`, every arrival counted (a retry, or a repeat after a dispatcher died, takes a
  slot of its own);
- **the places**: never more than ``maxInFlight`` calls inside at once, whatever died holding a place;

and reports the figures (:class:`FlowFigures`): the most arrivals in a window and inside at once, how long the burst
took to arrive against what the rate allows, and how often its deliveries waited for room or held the target back.
That every timer to it is delivered, cancelled or parked with its reason, and none early, is
:func:`.chaos_checks.check_one_shots`'s, as for every other timer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from .gauge import ARRIVAL_ALLOWANCE_MS, Passage, most_in_a_window, most_inside


LIMITED = "limited"
"""The limited target, as a schedule's ``target`` names it."""
RATE, MAX_IN_FLIGHT, PERIOD_SECONDS = 20, 3, 1
LIMITS = {"rate": RATE, "maxInFlight": MAX_IN_FLIGHT}
HOLD_SECONDS = 0.05
"""How long the receiver takes a call (real time: the calls inside at once are real ones). A delivery holds its place
from a lead before its slot (20-500 ms) through the start write, the invoke, this call and the write that gives the
place back: some 150 ms on a quiet machine, more on a loaded one, so that at the rate (a start every 52.5 ms) about
``maxInFlight`` places are held at once, and both limits bind."""
WINDOW_MS = PERIOD_SECONDS * 1000 - ARRIVAL_ALLOWANCE_MS
"""The windows the rate is counted in (:data:`~.gauge.ARRIVAL_ALLOWANCE_MS`, as every receiver counts)."""
INTERVAL_SECONDS = (PERIOD_SECONDS + 0.05) / RATE
"""The runtime's spacing of two starts: a period and the 50 ms start tolerance over the rate."""


@dataclass
class FlowFigures:
    """What the limited target's receiver saw, in the report's text and ``--json``."""

    rate: int = RATE
    max_in_flight: int = MAX_IN_FLIGHT
    window_ms: int = WINDOW_MS
    burst: int = 0
    """The timers due in the burst (a tenth of them cancelled while they wait)."""
    arrivals: int = 0
    """Calls the receiver got, retries and repeats included."""
    most_in_a_window: int = 0
    most_in_flight: int = 0
    burst_half_seconds: float = 0.0
    """From the burst's first due time until half of its timers delivered had arrived (each its first arrival)."""
    burst_seconds: float = 0.0
    """From the burst's first due time until the last of its timers delivered had arrived."""
    rate_allows_seconds: float = 0.0
    """The least that can take: the burst's timers delivered, one interval ((period + 50 ms) / rate) apart."""
    waited_for_room: int = 0
    """Times its deliveries were sent back to the delayer queue to wait for a slot or a place."""
    held_back: int = 0
    """Times the target said slow down (a throttled invoke) and was held back."""

    def line(self) -> str:
        per_timer = self.waited_for_room / self.burst if self.burst else 0.0
        return (f"limited target ({self.rate} a {PERIOD_SECONDS}s, {self.max_in_flight} in flight): {self.arrivals} "
                f"arrivals, at most {self.most_in_a_window} in {self.window_ms} ms and {self.most_in_flight} inside at "
                f"once; burst of {self.burst}: half arrived in {self.burst_half_seconds:.1f}s, all in "
                f"{self.burst_seconds:.1f}s (the rate allows {self.rate_allows_seconds:.1f}s); waited for room "
                f"{self.waited_for_room} ({per_timer:.1f} a timer), held back {self.held_back}")


def check_flow(violations: list[str], passages: list[Passage], burst_due_ms: Mapping[str, int],
               first_arrivals_ms: Mapping[str, int], waited_for_room: int, held_back: int) -> FlowFigures:
    """Hold the limits at the receiver (its ``passages``), adding to ``violations``, and answer the figures for the
    report: ``burst_due_ms``, each burst
    timer's due time; ``first_arrivals_ms``, when each one delivered first arrived; the times its deliveries waited
    for room and held the target back. A limit broken is a violation named by the timer whose call broke it."""
    arrivals = [(p.at_ms, p.schedule_id) for p in passages if p.entering]
    most, window_ids = most_in_a_window(arrivals, WINDOW_MS)
    inside, inside_ids = most_inside(passages)
    delivered = sorted(first_arrivals_ms[i] for i in burst_due_ms if i in first_arrivals_ms)
    figures = FlowFigures(burst=len(burst_due_ms), arrivals=len(arrivals), most_in_a_window=most,
                          most_in_flight=inside, waited_for_room=waited_for_room, held_back=held_back,
                          rate_allows_seconds=round(len(delivered) * INTERVAL_SECONDS, 1))
    if delivered:
        began_ms = min(burst_due_ms.values())
        figures.burst_half_seconds = round((delivered[(len(delivered) - 1) // 2] - began_ms) / 1000, 1)
        figures.burst_seconds = round((delivered[-1] - began_ms) / 1000, 1)
    if most > RATE:
        violations.append(f"{window_ids[-1]}: the {most}th arrival at target {LIMITED} within {WINDOW_MS} ms "
                          f"(rate {RATE} a {PERIOD_SECONDS}s; the window from {window_ids[0]})")
    if inside > MAX_IN_FLIGHT:
        violations.append(f"{inside_ids[-1]}: the {inside}th call inside target {LIMITED} at once "
                          f"(maxInFlight {MAX_IN_FLIGHT}; with {', '.join(inside_ids[:-1])})")
    return figures
