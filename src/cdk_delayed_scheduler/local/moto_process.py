"""moto in a process of its own, started and stopped by the engine.

The engine's handlers, pollers and HTTP front share one interpreter; moto answering in the same
process would compete with them for its single GIL, and a call's latency would grow with the
load of everything else. In a child process moto has a core of its own.

The child applies the engine's corrections (:mod:`.moto_patches`), serves on 127.0.0.1, prints
one line ``READY <endpoint>`` and then reads its stdin until end of file. The parent holds the
other end of that pipe, so however the engine ends (``stop()``, an exception, SIGKILL), the pipe
closes and the child exits: no orphan is left behind.

    python -m cdk_delayed_scheduler.local._moto_child   # what the engine runs
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

READY = "READY "
# A module the package does not import itself, so ``-m`` runs it without a double import.
CHILD_MODULE = "cdk_delayed_scheduler.local._moto_child"
START_TIMEOUT_SECONDS = 30


class MotoProcess:
    """A moto server in a child process; ``endpoint_url`` once :meth:`start` returns."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self.endpoint_url = ""

    def start(self) -> str:
        self._process = subprocess.Popen(
            [sys.executable, "-m", CHILD_MODULE],
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
