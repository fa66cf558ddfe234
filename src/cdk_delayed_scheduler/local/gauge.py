"""A receiver that measures a limited target's limits where they matter, at the receiver: when each call arrived
(:func:`most_in_a_window`) and which calls were inside it at once (:func:`most_inside`). The chaos run, the engine's
flow-control test and the bench use it."""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass
from typing import Any

from .api_calls import parse_due_ms
from .deliveries import Recorder

ARRIVAL_ALLOWANCE_MS = 300
"""How much closer two arrivals at a receiver may be than their starts: a limited target's rate is counted in windows
of one period less this. The runtime starts each delivery within its 50 ms start tolerance after its slot, the slots
spaced so that no period holds more than the rate of such starts; each start then reaches the receiver after the
engine's hop (the start write to the table, the invoke through the engine's Lambda endpoint), which on a machine the
whole suite loads (moto's writes then take up to a few hundred ms, with the SDK's own retries of a throttled start
write) can bring two arrivals this much closer. A limit that did not hold (twice the rate in a period, a burst of
the whole backlog) still shows in these windows."""


@dataclass(frozen=True)
class Passage:
    """A call entering or leaving the receiver, in the order they happened: the timer's id, the call's number (one
    per call, repeats of one timer included) and when (wall clock, ms)."""

    schedule_id: str
    call: int
    entering: bool
    at_ms: int


class Gauge:
    """A receiver for a limited target, a Lambda-style handler: records each call into ``recorder`` as it arrives,
    takes ``hold_seconds``, and keeps each call's entry and exit in the order they happened (:attr:`passages`), from
    which :func:`most_inside` counts the calls inside at once."""

    def __init__(self, recorder: Recorder, hold_seconds: float) -> None:
        self.passages: list[Passage] = []
        self._recorder, self._hold = recorder, hold_seconds
        self._lock = threading.Lock()
        self._calls = itertools.count(1)

    def __call__(self, envelope: dict[str, Any], _context: Any = None) -> None:
        schedule_id = envelope["id"]
        with self._lock:
            call, arrived_ms = next(self._calls), time.time_ns() // 1_000_000
            self.passages.append(Passage(schedule_id, call, True, arrived_ms))
        try:
            self._recorder.record(envelope, arrived_ms)
            time.sleep(self._hold)  # real time: the concurrency this measures is real
        finally:
            with self._lock:
                self.passages.append(Passage(schedule_id, call, False, time.time_ns() // 1_000_000))


def arrivals(recorder: Recorder) -> list[tuple[int, str]]:
    """What ``recorder`` received, as ``(arrived_ms, id)`` in the order of arrival (for :func:`most_in_a_window`)."""
    return sorted((delivery.received_ms, delivery.envelope["id"]) for delivery in recorder.deliveries)


def starts(recorder: Recorder) -> list[tuple[int, str]]:
    """When each delivery ``recorder`` received started, as ``(started_ms, id)`` in time order: its envelope's
    ``firedAt``, the runtime's start write (each attempt its own). A rate limits these, and they carry no jitter from
    the hop to the receiver (for :func:`most_in_a_window` over a whole period)."""
    return sorted((parse_due_ms(delivery.envelope["firedAt"]), delivery.envelope["id"])
                  for delivery in recorder.deliveries)


def repeats(recorder: Recorder) -> int:
    """Deliveries ``recorder`` received beyond the first of each ``dedupeKey`` (at least once's repeats)."""
    return len(recorder.deliveries) - len({delivery.envelope["dedupeKey"] for delivery in recorder.deliveries})


def most_in_a_window(arrivals: list[tuple[int, str]], window_ms: int) -> tuple[int, list[str]]:
    """The most of ``arrivals`` (when, which timer; in the order they came) in any window of ``window_ms`` (each
    window starting at an arrival), and the timers of the first such window."""
    most, first, ids = 0, 0, []
    for last, (arrived_ms, _) in enumerate(arrivals):
        while arrived_ms - arrivals[first][0] >= window_ms:
            first += 1
        if last - first + 1 > most:
            most, ids = last - first + 1, [schedule_id for _, schedule_id in arrivals[first:last + 1]]
    return most, ids


def most_inside(passages: list[Passage]) -> tuple[int, list[str]]:
    """The most calls inside the receiver at once, replaying ``passages`` in order, and the timers of the first
    moment it was reached (the last of them the one that entered then)."""
    inside: dict[int, str] = {}
    most, ids = 0, []
    for passage in passages:
        if not passage.entering:
            inside.pop(passage.call, None)
            continue
        inside[passage.call] = passage.schedule_id
        if len(inside) > most:
            most, ids = len(inside), list(inside.values())
    return most, ids


__all__ = ["Gauge", "Passage", "arrivals", "most_in_a_window", "most_inside"]
