"""Periodic timers: a definition plus exactly one pending occurrence, which travels the one-shot path.

- **PUT** arms the first occurrence with a new token (a delayer message when due within the
  window, else a timer item), then writes the definition holding that token, as a create does.
  Replacing a definition arms the new one's first occurrence with a new token, so an occurrence
  of the old one already queued meets a token it does not hold and is never delivered.
- **Each occurrence**, when the dispatcher starts it, arms the next one (from the definition,
  never from the firing time) and then advances the definition to the new token in one
  conditional write, whatever then happens to this occurrence's delivery. A failed delivery is
  retried by a message of its own that names the attempt, until the definition's retry limits
  (:mod:`scheduler_runtime.core.retry`) are reached: then it is parked in the dead-letter queue with
  the reason.
- **DELETE** marks the definition DELETED, so no occurrence or retry can start after it. A
  delivery start is allowed only within ``START_DEADLINE_MS`` of the write that allowed it, and
  DELETE answers no sooner than ``SETTLE_MS`` after the latest such write: so nothing is
  delivered after DELETE has answered (with up to half a second of clock skew between hosts).
- **PATCH** ``PAUSED`` marks the definition PAUSED under a new version and removes its pending
  occurrence, so neither that occurrence nor a retry of an earlier one can start after it, and answers
  on the same fence as DELETE. ``ACTIVE`` resumes it: the first occurrence after now is armed with a
  new token (an occurrence message of before the pause is a stray), and the occurrences passed over
  are added to ``pausedCount``. A PUT of a paused definition replaces it and keeps it PAUSED.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from ..clock import Clock
from ..core import keys
from ..core.contract import PERIODIC_RETRY_DELAYS_SECONDS
from ..core.envelope import TimerRef
from ..core.flow import Ticket
from ..core.periodic import PeriodicRequest
from ..core.retry import Limits
from ..core.states import Refusal
from ..core.window import (SETTLE_MS, SLOW_WRITE_PAUSES, START_DEADLINE_MS, is_stray_age,
                           is_within_window, record_expiry_seconds)
from .config import Config
from .definitions import ACTIVE, DELETED, ENDED, PAUSED, Advance, Definition, DefinitionStore
from .delayer import DelayerQueue
from .items import TimerItem
from .store import ScheduleStore

ARM_LEAD_MS = 250
"""The next occurrence is armed this long before the current one is due. SQS delays are whole
seconds and periods are whole seconds (or minutes), so the next message then surfaces about this
long before its own due time: a dispatcher waits a quarter second for it, not up to a second. A
slower arm only makes it surface a second earlier (a longer wait), never late."""


@dataclass(frozen=True)
class Put:
    definition: Definition
    created: bool
    changed: bool
    """False for the same body again: nothing was written."""


@dataclass(frozen=True)
class StateChange:
    definition: Definition
    """As it is after the PATCH: PAUSED or ACTIVE, or the status that made it refuse one (ENDED)."""
    changed: bool
    """False when it already had the state asked for (or had ended): nothing was written."""


@dataclass(frozen=True)
class Occurrence:
    """A delivery the dispatcher may start now: what to deliver, or why not (``refusal``)."""

    definition: Definition | None
    due_ms: int = 0
    attempt: int = 0
    began_ms: int = 0
    refusal: Refusal | None = None
    release: Callable[[], None] | None = None
    """Gives back the place the delivery holds on its limited target (a ``room`` the caller gave)."""


Room = Callable[[str, Optional[str]], Optional[Callable[[], None]]]
"""Room on a target (and for a group on it) for a delivery about to start (:meth:`Periodic.start`): what gives it
back, or None when the message was sent back to wait for it."""


class Periodic:
    def __init__(self, definitions: DefinitionStore, store: ScheduleStore, queue: DelayerQueue, config: Config,
                 clock: Clock) -> None:
        self._definitions = definitions
        self._store = store
        self._queue = queue
        self._config = config
        self._clock = clock

    # --- api ---------------------------------------------------------------------
    def put(self, request: PeriodicRequest, now_ms: int) -> Put:
        """Create or replace a definition; the same body again changes nothing."""
        for _ in range(3):  # a concurrent PUT or DELETE of the same id: decide again on what it wrote
            stored = self._definitions.get(request.periodic_id)
            live = stored if stored is not None and stored.status != DELETED else None
            if live is not None and live.request_hash == request.request_hash:
                return Put(live, created=False, changed=False)
            anchor = request.anchor_ms(now_ms)
            first = request.spec.first_due(anchor, now_ms)
            token, version = keys.new_token(), (stored.version + 1 if stored is not None else 1)
            paused = live is not None and live.status == PAUSED and first is not None  # stays paused: nothing armed
            ticket = self._config.room_ticket(request.target, request.group)
            shard = (self.arm(TimerRef(request.periodic_id, first, token, now_ms, version, ticket=ticket), now_ms)
                     if first is not None and not paused else None)
            # A replacement keeps the history (counts, last firing); a new id, or one deleted before, starts afresh.
            history = ({"created_ms": live.created_ms, "last_due_ms": live.last_due_ms, "last_fired_ms": live.last_fired_ms,
                        "fired_count": live.fired_count, "skipped_count": live.skipped_count, "began_ms": live.began_ms,
                        "paused_count": live.paused_count}
                       if live is not None else {"created_ms": now_ms})
            definition = Definition(
                periodic_id=request.periodic_id, spec=request.spec, anchor_ms=anchor, payload_json=request.payload_json,
                target=request.target, request_hash=request.request_hash, version=version, updated_ms=now_ms,
                retry=request.retry, max_lateness_seconds=request.max_lateness_seconds, status=PAUSED if paused else ACTIVE if first is not None else ENDED, token=token,
                next_due_ms=None if paused else first, shard=shard, group=request.group,
                group_stamp_ms=None if request.group is None or first is None else now_ms, **history,
            )
            if paused and live is not None:  # a resume counts from the new definition's first occurrence
                definition = replace(definition, paused_ms=live.paused_ms, paused_due_ms=first)
            if self._definitions.put(definition, live) is None:
                if live is not None:
                    self._remove_timer(live)
                return Put(definition, created=live is None, changed=True)
            self._remove_timer(definition)  # lost the race: the occurrence this attempt armed is a stray
        raise RuntimeError(f"periodic timer '{request.periodic_id}' kept changing under this PUT; retry it")

    def delete(self, periodic_id: str, now_ms: int) -> Definition | None:
        """DELETE: nothing is delivered once this returns. None when the id is unknown."""
        old = self._definitions.delete(periodic_id, now_ms, self._config.history_retention_seconds)
        if old is None:
            return None
        self._remove_timer(old)
        _settle(old, self._clock)
        return old

    def stop_for_group(self, periodic_id: str, group_sort_key: str, now_ms: int,
                       leave_group: bool = True) -> Definition | None:
        """DELETE a definition its group's cancel stopped, while it is still that group member (``group_sort_key``),
        without DELETE's settle: the group's cancel settles once for all its members. The definition as it was
        before, or None when it was not deleted.

        Without ``leave_group`` it stays a member until :meth:`DefinitionStore.leave_group` (its outcome sent):
        stopped again meanwhile, it answers DELETED with the pending occurrence the first stop found."""
        old = self._definitions.stop_member(periodic_id, group_sort_key, now_ms, self._config.history_retention_seconds,
                                            leave_group)
        if old is not None:
            self._remove_timer(old)
        return old

    def pause(self, periodic_id: str, now_ms: int) -> StateChange | None:
        """PATCH PAUSED: nothing is delivered once this returns, as after a DELETE. None when the id is
        unknown; the definition unchanged when it is not ACTIVE (already PAUSED, or ENDED)."""
        for _ in range(3):  # a concurrent advance, PUT or PATCH: decide again on what it wrote
            current = self._definitions.get(periodic_id)
            if current is None or current.status == DELETED:
                return None
            if current.status != ACTIVE:
                if current.status == PAUSED:
                    _settle(current, self._clock)  # the pause that came first may not have answered yet
                return StateChange(current, changed=False)
            old = self._definitions.pause(current, now_ms)
            if old is not None:
                self._remove_timer(old)
                _settle(old, self._clock)
                return StateChange(replace(old, status=PAUSED, version=old.version + 1, updated_ms=now_ms,
                                           paused_ms=now_ms, paused_due_ms=old.next_due_ms, next_due_ms=None,
                                           shard=None), changed=True)
        raise RuntimeError(f"periodic timer '{periodic_id}' kept changing under this PATCH; retry it")

    def resume(self, periodic_id: str, now_ms: int) -> StateChange | None:
        """PATCH ACTIVE: arm the first occurrence after ``now_ms`` and count the ones passed over while
        paused in ``pausedCount``. None when the id is unknown; the definition unchanged when it is not
        PAUSED (already ACTIVE, or ENDED)."""
        for _ in range(3):  # a concurrent PUT or PATCH: decide again on what it wrote
            current = self._definitions.get(periodic_id)
            if current is None or current.status == DELETED:
                return None
            if current.status != PAUSED:
                return StateChange(current, changed=False)
            first = current.spec.first_due(current.anchor_ms, now_ms)
            passed = (current.spec.count_between(current.paused_due_ms, now_ms if first is None else first)
                      if current.paused_due_ms is not None else 0)
            token = keys.new_token()
            shard = (self.arm(TimerRef(periodic_id, first, token, now_ms, current.version,
                                       ticket=self._ticket(current)), now_ms)
                     if first is not None else None)
            resumed = self._definitions.resume(current, token, first, shard, passed, now_ms, self._ended_expiry(now_ms))
            if resumed is not None:
                return StateChange(resumed, changed=True)
            # Lost the race: the occurrence this attempt armed is a stray (its timer removed, its message refused).
            self._remove_timer(replace(current, token=token, next_due_ms=first, shard=shard))
        raise RuntimeError(f"periodic timer '{periodic_id}' kept changing under this PATCH; retry it")

    # --- dispatcher ------------------------------------------------------------------
    def start(self, ref: TimerRef, receive_count: int, message: bytes,
              wait_until: Callable[[int], None], room: Room | None = None) -> Occurrence:
        """Decide on an occurrence message: arm the next occurrence, wait until it is due
        (``wait_until(epoch_ms)``), then advance the definition and allow the delivery; or refuse.

        The advance keeps ``message``, the tag of the SQS message that started the occurrence, and
        an occurrence already advanced past is delivered again only for that same message received
        again (a dispatcher that died before it confirmed): another message with the same token (an
        ambiguous send's duplicate) is refused, so a delivered occurrence is not delivered again.

        The read and the arming happen ``ARM_LEAD_MS`` before the due time, while the message waits
        out its sub-second remainder, so only the conditional write stands between the due time and
        the target call, as for a one-shot. Arming early is safe: until the write, the armed
        message is a stray.

        With ``room``, a delivery to a limited target takes room on it before the write that starts it (an
        attempt message knows its target from its ticket): while it waits, nothing is written, so a DELETE or a
        pause still stops it.
        """
        if ref.attempt:
            wait_until(ref.due_ms)
            target, group = (None, None) if ref.ticket is None else (ref.ticket.target, ref.ticket.group)
            return _with_room(room, target, group, lambda: self._start_attempt(ref, ref.attempt))
        wait_until(ref.due_ms - ARM_LEAD_MS)
        definition = self._definitions.get(ref.schedule_id)
        for pause in SLOW_WRITE_PAUSES:  # armed ahead of the write that makes it current, which is slow
            if not (_armer_pending(ref, definition, self._clock) or
                    (definition is not None and self._predecessor_pending(ref, definition))):
                break
            self._clock.sleep(pause)
            definition = self._definitions.get(ref.schedule_id)
        if _armer_pending(ref, definition, self._clock):  # still not landed: again a second later, until a stray's age
            return Occurrence(None, refusal=Refusal.RECORD_NOT_WRITTEN_YET)
        if definition is None:
            return Occurrence(None, refusal=Refusal.MISSING)
        if definition.status not in (ACTIVE, ENDED):
            return Occurrence(None, refusal=Refusal(definition.status))
        if definition.token != ref.token:
            if definition.last_token == ref.token and definition.version == ref.version:
                if definition.last_message != message:
                    return Occurrence(None, refusal=Refusal.DUPLICATE)
                # Advanced past already, but its delivery never confirmed (a crashed dispatcher): again.
                wait_until(ref.due_ms)
                again = replace(ref, due_ms=definition.last_due_ms or ref.due_ms)
                return _with_room(room, definition.target, definition.group,
                                  lambda: self._start_attempt(again, receive_count, message))
            if _redelivered_after_the_chain_moved_on(ref, definition, receive_count):
                wait_until(ref.due_ms)
                return _with_room(room, definition.target, definition.group,
                                  lambda: self._start_attempt(ref, receive_count))
            if self._predecessor_pending(ref, definition):
                return Occurrence(None, refusal=Refusal.PREDECESSOR_PENDING)
            return Occurrence(None, refusal=Refusal.STRAY)
        if definition.status != ACTIVE:  # ENDED: only its last occurrence's retries are left
            return Occurrence(None, refusal=Refusal.ENDED)
        return _with_room(room, definition.target, definition.group,
                          lambda: self._advance(ref, definition, message, wait_until))

    def _advance(self, ref: TimerRef, definition: Definition, message: bytes,
                 wait_until: Callable[[int], None]) -> Occurrence:
        """Arm the next occurrence, wait until this one is due, then advance the definition past it."""
        armed_at = self._clock.now_ms()
        due, skipped, following = definition.spec.catch_up(ref.due_ms, max(armed_at, ref.due_ms))
        step = Advance(ref.token, keys.new_token(), following, None, due, skipped, armed_at, message)
        if following is not None:
            step = replace(step, next_shard=self.arm(
                TimerRef(ref.schedule_id, following, step.next_token, armed_at, definition.version,
                         ticket=self._ticket(definition)), armed_at))
        wait_until(ref.due_ms)
        step = replace(step, now_ms=self._clock.now_ms())
        advanced = self._definitions.advance(ref.schedule_id, step, self._ended_expiry(step.now_ms))
        if advanced is None:
            advanced = self._own_advance(ref.schedule_id, step)
        if advanced is None:
            if step.next_shard is not None:
                self._remove_timer(replace(definition, shard=step.next_shard, next_due_ms=following,
                                           token=step.next_token))
            return Occurrence(None, refusal=Refusal.SUPERSEDED)
        return Occurrence(advanced, due, 1, step.now_ms)

    def _predecessor_pending(self, ref: TimerRef, definition: Definition) -> bool:
        """This occurrence was armed by its predecessor, whose advance has not landed (yet): the
        definition, same version and ACTIVE, still waits for an earlier occurrence. The advance comes
        after the arm, and a slow one (throttled, retried) can land after this message is read; or
        the predecessor's dispatcher died in between, and its message, back after a visibility
        timeout, will arm the next occurrence again. Dropping this message as a stray would end the
        chain in the first case, so it is put back until the predecessor can no longer advance."""
        if (ref.attempt or definition.token == ref.token or definition.version != ref.version
                or definition.status != ACTIVE or definition.next_due_ms is None
                or definition.next_due_ms >= ref.due_ms):
            return False
        config = self._config
        horizon_ms = config.visibility_timeout_seconds * 1000 * config.max_receive_count
        return self._clock.now_ms() < definition.next_due_ms + horizon_ms

    def _own_advance(self, periodic_id: str, step: Advance) -> Definition | None:
        """The definition, if it holds ``step`` already: the advance was applied and only its answer was
        lost, so the SDK's retry of it failed its condition. Without this read, the occurrence would be
        refused as superseded (and a timer it armed removed). One ``GetItem``, on this failure path only."""
        current = self._definitions.get(periodic_id)
        if (current is not None and current.status in (ACTIVE, ENDED) and current.last_token == step.token
                and current.last_message == step.message):
            return current
        return None

    def retry_later(self, definition: Definition, due_ms: int, attempt: int, limits: Limits) -> str | None:
        """Send the next attempt of a failed occurrence (None); or, when ``limits`` forbid it, the limit
        reached, and send nothing (the caller parks it)."""
        delay = PERIODIC_RETRY_DELAYS_SECONDS[min(attempt, len(PERIODIC_RETRY_DELAYS_SECONDS)) - 1]
        now = self._clock.now_ms()
        limit = limits.park_reason(attempt, due_ms, now + delay * 1000)
        if limit is not None:
            return limit
        self._queue.send_one(TimerRef(definition.periodic_id, due_ms, definition.last_token or definition.token,
                                      now, definition.version, attempt + 1, self._ticket(definition)), delay)
        return None

    def start_late(self, definition: Definition, due_ms: int, attempt: int, slot_ms: int | None = None) -> None:
        """The same attempt again: at once (the start deadline passed before the target call), or for the start slot
        ``slot_ms`` on its limited target (the target said slow down)."""
        now = self._clock.now_ms()
        ticket = self._ticket(definition, slot_ms)
        delay = 0 if slot_ms is None else self._config.delay_rule.delay_seconds(slot_ms, now)
        self._queue.send_one(TimerRef(definition.periodic_id, due_ms, definition.last_token or definition.token,
                                      now, definition.version, attempt, ticket), delay)

    def _ticket(self, definition: Definition, slot_ms: int | None = None) -> Ticket | None:
        """What an occurrence's message to a limited target carries (:meth:`~.config.Config.room_ticket`): its target,
        the slot it holds, if any, and its group when the target has per-group limits; so it waits in the flow
        queue."""
        ticket = self._config.room_ticket(definition.target, definition.group)
        return None if ticket is None else replace(ticket, slot_ms=slot_ms)

    def record_failure(self, definition: Definition, reason: str) -> None:
        self._definitions.record_failure(definition.periodic_id, definition.version, reason)

    def skip_stale(self, definition: Definition, reason: str) -> None:
        """An occurrence its lateness bound ended: skipped and counted (the next one is armed already)."""
        self._definitions.record_stale(definition.periodic_id, definition.version, reason)

    def _ended_expiry(self, now_ms: int) -> int:
        """The TTL of a definition that ends at ``now_ms``: past every retry its last occurrence may
        still make (each up to the longest retry delay plus a visibility timeout after the one before,
        see :func:`record_expiry_seconds`), plus the history retention."""
        config = self._config
        return record_expiry_seconds(now_ms, config.max_receive_count - 1,
                                     config.visibility_timeout_seconds + max(PERIODIC_RETRY_DELAYS_SECONDS),
                                     config.history_retention_seconds)

    # --- shared --------------------------------------------------------------------
    def arm(self, ref: TimerRef, now_ms: int) -> int | None:
        """Send or store an occurrence: its shard when it waits as a timer, None when it is in the queue."""
        if is_within_window(ref.due_ms, now_ms, self._config.delay_window_seconds):
            self._queue.send_one(ref, self._config.delay_rule.delay_seconds(ref.due_ms, now_ms))
            return None
        shard = keys.shard_for(ref.schedule_id, self._config.shard_count)
        self._store.put_periodic_timer(TimerItem(shard, ref.due_ms, ref.schedule_id, ref.token, now_ms,
                                                 version=ref.version, ticket=ref.ticket))
        return shard

    def _start_attempt(self, ref: TimerRef, attempt: int, message: bytes | None = None) -> Occurrence:
        """Start attempt ``attempt`` of an occurrence advanced past already; ``message``: the tag the
        definition must still hold (the crash-redelivery path), None for a retry message of its own."""
        now = self._clock.now_ms()
        # Kept as lastError in the same write: if this attempt is the last and ends without the
        # dispatcher (a timeout), the definition that SQS's parked message names still says why.
        note = (f"attempt {attempt - 1} of {self._config.max_receive_count} did not deliver" if attempt > 1 else None)
        definition = self._definitions.begin_attempt(ref.schedule_id, ref.version or 0, now, message, note)
        if definition is None:
            return Occurrence(None, refusal=Refusal.DELETED_OR_REPLACED)
        return Occurrence(definition, ref.due_ms, attempt, now)

    def _remove_timer(self, definition: Definition) -> None:
        """Flag and delete the pending timer of ``definition`` if it still holds its token."""
        if definition.pending_timer is not None and definition.next_due_ms is not None and definition.shard is not None:
            self._store.delete_own_timer(TimerItem(definition.shard, definition.next_due_ms, definition.periodic_id,
                                                   definition.token, 0, version=definition.version))


def _with_room(room: Room | None, target: str | None, group: str | None,
               begin: Callable[[], Occurrence]) -> Occurrence:
    """``begin`` the delivery once it has room on ``target`` (at once without a ``room``, or a target); refused as
    WAITING_FOR_ROOM when its message went back to wait. The place is given back when ``begin`` refuses."""
    if room is None or target is None:
        return begin()
    release = room(target, group)
    if release is None:
        return Occurrence(None, refusal=Refusal.WAITING_FOR_ROOM)
    occurrence = begin()
    if occurrence.definition is None:
        release()
        return occurrence
    return replace(occurrence, release=release)


def _settle(old: Definition, clock: Clock) -> None:
    """Wait until ``SETTLE_MS`` after the last delivery start ``old`` allowed, on ``clock``: one allowed just
    before a DELETE or pause may still be starting (within ``START_DEADLINE_MS``), so let it start first."""
    if old.began_ms is not None:
        settle = old.began_ms + SETTLE_MS - clock.now_ms()
        if settle > 0:
            clock.sleep(settle / 1000)


def _redelivered_after_the_chain_moved_on(ref: TimerRef, definition: Definition, receive_count: int) -> bool:
    """An occurrence message received again (its dispatcher died before it confirmed), after the
    definition advanced past it and then past the next one too, so neither ``token`` nor
    ``lastToken`` is its own: with ``every`` shorter than the visibility timeout, the usual case.

    It was advanced past (its due time is not after ``lastDueMs``, same version), so it may have been
    delivered or not: it is delivered again, as a retry with the same ``dedupeKey``, rather than lost.
    A message received for the first time is never this (a stray, or a duplicate of an ambiguous send).
    """
    return (receive_count > 1 and not ref.attempt and ref.version == definition.version
            and definition.last_due_ms is not None and ref.due_ms <= definition.last_due_ms)


def _armer_pending(ref: TimerRef, definition: Definition | None, clock: Clock) -> bool:
    """This occurrence was armed by a PUT or a resume whose conditional write has not landed (yet): they
    arm first and write after, and an occurrence due within ``ARM_LEAD_MS`` of the call is read at once.
    Its definition is then still missing (a new id), an older version (a replacing PUT), or PAUSED at
    this version under another token (a resume). A young message waits for that write, as a one-shot's
    message waits for its record; a write that lost its race leaves it a stray after the waits."""
    if ref.attempt or is_stray_age(ref.created_ms, clock.now_ms()):
        return False
    if definition is None:
        return True
    if definition.token == ref.token:
        return False
    if ref.version is None:
        return False
    return definition.version < ref.version or (definition.status == PAUSED and definition.version == ref.version)


__all__ = ["ACTIVE", "DELETED", "ENDED", "PAUSED", "DefinitionStore", "Occurrence", "Periodic", "Put",
           "SETTLE_MS", "START_DEADLINE_MS", "StateChange"]
