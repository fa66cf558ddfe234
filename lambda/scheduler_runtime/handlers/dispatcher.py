"""SQS batch from the delayer queue: deliver each due schedule to its target, never early.

Each message goes through :class:`~scheduler_runtime.aws.delivery.Delivery` (the protocol: never
early, the token check, retries and the dead-letter queue), in parallel with the rest of its batch,
the earliest due first. With a batching window on the mapping, messages surface that much early
(the deployment's lead) and a batch holds every message that surfaced during its gathering: those
due in the same second share this one invocation and wait out their remainders together.
An outcome event's message (a deployment with outcomes) is delivered to the outcomes target after the batch's
deliveries have started (:mod:`scheduler_runtime.aws.outcomes`), and the outcomes of the occurrences this
invocation ended are sent once its deliveries are done.
The construct's keep-warm rule (``dispatcher_keep_warm``) invokes it every few minutes with an event that only
names :data:`~scheduler_runtime.core.contract.DISPATCHER_KEEP_WARM_MARKER`: answered once the function is initialised
(its clients made), with no request, so that at sparse traffic the next delivery finds an environment ready instead
of waiting for a new one's init.
The batch answers which messages SQS must hand out again; the lateness of what was delivered
(one value per delivery, so its sample count is the number delivered) and the number of failed
attempts, when there are any, go out as metrics, in one EMF record per invocation.

Log levels of a dropped stray (``stray_dropped``): INFO for what a client's ordinary use makes, a
message whose record holds another token (an idempotent replay, a 409, a create retried after its
send) and another message with the token of a delivery already started (an ambiguous send's
duplicate); WARNING for what needs a look, a message whose record never appeared after the create
that sent it could no longer write (that create failed after its send).
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Union

from ..aws.context import Context, current
from ..aws.delivery import Delivery, Receipt
from ..aws.groups import GroupSweeper
from ..aws import outcomes as outcomes_module
from ..aws.outcomes import OutcomeSink
from ..core.contract import (DISPATCHER_KEEP_WARM_MARKER, FAILED_ATTEMPTS_METRIC, HELD_BACK_METRIC, LATENESS_METRIC,
                             METRIC_DIMENSIONS, TARGET_DIMENSION, WAITING_FOR_ROOM_METRIC)
from ..core.envelope import TimerRef
from ..core.groups import SWEEP_MARKER, GroupSweep
from ..core.outcomes import MARKER as OUTCOME_MARKER, is_outcome_message
from ..core.validation import ApiError
from ..observability import emit_metrics
from ._batch import BatchEvent, SqsRecord, partial_batch_response

logger = logging.getLogger("scheduler_runtime")
MAX_PARALLEL_DELIVERIES = 160
"""The most messages one sandbox waits out and delivers at once. A batch may be larger (up to 10,000
with a batching window): its messages then take turns, the earliest due first, so a thread never
waits for a later message while an earlier one queues. Lambda runs one invocation per sandbox at a
time and a pool starts threads only on demand; where one process runs many invocations at once (the
local engine), they share the pool."""
Work = Union[TimerRef, GroupSweep, dict[str, Any]]
"""What a delayer message asks for: a delivery, a group sweep, or an outcome event's delivery (its event)."""
# Reused across invocations of a warm function; threads start on first use.
_deliveries = ThreadPoolExecutor(max_workers=MAX_PARALLEL_DELIVERIES, thread_name_prefix="delivery")


def handler(event: BatchEvent, context: Any = None) -> dict[str, Any]:
    ctx = current()
    if DISPATCHER_KEEP_WARM_MARKER in event:  # the keep-warm rule's: initialised, so Lambda keeps it ready
        return {"batchItemFailures": []}
    sink = OutcomeSink.of(ctx)
    delivery = Delivery(ctx, sink)

    def process(message: SqsRecord, work: Work | None) -> tuple[int | None, bool]:
        """``(lateness if delivered, failed)`` for one message."""
        if work is None:
            # Not ours to interpret: leave it to the redrive policy, which parks it in the DLQ.
            logger.error("malformed delayer message %s", message.get("messageId"))
            return None, True
        try:
            if isinstance(work, dict):  # an outcome event
                outcomes_module.deliver(ctx, work, _receive_count(message))
                return None, False
            if isinstance(work, GroupSweep):
                GroupSweeper(ctx).sweep(work)
                return None, False
            receipt = Receipt(message["messageId"], _receive_count(message))
            return delivery.dispatch(work, receipt), False
        except Exception:  # noqa: BLE001 - retried through SQS, then redriven to the DLQ
            logger.exception("dispatch of message %s failed", message.get("messageId"))
            return None, True

    # Each message waits for its own due time in parallel, so one slow target
    # or a burst due in the same second does not make the rest of the batch late.
    records = event.get("Records", [])
    works = delivery.take_slots_together([_work(message) for message in records],
                                         [_receive_count(message) for message in records])
    order = sorted(range(len(records)), key=lambda i: _due_ms(works[i]))
    by_due = list(_deliveries.map(process, [records[i] for i in order], [works[i] for i in order]))
    outcomes: list[tuple[int | None, bool]] = [(None, False)] * len(records)
    for i, outcome in zip(order, by_due):
        outcomes[i] = outcome
    if sink is not None:
        sink.flush()
    _emit_outcomes(ctx, outcomes)
    _emit_target_figures(ctx, delivery)
    return partial_batch_response(m for m, (_, failed) in zip(records, outcomes) if failed)


def _receive_count(message: SqsRecord) -> int:
    return int(message["attributes"]["ApproximateReceiveCount"])


def _work(message: SqsRecord) -> Work | None:
    """What a message asks for: an outcome event (its dict), a group sweep, or a delivery; None when it is malformed."""
    try:
        data = json.loads(message["body"])
        return (data[OUTCOME_MARKER] if is_outcome_message(data)
                else GroupSweep.from_json(data) if SWEEP_MARKER in data else TimerRef.from_json(data))
    except (ValueError, KeyError, TypeError, AttributeError, ApiError):
        return None


_LAST = 2**63
"""The sort key of an outcome's message: after every delivery of its batch."""


def _due_ms(work: Work | None) -> int:
    """A message's due time, to order its batch: a delivery's own; 0 (first) for a sweep or a malformed message, and
    after every delivery for an outcome's."""
    return work.due_ms if isinstance(work, TimerRef) else _LAST if isinstance(work, dict) else 0


def _emit_target_figures(ctx: Context, delivery: Delivery) -> None:
    """One EMF record per limited target this invocation delivered to, sent back to wait, or was told to slow down by
    (``LatenessMs``, ``WaitingForRoom``, ``HeldBack``, each only when there is one), with the ``Target`` dimension;
    none for a deployment without limits."""
    for target, figures in delivery.target_figures.by_target():
        emit_metrics(ctx.config.metrics_namespace, {**METRIC_DIMENSIONS, TARGET_DIMENSION: target}, figures,
                     timestamp_ms=ctx.clock.now_ms(), units={WAITING_FOR_ROOM_METRIC: "Count", HELD_BACK_METRIC: "Count"})


def _emit_outcomes(ctx: Context, outcomes: list[tuple[int | None, bool]]) -> None:
    """The batch's EMF record: ``LatenessMs`` (a value per delivery) and ``FailedAttempts`` (the messages
    handed back to SQS), each only when there is one; no record for a batch with neither."""
    figures: dict[str, Any] = {}
    lateness = [late for late, _ in outcomes if late is not None]
    if lateness:
        figures[LATENESS_METRIC] = lateness
    failed = sum(1 for _, did_fail in outcomes if did_fail)
    if failed:
        figures[FAILED_ATTEMPTS_METRIC] = failed
    if figures:
        emit_metrics(ctx.config.metrics_namespace, dict(METRIC_DIMENSIONS), figures, timestamp_ms=ctx.clock.now_ms(),
                     units={FAILED_ATTEMPTS_METRIC: "Count"})
