"""How long a chaos run waits for its timers: on the engine's state, not on a wall-clock budget.

A timer is *settled* once nothing more can happen to it: delivered (its target received it), or its record
reads ``FAILED`` or ``CANCELLED``, or it has none (a create that never landed). Until then the run waits, as long
as the engine makes progress on what is left: a delivery arrives, or a pending record changes (its status, its
attempts, its last error). A loaded machine slows each step down, so the wait stretches with it; a timer that
stops changing for :data:`STALL_VISIBILITY_TIMEOUTS` visibility timeouts after it was due has nothing left in
flight (a receive that failed comes back within one), and the checks then judge it as it stands: parked with its
reason (a bare message SQS's redrive moved), or lost. A timer to a limited target may also wait for its start slot,
its record unchanged, as long as the target's backlog takes at its rate: the stall is that much longer.

The outcome events come after: each ended timer's is waited for (:func:`wait_for_outcomes`) until it arrives, or
until nothing on the outcomes' path is under way any more (a failed delivery of one comes back after a visibility
timeout, which the delayer queue's in-flight count shows meanwhile).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..client import Answer
from .deliveries import Recorder

SETTLED_STATUSES = frozenset({"FAILED", "CANCELLED"})
STALL_VISIBILITY_TIMEOUTS = 3
"""Visibility timeouts without a change to any pending timer, once each is due, after which the wait ends."""
POLL_SECONDS = 1.0
PROGRESS_EVERY_SECONDS = 15.0
"""How often a long wait says how far it got."""

Read = Callable[..., Answer]
"""``(operation, **parameters)`` -> the answer, as a client that retries a 429, a 5xx or no answer sees it."""


class Ticker:
    """Says a progress line at most every :data:`PROGRESS_EVERY_SECONDS` (from any thread)."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._said_at = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, line: Callable[[], str]) -> None:
        with self._lock:
            if time.monotonic() - self._said_at < PROGRESS_EVERY_SECONDS:
                return
            self._said_at = time.monotonic()
        self._say(line())


@dataclass(frozen=True)
class Pending:
    """What the wait last read of a timer that has not settled."""

    status: int | None
    state: tuple[Any, ...]


def settle(read: Read, recorder: Recorder, due_ms: dict[str, int], visibility_timeout_seconds: float, what: str,
           say: Callable[[str], None], cap_seconds: float = 1800.0, backlog_seconds: float = 0.0) -> dict[str, Pending]:
    """Wait until every timer of ``due_ms`` (id -> when it is due, ms) is settled, or until none of those left has
    changed for a stall (plus ``backlog_seconds``, how long a limited target's backlog may keep one waiting for its
    slot) after it was due, or ``cap_seconds`` (a bound for a hung engine, never reached by a run that progresses).
    The timers left unsettled, with what was last read of each."""
    started = time.monotonic()
    stall_seconds = STALL_VISIBILITY_TIMEOUTS * visibility_timeout_seconds + backlog_seconds
    pending = set(due_ms)
    last_seen: dict[str, Pending] = {}
    progress_at = time.monotonic()
    tick = Ticker(say)
    while pending:
        delivered = pending & set(recorder.by_id())
        now = time.time() * 1000
        for schedule_id in sorted(pending - delivered):
            if due_ms[schedule_id] > now:
                continue
            status, record = read("getSchedule", id=schedule_id)
            if status == 404 or record.get("status") in SETTLED_STATUSES:
                delivered.add(schedule_id)
                continue
            seen = Pending(status, (record.get("status"), record.get("attempts"), record.get("lastError"),
                                    record.get("dueAt")))
            if last_seen.get(schedule_id) != seen:
                last_seen[schedule_id] = seen
                progress_at = time.monotonic()
        if delivered:
            pending -= delivered
            progress_at = time.monotonic()
        if not pending:
            break
        overdue = all(due_ms[i] <= time.time() * 1000 for i in pending)
        if overdue and time.monotonic() - progress_at > stall_seconds:
            break
        if time.monotonic() - started > cap_seconds:
            break
        left = sorted(pending)
        tick(lambda: f"chaos: {what}: {len(due_ms) - len(left)}/{len(due_ms)} settled after "
                     f"{time.monotonic() - started:.0f}s; waiting on {len(left)} ({', '.join(left[:3])}"
                     f"{', ...' if len(left) > 3 else ''})")
        time.sleep(POLL_SECONDS)
    return {i: last_seen.get(i, Pending(None, ())) for i in pending}


def wait_for_outcomes(missing: Callable[[], set[str]], received: Callable[[], int], under_way: Callable[[], bool],
                      visibility_timeout_seconds: float, say: Callable[[str], None],
                      cap_seconds: float = 600.0) -> set[str]:
    """Wait until no timer that ended lacks its outcome event (``missing()`` is empty), or none can still arrive:
    nothing under way on the outcomes' path (``under_way()``: no delayer message receivable or being handed out
    again, no dispatcher invocation running) twice in a row, or no event received (``received()`` counts them) for
    a stall, or ``cap_seconds``. The timers still without an outcome then (parked ones among them)."""
    started = time.monotonic()
    stall_seconds = STALL_VISIBILITY_TIMEOUTS * visibility_timeout_seconds
    progress_at, count, idle = time.monotonic(), received(), 0
    tick = Ticker(say)
    while True:
        left = missing()
        idle = 0 if under_way() else idle + 1
        if not left or idle >= 2:
            return left
        if received() != count:
            progress_at, count = time.monotonic(), received()
        if time.monotonic() - progress_at > stall_seconds or time.monotonic() - started > cap_seconds:
            return left
        tick(lambda: f"chaos: outcome events: waiting on {len(left)} timers ({', '.join(sorted(left)[:3])}"
                     f"{', ...' if len(left) > 3 else ''})")
        time.sleep(POLL_SECONDS)
