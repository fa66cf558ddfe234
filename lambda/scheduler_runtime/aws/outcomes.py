"""Outcome events on AWS: gathered while an invocation ends occurrences, sent through the delayer queue, and
delivered from there to the deployment's outcomes target by the dispatcher.

- **Sending.** A function that ends occurrences (the dispatcher, the api function's cancels) gathers their events
  in an :class:`OutcomeSink` and sends them once its work is done, ten a request, so that an outcome never holds
  up a delivery. An event the delayer queue does not take is parked in the dead-letter queue with the reason
  ``outcome``; one neither queue takes is logged whole, at ERROR. A deployment without ``OUTCOMES`` has no sink:
  no request, no write, nothing gathered.
- **Delivering.** The dispatcher delivers an outcome message (:func:`deliver`) to the outcomes target as it
  delivers an envelope. A failed delivery is retried as SQS hands the message out again, after its visibility
  timeout; on its last receive, or when the target refuses it for good, it is parked in the dead-letter queue
  with the reason ``outcome: <error>``. An outcome's delivery is never the occurrence's: it neither delays,
  repeats nor fails it.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Mapping

from ..core import outcomes
from ..core.envelope import build_envelope
from ..core.outcomes import CancelReason, Kind
from ..observability import log_event
from .context import Context
from .delayer import SEND_ATTEMPTS, DelayerQueue

logger = logging.getLogger("scheduler_runtime")


class _Message:
    """An outcome event as a delayer message."""

    def __init__(self, event: Mapping[str, Any]) -> None:
        self.event = event

    def to_message_body(self) -> str:
        return outcomes.message_body(self.event)


class OutcomeSink:
    """The outcome events one invocation gathers (from any of its threads), sent by :meth:`flush`."""

    def __init__(self, ctx: Context, settings: outcomes.Settings) -> None:
        self._ctx = ctx
        self._settings = settings
        self._events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @classmethod
    def of(cls, ctx: Context) -> "OutcomeSink | None":
        """The sink of a deployment with outcomes; None without (so nothing is gathered or sent)."""
        settings = ctx.config.outcomes
        return None if settings is None else cls(ctx, settings)

    def wants(self, kind: Kind) -> bool:
        return self._settings.wants(kind)

    def cancelled_schedule(self, record: Any, reason: CancelReason) -> None:
        """Gather the ``CANCELLED`` outcome of a one-shot (its :class:`~.items.ScheduleRecord`), if wanted."""
        if self._settings.wants(Kind.CANCELLED):
            envelope = build_envelope(record.schedule_id, record.due_ms, record.due_ms, record.attempts,
                                      record.payload_json, record.target)
            self.add(Kind.CANCELLED, envelope, record.group, record.attempts, reason=reason)

    def cancelled_periodic(self, definition: Any, reason: CancelReason) -> None:
        """Gather the ``CANCELLED`` outcome of a deleted periodic timer's pending occurrence (its definition as the
        delete found it), if wanted; one with no occurrence pending (ended, or paused) has none."""
        due_ms = definition.next_due_ms
        if self._settings.wants(Kind.CANCELLED) and due_ms is not None and definition.status == "ACTIVE":
            envelope = build_envelope(definition.periodic_id, due_ms, due_ms, 0, definition.payload_json,
                                      definition.target)
            self.add(Kind.CANCELLED, envelope, definition.group, 0, reason=reason)

    def add(self, kind: Kind, envelope: Mapping[str, Any], group: str | None, attempts: int,
            **details: Any) -> None:
        """Gather the outcome of the occurrence ``envelope`` describes, if the deployment wants its kind."""
        if not self._settings.wants(kind):
            return
        event = outcomes.event(kind, envelope, group, self._ctx.clock.now_ms(), attempts,
                               self._settings.include_payload, **details)
        with self._lock:
            self._events.append(event)

    def flush(self) -> bool:
        """Send what was gathered; park what the delayer queue does not take (never raises). Whether every event
        was kept (sent, or parked): False when one was only logged."""
        with self._lock:
            events, self._events = self._events, []
        if not events:
            return True
        queue = _queue(self._ctx)
        try:
            unsent = queue.send([(str(n), _Message(event), 0) for n, event in enumerate(events)],
                                attempts=SEND_ATTEMPTS)
        except Exception:  # noqa: BLE001 - an outcome is parked or logged, never raised into a delivery
            logger.exception("sending %d outcome events failed", len(events))
            unsent = {str(n) for n in range(len(events))}
        parked = [park(self._ctx, events[int(n)], "not sent to the delayer queue") for n in sorted(unsent, key=int)]
        return all(parked)


def park(ctx: Context, event: Mapping[str, Any], error: str) -> bool:
    """Park ``event`` in the dead-letter queue with the reason ``outcome: <error>``; if that fails too, log it whole.
    Whether it was parked."""
    reason = outcomes.park_reason(error)
    try:
        _queue(ctx).dead_letter({outcomes.MARKER: dict(event)}, reason, schedule_id=str(event["id"]))
    except Exception:  # noqa: BLE001 - the log is the last place an outcome can be kept
        logger.exception("parking an outcome event failed")
        log_event("outcome_lost", level=logging.ERROR, id=event.get("id"), reason=reason,
                  outcome=json.dumps(event, default=str))
        return False
    log_event("outcome_parked", level=logging.ERROR, id=event["id"], outcome=event["outcome"], reason=reason)
    return True


def deliver(ctx: Context, event: Mapping[str, Any], receive_count: int) -> None:
    """Deliver one outcome event to the outcomes target. Raises to have SQS hand it out again; parks it on its
    last receive, when the target refuses it for good, or when the deployment has no outcomes target any more."""
    from .targets import DeliveryError, Undeliverable, deliver as deliver_to_target  # noqa: PLC0415 - the api
    # function gathers and sends outcomes but never delivers one: it does not load the targets

    settings = ctx.config.outcomes
    if settings is None:
        park(ctx, event, "this deployment has no outcomes target")
        return
    try:
        deliver_to_target(ctx, settings.target, dict(event))
    except DeliveryError as exc:
        if isinstance(exc, Undeliverable) or receive_count >= ctx.config.max_receive_count:
            park(ctx, event, f"{exc} (receive {receive_count})")
            return
        raise
    log_event("outcome_delivered", id=event["id"], outcome=event["outcome"])


def _queue(ctx: Context) -> DelayerQueue:
    return ctx.delayer_queue()
