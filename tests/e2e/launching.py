"""The console script's ``local`` command started as a user starts it, in a process (group) of its own."""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.local.api_calls import raw_client

SCRIPT = str(Path(sys.executable).with_name("cdk-delayed-scheduler"))


class Running:
    """A started ``local`` process with its stdout lines and API URL; with ``wait=False`` the URL once
    :meth:`started` returns."""

    def __init__(self, *args: str, env: dict | None = None, cwd: Path | None = None, wait: bool = True) -> None:
        self.process = subprocess.Popen(
            [SCRIPT, "local", "--port", "0", "--delay-window", "3", "--sweep-interval", "1", "--shard-count", "2", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, cwd=cwd,
            start_new_session=True,  # a process group of its own, as a terminal's foreground job is
        )
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[str] = []
        self._started: queue.Queue = queue.Queue()
        self._pumps = [
            threading.Thread(target=self._pump, args=(self.process.stdout, self.lines.put), daemon=True),
            threading.Thread(target=self._pump, args=(self.process.stderr, lambda l: (self.stderr.append(l), self._started.put(l))), daemon=True),
        ]
        for pump in self._pumps:
            pump.start()
        self.api: SchedulerClient | None = None
        if wait:
            self.started()

    def started(self) -> Running:
        """Itself, once it has printed its API URL (``api`` then calls it)."""
        while self.api is None:
            match = re.search(r"API on (http://127\.0\.0\.1:\d+)", self._started.get(timeout=60))
            if match:
                self.api = raw_client(match.group(1))
        return self

    @staticmethod
    def _pump(stream, sink) -> None:
        for line in stream:
            sink(line)

    def stop(self, how: signal.Signals = signal.SIGTERM) -> int:
        """Stop it with ``how``: SIGTERM to the process, or SIGINT to its whole group, as Ctrl-C sends it."""
        if how == signal.SIGINT:
            os.killpg(self.process.pid, signal.SIGINT)
        else:
            self.process.send_signal(how)
        code = self.process.wait(timeout=30)
        for pump in self._pumps:
            pump.join(timeout=5)  # everything the process wrote is read
        return code
