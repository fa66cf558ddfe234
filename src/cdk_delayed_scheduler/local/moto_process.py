"""moto in a process of its own, started and stopped by the engine.

The engine's handlers, pollers and HTTP front share one interpreter; moto answering in the same
process would compete with them for its single GIL, and a call's latency would grow with the
load of everything else. In a child process moto has a core of its own.

The child applies the engine's corrections (:mod:`.moto_patches`), serves on 127.0.0.1, prints
one line ``READY <endpoint>`` and then reads its stdin until end of file. The parent holds the
other end of that pipe, so however the engine ends (``stop()``, an exception, SIGKILL), the pipe
closes and the child exits: no orphan is left behind.

    python -m cdk_delayed_scheduler.local.moto_process   # what the engine runs
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

READY = "READY "
START_TIMEOUT_SECONDS = 30


class MotoProcess:
    """A moto server in a child process; ``endpoint_url`` once :meth:`start` returns."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self.endpoint_url = ""

    def start(self) -> str:
        self._process = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=None, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self._process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(START_TIMEOUT_SECONDS)
        if not line or not line[0].startswith(READY):
            self.stop()
            raise OSError(f"moto did not start within {START_TIMEOUT_SECONDS} s (said {line[0].strip() if line else 'nothing'!r})")
        self.endpoint_url = line[0][len(READY):].strip()
        return self.endpoint_url

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.stdin:
                process.stdin.close()  # the child's signal to exit
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        finally:
            if process.stdout:
                process.stdout.close()


def _serve() -> None:
    """The child: corrected moto on 127.0.0.1 until the parent closes our stdin."""
    from moto.server import ThreadedMotoServer

    from cdk_delayed_scheduler.local import moto_patches

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto_patches.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"{READY}http://{host}:{port}", flush=True)
    try:
        sys.stdin.read()  # returns at end of file: the parent is gone or stopping
    finally:
        server.stop()


if __name__ == "__main__":
    _serve()
