"""The discrete-event core: an event loop on ``heapq``, a token bucket and a single FIFO server.

Nothing here knows about AWS: :mod:`bench.scale.pipeline` builds the pipeline out of these parts.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Callable


class Sim:
    """Events are ``(time, seq, callback)``; callbacks schedule further events. Time is in seconds."""

    def __init__(self) -> None:
        self.now = 0.0
        self._heap: list = []
        self._seq = itertools.count()
        self.events = 0

    def at(self, t: float, fn: Callable[[], None]) -> None:
        heapq.heappush(self._heap, (max(t, self.now), next(self._seq), fn))

    def after(self, dt: float, fn: Callable[[], None]) -> None:
        self.at(self.now + dt, fn)

    def run(self, until: float = float("inf")) -> None:
        heap = self._heap
        while heap and heap[0][0] <= until:
            t, _, fn = heapq.heappop(heap)
            self.now = t
            self.events += 1
            fn()


class Bucket:
    """A token bucket as a virtual schedule (GCRA): ``rate`` tokens a second, ``burst`` stored at most.

    :meth:`take` answers when ``n`` tokens asked for at ``t`` are granted: ``t`` itself when the
    bucket holds them, later when it does not (the request was throttled and retried until
    granted; :attr:`throttled` counts such requests). A rate of ``inf`` never throttles.
    """

    def __init__(self, rate: float, burst: float | None = None) -> None:
        self.rate = rate
        self.burst = rate if burst is None else burst  # one second's worth unless stated
        self._tat = 0.0  # the time at which the bucket is full again
        self.throttled = 0
        self.granted = 0.0

    def take(self, t: float, n: float = 1.0) -> float:
        self.granted += n
        if self.rate == float("inf"):
            return t
        step = n / self.rate
        start = max(t, self._tat + step - self.burst / self.rate)
        self._tat = max(self._tat, t) + step
        if start > t + 1e-12:
            self.throttled += 1
        return start


    def set_rate(self, t: float, rate: float) -> None:
        """From ``t`` on, ``rate`` tokens a second (and one second's worth stored at most, as the constructor's
        default): what is owed at ``t`` is paid at the new rate."""
        owed = max(0.0, self._tat - t) * self.rate
        self.rate = self.burst = rate
        self._tat = t + owed / rate

    def admit(self, t: float, n: float = 1.0) -> bool:
        """Grant ``n`` tokens at ``t`` if the bucket holds them; else refuse (counted), taking nothing."""
        if self.rate == float("inf"):
            return True
        step = n / self.rate
        if max(t, self._tat + step - self.burst / self.rate) > t + 1e-12:
            self.throttled += 1
            return False
        self._tat = max(self._tat, t) + step
        self.granted += n
        return True


class Server:
    """One FIFO server (a single process answering calls one at a time): each call takes its service time."""

    def __init__(self) -> None:
        self.free_at = 0.0
        self.busy_s = 0.0
        self.calls = 0

    def call(self, t: float, service_s: float) -> float:
        start = max(t, self.free_at)
        self.free_at = start + service_s
        self.busy_s += service_s
        self.calls += 1
        return self.free_at


def percentile(sorted_xs: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list (``q`` in 0-100)."""
    if not sorted_xs:
        return float("nan")
    k = max(0, min(len(sorted_xs) - 1, int(round(q / 100 * len(sorted_xs) + 0.5)) - 1))
    return sorted_xs[k]
