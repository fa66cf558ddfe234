"""Stream INSERT of a timer: claim it at once when it is already due within the window."""

from __future__ import annotations

from typing import Any

from ..aws.context import current
from ..aws.store import ScheduleStore, TimerItem
from ..core.timeparse import now_ms
from ..core.window import is_within_window
from ..observability import log_event
from ._stream import each_record


def handler(event: dict, context: Any = None) -> dict:
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    window = ctx.config.claim_window_seconds

    def claim_if_due(record: dict) -> None:
        timer = TimerItem.from_item(record["dynamodb"]["NewImage"])
        if is_within_window(timer.due_ms, now_ms(), window) and store.claim(timer):
            log_event("claimed", id=timer.schedule_id, dueMs=timer.due_ms, by="fast-track")

    return each_record(event.get("Records", []), claim_if_due)
