"""The delivery protocol of one delayer message: deliver its schedule to its target, never early.

1. surfaced more than a second (plus the deployment's lead, its mapping's batching window) early:
   put back for the rest of its delay (:class:`~scheduler_runtime.core.window.DelayRule`);
2. otherwise wait out the remainder (under a second, plus the lead);
3. start the delivery with a conditional write that requires the record to hold the
   message's token (refused once cancelled, and for a stray of a replay, a conflict or a
   crashed create); a record not written yet is waited for, then the message is put back,
   until the create that sent it can no longer write;
4. the one sequence of a started delivery (:meth:`Delivery._carry_out`): the group check, the attempt
   limit, the target; on failure a retry, until the schedule's retry limits
   (:mod:`scheduler_runtime.core.retry`) are reached: then park the full envelope and the
   reason in the dead-letter queue and mark it FAILED.

An occurrence of a periodic timer takes the same first two steps, then :class:`~.periodic.Periodic`
arms the next occurrence and advances the definition (its step 3), then the same sequence (as a
:class:`Started`); a failed delivery is retried by a message of its own naming the attempt, so the
next occurrence is never held up by it.

Each occurrence that ends here (delivered, parked as failed or stale, stopped by its group's cancel) gives its
outcome event to the invocation's :class:`~.outcomes.OutcomeSink`, when the deployment has outcomes.

A message refused a start is put back, dropped as a stray or dropped as not delivered, as
:data:`~scheduler_runtime.core.states.ON_REFUSAL` says; a dropped stray is logged at the level
:data:`STRAY_LOG_LEVELS` gives its refusal (the rule is in :mod:`scheduler_runtime.handlers.dispatcher`'s
docstring).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..clock import wait_until
from ..core import flow, states
from ..core.flow import Ticket
from ..core.outcomes import CancelReason, Kind, kind_of_park
from ..core.envelope import TimerRef, build_envelope, message_tag
from ..core.retry import Limits, RetryPolicy, limits_of
from ..core.states import Refusal
from ..core.window import SLOW_WRITE_PAUSES, is_stray_age, record_expiry_seconds
from ..observability import log_event
from .config import Config
from .context import Context
from . import groups as groups_module
from .items import ScheduleRecord
from .flow import FlowStore, TargetFigures
from .room import RoomTaker, nothing_held
from .outcomes import OutcomeSink
from .store import DeliveryStart, ScheduleStore
from .targets import DeliveryError, Throttled, Undeliverable, deliver, refused_for_good

logger = logging.getLogger("scheduler_runtime")
STRAY_LOG_LEVELS = {Refusal.STRAY: logging.INFO, Refusal.DUPLICATE: logging.INFO, Refusal.MISSING: logging.WARNING}
"""The level a dropped stray is logged at, by its refusal: INFO for what ordinary use makes, WARNING for a look."""


@dataclass(frozen=True)
class Receipt:
    """Which SQS message brought a reference, and how often SQS has handed it out."""

    message_id: str
    """Kept across SQS's redeliveries of one message, new for every send: a retry keeps it, a duplicate
    (an ambiguous send's second message with the same token) has another."""
    receive_count: int
    stands_in: tuple[bytes, ...] = ()
    """The tags the record may hold for the retry this message stands in for (a retry put back to wait for room):
    the tag of the message it was put back for, and, when that one was itself a retry received again after it may
    have started, the tags before it. The write that starts its delivery takes the record over from whichever it
    holds to this message's own, once, so that a copy of it (an ambiguous send's) is refused, as any duplicate."""
    own_receives: int = 0
    """How often SQS has handed out this very message (``receive_count`` counts the retry's receives before it too);
    0: the same as ``receive_count``."""
    tag: bytes = field(init=False)
    """The message's tag (:func:`~scheduler_runtime.core.envelope.message_tag`), as records and definitions keep it."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tag", message_tag(self.message_id))

    def standing_in(self, ticket: Ticket | None) -> "Receipt":
        """The receipt of a waiting retry: its own tag, standing in for the tags the record may hold for the message
        it was put back for, and that message's receive count plus this one's receives after the first."""
        if ticket is None or not ticket.tags:
            return self
        return Receipt(self.message_id, ticket.receive_count + self.receive_count - 1, ticket.tags,
                       self.receive_count)

    @property
    def held_tags(self) -> tuple[bytes, ...]:
        """The tags the record may hold for this delivery, for a message put back to wait for room: those it stands
        in for, and its own once SQS handed it out before (its start write may have taken the record over then);
        none for a first attempt's first receive."""
        own_before = (self.own_receives or self.receive_count) > 1
        return (*self.stands_in, self.tag) if own_before else self.stands_in


@dataclass(frozen=True)
class Started:
    """A delivery whose start was allowed, a one-shot's or a periodic occurrence's: what the one sequence that
    follows (group check, limits, deliver, park) needs to know of it."""

    envelope: dict[str, Any]
    limits: Limits
    attempt: int
    """The attempt this start makes (a one-shot's: its message's receive count)."""
    late_ms: int
    route: str
    """Where GET reads the schedule (or periodic timer) and its failure."""
    group_stamp: tuple[str, int] | None
    """The group and the instant its membership dates from, when it has one: a cancel after it stops the start."""
    stop_for_group: Callable[[], None]
    record_failure: Callable[[str], None]
    spent: str
    """Why an attempt past ``limits.max_attempts`` ends it: the attempt before it ended without an answer."""
    retry: Callable[[DeliveryError], str | None]
    """After a failed attempt: the limit reached (then it is parked), or None once the next attempt is arranged;
    raises to have SQS hand the message out again."""
    too_late_to_start: Callable[[], bool] = lambda: False
    """Whether the target must not be called any more (the attempt was arranged again instead)."""
    skip_stale: Callable[[str], None] | None = None
    """How a delivery its lateness bound ended is skipped (a periodic occurrence's); None: parked, FAILED."""
    release: Callable[[], None] = lambda: None
    """Gives back the place it holds on a limited target (``maxInFlight``), once its target answered."""
    again: Callable[[int | None], None] | None = None
    """Sends the same attempt again, to wait in the delayer queue for the start slot given (None: a paused target,
    to look again), without spending it: how a limited target's throttle answer is taken."""


class Delivery:
    """The protocol over one environment's table and queues (:class:`~.context.Context`)."""

    def __init__(self, ctx: Context, outcomes: OutcomeSink | None = None) -> None:
        self._ctx = ctx
        self._outcomes = outcomes
        """Where the outcome of each occurrence ended here goes; None: the deployment has no outcomes."""
        self.target_figures = TargetFigures()
        """What the deliveries to limited targets did, for the invocation's metrics."""
        self._config = ctx.config
        self._clock = ctx.clock
        self._store = ScheduleStore.for_config(ctx.dynamodb, ctx.config)
        self._queue = ctx.delayer_queue()

    def take_slots_together(self, works: list[Any], receive_counts: list[int]) -> list[Any]:
        """A batch's works (its messages', in order, with their receive counts), each delivery of a group that has a
        rate of its own on a limited target holding its group slot (:meth:`~.room.RoomTaker.take_group_slots`: one
        write for those of one group), and each first ask due already to a target with a rate holding its start slot
        (:meth:`~.room.RoomTaker.take_target_slots`: one write for those of one item); the same list in a deployment
        without rates (nothing is paid)."""
        limits = self._config.flow_limits.values()
        group_rates = any(each.per_group is not None and each.per_group.rate is not None for each in limits)
        if not group_rates and not any(each.rate is not None for each in limits):
            return works
        taker = RoomTaker(FlowStore(self._ctx.flow_dynamodb, self._config.table_name), self._config, self._clock,
                          self._queue, self.target_figures)
        return taker.take_target_slots(taker.take_group_slots(works) if group_rates else works, receive_counts)

    def dispatch(self, ref: TimerRef, receipt: Receipt) -> int | None:
        """Deliver one schedule. Returns its lateness in ms when delivered, else None. Raises to have
        SQS hand the message out again (a failed delivery with receives left)."""
        clock = self._clock
        slot = _held_slot(ref, receipt)
        start_ms = ref.due_ms if slot is None else max(ref.due_ms, slot)
        timing = self._config.delay_rule.timing(start_ms, clock.now_ms())
        if timing.put_back:
            self._queue.send_one(ref, timing.put_back_seconds)
            waiting: dict[str, Any] = {}
            if slot is not None and slot > ref.due_ms and ref.ticket is not None:  # it waits for its start slot
                self.target_figures.waited(ref.ticket.target)
                waiting = {"reason": Refusal.WAITING_FOR_ROOM, "slotMs": slot}
            log_event("put_back", id=ref.schedule_id, delaySeconds=timing.put_back_seconds, **waiting)
            return None
        if ref.periodic:  # it arms the next occurrence while this one waits out its remainder
            started = self._start_occurrence(ref, receipt, slot)
        elif ref.ticket is not None:  # its room is taken a lead before its slot, which the room waits for
            wait_until(clock, ref.due_ms)
            started = self._start_with_room(ref, receipt.standing_in(ref.ticket), ref.ticket.target,
                                            ref.ticket.group, slot)
        else:
            wait_until(clock, start_ms)
            started = self._start_one_shot(ref, receipt)
        if started is None:
            return None
        try:
            return self._carry_out(ref, started)
        finally:
            started.release()

    def _carry_out(self, ref: TimerRef, started: Started) -> int | None:
        """The one sequence of a started delivery: the group check, the attempt limit, the target, a retry or
        the park. Its lateness when delivered, else None."""
        # The group's cancel stops a delivery's first start only: one started before it goes on (retried), as a
        # DELETE answers 409 once a delivery started; so an occurrence delivered, then received again (its delete
        # lost), is never also cancelled.
        if (started.group_stamp is not None and started.envelope["attempt"] == 1
                and not groups_module.may_start(self._groups(), *started.group_stamp, self._clock)):
            started.stop_for_group()
            self._refused(ref, Refusal.GROUP_CANCELLED)
            self._outcome(Kind.CANCELLED, started, not_started=True, reason=CancelReason.GROUP_CANCELLED)
            return None
        stale = started.limits.stale_reason(started.late_ms)
        if stale is not None:  # the target is not called: parked (a one-shot) or skipped (an occurrence)
            if started.skip_stale is None:
                self._park(started, stale, not_started=True)
            else:
                started.skip_stale(stale)
                log_event("stale_skipped", level=logging.WARNING, id=ref.schedule_id, dueMs=ref.due_ms, reason=stale)
                self._outcome(Kind.STALE, started, not_started=True, reason=stale)
            return None
        if started.attempt > started.limits.max_attempts:
            # The receive of the last attempt allowed ended without the dispatcher: park now, not try again.
            self._park(started, f"{started.limits.attempts_reached()}: {started.spent}", not_started=True)
            return None
        if started.too_late_to_start():
            return None
        try:
            answer = self._deliver(started.envelope)
        except DeliveryError as exc:
            if isinstance(exc, Throttled) and self._held_back(ref, started, exc):
                return None
            limit = None if isinstance(exc, Undeliverable) else started.retry(exc)
            if limit is None and not isinstance(exc, Undeliverable):
                return None
            self._park(started, _exhausted(started.attempt, exc, limit), last_error=str(exc)[:500])
            return None
        self._outcome(Kind.DELIVERED, started, firedAt=started.envelope["firedAt"], latenessMs=started.late_ms,
                      answer=answer)
        if started.envelope["target"] in self._config.flow_limits:
            self.target_figures.delivered(started.envelope["target"], started.late_ms)
        return _delivered(started.envelope, started.late_ms)

    def _held_back(self, ref: TimerRef, started: Started, exc: Throttled) -> bool:
        """A limited target said slow down: hold it back (``Retry-After``, else a backoff), and send this attempt
        again, unspent, for a slot after the hold; parked instead once that slot is past its ``maxAgeSeconds``.
        False for a target without limits (its attempt is retried as any failure)."""
        target = started.envelope["target"]
        limits = self._config.flow_limits.get(target)
        if limits is None or started.again is None:
            return False
        room, now = FlowStore(self._ctx.dynamodb, self._config.table_name), self._clock.now_ms()
        retry_after = None if exc.retry_after_seconds is None else math.ceil(exc.retry_after_seconds * 1000)
        until = room.hold(target, limits, now, retry_after)
        item, share = limits.item_for(target, ref.schedule_id)
        slot = room.reserve(item, share, until)
        too_old = started.limits.age_reason(ref.due_ms, until if slot is None else slot)
        if too_old is not None:
            self._park(started, f"{too_old}: the target held deliveries back: {exc}", last_error=str(exc)[:500])
            return True
        started.again(slot)
        self.target_figures.held_back(target)
        log_event("held_back", level=logging.WARNING, id=ref.schedule_id, target=target, heldUntilMs=until,
                  slotMs=slot, reason=str(exc)[:200])
        return True

    def _outcome(self, kind: Kind, started: Started, not_started: bool = False, **details: Any) -> None:
        """Gather the outcome of a started delivery's occurrence (``not_started``: its target was not called
        this time, so the attempts made are one fewer than its envelope's ``attempt``)."""
        if self._outcomes is not None:
            envelope = started.envelope
            group = None if started.group_stamp is None else started.group_stamp[0]
            self._outcomes.add(kind, envelope, group, envelope["attempt"] - (1 if not_started else 0), **details)

    def _start_one_shot(self, ref: TimerRef, receipt: Receipt) -> Started | None:
        """Start a one-shot's delivery with the conditional write (waiting a little for a record still being
        written); None when it does not start."""
        config, store, clock = self._config, self._store, self._clock
        holding = frozenset(config.flow_limits)
        start = self._begin(ref, receipt, holding)
        for pause in SLOW_WRITE_PAUSES:
            if start.refusal is not Refusal.MISSING or is_stray_age(ref.created_ms, clock.now_ms()):
                break
            clock.sleep(pause)
            start = self._begin(ref, receipt, holding)
        if start.waiting is not None:
            return self._start_with_room(ref, receipt, start.waiting.target, start.waiting.group, None)
        return self._started_one_shot(ref, receipt, start)

    def _begin(self, ref: TimerRef, receipt: Receipt, holding: frozenset[str] = frozenset()) -> DeliveryStart:
        """The conditional write that starts a one-shot's delivery (refused, unchanged, for a target in ``holding``)."""
        config, clock = self._config, self._clock
        attempts_left = config.max_receive_count - receipt.receive_count
        fired = clock.now_ms()
        return self._store.begin_delivery(ref, fired, record_expiry(config, fired, attempts_left), receipt.tag,
                                          _retry_note(receipt, config.max_receive_count), holding, receipt.stands_in)

    def _start_with_room(self, ref: TimerRef, receipt: Receipt, target: str, group: str | None,
                         slot: int | None) -> Started | None:
        """Start a one-shot's delivery to a limited target, once it has room (:meth:`_take_room`); None when it waits,
        or does not start."""
        release = self._take_room(ref, receipt, target, group, slot)
        if release is None:
            return None
        started = self._started_one_shot(ref, receipt, self._begin(ref, receipt))
        if started is None:
            release()
            return None
        return replace(started, release=release)

    def _take_room(self, ref: TimerRef, receipt: Receipt, target: str, group: str | None,
                   slot: int | None) -> Callable[[], None] | None:
        """Room for a delivery to ``target`` (:class:`~.room.RoomTaker`): what gives it back, or None when the message
        was sent back to wait for it. A target without limits has room at once."""
        if target not in self._config.flow_limits:
            return nothing_held
        taker = RoomTaker(FlowStore(self._ctx.flow_dynamodb, self._config.table_name), self._config, self._clock,
                          self._queue, self.target_figures)
        return taker.take(ref, receipt.held_tags, receipt.receive_count, target, group, slot)

    def _started_one_shot(self, ref: TimerRef, receipt: Receipt, start: DeliveryStart) -> Started | None:
        """The one-shot whose start write was made (or refused): what its delivery needs, or None."""
        config, store, clock = self._config, self._store, self._clock
        note = _retry_note(receipt, config.max_receive_count)
        if start.unparked is not None:
            self._park_again(start.unparked)
            return None
        if start.record is None:
            if start.ended is not None and self._outcomes is not None:  # its outcome, again: the first may be lost
                reason = (CancelReason.GROUP_CANCELLED if (start.ended.last_error or "").startswith("group ")
                          else CancelReason.CANCELLED)
                self._outcomes.cancelled_schedule(start.ended, reason)
            self._refused(ref, start.refusal)
            return None
        record = start.record
        fired = record.fired_ms if record.fired_ms is not None else clock.now_ms()
        limits = retry_limits(config, record.retry, record.max_lateness_seconds)
        if record.redriven_ms is not None:  # an operator's redrive sends it back past its bound on purpose
            limits = replace(limits, max_lateness_seconds=None)

        def record_failure(reason: str) -> None:
            failed_at = clock.now_ms()
            store.mark_failed(record, reason, failed_at, record_expiry(config, failed_at, 0), receipt.tag)

        def retry(exc: DeliveryError) -> str | None:
            limit = limits.park_reason(receipt.receive_count, record.due_ms,
                                       clock.now_ms() + config.visibility_timeout_seconds * 1000)
            if limit is None:
                raise exc  # SQS hands the message out again after its visibility timeout
            return limit

        def stop_for_group() -> None:
            store.cancel_started(record, groups_module.stopped_reason(record.group or ""), clock.now_ms(),
                                 config.history_retention_seconds, receipt.tag)

        def again(slot: int | None) -> None:  # the same attempt (its receive count), from a message of its own
            limits = config.flow_limits.get(record.target)
            group = record.group if limits is not None and limits.for_group(record.group) else None
            ticket = Ticket(record.target, slot, (receipt.tag,), receipt.receive_count, group)
            delay = flow.HELD_POLL_SECONDS if slot is None else config.delay_rule.delay_seconds(slot, clock.now_ms())
            self._queue.send_one(replace(ref, ticket=ticket), delay)

        return Started(
            build_envelope(record.schedule_id, record.due_ms, fired, record.attempts, record.payload_json,
                           record.target),
            limits, receipt.receive_count, fired - record.due_ms, f"/schedules/{record.schedule_id}",
            None if record.group is None else (record.group, record.created_ms),
            stop_for_group, record_failure, note or "", retry, again=again)

    def _start_occurrence(self, ref: TimerRef, receipt: Receipt, slot: int | None = None) -> Started | None:
        """Start an occurrence of a periodic timer (the next one is armed first); None when it does not start."""
        # Imported on first use: a deployment without periodic timers never loads it (nor the cron
        # parser and ``zoneinfo``), which keeps the dispatcher's cold start as it was.
        from . import periodic as periodic_module  # noqa: PLC0415

        ctx, clock = self._ctx, self._clock
        periodic = periodic_module.Periodic(periodic_module.DefinitionStore(ctx.dynamodb, ctx.config.table_name),
                                            self._store, self._queue, ctx.config, clock)
        room = (None if not ctx.config.flow_limits
                else lambda target, group: self._take_room(ref, receipt, target, group, slot))
        occurrence = periodic.start(ref, receipt.receive_count, receipt.tag,
                                    lambda instant_ms: wait_until(clock, instant_ms), room)
        definition = occurrence.definition
        if definition is None:
            if occurrence.refusal is not Refusal.WAITING_FOR_ROOM:  # sent back to wait: logged as put back
                self._refused(ref, occurrence.refusal)
            return None
        limits = retry_limits(ctx.config, definition.retry, definition.max_lateness_seconds)

        def retry(exc: DeliveryError) -> str | None:
            limit = periodic.retry_later(definition, occurrence.due_ms, occurrence.attempt, limits)
            if limit is None:
                log_event("retry_scheduled", level=logging.WARNING, id=ref.schedule_id, attempt=occurrence.attempt,
                          reason=str(exc)[:500])
            return limit

        def too_late_to_start() -> bool:
            if clock.now_ms() - occurrence.began_ms <= periodic_module.START_DEADLINE_MS:
                return False
            # A DELETE may be answered from began + SETTLE_MS on: too late to start safely; again at once.
            periodic.start_late(definition, occurrence.due_ms, occurrence.attempt)
            log_event("put_back", id=ref.schedule_id, delaySeconds=0, reason=Refusal.START_DEADLINE_PASSED)
            return True

        def stop_for_group() -> None:
            periodic.stop_for_group(definition.periodic_id, groups_module.member_sort_key(definition), clock.now_ms())

        group, stamp = definition.group, definition.group_stamp_ms
        return Started(
            build_envelope(definition.periodic_id, occurrence.due_ms, occurrence.began_ms, occurrence.attempt,
                           definition.payload_json, definition.target),
            limits, occurrence.attempt, occurrence.began_ms - occurrence.due_ms, f"/periodic/{definition.periodic_id}",
            None if group is None or stamp is None else (group, stamp), stop_for_group,
            lambda reason: periodic.record_failure(definition, reason),
            f"attempt {occurrence.attempt - 1} ended without an answer", retry, too_late_to_start,
            lambda reason: periodic.skip_stale(definition, reason), occurrence.release or nothing_held,
            lambda slot: periodic.start_late(definition, occurrence.due_ms, occurrence.attempt, slot))

    def _groups(self) -> groups_module.GroupStore:
        return groups_module.GroupStore(self._ctx.dynamodb, self._config.table_name)

    def _deliver(self, envelope: dict[str, Any]) -> dict[str, Any]:
        target = self._config.targets.get(envelope["target"])
        if target is None:
            raise DeliveryError(f"target '{envelope['target']}' is not registered")
        return deliver(self._ctx, target, envelope)

    def _fail_then_park(self, envelope: dict[str, Any], reason: str, record_failure: Callable[[], None],
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
        self._dead_letter(envelope, reason, route)

    def _park_again(self, record: ScheduleRecord) -> None:
        """Park, from its FAILED record, the delivery whose message failed it and came back: the dead-letter send
        after the FAILED write did not happen (it failed, or the invocation died), so the message is the only thing
        left that can put the envelope where a FAILED schedule must be. Raises, to come back again, if it fails."""
        envelope = build_envelope(record.schedule_id, record.due_ms, record.fired_ms or record.due_ms, record.attempts,
                                  record.payload_json, record.target)
        reason = record.last_error or "failed"
        self._dead_letter(envelope, reason, f"/schedules/{record.schedule_id}")
        if self._outcomes is not None:  # the park's outcome may not have been sent either
            kind = kind_of_park(reason)
            self._outcomes.add(kind, envelope, record.group, record.attempts - (1 if kind is Kind.STALE else 0),
                               reason=reason)

    def _dead_letter(self, envelope: dict[str, Any], reason: str, route: str) -> None:
        """Park ``envelope`` with ``reason``. One too large for the dead-letter queue as well is parked without
        its payload, which the record (FAILED, written first) or the definition at ``route`` still holds."""
        try:
            self._queue.dead_letter(envelope, reason)
        except Exception as exc:  # noqa: BLE001 - re-raised unless the queue refuses it for good
            if not refused_for_good(exc):
                raise
            reason = f"payload left out (too large for the dead-letter queue): read it with GET {route}; {reason}"
            self._queue.dead_letter({name: value for name, value in envelope.items() if name != "payload"}, reason)
        log_event("dead_lettered", level=logging.ERROR, id=envelope["id"], reason=reason)

    def _park(self, started: Started, reason: str, not_started: bool = False, last_error: str | None = None) -> None:
        """Mark the delivery FAILED and park it; its outcome is ``STALE`` when its lateness bound ended it."""
        self._fail_then_park(started.envelope, reason, lambda: started.record_failure(reason), started.route)
        self._outcome(kind_of_park(reason), started, not_started=not_started, reason=reason, lastError=last_error)

    def _refused(self, ref: TimerRef, refusal: Refusal | None) -> None:
        """A message refused a start: put back, dropped as a stray or dropped as not delivered, as
        :data:`~scheduler_runtime.core.states.ON_REFUSAL` says for its refusal."""
        if refusal is Refusal.MISSING and not is_stray_age(ref.created_ms, self._clock.now_ms()):
            refusal = Refusal.RECORD_NOT_WRITTEN_YET  # its create may still write it
        action = states.Action.NOT_DELIVERED if refusal is None else states.ON_REFUSAL.get(refusal,
                                                                                         states.Action.NOT_DELIVERED)
        if refusal is not None and action is states.Action.PUT_BACK:
            delay = states.put_back_seconds(refusal, ref.due_ms, self._clock.now_ms())
            self._queue.send_one(ref, delay)
            log_event("put_back", id=ref.schedule_id, delaySeconds=delay, reason=refusal)
        elif refusal is not None and action is states.Action.DROP_AS_STRAY:
            log_event("stray_dropped", level=STRAY_LOG_LEVELS.get(refusal, logging.INFO), id=ref.schedule_id,
                      reason=refusal)
        else:
            log_event("not_delivered", id=ref.schedule_id, reason=refusal)


def _held_slot(ref: TimerRef, receipt: Receipt) -> int | None:
    """The start slot a message put back for room holds: on its first receive only (received again, its slot has
    passed unused or was used, so it takes a new one)."""
    if ref.ticket is None or receipt.receive_count > 1:
        return None
    return ref.ticket.slot_ms


def retry_limits(config: Config, policy: RetryPolicy | None, max_lateness_seconds: int | None = None) -> Limits:
    """The limits of a delivery: its schedule's ``retry`` and ``maxLatenessSeconds``, the deployment's defaults for
    what it left out."""
    return limits_of(policy, config.max_receive_count, config.retry_max_age_seconds,
                     config.max_lateness_seconds if max_lateness_seconds is None else max_lateness_seconds)


def record_expiry(config: Config, now: int, attempts_left: int) -> int:
    """A one-shot record's TTL at delivery start or failure: past its message's last possible park
    (each attempt left comes a visibility timeout after the one before), plus the history retention."""
    return record_expiry_seconds(now, attempts_left, config.visibility_timeout_seconds, config.history_retention_seconds)


def _retry_note(receipt: Receipt, max_receive_count: int) -> str | None:
    """What a retry's delivery start keeps as ``lastError``: the receive before it ended without a
    delivery. So a schedule whose last receive ends without the dispatcher (a timeout, throttling),
    and that SQS parks as a bare reference, still reads with a reason. None on a first receive."""
    if receipt.receive_count < 2:
        return None
    return (f"receive {receipt.receive_count - 1} of {max_receive_count} ended without a delivery: the target "
            "failed, or the dispatcher timed out or was throttled (its log says which)")


def _exhausted(attempts: int, exc: DeliveryError, limit: str | None) -> str:
    """The reason a delivery ends in the dead-letter queue: the retry limit reached (``limit``) and the last error."""
    if isinstance(exc, Undeliverable):
        return f"undeliverable (attempt {attempts}, not retried): {exc}"
    return f"delivery failed after {attempts} attempt{'s' if attempts != 1 else ''}: {limit}: {exc}"


def _delivered(envelope: dict[str, Any], late_ms: int) -> int:
    log_event("delivered", id=envelope["id"], attempt=envelope["attempt"], lateMs=late_ms)
    return late_ms
