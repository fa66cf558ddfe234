"""Create: the order of writes that makes every crash point safe, without a transaction.

Each create attempt draws a random token. What is written first carries it; the record,
written last and only if the id is new, holds it. The dispatcher starts a delivery only for
a message whose token the record holds, so a crash between the writes, a replay or a
conflicting create leaves at most a stray message or timer, which is never delivered.

- **Due within the window:** ``SendMessage`` to the delayer queue (delayed by the whole
  seconds left), then ``PutItem`` of the record as ``QUEUED``. Two requests, one write. The message
  to a limited target names it, so its dispatcher takes room first and learns nothing by a refused write.
- **Due later:** ``PutItem`` of a timer item in its shard, then ``PutItem`` of the record as
  ``SCHEDULED``. A replay with the same ``dueAt`` meets the timer it wrote before (same key)
  and adopts its token; a replay or a conflict that wrote a fresh timer removes it again.

A create is accepted (2xx) only once its record is written: an error before that answers
5xx, and the client's retry with the same id is safe.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Sequence

from ..core import keys, states
from ..core.envelope import TimerRef
from ..core.flow import Ticket
from ..core.validation import CreateRequest
from ..core.window import is_within_window
from .config import Config
from .delayer import SEND_ATTEMPTS, DelayerQueue
from .items import ScheduleRecord, TimerItem
from .store import CreateConflict, ScheduleStore

# Reused across invocations of a warm function: a batch's record writes go out in parallel.
_writers = ThreadPoolExecutor(max_workers=10, thread_name_prefix="create")


class NotQueued(Exception):
    """The delayer queue did not confirm the message; nothing was recorded, the create may be retried."""


@dataclass(frozen=True)
class Created:
    record: ScheduleRecord
    created: bool
    """False for an idempotent replay: ``record`` is the one stored by the first create."""


Outcome = Created | Exception


class Creator:
    def __init__(self, store: ScheduleStore, queue: DelayerQueue, config: Config) -> None:
        self._store = store
        self._queue = queue
        self._config = config

    def create(self, request: CreateRequest, now_ms: int) -> Created:
        """One create. Raises :class:`CreateConflict` for the same id with another body."""
        if not self.is_short(request, now_ms):
            return self._create_long(request, now_ms)
        ref = self._with_room(TimerRef(request.schedule_id, request.due_ms, keys.new_token(), now_ms), request)
        self._queue.send_one(ref, self._config.delay_rule.delay_seconds(request.due_ms, now_ms))
        return self._record(request, ref.token, now_ms, states.QUEUED)

    def create_many(self, requests: Sequence[CreateRequest], now_ms: int) -> list[Outcome]:
        """Several creates: the short ones in one ``SendMessageBatch``, every record written in parallel.

        Each outcome is a :class:`Created` or the exception for that request alone
        (:class:`CreateConflict`, :class:`NotQueued`, or a service error).
        """
        short = {str(i): r for i, r in enumerate(requests) if self.is_short(r, now_ms)}
        refs = {i: self._with_room(TimerRef(r.schedule_id, r.due_ms, keys.new_token(), now_ms), r)
                for i, r in short.items()}
        unsent = self._queue.send(
            [(i, ref, self._config.delay_rule.delay_seconds(ref.due_ms, now_ms)) for i, ref in refs.items()], attempts=SEND_ATTEMPTS
        ) if refs else set()

        def one(index: int) -> Outcome:
            request, key = requests[index], str(index)
            try:
                if key in unsent:
                    raise NotQueued(f"the delayer queue did not accept schedule '{request.schedule_id}'")
                if key in refs:
                    return self._record(request, refs[key].token, now_ms, states.QUEUED)
                return self._create_long(request, now_ms)
            except Exception as exc:  # noqa: BLE001 - answered per item
                return exc

        return list(_writers.map(one, range(len(requests))))

    @property
    def store(self) -> ScheduleStore:
        """The store the records are written to (a replay's answer reads its current status there)."""
        return self._store

    def _with_room(self, ref: TimerRef, request: CreateRequest) -> TimerRef:
        """The create's message, naming a limited target (:meth:`~.config.Config.room_ticket`)."""
        ticket = self._config.room_ticket(request.target, request.group)
        return ref if ticket is None else replace(ref, ticket=ticket)

    def is_short(self, request: CreateRequest, now_ms: int) -> bool:
        """Due within the window: sent straight to the delayer queue."""
        return is_within_window(request.due_ms, now_ms, self._config.delay_window_seconds)

    def _create_long(self, request: CreateRequest, now_ms: int) -> Created:
        shard = keys.shard_for(request.schedule_id, self._config.shard_count)
        timer = TimerItem(shard, request.due_ms, request.schedule_id, keys.new_token(), now_ms,
                          ticket=self._config.room_ticket(request.target, request.group))
        live = self._store.put_timer(timer)
        token = live.token if live is not None else timer.token
        try:
            result = self._record(request, token, now_ms, states.SCHEDULED, shard)
        except CreateConflict as conflict:
            self._remove_if_stray(timer, live, conflict.existing)
            raise
        if not result.created:
            self._remove_if_stray(timer, live, result.record)
        return result

    def _remove_if_stray(self, timer: TimerItem, live: TimerItem | None, stored: ScheduleRecord) -> None:
        """The timer this attempt wrote, when the stored record holds another token, is a stray."""
        if live is None and stored.token != timer.token:
            self._store.delete_own_timer(timer)

    def _record(self, request: CreateRequest, token: str, now_ms: int, status: str, shard: int | None = None) -> Created:
        record = ScheduleRecord(
            schedule_id=request.schedule_id,
            due_ms=request.due_ms,
            payload_json=request.payload_json,
            target=request.target,
            status=status,
            token=token,
            request_hash=request.request_hash,
            created_ms=now_ms,
            shard=shard,
            retry=request.retry,
            group=request.group,
            max_lateness_seconds=request.max_lateness_seconds,
        )
        stored, created = self._store.put_record(record)
        return Created(stored, created)


__all__ = ["Created", "CreateConflict", "Creator", "NotQueued", "Outcome"]
