"""Kit: what the testing kit (``cdk_delayed_scheduler.testing``) costs a user's test.

Each repeat is one ``with local_scheduler() as timers:`` block as a test runs it: the start (entering
the block: an empty account in the process's shared moto child, the engine, the runtime's clock), a
body that schedules one timer a minute ahead and lets the minute pass with ``advance``, and the stop
(leaving the block). The first start of the process also starts the moto child and imports the
engine; it is reported on its own. The plugin's import is timed in fresh interpreters that have
imported pytest already, as pytest loads it.

Two workloads time ``advance`` over many timers, each in a block of its own, created with the client's
batch call (``schedule_many``, ten a request): 100 timers due at random whole seconds over an hour (seeded),
then ``advance(hours=1)``, which must deliver all of them; and 1,000 timers of one group due in 5 minutes,
cancelled with ``cancel_group``, then ``advance(minutes=10)``, which must deliver none.
"""

from __future__ import annotations

import random
import statistics
import subprocess
import sys
import time
from datetime import timedelta

from .common import ROOT, log, spread

START_TARGET_S = 1.0
STOP_TARGET_S = 0.5
HOUR_TARGET_S = 5.0  # advance(hours=1) over 100 timers
CANCELLED_TARGET_S = 2.0  # advance(minutes=10) over 1,000 cancelled members
HOUR_TIMERS, GROUP_TIMERS, SEED = 100, 1000, 7
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


def _timed(call) -> float:
    began = time.perf_counter()
    call()
    return time.perf_counter() - began


def spread_hour(repeats: int) -> dict:
    """100 timers due at random seconds over an hour, then ``advance(hours=1)``: its real seconds, what it delivered."""
    from cdk_delayed_scheduler.client import ScheduleRequest
    from cdk_delayed_scheduler.testing import local_scheduler

    rng = random.Random(SEED)
    due = [rng.randrange(1, 3601) for _ in range(HOUR_TIMERS)]
    advances, delivered = [], []
    for r in range(repeats):
        with local_scheduler() as timers:
            timers.client.schedule_many([ScheduleRequest(timedelta(seconds=s), {"i": i}) for i, s in enumerate(due)])
            advances.append(_timed(lambda: timers.advance(hours=1)))
            delivered.append(len(timers.deliveries()))
        log(f"kit: {HOUR_TIMERS} timers over an hour {r + 1}/{repeats}: advance(hours=1) {advances[-1]:.2f} s, "
            f"{delivered[-1]} delivered")
    return {"timers": HOUR_TIMERS, "seed": SEED, "advance_s": spread(advances), "delivered": delivered,
            "target_s": HOUR_TARGET_S,
            "met": statistics.median(advances) <= HOUR_TARGET_S and all(d == HOUR_TIMERS for d in delivered)}


def cancelled_group(repeats: int) -> dict:
    """1,000 members of one group due in 5 minutes, ``cancel_group``, then ``advance(minutes=10)``: its real seconds
    and what it delivered (nothing)."""
    from cdk_delayed_scheduler.client import ScheduleRequest
    from cdk_delayed_scheduler.testing import local_scheduler

    creates, cancels, advances, delivered = [], [], [], []
    for r in range(repeats):
        with local_scheduler() as timers:
            items = [ScheduleRequest(timedelta(minutes=5), {"i": i}, group="kit-bench") for i in range(GROUP_TIMERS)]
            creates.append(_timed(lambda: timers.client.schedule_many(items)))
            cancels.append(_timed(lambda: timers.client.cancel_group("kit-bench")))
            advances.append(_timed(lambda: timers.advance(minutes=10)))
            delivered.append(len(timers.deliveries()))
        log(f"kit: {GROUP_TIMERS} cancelled members {r + 1}/{repeats}: created in {creates[-1]:.2f} s, cancelled in "
            f"{cancels[-1]:.2f} s, advance(minutes=10) {advances[-1]:.2f} s, {delivered[-1]} delivered")
    return {"timers": GROUP_TIMERS, "create_s": spread(creates), "cancel_s": spread(cancels),
            "advance_s": spread(advances), "delivered": delivered, "target_s": CANCELLED_TARGET_S,
            "met": statistics.median(advances) <= CANCELLED_TARGET_S and not any(delivered)}


def run(repeats: int, workload_repeats: int) -> dict:
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
            "start_met": statistics.median(starts) < START_TARGET_S, "stop_met": statistics.median(stops) < STOP_TARGET_S,
            "spread_hour": spread_hour(workload_repeats), "cancelled_group": cancelled_group(workload_repeats)}
