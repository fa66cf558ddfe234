"""Stream REMOVE of a claimed timer: send it to the delayer queue, or write it back.

The event source filter passes only REMOVEs of timers that were neither cancelled nor
expired by TTL. Sends go out in batches of ten; entries SQS does not confirm are sent once
more at once, and only what still fails is written back to the table (in batches), where
the next sweep claims it again: that path adds up to one sweep interval (a minute) to the
delivery. Only when the write-back also fails is the record reported as a batch item
failure, so the stream retries it.

One timer can appear twice in a batch (a stream retry after a claim, a write-back and a
re-claim): only its newest REMOVE is sent or written back, since a ``BatchWriteItem`` naming a
key twice is refused whole, and two messages would be one too many.

The message carries the timer's token. A stray timer (its record missing, or holding another
token) is enqueued like any other and dropped by the dispatcher, which is where tokens are
checked: this handler reads nothing.

A direct invoke with ``{"recover": <the mapping's on-failure message>}`` re-enqueues the
claims of the stream range the mapping gave up on (see :mod:`..aws.recovery`).
"""

from __future__ import annotations

import logging
from typing import Any, TypedDict, cast

from ..aws.context import current
from ..aws.delayer import SEND_ATTEMPTS
from ..aws.items import TimerItem
from ..aws.recovery import claims_in_range
from ..aws.store import ScheduleStore
from ..observability import log_event
from ._batch import BatchEvent, StreamRecord, partial_batch_response

logger = logging.getLogger("scheduler_runtime")


class RecoverEvent(TypedDict):
    """A direct invoke that re-enqueues a stream range: the mapping's on-failure message, parsed or as text."""

    recover: dict[str, Any] | str


def handler(event: BatchEvent | RecoverEvent, context: Any = None) -> dict[str, Any]:
    """A stream batch (``Records``), or a direct invoke ``{"recover": <on-failure message>}``."""
    if "recover" in event:
        return recover(cast(RecoverEvent, event)["recover"])
    return partial_batch_response(enqueue_claims(event.get("Records", [])))


def recover(on_failure_message: dict[str, Any] | str) -> dict[str, Any]:
    """Re-enqueue the claims of the stream range named by an on-failure message; raise if any stays unsent.

    Idempotent: a claim that was enqueued before is sent again, and the dispatcher's token
    check keeps the second message from delivering twice.
    """
    records = cast(list[StreamRecord], claims_in_range(current().client("dynamodbstreams"), on_failure_message))
    failed = enqueue_claims(records)
    log_event("stream_recovered", level=logging.WARNING, claims=len(records), failed=len(failed))
    if failed:
        raise RuntimeError(f"{len(failed)} of {len(records)} claims could be neither sent nor written back; "
                           "invoke the recovery again")
    return {"recovered": len(records)}


def enqueue_claims(records: list[StreamRecord]) -> list[StreamRecord]:
    """Send each claim's timer to the delayer queue, or write it back; the records neither could take."""
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    queue = ctx.delayer_queue()

    newest: dict[tuple[str, str], tuple[StreamRecord, TimerItem]] = {}
    for record in records:  # in stream order, so a later REMOVE of the same key replaces an earlier one
        timer = TimerItem.from_item(record["dynamodb"]["OldImage"])
        if timer.cancelled or record.get("userIdentity"):  # defence in depth behind the filter
            continue
        newest.pop((timer.key.pk, timer.key.sk), None)
        newest[(timer.key.pk, timer.key.sk)] = (record, timer)
    pending = {str(index): claim for index, claim in enumerate(newest.values())}

    now = ctx.clock.now_ms()
    delay = ctx.config.delay_rule.delay_seconds
    messages = [(entry_id, timer.ref, delay(timer.due_ms, now)) for entry_id, (_, timer) in pending.items()]
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
    return failed
