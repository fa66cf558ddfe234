"""Stream REMOVE of a claimed timer: send it to the delayer queue, or write it back.

The event source filter passes only REMOVEs of timers that were neither cancelled nor
expired by TTL. Sends go out in batches of ten; entries SQS does not confirm are sent once
more at once, and only what still fails is written back to the table (in batches), where
the next sweep claims it again: that path adds up to one sweep interval (a minute) to the
delivery. Only when the write-back also fails is the record reported as a batch item
failure, so the stream retries it.

The message carries the timer's token. A stray timer (its record missing, or holding another
token) is enqueued like any other and dropped by the dispatcher, which is where tokens are
checked: this handler reads nothing.
"""

from __future__ import annotations

import logging
from typing import Any

from ..aws.context import current
from ..aws.delayer import DelayerQueue
from ..aws.store import ScheduleStore, TimerItem
from ..core.timeparse import now_ms
from ..core.window import enqueue_delay_seconds
from ..observability import log_event
from ._batch import BatchEvent, StreamRecord, partial_batch_response

SEND_ATTEMPTS = 2
logger = logging.getLogger("scheduler_runtime")


def handler(event: BatchEvent, context: Any = None) -> dict:
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    queue = DelayerQueue(ctx.sqs, ctx.config.delayer_queue_url)

    pending: dict[str, tuple[StreamRecord, TimerItem]] = {}
    for index, record in enumerate(event.get("Records", [])):
        timer = TimerItem.from_item(record["dynamodb"]["OldImage"])
        if timer.cancelled or record.get("userIdentity"):  # defence in depth behind the filter
            continue
        pending[str(index)] = (record, timer)

    now = now_ms()
    messages = [(entry_id, timer.ref, enqueue_delay_seconds(timer.due_ms, now)) for entry_id, (_, timer) in pending.items()]
    unsent = queue.send(messages, attempts=SEND_ATTEMPTS) if messages else set()

    for entry_id, (_, timer) in pending.items():
        if entry_id not in unsent:
            log_event("enqueued", id=timer.schedule_id, dueMs=timer.due_ms)
    refused = [pending[entry_id] for entry_id in sorted(unsent, key=int)]
    not_written = store.write_back([timer for _, timer in refused]) if refused else []
    failed = []
    for record, timer in refused:
        if timer in not_written:  # the stream retries the record: still not lost
            logger.error("write-back of %s failed", timer.schedule_id)
            failed.append(record)
        else:
            log_event("written_back", level=logging.WARNING, id=timer.schedule_id, dueMs=timer.due_ms)
    return partial_batch_response(failed)
