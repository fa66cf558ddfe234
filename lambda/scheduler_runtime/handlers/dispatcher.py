"""SQS batch from the delayer queue: deliver each due timer to its target, never early.

Per message, each in parallel with the rest of its batch:
1. surfaced more than a second early: put back for the rest of its delay;
2. otherwise wait out the sub-second remainder;
3. start the delivery with a conditional write (refused once cancelled);
4. deliver; on failure retry through SQS, and on the last receive park the
   full envelope and the reason in the dead-letter queue and mark it FAILED.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..aws.context import Context, current
from ..aws.delayer import DelayerQueue
from ..aws.store import ScheduleStore
from ..aws.targets import DeliveryError, deliver
from ..core.envelope import TimerRef, build_envelope
from ..core.timeparse import now_ms
from ..core.window import dispatch_timing
from ..observability import emit_metrics, log_event

logger = logging.getLogger("scheduler_runtime")
MAX_PARALLEL_DELIVERIES = 10  # the SQS batch size the construct configures
# Reused across invocations of a warm function; threads start on first use.
_deliveries = ThreadPoolExecutor(max_workers=MAX_PARALLEL_DELIVERIES, thread_name_prefix="delivery")


def handler(event: dict, context: Any = None) -> dict:
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    queue = DelayerQueue(ctx.sqs, ctx.config.delayer_queue_url, ctx.config.dead_letter_queue_url)

    def process(message: dict) -> tuple[int | None, bool]:
        """``(lateness if delivered, failed)`` for one message."""
        try:
            ref = TimerRef.from_message_body(message["body"])
        except (ValueError, KeyError, TypeError):
            # Not ours to interpret: leave it to the redrive policy, which parks it in the DLQ.
            logger.error("malformed delayer message %s", message.get("messageId"))
            return None, True
        try:
            return _dispatch_one(ctx, store, queue, ref, int(message["attributes"]["ApproximateReceiveCount"])), False
        except Exception:  # noqa: BLE001 - retried through SQS, then redriven to the DLQ
            logger.exception("dispatch of message %s failed", message.get("messageId"))
            return None, True

    # Each message waits for its own due time in parallel, so one slow target
    # or a burst due in the same second does not make the rest of the batch late.
    records = event.get("Records", [])
    outcomes = list(_deliveries.map(process, records))
    failures = [{"itemIdentifier": m["messageId"]} for m, (_, failed) in zip(records, outcomes) if failed]
    lateness = [late for late, _ in outcomes if late is not None]
    if lateness:
        emit_metrics(ctx.config.metrics_namespace, {"Service": "DelayedScheduler"}, {"LatenessMs": lateness},
                     timestamp_ms=now_ms())
    return {"batchItemFailures": failures}


def _dispatch_one(ctx: Context, store: ScheduleStore, queue: DelayerQueue, ref: TimerRef, receive_count: int) -> int | None:
    """Deliver one timer. Returns its lateness in ms when delivered, else None."""
    timing = dispatch_timing(ref.due_ms, now_ms())
    if timing.put_back:
        queue.put_back(ref, timing.put_back_seconds)
        log_event("put_back", id=ref.schedule_id, delaySeconds=timing.put_back_seconds)
        return None
    if timing.wait_ms:
        time.sleep(timing.wait_ms / 1000)
    while now_ms() < ref.due_ms:  # sleep() may wake a hair early; never deliver early
        time.sleep(0.001)

    config = ctx.config
    fired = now_ms()
    record = store.begin_delivery(ref.schedule_id, ref.due_ms, fired, config.history_retention_seconds)
    if record is None:
        log_event("not_delivered", id=ref.schedule_id, reason="cancelled, failed or superseded")
        return None
    envelope = build_envelope(record.schedule_id, record.due_ms, fired, record.attempts, record.payload_json, record.target)
    try:
        target = config.targets.get(record.target)
        if target is None:
            raise DeliveryError(f"target '{record.target}' is not registered")
        deliver(ctx, target, envelope)
    except DeliveryError as exc:
        if receive_count < config.max_receive_count:
            raise
        reason = f"delivery failed after {receive_count} attempts: {exc}"
        queue.dead_letter(envelope, reason)
        store.mark_failed(record.schedule_id, reason, now_ms(), config.history_retention_seconds)
        log_event("dead_lettered", level=logging.ERROR, id=record.schedule_id, reason=reason)
        return None
    late = fired - record.due_ms
    log_event("delivered", id=record.schedule_id, attempt=record.attempts, lateMs=late)
    return late
