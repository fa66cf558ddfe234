"""The runtime's one clock: every module reads the time and waits through a :class:`Clock` it is given.

A handler's :class:`~scheduler_runtime.aws.context.Context` carries one (``ctx.clock``), and the stores and
services that read the time or wait take it from there, as an argument or a constructor parameter;
``core`` takes ``now`` as an argument and reads no clock at all. This module is the only one that reads
the wall clock.

Every context reads :data:`PROCESS` unless it was given a clock of its own: the real clock (:data:`REAL`),
until :func:`use` sets another for the whole process (the testing kit's simulated clock, for one).
"""

from __future__ import annotations

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


__all__ = ["PROCESS", "REAL", "Clock", "ProcessClock", "RealClock", "in_use", "use", "wait_until"]
