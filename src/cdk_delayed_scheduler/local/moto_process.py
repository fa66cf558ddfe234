"""moto in a process of its own, started and stopped by the engine.

The engine's handlers, pollers and HTTP front share one interpreter; moto answering in the same
process would compete with them for its single GIL, and a call's latency would grow with the
load of everything else. In a process of its own moto has a core of its own.

Each engine's moto is forked by the zygote (:mod:`.moto_zygote`), a child that has imported moto
once; the fork applies the engine's corrections (:mod:`.moto_patches`) and serves moto with
:class:`KeepAliveWSGIServer` on 127.0.0.1 until the engine closes its connection to it, which
however the engine ends (``stop()``, an exception, SIGKILL) it does: no orphan is left behind.

    python -m cdk_delayed_scheduler.local._moto_child --zygote   # what the engine runs
"""

from __future__ import annotations

import socket

from .moto_zygote import Zygote

START_TIMEOUT_SECONDS = 30


class MotoProcess:
    """A fresh moto server (an empty account) in a process of its own, forked by this process's zygote
    (:mod:`.moto_zygote`); ``endpoint_url`` once :meth:`start` returns."""

    def __init__(self, *, clock: bool = False) -> None:
        self._clock = clock  # the test-only clock (:mod:`.moto_clock`): only cdk_delayed_scheduler.testing asks for it
        self._connection: socket.socket | None = None
        self._pid: int | None = None
        self.endpoint_url = ""

    def start(self) -> str:
        self.endpoint_url, self._pid, self._connection = Zygote.fork(clock=self._clock, timeout=START_TIMEOUT_SECONDS)
        return self.endpoint_url

    @property
    def pid(self) -> int | None:
        return self._pid if self._connection is not None else None

    def stop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()  # the server's signal to exit
