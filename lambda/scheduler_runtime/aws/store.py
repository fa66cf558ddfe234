"""The Schedules table: every read and conditional write the handlers make.

No Scan anywhere. Sweeps Query one shard partition at a time and paginate.
Claims, cancels and delivery starts are conditional writes, so concurrent
handlers can race without ever promoting or delivering against the rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

from botocore.exceptions import ClientError

from ..core import keys, states
from ..core.validation import CreateRequest


@dataclass(frozen=True)
class ScheduleRecord:
    """One schedule, as stored in its record item."""

    schedule_id: str
    due_ms: int
    payload_json: str
    target: str
    status: str
    shard: int
    request_hash: str
    created_ms: int
    attempts: int = 0
    fired_ms: int | None = None
    ended_ms: int | None = None
    last_error: str | None = None

    @property
    def timer_key(self) -> keys.Key:
        return keys.timer_key(self.shard, self.due_ms, self.schedule_id)

    @classmethod
    def from_item(cls, item: dict) -> "ScheduleRecord":
        return cls(
            schedule_id=_s(item, "id"),
            due_ms=_n(item, "dueMs"),
            payload_json=_s(item, "payload"),
            target=_s(item, "target"),
            status=_s(item, "status"),
            shard=_n(item, "shard"),
            request_hash=_s(item, "requestHash"),
            created_ms=_n(item, "createdMs"),
            attempts=_n(item, "attempts", 0),
            fired_ms=_n(item, "firedMs", None),
            ended_ms=_n(item, "endedMs", None),
            last_error=_s(item, "lastError", None),
        )


@dataclass(frozen=True)
class TimerItem:
    """A pending occurrence in its shard partition."""

    shard: int
    due_ms: int
    schedule_id: str
    target: str
    cancelled: bool = False

    @property
    def key(self) -> keys.Key:
        return keys.timer_key(self.shard, self.due_ms, self.schedule_id)

    def to_item(self) -> dict:
        return {
            **self.key.as_item_key(),
            "id": {"S": self.schedule_id},
            "dueMs": {"N": str(self.due_ms)},
            "shard": {"N": str(self.shard)},
            "target": {"S": self.target},
        }

    @classmethod
    def from_item(cls, item: dict) -> "TimerItem":
        return cls(
            shard=_n(item, "shard"),
            due_ms=_n(item, "dueMs"),
            schedule_id=_s(item, "id"),
            target=_s(item, "target"),
            cancelled=item.get("cancelled", {}).get("BOOL", False),
        )


class CreateConflict(Exception):
    """The id exists with a different request body."""

    def __init__(self, existing: ScheduleRecord) -> None:
        super().__init__(existing.schedule_id)
        self.existing = existing


class ScheduleStore:
    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    # --- api -------------------------------------------------------------
    def create(self, request: CreateRequest, shard: int, now_ms: int) -> tuple[ScheduleRecord, bool]:
        """Write the record and its timer atomically. Returns ``(record, created)``.

        An existing id with the same request hash is an idempotent replay
        (``created`` is False); with another hash it raises :class:`CreateConflict`.
        """
        record = ScheduleRecord(
            schedule_id=request.schedule_id,
            due_ms=request.due_ms,
            payload_json=request.payload_json,
            target=request.target,
            status=states.SCHEDULED,
            shard=shard,
            request_hash=request.request_hash,
            created_ms=now_ms,
        )
        timer = TimerItem(shard, request.due_ms, request.schedule_id, request.target)
        try:
            self._ddb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._table,
                            "Item": _record_item(record),
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {"Put": {"TableName": self._table, "Item": timer.to_item()}},
                ]
            )
            return record, True
        except ClientError as exc:
            if not _is_transaction_condition_failure(exc):
                raise
        existing = self.get(request.schedule_id)
        if existing is None:  # deleted by TTL between the two calls: extremely rare, retryable
            raise RuntimeError(f"schedule {request.schedule_id} vanished during an idempotent replay")
        if existing.request_hash != request.request_hash:
            raise CreateConflict(existing)
        return existing, False

    def get(self, schedule_id: str) -> ScheduleRecord | None:
        item = self._ddb.get_item(
            TableName=self._table, Key=keys.record_key(schedule_id).as_item_key(), ConsistentRead=True
        ).get("Item")
        return ScheduleRecord.from_item(item) if item else None

    def timer_pending(self, record: ScheduleRecord) -> bool:
        item = self._ddb.get_item(
            TableName=self._table,
            Key=record.timer_key.as_item_key(),
            ConsistentRead=True,
            ProjectionExpression="pk, cancelled",
        ).get("Item")
        return bool(item) and not item.get("cancelled", {}).get("BOOL", False)

    def cancel(self, schedule_id: str, now_ms: int, retention_seconds: int) -> tuple[ScheduleRecord | None, bool]:
        """Cancel unless delivery started. Returns ``(record, changed)``; record None if unknown."""
        item = self._update_record(
            schedule_id,
            "SET #st = :cancelled, endedMs = :now, expiresAt = :exp",
            "#st = :scheduled",
            {":cancelled": states.CANCELLED, ":scheduled": states.SCHEDULED, ":now": now_ms,
             ":exp": now_ms // 1000 + retention_seconds},
        )
        if item is None:
            return self.get(schedule_id), False
        record = ScheduleRecord.from_item(item)
        self._remove_cancelled_timer(record.timer_key)
        return record, True

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
            if _is_condition_failure(exc):
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
            if not _is_condition_failure(exc):
                raise

    # --- claim (sweeper and fast track) ------------------------------------
    def due_timer_pages(self, shard: int, cutoff_ms: int, page_size: int = 500) -> Iterator[list[TimerItem]]:
        """Every timer in ``shard`` due at or before ``cutoff_ms``, overdue first, a page at a time."""
        kwargs: dict = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :p AND sk < :cut",
            "ExpressionAttributeValues": {
                ":p": {"S": keys.timer_partition(shard)},
                ":cut": {"S": keys.due_cutoff_sort_key(cutoff_ms)},
            },
            "Limit": page_size,
        }
        while True:
            page = self._ddb.query(**kwargs)
            yield [TimerItem.from_item(item) for item in page.get("Items", [])]
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

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
            if _is_condition_failure(exc):
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

    # --- dispatcher ----------------------------------------------------------
    def begin_delivery(self, schedule_id: str, due_ms: int, now_ms: int, retention_seconds: int) -> ScheduleRecord | None:
        """Mark delivery started (FIRED, attempts + 1). None when it must not be delivered."""
        item = self._update_record(
            schedule_id,
            "SET #st = :fired, firedMs = :now, expiresAt = :exp ADD attempts :one",
            "(#st = :scheduled OR #st = :fired) AND dueMs = :due",
            {":fired": states.FIRED, ":scheduled": states.SCHEDULED, ":due": due_ms, ":now": now_ms,
             ":exp": now_ms // 1000 + retention_seconds, ":one": 1},
        )
        return ScheduleRecord.from_item(item) if item is not None else None

    def mark_failed(self, schedule_id: str, reason: str, now_ms: int, retention_seconds: int) -> None:
        self._update_record(
            schedule_id,
            "SET #st = :failed, lastError = :why, endedMs = :now, expiresAt = :exp",
            "#st = :fired",
            {":failed": states.FAILED, ":fired": states.FIRED, ":why": reason[:1000], ":now": now_ms,
             ":exp": now_ms // 1000 + retention_seconds},
        )

    def _update_record(self, schedule_id: str, update: str, condition: str, values: dict) -> dict | None:
        """A conditional update of a schedule record; its new image, or None when the condition failed.

        ``values`` holds plain ``str``/``int`` values; ``#st`` names the status attribute.
        """
        try:
            return self._ddb.update_item(
                TableName=self._table,
                Key=keys.record_key(schedule_id).as_item_key(),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#st": "status"},
                ExpressionAttributeValues={
                    name: {"N": str(value)} if isinstance(value, int) else {"S": value} for name, value in values.items()
                },
                ReturnValues="ALL_NEW",
            )["Attributes"]
        except ClientError as exc:
            if _is_condition_failure(exc):
                return None
            raise


def _record_item(record: ScheduleRecord) -> dict:
    key = keys.record_key(record.schedule_id)
    return {
        **key.as_item_key(),
        "id": {"S": record.schedule_id},
        "dueMs": {"N": str(record.due_ms)},
        "payload": {"S": record.payload_json},
        "target": {"S": record.target},
        "status": {"S": record.status},
        "shard": {"N": str(record.shard)},
        "requestHash": {"S": record.request_hash},
        "createdMs": {"N": str(record.created_ms)},
        "attempts": {"N": str(record.attempts)},
    }


_MISSING = object()


def _s(item: dict, name: str, default: Any = _MISSING) -> Any:
    if name in item:
        return item[name]["S"]
    if default is _MISSING:
        raise KeyError(name)
    return default


def _n(item: dict, name: str, default: Any = _MISSING) -> Any:
    if name in item:
        return int(item[name]["N"])
    if default is _MISSING:
        raise KeyError(name)
    return default


def _is_condition_failure(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _is_transaction_condition_failure(exc: ClientError) -> bool:
    if exc.response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = exc.response.get("CancellationReasons") or []
    if reasons:
        return reasons[0].get("Code") == "ConditionalCheckFailed"
    return "ConditionalCheckFailed" in str(exc)
