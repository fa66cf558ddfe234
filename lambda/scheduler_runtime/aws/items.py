"""The shapes of the Schedules table's schedule items: a schedule's record and a waiting timer, and
how attributes are read back (the reads and writes are :mod:`.store`'s)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from ..core import groups, keys, payload
from ..core.contract import DEFAULT_TARGET_NAME
from ..core.envelope import TimerRef
from ..core.flow import Ticket
from ..core.retry import MAX_AGE_SECONDS, MAX_ATTEMPTS, MAX_LATENESS, RetryPolicy


@dataclass(frozen=True)
class ScheduleRecord:
    """One schedule, as stored in its record item (the last write of a create)."""

    schedule_id: str
    due_ms: int
    payload_json: str
    target: str
    status: str
    token: str
    request_hash: bytes
    created_ms: int
    shard: int | None = None
    """Set for a schedule that waits as a timer item (due beyond the window); None when queued at once."""
    attempts: int = 0
    fired_ms: int | None = None
    ended_ms: int | None = None
    last_error: str | None = None
    retry: RetryPolicy | None = None
    """The create's ``retry``, kept only when it gave one (:func:`retry_attributes`)."""
    group: str | None = None
    """The create's ``group``; its stamp in the group (:mod:`~scheduler_runtime.core.groups`) is ``created_ms``."""
    max_lateness_seconds: int | None = None
    """The create's ``maxLatenessSeconds``, kept only when it gave one."""
    redriven_ms: int | None = None
    """When an operator's redrive last sent it back (a redriven delivery is not held to its lateness bound)."""

    @property
    def timer_key(self) -> keys.Key | None:
        return None if self.shard is None else keys.timer_key(self.shard, self.due_ms, self.schedule_id)

    def to_item(self) -> dict[str, Any]:
        """The create's item: only what GET, idempotency and delivery need."""
        kind, value = payload.encode(self.payload_json)
        item = {
            **keys.record_key(self.schedule_id).as_item_key(),
            "dueMs": {"N": str(self.due_ms)},
            "token": {"S": self.token},
            "status": {"S": self.status},
            "payload": {kind: value},
            "requestHash": {"B": self.request_hash},
            "createdMs": {"N": str(self.created_ms)},
        }
        if self.target != DEFAULT_TARGET_NAME:
            item["target"] = {"S": self.target}
        if self.shard is not None:
            item["shard"] = {"N": str(self.shard)}
        item.update(retry_attributes(self.retry))
        item.update(lateness_attributes(self.max_lateness_seconds))
        item.update(groups.member_attributes(self.group, groups.SCHEDULES, self.created_ms, self.schedule_id))
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> "ScheduleRecord":
        # A listing reads records without their payload and request hash.
        (kind, value), = item.get("payload", {"S": ""}).items()
        return cls(
            schedule_id=keys.schedule_id_of(item["pk"]["S"]),
            due_ms=n_attr(item, "dueMs"),
            payload_json=payload.decode(kind, value) if "payload" in item else "",
            target=s_attr(item, "target", DEFAULT_TARGET_NAME),
            status=s_attr(item, "status"),
            token=s_attr(item, "token"),
            request_hash=item.get("requestHash", {"B": b""})["B"],
            created_ms=n_attr(item, "createdMs"),
            shard=n_attr(item, "shard", None),
            attempts=n_attr(item, "attempts", 0),
            fired_ms=n_attr(item, "firedMs", None),
            ended_ms=n_attr(item, "endedMs", None),
            last_error=s_attr(item, "lastError", None),
            retry=retry_of(item),
            group=s_attr(item, groups.PARTITION_KEY, None),
            max_lateness_seconds=n_attr(item, MAX_LATENESS, None),
            redriven_ms=n_attr(item, "redrivenMs", None),
        )


def retry_attributes(retry: RetryPolicy | None) -> dict[str, Any]:
    """A record's or a definition's attributes for ``retry``: one number per limit given, none without it."""
    values = {} if retry is None else retry.to_json()
    return {name: {"N": str(value)} for name, value in values.items()}


def lateness_attributes(max_lateness_seconds: int | None) -> dict[str, Any]:
    """A record's or a definition's attribute for ``maxLatenessSeconds``: none without one."""
    return {} if max_lateness_seconds is None else {MAX_LATENESS: {"N": str(max_lateness_seconds)}}


def retry_of(item: dict[str, Any]) -> RetryPolicy | None:
    """The ``retry`` an item keeps (:func:`retry_attributes`), None when it keeps none."""
    if MAX_ATTEMPTS not in item and MAX_AGE_SECONDS not in item:
        return None
    return RetryPolicy(n_attr(item, MAX_ATTEMPTS, None), n_attr(item, MAX_AGE_SECONDS, None))


ROOM = "room"
"""A timer item's attribute for its ticket (:attr:`TimerItem.ticket`): a map of the target's name, and the group's
when its limits are per group, as the message's ``room`` has them."""


@dataclass(frozen=True)
class TimerItem:
    """A schedule waiting beyond the window, in its shard partition sorted by due time.

    Its key carries the due time and the id; the item adds only the create attempt's token
    and start time, which travel on to the delayer message.
    """

    shard: int
    due_ms: int
    schedule_id: str
    token: str
    created_ms: int
    cancelled: bool = False
    version: int | None = None
    """Set for a periodic timer's occurrence: its definition's version (see :class:`TimerRef`)."""
    ticket: Ticket | None = None
    """Set for a schedule to a limited target (:meth:`~.config.Config.room_ticket`): the target, and its group when
    its limits are per group, which its message carries; kept as the item's :data:`ROOM`."""

    @property
    def key(self) -> keys.Key:
        return keys.timer_key(self.shard, self.due_ms, self.schedule_id, self.version is not None)

    @property
    def ref(self) -> TimerRef:
        return TimerRef(self.schedule_id, self.due_ms, self.token, self.created_ms, self.version, ticket=self.ticket)

    def to_item(self) -> dict[str, Any]:
        item = {**self.key.as_item_key(), "token": {"S": self.token}, "createdMs": {"N": str(self.created_ms)}}
        if self.version is not None:
            item["v"] = {"N": str(self.version)}
        if self.ticket is not None:
            item[ROOM] = {"M": {name: {"S": value} for name, value in self.ticket.to_json().items()}}
        return item

    @classmethod
    def from_item(cls, item: dict[str, Any]) -> "TimerItem":
        due_ms, schedule_id = keys.parse_timer_sort_key(item["sk"]["S"])
        return cls(
            shard=keys.shard_of_partition(item["pk"]["S"]),
            due_ms=due_ms,
            schedule_id=schedule_id,
            token=s_attr(item, "token"),
            created_ms=n_attr(item, "createdMs"),
            cancelled=item.get("cancelled", {}).get("BOOL", False),
            version=n_attr(item, "v", None) if keys.is_periodic_sort_key(item["sk"]["S"]) else None,
            ticket=(Ticket.from_json({name: value["S"] for name, value in item[ROOM]["M"].items()})
                    if ROOM in item else None),
        )


_MISSING = object()


def s_attr(item: dict[str, Any], name: str, default: Any = _MISSING) -> Any:
    if name in item:
        return item[name]["S"]
    if default is _MISSING:
        raise KeyError(name)
    return default


def n_attr(item: dict[str, Any], name: str, default: Any = _MISSING) -> Any:
    if name in item:
        return int(item[name]["N"])
    if default is _MISSING:
        raise KeyError(name)
    return default


def is_condition_failure(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")
