"""The Schedules table: every read and conditional write the handlers make.

No Scan and no transaction anywhere. Sweeps Query one shard partition at a time and
paginate. Every write that decides something is conditional, so concurrent handlers can
race without ever promoting a timer twice or delivering against the rules. A condition
that fails answers with the item as it was (``ReturnValuesOnConditionCheckFailure``), so
deciding what happened costs no extra read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, TypeVar

from botocore.exceptions import ClientError

from ..core import groups, keys, states
from ..core.contract import DEFAULT_TARGET_NAME, LISTING
from ..core.envelope import TimerRef
from ..core.states import Refusal
from .items import ScheduleRecord, TimerItem, is_condition_failure

PENDING_TOKEN = "pendingToken"
"""The token of a reschedule's message sent before the record holds it (:mod:`.reschedule`)."""


class CreateConflict(Exception):
    """The id exists with a different request body."""

    def __init__(self, existing: ScheduleRecord) -> None:
        super().__init__(existing.schedule_id)
        self.existing = existing


@dataclass(frozen=True)
class DeliveryStart:
    """The outcome of the conditional write that starts a delivery.

    ``record`` is the new image when the delivery may go ahead. Otherwise ``refusal`` says
    why not: MISSING (no record, yet), STRAY (the record holds another token), DUPLICATE (another
    message started it), or the record's status (CANCELLED, FAILED).
    """

    record: ScheduleRecord | None
    refusal: Refusal | None = None
    unparked: ScheduleRecord | None = None
    """FAILED by this very message, which came back: its dead-letter send failed, or its invocation died after the
    FAILED write. The envelope must still be parked (from this record), or nothing would hold it there."""
    waiting: ScheduleRecord | None = None
    """With the refusal WAITING_FOR_ROOM: the record (unchanged), whose target has limits."""
    ended: ScheduleRecord | None = None
    """With the refusal CANCELLED: the record, so its outcome can be sent again (the one sent before may be lost)."""


_Store = TypeVar("_Store", bound="ScheduleStore")  # typing.Self is Python 3.11's; the runtime supports 3.10


class ScheduleStore:
    def __init__(self, dynamodb: Any, table_name: str, listing_shards: int | None = None) -> None:
        """``listing_shards``: the shard count when the listing index is on (``LISTING``), else None.

        With it, a create's record carries the index keys, and each status change keeps them
        right: removed at delivery start and cancel, moved to FAILED's partition on failure.
        """
        self._ddb = dynamodb
        self._table = table_name
        self._listing_shards = listing_shards

    @classmethod
    def for_config(cls: type[_Store], dynamodb: Any, config: Any) -> _Store:
        return cls(dynamodb, config.table_name, config.shard_count if config.listing else None)

    @property
    def dynamodb(self) -> Any:
        return self._ddb

    @property
    def table_name(self) -> str:
        return self._table

    def _unlisted(self, update: str, leave_group: bool = True) -> str:
        """``update`` that also takes the record out of its group's index (a no-op without a group; unless not
        ``leave_group``) and, when listing is on, out of the listing index: a record that stops waiting."""
        removed = ([groups.SORT_KEY] if leave_group else []) + (
            [LISTING["partitionKey"], LISTING["sortKey"]] if self._listing_shards else [])
        return f"{update} REMOVE {', '.join(removed)}" if removed else update

    # --- create (api) ---------------------------------------------------------
    def put_record(self, record: ScheduleRecord) -> tuple[ScheduleRecord, bool]:
        """The create's last write, only if the id is new. Returns ``(record, created)``.

        An existing id with the same request hash is an idempotent replay (``created`` is
        False, the stored record is returned); with another hash it raises :class:`CreateConflict`.
        """
        item = record.to_item()
        if self._listing_shards:
            item.update(keys.index_keys(record.status, record.schedule_id, record.due_ms, self._listing_shards))
        existing = self._put_if_absent(item)
        if existing is None:
            return record, True
        stored = ScheduleRecord.from_item(existing)
        if stored.request_hash != record.request_hash:
            raise CreateConflict(stored)
        return stored, False

    def put_timer(self, timer: TimerItem) -> TimerItem | None:
        """Write a waiting timer unless a live one has its key. Returns the live one, or None once written.

        The key holds the id and the due time, so a replay with the same ``dueAt`` meets the
        timer it wrote before: the caller adopts that timer's token instead of replacing it.
        A timer flagged cancelled (a cancel whose cleanup was cut short) is replaced.
        """
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=timer.to_item(),
                ConditionExpression="attribute_not_exists(pk) OR cancelled = :t",
                ExpressionAttributeValues={":t": {"BOOL": True}},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return None
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return TimerItem.from_item(exc.response["Item"])

    def put_periodic_timer(self, timer: TimerItem) -> None:
        """Write a periodic occurrence's timer, over any timer with its key: the definition's token decides."""
        self._ddb.put_item(TableName=self._table, Item=timer.to_item())

    def delete_own_timer(self, timer: TimerItem) -> None:
        """Flag, then delete, a stray timer this create attempt wrote (its token), if it is still there.

        Flagged as a cancel's timer is, so the enqueuer's filter drops its REMOVE: unflagged, it
        would become a delayer message that the dispatcher puts back every 15 minutes until its
        due time (a year out: about 35,000 round trips) before it meets the token and drops it.
        Two writes, on the rare path of a 409 or a replay with another ``dueAt``.
        """
        if self.flag_own_timer(timer):
            self.delete_cancelled_timer(timer.key)

    def flag_own_timer(self, timer: TimerItem) -> bool:
        """Flag ``timer`` as a cancel's (its REMOVE then enqueues nothing), if it is still there with its token;
        whether it was."""
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=timer.key.as_item_key(),
                UpdateExpression="SET cancelled = :t",
                ConditionExpression="#tok = :tok",
                ExpressionAttributeNames={"#tok": "token"},
                ExpressionAttributeValues={":tok": {"S": timer.token}, ":t": {"BOOL": True}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return False  # gone, or another attempt's
            raise
        return True

    def _put_if_absent(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """Put ``item`` if its key is free; the existing item when it is not."""
        try:
            self._ddb.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(pk)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            return None
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            existing: dict[str, Any] = exc.response["Item"]
            return existing

    # --- read and cancel (api) ------------------------------------------------
    def get(self, schedule_id: str) -> ScheduleRecord | None:
        item = self._ddb.get_item(
            TableName=self._table, Key=keys.record_key(schedule_id).as_item_key(), ConsistentRead=True
        ).get("Item")
        return ScheduleRecord.from_item(item) if item else None

    def timer_pending(self, record: ScheduleRecord) -> bool:
        """Whether a waiting schedule's timer is still in the table (not claimed yet)."""
        if record.timer_key is None:
            return False
        item = self._ddb.get_item(
            TableName=self._table,
            Key=record.timer_key.as_item_key(),
            ConsistentRead=True,
            ProjectionExpression="pk, cancelled",
        ).get("Item")
        return bool(item) and not item.get("cancelled", {}).get("BOOL", False)

    def cancel(self, schedule_id: str, now_ms: int, retention_seconds: int,
               leave_group: bool = True) -> tuple[ScheduleRecord | None, bool]:
        """Cancel unless delivery started. Returns ``(record, changed)``; record None if unknown. Without
        ``leave_group``, a member stays in its group's index (CANCELLED) until :meth:`leave_group`."""
        new, old = self._update_record(
            schedule_id,
            self._unlisted("SET #st = :cancelled, endedMs = :now, expiresAt = :exp", leave_group),
            "#st IN (:scheduled, :queued)",
            {":cancelled": states.CANCELLED, ":scheduled": states.SCHEDULED, ":queued": states.QUEUED,
             ":now": now_ms, ":exp": now_ms // 1000 + retention_seconds},
        )
        if new is None:
            return (ScheduleRecord.from_item(old) if old else None), False
        record = ScheduleRecord.from_item(new)
        if record.timer_key is not None:
            self._remove_cancelled_timer(record.timer_key)
        return record, True

    def leave_group(self, schedule_id: str) -> None:
        """Take a CANCELLED member out of its group's index (nothing when it already left)."""
        self._update_record(schedule_id, f"REMOVE {groups.SORT_KEY}",
                            f"#st = :cancelled AND attribute_exists({groups.SORT_KEY})",
                            {":cancelled": states.CANCELLED})

    def _remove_cancelled_timer(self, key: keys.Key) -> None:
        """Flag, then delete, the timer of a cancelled schedule.

        The flag is in the REMOVE record's old image, so the enqueuer's filter
        drops it. If either write is lost, the dispatcher still refuses the
        delivery, because the record says CANCELLED.
        """
        try:
            self._ddb.update_item(
                TableName=self._table,
                Key=key.as_item_key(),
                UpdateExpression="SET cancelled = :t",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues={":t": {"BOOL": True}},
            )
        except ClientError as exc:
            if is_condition_failure(exc):
                return  # already claimed: the dispatcher will see CANCELLED
            raise
        self.delete_cancelled_timer(key)

    def delete_cancelled_timer(self, key: keys.Key) -> None:
        try:
            self._ddb.delete_item(
                TableName=self._table,
                Key=key.as_item_key(),
                ConditionExpression="cancelled = :t",
                ExpressionAttributeValues={":t": {"BOOL": True}},
            )
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    # --- claim (sweeper) and write-back (enqueuer) -----------------------------
    def due_timer_pages(self, shard: int, cutoff_ms: int, page_size: int = 500) -> Iterator[list[TimerItem]]:
        """Every timer in ``shard`` due at or before ``cutoff_ms``, overdue first, a page at a time."""
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :p AND sk < :cut",
            "ExpressionAttributeValues": {
                ":p": {"S": keys.timer_partition(shard)},
                ":cut": {"S": keys.due_cutoff_sort_key(cutoff_ms)},
            },
            "Limit": page_size,
        }
        for items in query_pages(self._ddb, kwargs):
            yield [TimerItem.from_item(item) for item in items]

    def claim(self, timer: TimerItem) -> bool:
        """The single point of promotion: delete the timer if it is still there and not cancelled."""
        try:
            self._ddb.delete_item(
                TableName=self._table,
                Key=timer.key.as_item_key(),
                ConditionExpression="attribute_exists(pk) AND attribute_not_exists(cancelled)",
            )
            return True
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise

    def write_back(self, timers: list[TimerItem], attempts: int = 3) -> list[TimerItem]:
        """Put claimed timers back after their enqueue failed, so they are claimed again.

        Unconditional puts, so ``BatchWriteItem`` in chunks of 25; unprocessed
        items are retried. Returns the timers that still could not be written.
        """
        left = list(timers)
        for _ in range(attempts):
            if not left:
                break
            failed: list[TimerItem] = []
            for start in range(0, len(left), 25):
                chunk = left[start : start + 25]
                try:
                    response = self._ddb.batch_write_item(
                        RequestItems={self._table: [{"PutRequest": {"Item": t.to_item()}} for t in chunk]}
                    )
                except ClientError:
                    failed.extend(chunk)
                    continue
                unprocessed = {
                    (r["PutRequest"]["Item"]["pk"]["S"], r["PutRequest"]["Item"]["sk"]["S"])
                    for r in response.get("UnprocessedItems", {}).get(self._table, [])
                }
                failed.extend(t for t in chunk if (t.key.pk, t.key.sk) in unprocessed)
            left = failed
        return left

    # --- dispatcher --------------------------------------------------------------
    def begin_delivery(self, ref: TimerRef, now_ms: int, expires_at: int, tag: bytes,
                       note: str | None = None, holding: frozenset[str] = frozenset(),
                       stands_in: tuple[bytes, ...] = ()) -> DeliveryStart:
        """Mark delivery started (FIRED, attempts + 1) if the record holds this message's token.

        A SCHEDULED or QUEUED record starts its first attempt and keeps ``tag``, the tag of the SQS message
        that started it (``msgId``, :func:`~scheduler_runtime.core.envelope.message_tag`); a FIRED one starts a retry only for that
        same message received again. Another message with the same token (an ambiguous send made
        it) is refused as DUPLICATE, so an occurrence is never delivered again once delivered.
        Anything else is refused, with the reason; a message whose token the record holds as its
        ``pendingToken`` (a reschedule's, sent before the record takes it) is refused as MISSING, so that
        it waits as a create's message does for its record. ``expires_at`` (epoch seconds,
        :func:`~scheduler_runtime.core.window.record_expiry_seconds`) must outlive every attempt the
        message has left. ``note``, when given, is kept as ``lastError`` in the same write (a retry
        says why the receive before it did not deliver). A record whose target is in ``holding`` (limited targets the
        message holds no room on) is refused as WAITING_FOR_ROOM, unchanged: the same write tells the target, so
        a deployment pays no read for it, and one without limits no longer condition. ``stands_in``: the tags the record may
        hold for the retry a waiting message was put back for; a FIRED record that holds one is taken over (``msgId``
        becomes ``tag``), so only one message of that retry ever starts it.
        """
        values: dict[str, Any] = {":fired": states.FIRED, ":scheduled": states.SCHEDULED, ":queued": states.QUEUED,
                        ":tok": ref.token, ":now": now_ms, ":exp": expires_at, ":one": 1, ":mid": tag}
        update = "SET #st = :fired, firedMs = :now, expiresAt = :exp, msgId = :mid"
        if note:
            update += ", lastError = :why"
            values[":why"] = note[:1000]
        # A FIRED record without msgId was started before this rule: its retries go ahead as before.
        same_message = "msgId = :mid OR attribute_not_exists(msgId)"
        if stands_in:
            was = [f":was{index}" for index in range(len(stands_in))]
            same_message += f" OR msgId IN ({', '.join(was)})"
            values.update(zip(was, stands_in))
        condition = f"#tok = :tok AND (#st IN (:scheduled, :queued) OR (#st = :fired AND ({same_message})))"
        names: dict[str, str] = {}
        if holding:
            condition += f" AND {_not_one_of(holding, values, names)}"
        new, old = self._update_record(ref.schedule_id, self._unlisted(update + " ADD attempts :one"), condition,
                                       values, names)
        if new is not None:
            return DeliveryStart(ScheduleRecord.from_item(new))
        if not old:
            return DeliveryStart(None, Refusal.MISSING)
        waiting = ScheduleRecord.from_item(old) if holding else None
        if (waiting is not None and waiting.target in holding and old.get("token", {}).get("S") == ref.token
                and (old["status"]["S"] in (states.SCHEDULED, states.QUEUED)
                     or (old["status"]["S"] == states.FIRED and old.get("msgId", {}).get("B", tag) in (tag, *stands_in)))):
            return DeliveryStart(None, Refusal.WAITING_FOR_ROOM, waiting=waiting)
        if old.get("token", {}).get("S") != ref.token:
            # A reschedule's message sent before the record takes its token (:mod:`.reschedule`) waits.
            pending = old.get(PENDING_TOKEN, {}).get("S") == ref.token
            return DeliveryStart(None, Refusal.MISSING if pending else Refusal.STRAY)
        if old["status"]["S"] == states.FIRED:
            return DeliveryStart(None, Refusal.DUPLICATE)
        if old["status"]["S"] == states.FAILED and old.get("msgId", {}).get("B") == values[":mid"]:
            return DeliveryStart(None, Refusal.FAILED, unparked=ScheduleRecord.from_item(old))
        if old["status"]["S"] == states.CANCELLED:
            return DeliveryStart(None, Refusal.CANCELLED, ended=ScheduleRecord.from_item(old))
        return DeliveryStart(None, Refusal(old["status"]["S"]))

    def cancel_started(self, record: ScheduleRecord, reason: str, now_ms: int, retention_seconds: int,
                       tag: bytes) -> bool:
        """CANCELLED, with ``reason``, a delivery the message tagged ``tag`` started and that must not go ahead (its
        group was cancelled before it): only while it is still FIRED by that message. Whether it was written."""
        new, _ = self._update_record(
            record.schedule_id, "SET #st = :cancelled, lastError = :why, endedMs = :now, expiresAt = :exp",
            "#st = :fired AND msgId = :mid",
            {":cancelled": states.CANCELLED, ":fired": states.FIRED, ":why": reason[:1000], ":now": now_ms,
             ":exp": now_ms // 1000 + retention_seconds, ":mid": tag})
        return new is not None

    def mark_failed(self, record: ScheduleRecord, reason: str, now_ms: int, expires_at: int, tag: bytes) -> None:
        """FAILED with ``reason``, kept until ``expires_at`` (epoch seconds), if the delivery is still FIRED
        by the message tagged ``tag`` (a stale duplicate never fails a schedule that another delivered)."""
        values: dict[str, Any] = {":failed": states.FAILED, ":fired": states.FIRED, ":why": reason[:1000], ":now": now_ms,
                        ":exp": expires_at, ":mid": tag}
        update = "SET #st = :failed, lastError = :why, endedMs = :now, expiresAt = :exp"
        if self._listing_shards:
            index = keys.index_keys(states.FAILED, record.schedule_id, record.due_ms, self._listing_shards)
            update += f", {LISTING['partitionKey']} = :lpk, {LISTING['sortKey']} = :lsk"
            values.update({":lpk": index[LISTING["partitionKey"]]["S"], ":lsk": index[LISTING["sortKey"]]["S"]})
        self._update_record(record.schedule_id, update, "#st = :fired AND msgId = :mid", values)

    def _update_record(self, schedule_id: str, update: str, condition: str, values: dict[str, Any],
                       names: dict[str, str] | None = None) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """A conditional update of a schedule record: ``(new image, None)``, or ``(None, old image or {})``.

        ``values`` holds plain ``str``/``int``/``bytes`` values; ``#st`` names the status and ``#tok`` the
        token attribute (``names`` adds others). When the condition fails, the item as it was comes back with the
        error (``{}`` when there is none), so no second read is needed.
        """
        names = {"#st": "status", **(names or {})}
        if "#tok" in condition:
            names["#tok"] = "token"
        try:
            return self._ddb.update_item(
                TableName=self._table,
                Key=keys.record_key(schedule_id).as_item_key(),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues={name: _attribute(value) for name, value in values.items()},
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"], None
        except ClientError as exc:
            if is_condition_failure(exc):
                return None, exc.response.get("Item") or {}
            raise


def _not_one_of(targets: frozenset[str], values: dict[str, Any], names: dict[str, str]) -> str:
    """A condition that the record's target is none of ``targets`` (the default target's record has no ``target``)."""
    names["#tg"] = "target"
    others = sorted(name for name in targets if name != DEFAULT_TARGET_NAME)
    parts = ["attribute_exists(#tg)"] if DEFAULT_TARGET_NAME in targets else []
    if others:
        values.update({f":tg{n}": name for n, name in enumerate(others)})
        parts.append(f"NOT (#tg IN ({', '.join(f':tg{n}' for n in range(len(others)))}))")
    return "(" + " AND ".join(parts) + ")"


def _attribute(value: str | int | bytes) -> dict[str, Any]:
    if isinstance(value, bytes):
        return {"B": value}
    return {"N": str(value)} if isinstance(value, int) else {"S": value}


def query_pages(ddb: Any, kwargs: dict[str, Any]) -> Iterator[list[dict[str, Any]]]:
    """The items of a ``Query`` (``kwargs``), a page at a time, following ``LastEvaluatedKey``."""
    kwargs = dict(kwargs)
    while True:
        page = ddb.query(**kwargs)
        yield page.get("Items", [])
        last = page.get("LastEvaluatedKey")
        if not last:
            return
        kwargs["ExclusiveStartKey"] = last
