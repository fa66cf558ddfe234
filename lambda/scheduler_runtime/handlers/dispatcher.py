"""SQS batch from the delayer queue: deliver each due schedule to its target, never early.

Per message, each in parallel with the rest of its batch:
1. surfaced more than a second early: put back for the rest of its delay;
2. otherwise wait out the sub-second remainder;
3. start the delivery with a conditional write that requires the record to hold the
   message's token (refused once cancelled, and for a stray of a replay, a conflict or a
   crashed create); a record not written yet is waited for, then the message is put back,
   until the create that sent it can no longer write;
4. deliver; on failure retry through SQS, and on the last receive park the
   full envelope and the reason in the dead-letter queue and mark it FAILED.

An occurrence of a periodic timer takes the same first two steps, then :class:`Periodic` arms the
next occurrence and advances the definition (its step 3), and a failed delivery is retried by a
message of its own naming the attempt, so the next occurrence is never held up by it.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from ..aws.config import Config
from ..aws.context import Context, current
from ..aws.delayer import DelayerQueue
from ..aws.store import DeliveryStart, ScheduleStore
from ..aws.targets import DeliveryError, Undeliverable, deliver, refused_for_good
from ..core.contract import LATENESS_METRIC, METRIC_DIMENSIONS
from ..core.envelope import TimerRef, build_envelope
from ..core.timeparse import now_ms
from ..core.window import dispatch_timing, is_stray_age, record_expiry_seconds
from ..observability import emit_metrics, log_event
from ._batch import BatchEvent, SqsRecord, partial_batch_response

logger = logging.getLogger("scheduler_runtime")
MAX_PARALLEL_DELIVERIES = 10  # the SQS batch size the construct configures
# Lambda runs one invocation per sandbox at a time, so a batch starts at most ten threads (a pool
# starts threads only on demand). Where one process runs many invocations at once (the local
# engine), a pool of only ten would make one batch's messages wait behind another's sleep.
_POOL_THREADS = 16 * MAX_PARALLEL_DELIVERIES
# Pauses before re-trying the delivery start of a message whose record is not written yet
# (a message sent with no delay can overtake its create's second write): about 0.75 s in all.
RECORD_WAIT_PAUSES = (0.05, 0.1, 0.2, 0.4)
# Reused across invocations of a warm function; threads start on first use.
_deliveries = ThreadPoolExecutor(max_workers=_POOL_THREADS, thread_name_prefix="delivery")


def handler(event: BatchEvent, context: Any = None) -> dict:
    ctx = current()
    store = ScheduleStore.for_config(ctx.dynamodb, ctx.config)
    queue = DelayerQueue(ctx.sqs, ctx.config.delayer_queue_url, ctx.config.dead_letter_queue_url)

    def process(message: SqsRecord) -> tuple[int | None, bool]:
        """``(lateness if delivered, failed)`` for one message."""
        try:
            ref = TimerRef.from_message_body(message["body"])
        except (ValueError, KeyError, TypeError):
            # Not ours to interpret: leave it to the redrive policy, which parks it in the DLQ.
            logger.error("malformed delayer message %s", message.get("messageId"))
            return None, True
        try:
            receipt = Receipt(message["messageId"], int(message["attributes"]["ApproximateReceiveCount"]))
            return _dispatch_one(ctx, store, queue, ref, receipt), False
        except Exception:  # noqa: BLE001 - retried through SQS, then redriven to the DLQ
            logger.exception("dispatch of message %s failed", message.get("messageId"))
            return None, True

    # Each message waits for its own due time in parallel, so one slow target
    # or a burst due in the same second does not make the rest of the batch late.
    records = event.get("Records", [])
    outcomes = list(_deliveries.map(process, records))
    lateness = [late for late, _ in outcomes if late is not None]
    if lateness:
        emit_metrics(ctx.config.metrics_namespace, METRIC_DIMENSIONS, {LATENESS_METRIC: lateness},
                     timestamp_ms=now_ms())
    return partial_batch_response(m for m, (_, failed) in zip(records, outcomes) if failed)


@dataclass(frozen=True)
class Receipt:
    """Which SQS message brought a reference, and how often SQS has handed it out."""

    message_id: str
    """Kept across SQS's redeliveries of one message, new for every send: a retry keeps it, a duplicate
    (an ambiguous send's second message with the same token) has another."""
    receive_count: int


def _dispatch_one(ctx: Context, store: ScheduleStore, queue: DelayerQueue, ref: TimerRef, receipt: Receipt) -> int | None:
    """Deliver one schedule. Returns its lateness in ms when delivered, else None."""
    timing = dispatch_timing(ref.due_ms, now_ms())
    if timing.put_back:
        queue.send_one(ref, timing.put_back_seconds)
        log_event("put_back", id=ref.schedule_id, delaySeconds=timing.put_back_seconds)
        return None

    if ref.periodic:  # it arms the next occurrence while this one waits out its remainder
        return _dispatch_occurrence(ctx, store, queue, ref, receipt)
    wait_until(ref.due_ms)

    config = ctx.config
    attempts_left = config.max_receive_count - receipt.receive_count
    note = _retry_note(receipt, config.max_receive_count)
    fired = now_ms()
    start = store.begin_delivery(ref, fired, record_expiry(config, fired, attempts_left), receipt.message_id, note)
    for pause in RECORD_WAIT_PAUSES:
        if start.refusal != "missing" or is_stray_age(ref.created_ms, now_ms()):
            break
        time.sleep(pause)
        fired = now_ms()
        start = store.begin_delivery(ref, fired, record_expiry(config, fired, attempts_left), receipt.message_id, note)
    if start.record is None:
        return _not_delivered(queue, ref, start)
    record = start.record
    envelope = build_envelope(record.schedule_id, record.due_ms, fired, record.attempts, record.payload_json, record.target)
    try:
        _deliver(ctx, envelope)
    except DeliveryError as exc:
        if receipt.receive_count < config.max_receive_count and not isinstance(exc, Undeliverable):
            raise
        reason = _exhausted(receipt.receive_count, exc)
        failed_at = now_ms()
        _fail_then_park(queue, envelope, reason, lambda: store.mark_failed(
            record, reason, failed_at, record_expiry(config, failed_at, 0), receipt.message_id),
            f"/schedules/{record.schedule_id}")
        return None
    return _delivered(envelope, fired - record.due_ms)


def _retry_note(receipt: Receipt, max_receive_count: int) -> str | None:
    """What a retry's delivery start keeps as ``lastError``: the receive before it ended without a
    delivery. So a schedule whose last receive ends without the dispatcher (a timeout, throttling),
    and that SQS parks as a bare reference, still reads with a reason. None on a first receive."""
    if receipt.receive_count < 2:
        return None
    return (f"receive {receipt.receive_count - 1} of {max_receive_count} ended without a delivery: the target "
            "failed, or the dispatcher timed out or was throttled (its log says which)")


def record_expiry(config: Config, now: int, attempts_left: int) -> int:
    """A one-shot record's TTL at delivery start or failure: past its message's last possible park
    (each attempt left comes a visibility timeout after the one before), plus the history retention."""
    return record_expiry_seconds(now, attempts_left, config.visibility_timeout_seconds, config.history_retention_seconds)


def wait_until(instant_ms: int) -> None:
    """Sleep until ``instant_ms`` (epoch ms) has passed on this clock: ``sleep()`` may wake a hair early."""
    left_ms = instant_ms - now_ms()
    if left_ms > 0:
        time.sleep(left_ms / 1000)
    while now_ms() < instant_ms:
        time.sleep(0.001)


def _dispatch_occurrence(ctx: Context, store: ScheduleStore, queue: DelayerQueue, ref: TimerRef,
                         receipt: Receipt) -> int | None:
    """Deliver one occurrence of a periodic timer (the next one is armed first). Its lateness, or None."""
    periodic_module = _periodic_module()
    periodic = periodic_module.Periodic(periodic_module.DefinitionStore(ctx.dynamodb, ctx.config.table_name), store,
                                        queue, ctx.config)
    occurrence = periodic.start(ref, receipt.receive_count, receipt.message_id, wait_until)
    definition = occurrence.definition
    if definition is None:
        if occurrence.refusal == periodic_module.PREDECESSOR_PENDING:
            # Again later, each time about twice as late as before (at most a minute): a few sends in all.
            delay = min(60, max(1, (now_ms() - ref.due_ms) // 1000))
            queue.send_one(ref, delay)
            log_event("put_back", id=ref.schedule_id, delaySeconds=delay, reason=occurrence.refusal)
            return None
        return _not_delivered(queue, ref, DeliveryStart(None, occurrence.refusal))
    envelope = build_envelope(definition.periodic_id, occurrence.due_ms, occurrence.began_ms, occurrence.attempt,
                              definition.payload_json, definition.target)
    if now_ms() - occurrence.began_ms > periodic_module.START_DEADLINE_MS:
        # A DELETE may be answered from began + SETTLE_MS on: too late to start safely; again at once.
        periodic.start_late(definition, occurrence.due_ms, occurrence.attempt)
        log_event("put_back", id=ref.schedule_id, delaySeconds=0, reason="start deadline passed")
        return None
    try:
        _deliver(ctx, envelope)
    except DeliveryError as exc:
        if not isinstance(exc, Undeliverable) and periodic.retry_later(definition, occurrence.due_ms, occurrence.attempt):
            log_event("retry_scheduled", level=logging.WARNING, id=ref.schedule_id, attempt=occurrence.attempt,
                      reason=str(exc)[:500])
            return None
        reason = _exhausted(occurrence.attempt, exc)
        _fail_then_park(queue, envelope, reason, lambda: periodic.record_failure(definition, reason),
                        f"/periodic/{definition.periodic_id}")
        return None
    return _delivered(envelope, occurrence.began_ms - occurrence.due_ms)


def _periodic_module():  # noqa: ANN202 - the module
    """``aws.periodic``, imported on first use: a deployment without periodic timers never loads it
    (nor the cron parser and ``zoneinfo``), which keeps the dispatcher's cold start as it was."""
    from ..aws import periodic  # noqa: PLC0415

    return periodic


def _deliver(ctx: Context, envelope: dict) -> None:
    target = ctx.config.targets.get(envelope["target"])
    if target is None:
        raise DeliveryError(f"target '{envelope['target']}' is not registered")
    deliver(ctx, target, envelope)


def _fail_then_park(queue: DelayerQueue, envelope: dict, reason: str, record_failure: Callable[[], None],
                    route: str) -> None:
    """An exhausted delivery: keep ``reason`` where GET reads it, then park the envelope in the DLQ.

    The failure is written first: if the dead-letter send then fails (raised, so the message comes
    back), SQS's redrive parks the bare message, and the record or definition it names holds the
    payload and this reason (a record until its TTL, which is past that park). A failed write does not
    stop the park: the parked envelope carries the reason all the same.
    """
    try:
        record_failure()
    except Exception:  # noqa: BLE001 - see above
        logger.exception("recording the failure of %s failed", envelope["id"])
    _dead_letter(queue, envelope, reason, route)


def _exhausted(attempts: int, exc: DeliveryError) -> str:
    """The reason a delivery ends in the dead-letter queue."""
    if isinstance(exc, Undeliverable):
        return f"undeliverable (attempt {attempts}, not retried): {exc}"
    return f"delivery failed after {attempts} attempts: {exc}"


def _dead_letter(queue: DelayerQueue, envelope: dict, reason: str, route: str) -> None:
    """Park ``envelope`` with ``reason``. One too large for the dead-letter queue as well is parked without
    its payload, which the record (FAILED, written first) or the definition at ``route`` still holds."""
    try:
        queue.dead_letter(envelope, reason)
    except Exception as exc:  # noqa: BLE001 - re-raised unless the queue refuses it for good
        if not refused_for_good(exc):
            raise
        reason = f"payload left out (too large for the dead-letter queue): read it with GET {route}; {reason}"
        queue.dead_letter({name: value for name, value in envelope.items() if name != "payload"}, reason)
    log_event("dead_lettered", level=logging.ERROR, id=envelope["id"], reason=reason)


def _delivered(envelope: dict, late_ms: int) -> int:
    log_event("delivered", id=envelope["id"], attempt=envelope["attempt"], lateMs=late_ms)
    return late_ms


def _not_delivered(queue: DelayerQueue, ref: TimerRef, start: DeliveryStart) -> None:
    """A refused start: wait longer for a record still being written, else drop the message."""
    if start.refusal == "missing" and not is_stray_age(ref.created_ms, now_ms()):
        queue.send_one(ref, 1)
        log_event("put_back", id=ref.schedule_id, delaySeconds=1, reason="record not written yet")
        return None
    if start.refusal in ("missing", "stray", "duplicate"):
        log_event("stray_dropped", level=logging.WARNING, id=ref.schedule_id, reason=start.refusal)
    else:
        log_event("not_delivered", id=ref.schedule_id, reason=start.refusal)
    return None
