"""Scheduled sweep: claim every timer due within the window, shard by shard, overdue included.

A claim is the conditional delete of the timer; its stream REMOVE carries the timer (and its
token) to the enqueuer. A stray timer is claimed like any other, so it leaves the table here,
and the dispatcher drops its message.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..aws.context import current
from ..aws.store import ScheduleStore, TimerItem
from ..core.timeparse import now_ms
from ..core.window import claim_cutoff_ms
from ..observability import log_event

CLAIM_CONCURRENCY = 16
# Stop when less than this much of the invocation's time is left; the next
# sweep picks up where this one stopped (nothing is lost, only later).
SAFETY_MARGIN_MS = 10_000
logger = logging.getLogger("scheduler_runtime")


class SweepIncomplete(RuntimeError):
    """Some claims failed (e.g. throttling); they stay in the table for the next sweep."""


def handler(event: dict, context: Any = None) -> dict:
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    cutoff = claim_cutoff_ms(now_ms(), ctx.config.delay_window_seconds)

    def settle(timer: TimerItem) -> str:
        try:
            if timer.cancelled:  # a cancel whose cleanup was interrupted: finish it
                store.delete_cancelled_timer(timer.key)
                return "cleaned"
            if store.claim(timer):
                log_event("claimed", id=timer.schedule_id, dueMs=timer.due_ms, by="sweeper")
                return "claimed"
            return "lost-race"
        except Exception:  # noqa: BLE001 - counted and re-raised after the sweep
            logger.exception("claim of %s failed", timer.schedule_id)
            return "error"

    counts = {"claimed": 0, "cleaned": 0, "lost-race": 0, "error": 0}
    with ThreadPoolExecutor(max_workers=CLAIM_CONCURRENCY) as pool:
        for shard in range(ctx.config.shard_count):
            for page in store.due_timer_pages(shard, cutoff):
                for outcome in pool.map(settle, page):
                    counts[outcome] += 1
                if context is not None and context.get_remaining_time_in_millis() < SAFETY_MARGIN_MS:
                    log_event("sweep_stopped_early", level=logging.WARNING, shard=shard, **counts)
                    return {**counts, "cutoffMs": cutoff, "complete": False}
    if counts["error"]:
        raise SweepIncomplete(f"{counts['error']} claims failed; they will be retried by the next sweep")
    return {**counts, "cutoffMs": cutoff, "complete": True}
