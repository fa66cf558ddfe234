"""Kit: what the testing kit (``cdk_delayed_scheduler.testing``) costs a user's test.

Each repeat is one ``with local_scheduler() as timers:`` block as a test runs it: the start (entering
the block: an empty account in the process's shared moto child, the engine, the runtime's clock), a
body that schedules one timer a minute ahead and lets the minute pass with ``advance``, and the stop
(leaving the block). The first start of the process also starts the moto child and imports the
engine; it is reported on its own. The plugin's import is timed in fresh interpreters that have
imported pytest already, as pytest loads it.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from datetime import timedelta

from .common import ROOT, log, spread

START_TARGET_S = 1.0
STOP_TARGET_S = 0.5
_PLUGIN_IMPORT = ("import pytest, time\nt = time.perf_counter()\nimport cdk_delayed_scheduler.testing.pytest_plugin\n"
                  "print(time.perf_counter() - t)\n")


def plugin_import_ms(repeats: int) -> dict:
    """The plugin's import, in ms, with pytest imported already (as it is when pytest loads plugins)."""
    times = []
    for _ in range(repeats):
        done = subprocess.run([sys.executable, "-c", _PLUGIN_IMPORT], capture_output=True, text=True, check=True,
                              cwd=ROOT)
        times.append(float(done.stdout.strip()) * 1000)
    return spread(times)


def run(repeats: int) -> dict:
    from cdk_delayed_scheduler.testing import local_scheduler

    starts, stops, advances = [], [], []
    first_start = None
    for r in range(repeats + 1):
        block = local_scheduler()
        began = time.perf_counter()
        timers = block.__enter__()
        started = time.perf_counter()
        try:
            scheduled = timers.client.schedule(timedelta(minutes=1), {"repeat": r})
            before_advance = time.perf_counter()
            timers.advance(minutes=1)
            advanced = time.perf_counter()
            assert [d.id for d in timers.deliveries()] == [scheduled.id], "the timer was not delivered"
        finally:
            stopping = time.perf_counter()
            block.__exit__(None, None, None)
            stopped = time.perf_counter()
        if r == 0:
            first_start = started - began
            log(f"kit: first start {first_start:.2f} s (moto child and imports included)")
            continue
        starts.append(started - began)
        stops.append(stopped - stopping)
        advances.append(advanced - before_advance)
        log(f"kit {r}/{repeats}: start {starts[-1]:.3f} s, advance(minutes=1) {advances[-1]:.3f} s, stop {stops[-1]:.3f} s")
    return {"repeats": repeats, "first_start_s": first_start, "start_s": spread(starts), "stop_s": spread(stops),
            "advance_one_minute_s": spread(advances), "plugin_import_ms": plugin_import_ms(5),
            "start_target_s": START_TARGET_S, "stop_target_s": STOP_TARGET_S,
            "start_met": statistics.median(starts) < START_TARGET_S, "stop_met": statistics.median(stops) < STOP_TARGET_S}
