"""The kit's clock and its one moto child per process.

The clock starts at the real time the scheduler starts at and stands still until a test advances it. It is
applied in two places and nowhere else: the runtime's clock in this process (set with
:func:`scheduler_runtime.clock.use`, the one call every handler's context reads through), and SQS's clock in
the kit's moto child (:mod:`cdk_delayed_scheduler.local.moto_clock`). The runtime's "never early" rule
compares each due time with the same clock. Both are set by the kit alone, and put back when its scheduler
stops.
"""

from __future__ import annotations

import atexit
import heapq
import threading
import urllib.request
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..local.moto_process import MotoProcess


class KitClock:
    """The kit's clock: an instant that stands still until :meth:`move_to` moves it (``advance`` does, from one due
    instant to the next) or the runtime waits on it; while installed, the runtime's clock in this process and
    SQS's in the kit's moto child. A :class:`scheduler_runtime.clock.Clock`.

    A wait of the runtime (a sub-second remainder before a due time, a settle, a backoff) never waits in real
    time: it moves the clock to the instant it ends, counted from the instant its thread last read. Waits that
    overlap end in the order of their instants: a thread whose instant comes later waits, in real time, for the
    ones before it, so each wakes at its own instant (as the threads of a dispatcher's batch do).
    """

    def __init__(self, moto_endpoint: str, start_ms: int) -> None:
        self._moto_endpoint = moto_endpoint
        self.started_ms = start_ms
        """Where the clock started: the real time the scheduler started at."""
        self._at_ms = start_ms
        self._changed = threading.Condition()
        self._wakes: list[int] = []  # a heap: the instants the runtime's waits end at
        self._seen = threading.local()
        self._installed = False

    def now_ms(self) -> int:
        at_ms = self._at_ms
        self._seen.ms = at_ms
        return at_ms

    def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        with self._changed:
            wake_ms = getattr(self._seen, "ms", self._at_ms) + round(seconds * 1000)
            heapq.heappush(self._wakes, wake_ms)
            try:
                while self._at_ms < wake_ms and self._wakes[0] < wake_ms:
                    self._changed.wait()
            finally:
                self._wakes.remove(wake_ms)
                heapq.heapify(self._wakes)
            self._move(wake_ms)
            self._seen.ms = self._at_ms

    def tick(self) -> None:
        """One millisecond later: a call to the API takes that much, so that what a test does call after call
        happens in that order on the clock, as with a real one."""
        with self._changed:
            self._move(self._at_ms + 1)

    def move_to(self, instant_ms: int) -> None:
        """Move the clock forward to ``instant_ms`` (never back): in this process and in moto at once."""
        with self._changed:
            self._move(instant_ms)

    def _move(self, instant_ms: int) -> None:
        if instant_ms > self._at_ms:
            # This process's first: a message that SQS releases on the new clock is then never judged by
            # the runtime on the old one.
            self._at_ms = instant_ms
            self._moto_clock(instant_ms)
        self._changed.notify_all()

    def waiting(self, timer_prefix: str | None = None) -> dict[str, Any]:
        """What waits for the clock in moto: every SQS message not receivable yet, with when it will be, and
        with ``timer_prefix``, the earliest timer item of each partition whose key starts with it (see
        ``moto_clock``)."""
        return self._moto_clock(messages=True, timers=timer_prefix)

    def queue_counts(self, *queue_names: str) -> tuple[int, int]:
        """The messages of ``queue_names`` that a receive would get now, and how many their receives answered since
        the clock was installed, in moto (one request): each summed over the queues."""
        answer = self._moto_clock()
        return (sum(answer["receivable"].get(name, 0) for name in queue_names),
                sum(answer["handedOut"].get(name, 0) for name in queue_names))

    def install(self, *waiting_queues: str) -> None:
        """Make this the clock every handler and context of this process reads, and SQS's in moto; the messages of
        ``waiting_queues`` (the delayer queue, and the flow queue) are receivable at their due time (see
        ``moto_clock``)."""
        from scheduler_runtime import clock  # noqa: PLC0415 - importable once the engine started

        self._moto_clock(real=True)  # the instant a scheduler before this one left there is no floor
        self._moto_clock(self._at_ms, hold_until_due=waiting_queues)
        clock.use(self)
        self._installed = True

    def end_long_polls(self) -> None:
        """Answer every long poll under way in moto at once: the engine stopping need not wait them out."""
        self._moto_clock(end_long_polls=True)

    def uninstall(self) -> None:
        """The real clock again, in this process and in moto."""
        if self._installed:
            from scheduler_runtime import clock  # noqa: PLC0415

            clock.use(None)
            self._installed = False
        self._moto_clock(real=True)

    def _moto_clock(self, at_ms: int | None = None, *, messages: bool = False, timers: str | None = None,
                    real: bool = False, hold_until_due: tuple[str, ...] = (), end_long_polls: bool = False
                    ) -> dict[str, Any]:
        from ..local.moto_clock import moto_clock  # noqa: PLC0415

        return moto_clock(self._moto_endpoint, at_ms, messages=messages, timers=timers, real=real,
                          hold_until_due=hold_until_due, end_long_polls=end_long_polls)


class SharedMoto:
    """One moto child (with the test-only clock) for every scheduler the kit starts in this process;
    each start resets it to an empty account."""

    _lock = threading.Lock()
    _process: MotoProcess | None = None

    @classmethod
    def fresh_endpoint(cls) -> str:
        """The shared moto's endpoint, started on first use, reset to an empty account."""
        with cls._lock:
            if cls._process is None:
                from ..local.moto_process import MotoProcess  # noqa: PLC0415 - moto only once a kit is used

                process = MotoProcess(clock=True)
                process.start()
                cls._process = process
                atexit.register(cls.stop)
            endpoint = cls._process.endpoint_url
        request = urllib.request.Request(f"{endpoint}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        return endpoint

    @classmethod
    def stop(cls) -> None:
        with cls._lock:
            process, cls._process = cls._process, None
        if process is not None:
            process.stop()
