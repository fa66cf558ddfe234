"""Stream REMOVE of a claimed timer: send it to the delayer queue, or write it back.

The event source filter passes only REMOVEs of timers that were neither
cancelled nor expired by TTL. Sends go out in batches of ten; every entry SQS
does not confirm is written back to the table (in batches), where it is
claimed again. Only when that write also fails is the record reported as a
batch item failure, so the stream retries it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..aws.context import current
from ..aws.delayer import DelayerQueue
from ..aws.store import ScheduleStore, TimerItem
from ..core.envelope import TimerRef
from ..core.timeparse import now_ms
from ..core.window import enqueue_delay_seconds
from ..observability import log_event
from ._stream import sequence_number

logger = logging.getLogger("scheduler_runtime")


def handler(event: dict, context: Any = None) -> dict:
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    queue = DelayerQueue(ctx.sqs, ctx.config.delayer_queue_url)

    pending: dict[str, tuple[dict, TimerItem]] = {}
    for index, record in enumerate(event.get("Records", [])):
        timer = TimerItem.from_item(record["dynamodb"]["OldImage"])
        if timer.cancelled or record.get("userIdentity"):  # defence in depth behind the filter
            continue
        pending[str(index)] = (record, timer)

    now = now_ms()
    messages = [
        (entry_id, TimerRef(timer.schedule_id, timer.due_ms, timer.target), enqueue_delay_seconds(timer.due_ms, now))
        for entry_id, (_, timer) in pending.items()
    ]
    unsent = queue.send(messages) if messages else set()

    for entry_id, (_, timer) in pending.items():
        if entry_id not in unsent:
            log_event("enqueued", id=timer.schedule_id, dueMs=timer.due_ms)
    refused = [pending[entry_id] for entry_id in sorted(unsent, key=int)]
    not_written = store.write_back([timer for _, timer in refused]) if refused else []
    failures = []
    for record, timer in refused:
        if timer in not_written:  # the stream retries the record: still not lost
            logger.error("write-back of %s failed", timer.schedule_id)
            failures.append({"itemIdentifier": sequence_number(record)})
        else:
            log_event("written_back", level=logging.WARNING, id=timer.schedule_id, dueMs=timer.due_ms)
    return {"batchItemFailures": failures}
