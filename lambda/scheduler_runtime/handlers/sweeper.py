"""Scheduled sweep: claim every timer due within the window, shard by shard, overdue included.

A claim is the conditional delete of the timer; its stream REMOVE carries the timer (and its
token) to the enqueuer. A stray timer is claimed like any other, so it leaves the table here,
and the dispatcher drops its message.

The shards swept are every shard any deployment wrote to (:mod:`..aws.shards`), not only
``range(SHARD_COUNT)``, so lowering ``shard_count`` strands nothing. A sweep that runs short of
time stops after a page and the next sweep in this sandbox resumes where it stopped;
a sweep in a fresh sandbox starts at the shard the minute names, so no shard is always last.
A sweep that stops early also emits ``SweepsStoppedEarly`` (1, EMF): at most one record a minute, none
while sweeps complete.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..aws.context import current
from ..aws.items import TimerItem
from ..aws.shards import ShardMark
from ..aws.store import ScheduleStore
from ..core.contract import METRIC_DIMENSIONS, SWEEPS_STOPPED_EARLY_METRIC
from ..core.window import claim_cutoff_ms
from ..observability import emit_metrics, log_event

CLAIM_CONCURRENCY = 16
PAGE_SIZE = 500
# Stop when less than this much of the invocation's time is left; the next
# sweep resumes at the shard this one stopped in (nothing is lost, only later).
SAFETY_MARGIN_MS = 10_000
logger = logging.getLogger("scheduler_runtime")
_resume_at: dict[str, int] = {}
"""Per table, where this sandbox's next sweep starts after one that stopped early."""


class SweepIncomplete(RuntimeError):
    """Some claims failed (e.g. throttling); they stay in the table for the next sweep."""


def first_shard(table_name: str, shards: int, now: int) -> int:
    """Where a sweep starts: where the last one in this sandbox stopped early, else the minute's shard.

    A module variable lasts as long as the sandbox; the sweeper runs every minute, so Lambda
    keeps one warm and resumes are exact. A fresh sandbox (a recycle, a retry's second
    sandbox) loses the place, which the minute's shard makes harmless.

    The minute's shard (``minute % shards``) moves on by one a minute, so in sandboxes that
    never sweep twice each shard still comes first once every ``shards`` sweeps.
    """
    return _resume_at.pop(table_name, now // 60_000) % shards


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    now = ctx.clock.now_ms()
    cutoff = claim_cutoff_ms(now, ctx.config.delay_window_seconds)

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
        shards = ShardMark(ctx.dynamodb, ctx.config.table_name).shards_to_sweep(ctx.config.shard_count, pool)
        start = first_shard(ctx.config.table_name, shards, now)
        stopped_in = _sweep(store, pool, settle, counts, [(start + n) % shards for n in range(shards)], cutoff, context)
    result = {**counts, "cutoffMs": cutoff, "shards": shards, "startShard": start, "complete": stopped_in is None}
    if stopped_in is not None:
        _resume_at[ctx.config.table_name] = stopped_in
        log_event("sweep_stopped_early", level=logging.WARNING, resumeAt=stopped_in, **counts)
        emit_metrics(ctx.config.metrics_namespace, dict(METRIC_DIMENSIONS), {SWEEPS_STOPPED_EARLY_METRIC: 1},
                     unit="Count", timestamp_ms=ctx.clock.now_ms())
    if counts["error"]:
        raise SweepIncomplete(f"{counts['error']} claims failed; they will be retried by the next sweep")
    return result


def _sweep(store: ScheduleStore, pool: ThreadPoolExecutor, settle: Any, counts: dict[str, int], order: list[int],
           cutoff: int, context: Any) -> int | None:
    """Claim what is due in each shard of ``order``; where the next sweep must start if time ran short, else None.

    That is the shard it stopped in, or the next one when the page it stopped after was that
    shard's last (shorter than ``PAGE_SIZE``: timer items are far too small for the 1 MB cap).
    """
    for position, shard in enumerate(order):
        for page in store.due_timer_pages(shard, cutoff, PAGE_SIZE):
            for outcome in pool.map(settle, page):
                counts[outcome] += 1
            if context is not None and context.get_remaining_time_in_millis() < SAFETY_MARGIN_MS:
                if len(page) == PAGE_SIZE:
                    return shard
                return order[position + 1] if position + 1 < len(order) else None
    return None
