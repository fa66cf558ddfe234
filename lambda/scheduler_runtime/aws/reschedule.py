"""Reschedule: a waiting one-shot schedule gets a new due time (and payload), on the create's rule.

The record's token decides what is delivered (the dispatcher starts a delivery only for a message
whose token the record holds), so a reschedule arms the new due time with a fresh token first, then
gives the record that token and due time in one conditional ``UpdateItem`` (status ``SCHEDULED`` or
``QUEUED``, and the token it read). From then on the old message or timer is a stray, never delivered.

- **New due time within the window:** ``SendMessage`` to the delayer queue, then the update (the
  record becomes ``QUEUED``). A message that may surface before the update lands (sent with at most
  :data:`~scheduler_runtime.core.window.STRAY_AFTER_MS` of delay) is announced first: one more
  update writes its token as the record's ``pendingToken``, and the dispatcher waits for it as for a
  create's record not written yet, instead of dropping it as a stray.
- **Due later:** ``PutItem`` of a timer with the new token, then the update (``SCHEDULED``); the old
  timer, if the sweeper has not claimed it yet, is flagged and deleted after the update (as a cancel
  removes its timer), else its message is a stray. A timer already on the new key (another call of
  the same due time, running or crashed) is adopted, as a create's replay adopts its timer.
- **The same due time:** only the payload changes (one update; nothing is armed).

A crash between the arming and the update leaves the schedule as it was (the new message or timer is a
stray), and the client's retry arms again. Once the update is done, a repeat of the same body (its hash
is kept as ``rescheduleHash``) answers what the first answered and changes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import ClientError

from ..core import keys, payload, states
from ..core.contract import LISTING
from ..core.envelope import TimerRef
from ..core.groups import is_stopped
from ..core.validation import RescheduleRequest
from ..core.window import STRAY_AFTER_MS, is_within_window
from .config import Config
from .delayer import DelayerQueue
from .groups import GroupStore
from .items import ScheduleRecord, TimerItem
from .store import PENDING_TOKEN, ScheduleStore

logger = logging.getLogger("scheduler_runtime")
RESCHEDULE_HASH = "rescheduleHash"
"""The request hash of the last reschedule that changed the record: a repeat of it changes nothing."""
REDRIVE_TAG = "redriveMsg"
"""The tag of the dead-letter message a redrive re-armed the record from; a reschedule that re-arms removes it."""
ATTEMPTS = 3
"""Reads and conditional writes tried while other reschedules of the same id keep changing its token."""
_WAITING = (states.SCHEDULED, states.QUEUED)


class NotFound(Exception):
    """No schedule has this id."""


class Ended(Exception):
    """Delivery started, or the schedule ended (``record.status``): it can no longer be rescheduled."""

    def __init__(self, record: ScheduleRecord) -> None:
        super().__init__(record.status)
        self.record = record


class Contended(Exception):
    """Other reschedules of the same id changed its token on every attempt; the request may be retried."""


@dataclass(frozen=True)
class Rescheduled:
    record: ScheduleRecord
    """The record as it is now (new due time, token and status when ``changed``)."""
    changed: bool
    """False for a repeat of the last reschedule's body, or a body that changes nothing."""


class RescheduleStore(ScheduleStore):
    """The table's reads and writes of a reschedule."""

    def read(self, schedule_id: str) -> tuple[ScheduleRecord, bytes | None] | None:
        """The record and the hash of its last reschedule, None for an unknown id."""
        item = self._ddb.get_item(
            TableName=self._table, Key=keys.record_key(schedule_id).as_item_key(), ConsistentRead=True
        ).get("Item")
        if not item:
            return None
        return ScheduleRecord.from_item(item), item.get(RESCHEDULE_HASH, {}).get("B")

    def announce(self, record: ScheduleRecord, token: str) -> bool:
        """Write ``token`` as the record's pending token, if it is still waiting with the token read."""
        new, _ = self._update_record(record.schedule_id, f"SET {PENDING_TOKEN} = :new", _CONDITION,
                                     {":new": token, **_condition_values(record)})
        return new is not None

    def put_timer_over(self, timer: TimerItem) -> None:
        """Write ``timer`` over anything with its key (a flagged copy of it, or none)."""
        self._ddb.put_item(TableName=self._table, Item=timer.to_item())

    def remove_unless_taken(self, timer: TimerItem) -> None:
        """Flag, then delete, the timer this attempt wrote, unless the record has taken its token meanwhile: another
        call of the same due time may have adopted it (:meth:`Rescheduler._attempt`), and then it is the live one."""
        if not self.flag_own_timer(timer):
            return
        found = self.read(timer.schedule_id)
        if found is not None and found[0].token == timer.token:
            self.put_timer_over(timer)  # unflagged again: the record names it
            return
        self.delete_cancelled_timer(timer.key)

    def take(self, record: ScheduleRecord, request: RescheduleRequest, token: str, status: str,
             shard: int | None) -> ScheduleRecord | None:
        """The record's new due time, token, status and shard (and payload), if it is still waiting with the
        token read. The record as it is now, or None when the condition failed (unless on this very update, sent
        again after its answer was lost: a new ``token`` is the record's already)."""
        values: dict[str, Any] = {":due": request.due_ms, ":new": token, ":status": status,
                                  ":hash": request.request_hash, **_condition_values(record)}
        sets = ["dueMs = :due", "#tok = :new", "#st = :status", f"{RESCHEDULE_HASH} = :hash"]
        removes = [PENDING_TOKEN]
        if token != record.token:
            # A redrive's tag (:mod:`.redrive`): its run, cut short and run again, would re-arm the old due time.
            removes.append(REDRIVE_TAG)
        if request.payload_json is not None:
            _, values[":payload"] = payload.encode(request.payload_json)
            sets.append("payload = :payload")
        if shard is None:
            removes.append("#shard")
        else:
            sets.append("#shard = :shard")
            values[":shard"] = shard
        if self._listing_shards:
            index = keys.index_keys(status, record.schedule_id, request.due_ms, self._listing_shards)
            sets += [f"{LISTING['partitionKey']} = :lpk", f"{LISTING['sortKey']} = :lsk"]
            values.update({":lpk": index[LISTING["partitionKey"]]["S"], ":lsk": index[LISTING["sortKey"]]["S"]})
        new, current = self._update_record(record.schedule_id, f"SET {', '.join(sets)} REMOVE {', '.join(removes)}",
                                           _CONDITION, values, {"#shard": "shard"})
        if new is not None:
            return ScheduleRecord.from_item(new)
        if token != record.token and current and current.get("token", {}).get("S") == token:
            # This update landed and only its answer was lost: the SDK's retry of it failed its condition on it.
            # Taken for a lost race, the new timer would be removed under a record that names it.
            return ScheduleRecord.from_item(current)
        return None


_CONDITION = "#tok = :old AND #st IN (:scheduled, :queued)"


def _condition_values(record: ScheduleRecord) -> dict[str, Any]:
    return {":old": record.token, ":scheduled": states.SCHEDULED, ":queued": states.QUEUED}


class Rescheduler:
    def __init__(self, store: RescheduleStore, queue: DelayerQueue, config: Config) -> None:
        self._store = store
        self._queue = queue
        self._config = config

    @property
    def store(self) -> RescheduleStore:
        return self._store

    def reschedule(self, schedule_id: str, request: RescheduleRequest, now_ms: int) -> Rescheduled:
        """Give a waiting schedule ``request``'s due time (and payload). Raises :class:`NotFound`,
        :class:`Ended` (delivery started or the schedule ended) or :class:`Contended`."""
        for _ in range(ATTEMPTS):
            found = self._store.read(schedule_id)
            if found is None:
                raise NotFound(schedule_id)
            record, last_hash = found
            if last_hash == request.request_hash:
                return Rescheduled(record, False)  # a repeat: answered as the first was
            if record.status not in _WAITING:
                raise Ended(record)
            if record.group is not None and self._stopped_by_group(record):
                raise Ended(replace(record, status=states.CANCELLED))
            if request.due_ms == record.due_ms and request.payload_json in (None, record.payload_json):
                return Rescheduled(record, False)  # nothing to change
            new = self._attempt(record, request, now_ms)
            if new is not None:
                self._remove_old_timer(record, new)
                return Rescheduled(new, True)
        raise Contended(schedule_id)

    def _stopped_by_group(self, record: ScheduleRecord) -> bool:
        """Whether a cancel of the record's group stopped it (one more read, for grouped schedules only)."""
        cutoff = GroupStore(self._store.dynamodb, self._store.table_name).cancelled_before(str(record.group))
        return is_stopped(record.created_ms, cutoff)

    def _attempt(self, record: ScheduleRecord, request: RescheduleRequest, now_ms: int) -> ScheduleRecord | None:
        """Arm the new due time, then update the record; None when the record changed meanwhile."""
        store, due_ms = self._store, request.due_ms
        if due_ms == record.due_ms:
            return store.take(record, request, record.token, record.status, record.shard)
        ticket = self._config.room_ticket(record.target, record.group)  # its message names a limited target
        if is_within_window(due_ms, now_ms, self._config.delay_window_seconds):
            ref = TimerRef(record.schedule_id, due_ms, keys.new_token(), now_ms, ticket=ticket)
            delay = self._config.delay_rule.delay_seconds(due_ms, now_ms)  # the deployment's lead, as a create's
            # A message sent with more delay surfaces only after this call has written or can no longer write.
            if delay * 1000 <= STRAY_AFTER_MS and not store.announce(record, ref.token):
                return None
            self._queue.send_one(ref, delay)
            return store.take(record, request, ref.token, states.QUEUED, None)
        shard = keys.shard_for(record.schedule_id, self._config.shard_count)
        timer = TimerItem(shard, due_ms, record.schedule_id, keys.new_token(), now_ms, ticket=ticket)
        # The key is the id and the due time: another call of this body (a client's retry while the first still
        # runs) or a crashed one wrote there. Its timer is adopted, never replaced: replaced, then removed as this
        # attempt's own once its update lost to that call's, the record would name a timer that is gone.
        live = store.put_timer(timer)
        armed = timer if live is None else live
        new = store.take(record, request, armed.token, states.SCHEDULED, shard)
        if new is None:
            if live is None:
                store.remove_unless_taken(timer)
            return None
        if live is not None:
            store.put_timer_over(live)  # its writer may be removing it (flagged): the record names it now
        return new

    def _remove_old_timer(self, old: ScheduleRecord, new: ScheduleRecord) -> None:
        """The old due time's timer, unless the sweeper claimed it (its message is then a stray)."""
        if old.timer_key is None or old.timer_key == new.timer_key:
            return
        assert old.shard is not None
        try:
            self._store.delete_own_timer(TimerItem(old.shard, old.due_ms, old.schedule_id, old.token, old.created_ms))
        except ClientError:  # the reschedule is done: a timer left behind is a stray, dropped when due
            logger.warning("removing the old timer of rescheduled %s failed", old.schedule_id, exc_info=True)


__all__ = ["Contended", "Ended", "NotFound", "RESCHEDULE_HASH", "RescheduleStore", "Rescheduled", "Rescheduler"]
