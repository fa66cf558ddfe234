"""The runtime's one clock: every module reads the time and waits through a :class:`Clock` it is given.

A handler's :class:`~scheduler_runtime.aws.context.Context` carries one (``ctx.clock``), and the stores and
services that read the time or wait take it from there, as an argument or a constructor parameter;
``core`` takes ``now`` as an argument and reads no clock at all. This module is the only one that reads
the wall clock.

Every context reads :data:`PROCESS` unless it was given a clock of its own: the real clock (:data:`REAL`),
until :func:`use` sets another for the whole process (the testing kit's simulated clock, or a
:class:`VirtualClock`, for instance).
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """The time, in epoch milliseconds."""

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock."""


class RealClock:
    """The wall clock: what the runtime reads in AWS."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


REAL = RealClock()
"""The wall clock. Named outside this module only where a peer reads real time (a webhook receiver
checks its signature's timestamp against its own clock)."""


class ProcessClock:
    """The clock :func:`use` set for this process (the real one until then), read at each call."""

    def __init__(self) -> None:
        self._clock: Clock = REAL

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def sleep(self, seconds: float) -> None:
        self._clock.sleep(seconds)


PROCESS = ProcessClock()
"""Every context's clock unless it was given its own."""


class VirtualClock:
    """Time that moves only when it is told to (:meth:`move_to`, :meth:`advance`) or when something sleeps on
    it: a sleep never waits, it moves the clock at once. Tests set it with :func:`use` to run the runtime's
    waits (a remainder before a due time, a settle, a backoff) in no time, at exact instants.

    A sleep ends ``seconds`` after the instant its thread last read (or woke at), unless the clock is past
    that already: threads that each wait for their own instant, as a dispatcher's batch does, wake at their
    instants, not one after another. The clock never moves back.
    """

    def __init__(self, now_ms: int) -> None:
        self._now_ms = now_ms
        self._lock = threading.Lock()
        self._seen = threading.local()

    def now_ms(self) -> int:
        with self._lock:
            self._seen.ms = self._now_ms
            return self._now_ms

    @property
    def at_ms(self) -> int:
        """The time, as a peer reads it (a mocked service that shares this clock): a sleep does not count from it."""
        return self._now_ms

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        with self._lock:
            woken = getattr(self._seen, "ms", self._now_ms) + round(seconds * 1000)
            self._now_ms = self._seen.ms = max(self._now_ms, woken)

    def move_to(self, instant_ms: int) -> None:
        """Move the clock to ``instant_ms``; refused (ValueError) before the clock's time."""
        with self._lock:
            if instant_ms < self._now_ms:
                raise ValueError(f"a virtual clock never moves back: {instant_ms} is before {self._now_ms}")
            self._now_ms = self._seen.ms = instant_ms

    def advance(self, seconds: float) -> int:
        """Move the clock ``seconds`` forward; answers the new time (epoch ms)."""
        if seconds < 0:
            raise ValueError("a virtual clock never moves back")
        with self._lock:
            self._now_ms = self._seen.ms = self._now_ms + round(seconds * 1000)
            return self._now_ms


def use(clock: Clock | None) -> None:
    """Set the clock every handler and context of this process reads (``None``: the real clock again).

    The testing kit (and the local engine, should it want a virtual clock) calls this; a deployed
    function never does, so it reads the real clock.
    """
    PROCESS._clock = REAL if clock is None else clock  # noqa: SLF001 - this module's own


def in_use() -> Clock:
    """The clock :func:`use` set last: the real one unless something set another."""
    return PROCESS._clock  # noqa: SLF001 - this module's own


def wait_until(clock: Clock, instant_ms: int) -> None:
    """Wait until ``instant_ms`` (epoch ms) has passed on ``clock``: a sleep may end a hair early."""
    left_ms = instant_ms - clock.now_ms()
    if left_ms > 0:
        clock.sleep(left_ms / 1000)
    while clock.now_ms() < instant_ms:
        clock.sleep(0.001)


__all__ = ["PROCESS", "REAL", "Clock", "ProcessClock", "RealClock", "VirtualClock", "in_use", "use", "wait_until"]
