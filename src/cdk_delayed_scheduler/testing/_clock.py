"""The kit's simulated clock and its one moto child per process.

The clock is the real one plus an offset that only moves forward. It is applied in two places and
nowhere else: the runtime's clock in this process (set with :func:`scheduler_runtime.clock.use`, the one
call every handler's context reads through), and SQS's clock in the kit's moto child
(:mod:`cdk_delayed_scheduler.local.moto_clock`). The runtime's "never early" rule compares each due time
with the same shifted clock. Both are set by the kit alone, and put back when its scheduler stops.
"""

from __future__ import annotations

import atexit
import threading
import time
import urllib.request
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..local.moto_process import MotoProcess


class SimulatedClock:
    """Real time plus ``offset_ms``; while installed, the runtime's clock in this process and SQS's in moto.

    A :class:`scheduler_runtime.clock.Clock`: it runs at real speed between moves, so a wait on it is a
    real wait."""

    def __init__(self, moto_endpoint: str) -> None:
        self._moto_endpoint = moto_endpoint
        self.offset_ms = 0
        self._installed = False

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self.offset_ms

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def move_to(self, instant_ms: int) -> None:
        """Move the clock forward to ``instant_ms`` (never back): in this process and in moto at once."""
        offset_ms = instant_ms - time.time_ns() // 1_000_000
        if offset_ms > self.offset_ms:
            self._set_offset(offset_ms)

    def waiting_messages(self) -> list[dict[str, Any]]:
        """Every SQS message that is not receivable yet, with when it will be (see ``moto_clock``)."""
        messages: list[dict[str, Any]] = self._moto_clock()["messages"]
        return messages

    def install(self) -> None:
        """Make this the clock every handler and context of this process reads."""
        from scheduler_runtime import clock  # noqa: PLC0415 - importable once the engine started

        clock.use(self)
        self._installed = True
        self._set_offset(0)

    def uninstall(self) -> None:
        """The real clock again, in this process and in moto."""
        if self._installed:
            from scheduler_runtime import clock  # noqa: PLC0415

            clock.use(None)
            self._installed = False
        self._set_offset(0)

    def _set_offset(self, offset_ms: int) -> None:
        # This process's first: a message that SQS releases on the new clock is then never judged by
        # the runtime on the old one, which would wait out its "remainder" in real time.
        self.offset_ms = offset_ms
        self._moto_clock(offset_ms)

    def _moto_clock(self, offset_ms: int | None = None) -> dict[str, Any]:
        from ..local.moto_clock import moto_clock  # noqa: PLC0415

        return moto_clock(self._moto_endpoint, offset_ms)


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
