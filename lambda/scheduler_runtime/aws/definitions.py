"""Periodic definitions in the Schedules table: every read and conditional write made on them.

A definition item holds the definition (``every`` or ``cron``/``timeZone``, bounds, payload,
target, the request hash and a ``version`` that each replacement raises) and the state of its one
pending occurrence: the ``token`` the occurrence's message or timer carries, ``nextDueMs`` and,
when that occurrence waits as a timer, its ``shard``. The dispatcher advances it with one
conditional write per occurrence (:meth:`DefinitionStore.advance`). A paused definition has no
pending occurrence: it keeps ``pausedMs`` and ``pausedDueMs``, the first occurrence the pause passed
over, from which :meth:`DefinitionStore.resume` counts ``pausedCount``.
"""

from __future__ import annotations

import heapq
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ..core import groups, keys, payload
from ..core.contract import DEFAULT_TARGET_NAME
from ..core.periodic import ACTIVE, DELETED, ENDED, PAUSED, Spec
from ..core.retry import MAX_LATENESS, RetryPolicy
from .items import is_condition_failure, lateness_attributes, n_attr, retry_attributes, retry_of, s_attr
from .store import query_pages

# Reused across invocations of a warm function: a GET /periodic page reads the partitions at once.
_partition_reads = ThreadPoolExecutor(max_workers=keys.DEFINITION_PARTITIONS, thread_name_prefix="definitions")


@dataclass(frozen=True)
class Definition:
    periodic_id: str
    spec: Spec
    anchor_ms: int
    payload_json: str
    target: str
    request_hash: bytes
    version: int
    created_ms: int
    updated_ms: int
    status: str = ACTIVE
    token: str = ""
    next_due_ms: int | None = None
    shard: int | None = None
    """Set while the pending occurrence waits as a timer item (due beyond the window)."""
    last_token: str | None = None
    last_due_ms: int | None = None
    began_ms: int | None = None
    """When the latest delivery attempt was allowed to start: a DELETE answers only after it has settled."""
    last_fired_ms: int | None = None
    fired_count: int = 0
    skipped_count: int = 0
    last_error: str | None = None
    last_message: bytes | None = None
    """The tag (:func:`~scheduler_runtime.core.envelope.message_tag`) of the SQS message that started the latest occurrence."""
    retry: RetryPolicy | None = None
    """The PUT's ``retry``, kept only when it gave one: each occurrence's delivery is held to it."""
    max_lateness_seconds: int | None = None
    """The PUT's ``maxLatenessSeconds``, kept only when it gave one: an occurrence later than that is skipped."""
    paused_ms: int | None = None
    """While PAUSED: when it was paused."""
    paused_due_ms: int | None = None
    """While PAUSED: the first occurrence the pause passed over (None when none was left)."""
    paused_count: int = 0
    """The occurrences passed over while paused, over every pause so far."""
    group: str | None = None
    """The PUT's ``group``."""
    group_stamp_ms: int | None = None
    """When the PUT that wrote this definition began: its stamp in the group (:mod:`~scheduler_runtime.core.groups`),
    while it is in the group's index (ACTIVE or PAUSED); None once it left it, or without a group."""

    @property
    def pending_timer(self) -> keys.Key | None:
        if self.shard is None or self.next_due_ms is None:
            return None
        return keys.timer_key(self.shard, self.next_due_ms, self.periodic_id, periodic=True)

    def to_item(self) -> dict[str, Any]:
        kind, value = payload.encode(self.payload_json)
        item: dict[str, Any] = {**keys.definition_key(self.periodic_id).as_item_key(), "payload": {kind: value},
                      "requestHash": {"B": self.request_hash}, "version": _n(self.version), "anchorMs": _n(self.anchor_ms),
                      "createdMs": _n(self.created_ms), "updatedMs": _n(self.updated_ms), "status": {"S": self.status},
                      "token": {"S": self.token}, "firedCount": _n(self.fired_count), "skippedCount": _n(self.skipped_count)}
        optional = {"every": self.spec.every_ms and self.spec.every_ms // 1000, "cron": self.spec.cron,
                    "timeZone": self.spec.time_zone, "startMs": self.spec.start_ms, "endMs": self.spec.end_ms,
                    "nextDueMs": self.next_due_ms, "shard": self.shard, "lastDueMs": self.last_due_ms,
                    "lastFiredMs": self.last_fired_ms, "beganMs": self.began_ms, "lastError": self.last_error,
                    "pausedMs": self.paused_ms, "pausedDueMs": self.paused_due_ms,
                    "pausedCount": self.paused_count or None}
        if self.target != DEFAULT_TARGET_NAME:
            optional["target"] = self.target
        for name, value in optional.items():
            if value is not None:
                item[name] = _n(value) if isinstance(value, int) else {"S": value}
        item.update(retry_attributes(self.retry))
        item.update(lateness_attributes(self.max_lateness_seconds))
        if self.group is not None:
            item[groups.PARTITION_KEY] = {"S": self.group}
            if self.group_stamp_ms is not None:
                item.update(groups.member_attributes(self.group, groups.PERIODIC, self.group_stamp_ms,
                                                     self.periodic_id))
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> "Definition":
        (kind, value), = item["payload"].items()
        every = n_attr(item, "every", None)
        spec = Spec(every_ms=None if every is None else every * 1000, cron=s_attr(item, "cron", None),
                    time_zone=s_attr(item, "timeZone", None), start_ms=n_attr(item, "startMs", None),
                    end_ms=n_attr(item, "endMs", None))
        return cls(
            periodic_id=item["sk"]["S"], spec=spec, anchor_ms=n_attr(item, "anchorMs"),
            payload_json=payload.decode(kind, value), target=s_attr(item, "target", DEFAULT_TARGET_NAME),
            request_hash=item["requestHash"]["B"], version=n_attr(item, "version"), created_ms=n_attr(item, "createdMs"),
            updated_ms=n_attr(item, "updatedMs"), status=s_attr(item, "status"), token=s_attr(item, "token", ""),
            next_due_ms=n_attr(item, "nextDueMs", None), shard=n_attr(item, "shard", None),
            last_token=s_attr(item, "lastToken", None), last_due_ms=n_attr(item, "lastDueMs", None),
            began_ms=n_attr(item, "beganMs", None), last_fired_ms=n_attr(item, "lastFiredMs", None),
            fired_count=n_attr(item, "firedCount", 0), skipped_count=n_attr(item, "skippedCount", 0),
            last_error=s_attr(item, "lastError", None), last_message=item.get("lastMsg", {}).get("B"),
            retry=retry_of(item), max_lateness_seconds=n_attr(item, MAX_LATENESS, None),
            paused_ms=n_attr(item, "pausedMs", None),
            paused_due_ms=n_attr(item, "pausedDueMs", None), paused_count=n_attr(item, "pausedCount", 0),
            group=s_attr(item, groups.PARTITION_KEY, None), group_stamp_ms=groups.stamp_of(item),
        )


@dataclass(frozen=True)
class Advance:
    """What one delivered occurrence changes on its definition (see :meth:`DefinitionStore.advance`)."""

    token: str
    """The token of the occurrence being delivered: the definition must still hold it."""
    next_token: str
    next_due_ms: int | None
    next_shard: int | None
    delivered_due_ms: int
    skipped: int
    now_ms: int
    message: bytes
    """The tag of the SQS message that started this occurrence (``lastMsg``): only it may start it again."""


class DefinitionStore:
    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    def get(self, periodic_id: str) -> Definition | None:
        item = self._ddb.get_item(TableName=self._table, Key=keys.definition_key(periodic_id).as_item_key(),
                                  ConsistentRead=True).get("Item")
        return Definition.from_item(item) if item else None

    def put(self, definition: Definition, replacing: Definition | None) -> Definition | None:
        """Write a new definition, or replace ``replacing`` if it is still the stored one.

        Returns None once written; the stored definition when another write came first.
        """
        values: dict[str, Any] = {":deleted": {"S": DELETED}}
        if replacing is None:  # a new id, or one deleted before
            condition, names = "attribute_not_exists(pk) OR #st = :deleted", {"#st": "status"}
        else:
            # Unchanged since it was read: no occurrence advanced it meanwhile (its count and its
            # start time are carried over) and no DELETE came first (then this PUT creates anew).
            condition, names = "version = :v AND #tok = :tok AND #st <> :deleted", {"#st": "status", "#tok": "token"}
            values.update({":v": _n(replacing.version), ":tok": {"S": replacing.token}})
        try:
            self._ddb.put_item(TableName=self._table, Item=definition.to_item(), ConditionExpression=condition,
                               ExpressionAttributeNames=names, ExpressionAttributeValues=values,
                               ReturnValuesOnConditionCheckFailure="ALL_OLD")
            return None
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise
            return Definition.from_item(exc.response["Item"])

    def delete(self, periodic_id: str, now_ms: int, retention_seconds: int) -> Definition | None:
        """Mark DELETED (a tombstone that expires with the history); the definition as it was, None if unknown."""
        try:
            old = self._ddb.update_item(
                TableName=self._table, Key=keys.definition_key(periodic_id).as_item_key(),
                UpdateExpression=_DELETE, ConditionExpression="attribute_exists(pk)", ExpressionAttributeNames=_DELETE_NAMES,
                ExpressionAttributeValues=_deleted_values(now_ms, retention_seconds), ReturnValues="ALL_OLD")["Attributes"]
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return Definition.from_item(old)

    def stop_member(self, periodic_id: str, group_sort_key: str, now_ms: int, retention_seconds: int,
                    leave_group: bool = True) -> Definition | None:
        """Mark DELETED, as :meth:`delete` does, a definition its group's cancel stopped: only while it is still the
        group member ``group_sort_key`` (not replaced, ended or deleted since). The definition as it was, else None.

        Without ``leave_group``, it stays in its group's index with its pending occurrence (``nextDueMs``, the
        shard) until :meth:`leave_group`: stopped again meanwhile, it answers that occurrence again."""
        values = {**_deleted_values(now_ms, retention_seconds), ":gsk": {"S": group_sort_key}}
        try:
            old = self._ddb.update_item(
                TableName=self._table, Key=keys.definition_key(periodic_id).as_item_key(),
                UpdateExpression=_DELETE if leave_group else _STOP_IN_GROUP,
                ConditionExpression=f"{groups.SORT_KEY} = :gsk",
                ExpressionAttributeNames=_DELETE_NAMES if leave_group else {"#st": "status"},
                ExpressionAttributeValues=values, ReturnValues="ALL_OLD")["Attributes"]
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return Definition.from_item(old)

    def leave_group(self, periodic_id: str, group_sort_key: str) -> None:
        """Take a definition its group's cancel stopped (DELETED, still the member ``group_sort_key``) out of the
        group's index, with its pending occurrence; nothing when it already left."""
        try:
            self._ddb.update_item(
                TableName=self._table, Key=keys.definition_key(periodic_id).as_item_key(),
                UpdateExpression=f"REMOVE nextDueMs, #sh, {groups.SORT_KEY}",
                ConditionExpression=f"#st = :deleted AND {groups.SORT_KEY} = :gsk", ExpressionAttributeNames=_DELETE_NAMES,
                ExpressionAttributeValues={":deleted": {"S": DELETED}, ":gsk": {"S": group_sort_key}})
        except ClientError as exc:
            if not is_condition_failure(exc):
                raise

    def pause(self, current: Definition, now_ms: int) -> Definition | None:
        """Pause ``current`` (ACTIVE) if it is still the stored one: PAUSED, a new ``version`` (so no retry
        of an earlier occurrence can start any more, see :meth:`begin_attempt`) and no pending occurrence.

        Returns the definition as it was at this write (its ``beganMs`` is the last start it allowed),
        None when another write came first."""
        sets = "#st = :paused, version = :next, pausedMs = :now, updatedMs = :now"
        values = {":paused": {"S": PAUSED}, ":active": {"S": ACTIVE}, ":now": _n(now_ms), ":v": _n(current.version),
                  ":next": _n(current.version + 1), ":tok": {"S": current.token}}
        if current.next_due_ms is not None:
            sets += ", pausedDueMs = :due"
            values[":due"] = _n(current.next_due_ms)
        try:
            old = self._ddb.update_item(
                TableName=self._table, Key=keys.definition_key(current.periodic_id).as_item_key(),
                UpdateExpression=f"SET {sets} REMOVE nextDueMs, #sh",
                ConditionExpression="#st = :active AND version = :v AND #tok = :tok",
                ExpressionAttributeNames={"#st": "status", "#sh": "shard", "#tok": "token"},
                ExpressionAttributeValues=values, ReturnValues="ALL_OLD")["Attributes"]
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return Definition.from_item(old)

    def resume(self, paused: Definition, token: str, next_due_ms: int | None, shard: int | None, passed_over: int,
               now_ms: int, ended_expires_at: int) -> Definition | None:
        """Resume ``paused`` if it is still the stored one: ACTIVE with the occurrence ``next_due_ms`` armed
        with ``token`` (ENDED, expiring at ``ended_expires_at``, when None), ``passed_over`` added to
        ``pausedCount``. Returns the new image, None when another write came first."""
        sets = ["#tok = :tok", "updatedMs = :now", "pausedCount = if_not_exists(pausedCount, :zero) + :passed"]
        values = {":tok": {"S": token}, ":now": _n(now_ms), ":zero": _n(0), ":passed": _n(passed_over),
                  ":paused": {"S": PAUSED}, ":v": _n(paused.version)}
        removes = ["pausedMs", "pausedDueMs"]
        if next_due_ms is None:
            removes.append(groups.SORT_KEY)  # ended: no longer a pending member of its group
            sets += ["#st = :ended", "expiresAt = :exp"]
            values.update({":ended": {"S": ENDED}, ":exp": _n(ended_expires_at)})
        else:
            sets += ["#st = :active", "nextDueMs = :due"]
            values.update({":active": {"S": ACTIVE}, ":due": _n(next_due_ms)})
            if shard is not None:
                sets.append("#sh = :shard")
                values[":shard"] = _n(shard)
        update = "SET " + ", ".join(sets) + " REMOVE " + ", ".join(removes)
        return self._update(paused.periodic_id, update, "#st = :paused AND version = :v", values)

    def advance(self, periodic_id: str, step: Advance, ended_expires_at: int) -> Definition | None:
        """The one write of a delivered occurrence: the next occurrence's token and due time, the
        counters, and ``beganMs``, if the definition is ACTIVE and still holds ``step.token``. When no
        occurrence is left, it becomes ENDED and expires at ``ended_expires_at`` (epoch seconds), which
        must outlive the last occurrence's retries.

        Returns the new image, or None when refused (deleted, replaced, or another delivery of
        the same occurrence came first).
        """
        sets = ["#tok = :next", "lastToken = :tok", "lastDueMs = :due", "beganMs = :now", "lastFiredMs = :now",
                "firedCount = firedCount + :one", "skippedCount = skippedCount + :skipped", "lastMsg = :msg"]
        values = {":next": {"S": step.next_token}, ":tok": {"S": step.token}, ":due": _n(step.delivered_due_ms),
                  ":msg": {"B": step.message},
                  ":now": _n(step.now_ms), ":one": _n(1), ":skipped": _n(step.skipped), ":active": {"S": ACTIVE}}
        removes = []
        if step.next_due_ms is None:
            sets += ["#st = :ended", "expiresAt = :exp"]
            values.update({":ended": {"S": ENDED}, ":exp": _n(ended_expires_at)})
            removes += ["nextDueMs", "#sh", groups.SORT_KEY]
        else:
            sets.append("nextDueMs = :nextDue")
            values[":nextDue"] = _n(step.next_due_ms)
            if step.next_shard is None:
                removes.append("#sh")
            else:
                sets.append("#sh = :shard")
                values[":shard"] = _n(step.next_shard)
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        return self._update(periodic_id, update, "#tok = :tok AND #st = :active", values)

    def begin_attempt(self, periodic_id: str, version: int, now_ms: int, message: bytes | None = None,
                      note: str | None = None) -> Definition | None:
        """Stamp ``beganMs`` for a retry of an occurrence already advanced past, if the same version is
        ACTIVE, or ENDED (its last occurrence's retries): DELETED or replaced refuses it. With
        ``message``, the definition must also hold that message tag (``lastMsg``); ``note`` is kept as
        ``lastError`` in the same write."""
        update, condition = "SET beganMs = :now", "version = :v AND #st IN (:active, :ended)"
        values = {":now": _n(now_ms), ":v": _n(version), ":active": {"S": ACTIVE}, ":ended": {"S": ENDED}}
        if message is not None:
            condition += " AND lastMsg = :msg"
            values[":msg"] = {"B": message}
        if note:
            update += ", lastError = :why"
            values[":why"] = {"S": note[:1000]}
        return self._update(periodic_id, update, condition, values)

    def record_failure(self, periodic_id: str, version: int, reason: str) -> None:
        """Keep the reason of an occurrence's exhausted delivery on its definition (the failure path only)."""
        self._update(periodic_id, "SET lastError = :why", "version = :v", {":why": {"S": reason[:1000]}, ":v": _n(version)})

    def record_stale(self, periodic_id: str, version: int, reason: str) -> None:
        """Count an occurrence its lateness bound ended as skipped, not fired (its advance counted it fired), with
        the reason as ``lastError``."""
        self._update(periodic_id, "SET lastError = :why, firedCount = firedCount - :one, skippedCount = skippedCount + :one",
                     "version = :v", {":why": {"S": reason[:1000]}, ":v": _n(version), ":one": _n(1)})

    def page(self, after_id: str | None, limit: int) -> tuple[list[Definition], bool]:
        """Up to ``limit`` live definitions with ids after ``after_id``, in id order, and whether more follow.

        One ``Query`` per definition partition (in parallel), each for at most ``limit + 1``, merged by id.
        """
        found = _partition_reads.map(lambda partition: self._partition_page(partition, after_id, limit + 1),
                                     range(keys.DEFINITION_PARTITIONS))
        merged = list(heapq.merge(*found, key=lambda definition: definition.periodic_id))
        return merged[:limit], len(merged) > limit

    def _partition_page(self, partition: int, after_id: str | None, limit: int) -> list[Definition]:
        """Up to ``limit`` live definitions of one partition with ids after ``after_id``, in id order."""
        kwargs: dict[str, Any] = {
            "TableName": self._table, "KeyConditionExpression": "pk = :p" + (" AND sk > :after" if after_id else ""),
            "FilterExpression": "#st <> :deleted", "ExpressionAttributeNames": {"#st": "status"},
            "ExpressionAttributeValues": {":p": {"S": keys.definition_partition(partition)}, ":deleted": {"S": DELETED}},
            "Limit": limit,
        }
        if after_id:
            kwargs["ExpressionAttributeValues"][":after"] = {"S": after_id}
        found: list[Definition] = []
        for items in query_pages(self._ddb, kwargs):
            found.extend(Definition.from_item(item) for item in items)
            if len(found) >= limit:
                break
        return found[:limit]

    def _update(self, periodic_id: str, update: str, condition: str, values: dict[str, Any]) -> Definition | None:
        names = {name: attr for name, attr in (("#st", "status"), ("#tok", "token"), ("#sh", "shard"))
                 if name in update + condition}
        try:
            new = self._ddb.update_item(
                TableName=self._table, Key=keys.definition_key(periodic_id).as_item_key(), UpdateExpression=update,
                ConditionExpression=condition, ExpressionAttributeValues=values, ReturnValues="ALL_NEW",
                **({"ExpressionAttributeNames": names} if names else {}))["Attributes"]
        except ClientError as exc:
            if is_condition_failure(exc):
                return None
            raise
        return Definition.from_item(new)


def _n(value: int) -> dict[str, Any]:
    return {"N": str(value)}


# DELETE, and a group's cancel: a tombstone that expires with the history, out of its group's index.
_DELETE = f"SET #st = :deleted, updatedMs = :now, expiresAt = :exp REMOVE nextDueMs, #sh, {groups.SORT_KEY}"
_DELETE_NAMES = {"#st": "status", "#sh": "shard"}
# A group's cancel whose outcome events are not sent yet: a tombstone still in its group's index (see stop_member).
_STOP_IN_GROUP = "SET #st = :deleted, updatedMs = :now, expiresAt = :exp"


def _deleted_values(now_ms: int, retention_seconds: int) -> dict[str, Any]:
    return {":deleted": {"S": DELETED}, ":now": _n(now_ms), ":exp": _n(now_ms // 1000 + retention_seconds)}


__all__ = ["ACTIVE", "DELETED", "ENDED", "PAUSED", "Advance", "Definition", "DefinitionStore"]
