"""The client's results and requests, and the conversions between them and the wire's camelCase JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping, Union

from .._contract import contract
from .._wire import parse_time
from ._statuses import (PeriodicStatus, PeriodicStatusText, ScheduleStatus, ScheduleStatusText, TargetState,
                        TargetStateText, known, removed_status)

When = Union[datetime, timedelta]
"""A due time: an aware ``datetime``, or a ``timedelta`` from the moment the server receives the call."""
STALE_REASON = "stale"
"""How the ``lastError`` of a schedule whose lateness bound passed before an attempt could start begins."""


@dataclass(frozen=True)
class RetryPolicy:
    """When a failing delivery stops being retried and is parked in the dead-letter queue (``retry``).

    ``max_attempts``: attempts in all, the first included (1 to the deployment's ``max_receive_count``,
    which is also the default). ``max_age``: no attempt starts later than this after the due time
    (whole seconds, 60 s to 1 day; default: the construct's ``retry_max_age``). Leave one out
    (``None``) for the deployment's default.
    """

    max_attempts: int | None = None
    max_age: timedelta | None = None

    def to_json(self) -> dict[str, int]:
        """The wire's ``retry`` object; ``ValueError`` naming the field for a fraction of a second, ``TypeError``
        for a wrong kind (the server checks the ranges)."""
        body: dict[str, int] = {}
        if self.max_attempts is not None:
            if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
                raise TypeError(f"retry.max_attempts must be an int, got {type(self.max_attempts).__name__}")
            body["maxAttempts"] = self.max_attempts
        if self.max_age is not None:
            if not isinstance(self.max_age, timedelta):
                raise TypeError(f"retry.max_age must be a timedelta, got {type(self.max_age).__name__}")
            seconds = self.max_age.total_seconds()
            if seconds != int(seconds):
                raise ValueError(f"retry.max_age must be whole seconds, got {seconds}")
            body["maxAgeSeconds"] = int(seconds)
        if not body:
            raise ValueError("retry must set max_attempts, max_age or both (leave retry out for the defaults)")
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any] | None) -> "RetryPolicy | None":
        """The answer's ``retry`` (absent: ``None``)."""
        if not body:
            return None
        age = body.get("maxAgeSeconds")
        return cls(max_attempts=body.get("maxAttempts"), max_age=None if age is None else timedelta(seconds=age))


@dataclass(frozen=True)
class Schedule:
    """A one-shot schedule, as ``POST /schedules`` (``id, due_at, status, target`` only), ``GET`` or a listing answers it."""

    id: str
    due_at: datetime
    status: ScheduleStatusText
    """A :class:`ScheduleStatus`; the text itself when a newer server answers one this client does not know."""
    target: str | None = None
    payload: Any = field(default=None, hash=False)
    """``None`` where the answer carries none (a create's answer, a listing's items)."""
    created_at: datetime | None = None
    attempts: int | None = None
    fired_at: datetime | None = None
    ended_at: datetime | None = None
    last_error: str | None = None
    retry: RetryPolicy | None = None
    """The create's retry policy as given (``GET`` only); ``None`` when it gave none."""
    max_lateness: timedelta | None = None
    """The create's lateness bound (``maxLatenessSeconds``) as given (``GET`` only); ``None`` when it gave none."""
    group: str | None = None
    """The create's group (``GET`` and listings; a create's answer carries none); ``None`` when it gave none."""
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    """The answer's JSON object as received, unknown fields included."""

    @property
    def stale(self) -> bool:
        """Whether it ended because its lateness bound (``max_lateness``) passed before an attempt could start:
        ``FAILED``, never delivered, with a ``last_error`` that starts with ``stale``."""
        return self.status == ScheduleStatus.FAILED and (self.last_error or "").startswith(STALE_REASON)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Schedule":
        """Build from the wire's JSON object, ignoring unknown fields."""
        return cls(
            id=str(body["id"]), due_at=_required_time(body, "dueAt"), status=known(ScheduleStatus, body["status"]),
            target=body.get("target"), payload=body.get("payload"), created_at=parse_time(body.get("createdAt")),
            attempts=body.get("attempts"), fired_at=parse_time(body.get("firedAt")),
            ended_at=parse_time(body.get("endedAt")), last_error=body.get("lastError"),
            retry=RetryPolicy.from_json(body.get("retry")), max_lateness=_lateness(body), group=body.get("group"),
            raw=dict(body),
        )


@dataclass(frozen=True)
class Periodic:
    """A periodic timer's definition and progress, as ``PUT``/``GET /periodic/{id}`` or a listing answers it."""

    id: str
    status: PeriodicStatusText
    """A :class:`PeriodicStatus`; the text itself when a newer server answers one this client does not know."""
    target: str | None = None
    next_due_at: datetime | None = None
    """``None`` once the timer has ended (past ``end_at``)."""
    every: int | None = None
    """Seconds between occurrences (``None`` for a cron timer)."""
    cron: str | None = None
    time_zone: str | None = None
    start_at: datetime | None = None
    end_at: datetime | None = None
    last_due_at: datetime | None = None
    last_fired_at: datetime | None = None
    fired_count: int = 0
    skipped_count: int = 0
    paused_count: int = 0
    """Occurrences passed over while paused, never delivered (counted at each resume)."""
    paused_at: datetime | None = None
    """While PAUSED: when it was paused."""
    created_at: datetime | None = None
    updated_at: datetime | None = None
    payload: Any = field(default=None, hash=False)
    retry: RetryPolicy | None = None
    """The PUT's retry policy as given; ``None`` when it gave none."""
    max_lateness: timedelta | None = None
    """The PUT's lateness bound (``maxLatenessSeconds``) as given; ``None`` when it gave none."""
    group: str | None = None
    """The PUT's group; ``None`` when it gave none."""
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    """The answer's JSON object as received, unknown fields included."""

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Periodic":
        """Build from the wire's JSON object, ignoring unknown fields."""
        times = {name: parse_time(body.get(wire)) for name, wire in (
            ("next_due_at", "nextDueAt"), ("start_at", "startAt"), ("end_at", "endAt"), ("last_due_at", "lastDueAt"),
            ("last_fired_at", "lastFiredAt"), ("created_at", "createdAt"), ("updated_at", "updatedAt"),
            ("paused_at", "pausedAt"))}
        return cls(
            id=str(body["id"]), status=known(PeriodicStatus, body["status"]), target=body.get("target"),
            every=body.get("every"), cron=body.get("cron"), time_zone=body.get("timeZone"),
            fired_count=int(body.get("firedCount") or 0), skipped_count=int(body.get("skippedCount") or 0),
            paused_count=int(body.get("pausedCount") or 0),
            payload=body.get("payload"), retry=RetryPolicy.from_json(body.get("retry")),
            max_lateness=_lateness(body), group=body.get("group"), raw=dict(body), **times,
        )


@dataclass(frozen=True)
class Removed:
    """What a cancel (``status == "CANCELLED"``) or a periodic delete (``"DELETED"``) answers."""

    id: str
    status: ScheduleStatus | PeriodicStatus | str
    """``ScheduleStatus.CANCELLED`` or ``PeriodicStatus.DELETED`` (an unknown text is kept as sent)."""
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Removed":
        return cls(id=str(body["id"]), status=removed_status(body["status"]), raw=dict(body))


@dataclass(frozen=True)
class GroupCancellation:
    """What ``DELETE /groups/{group}`` answers: the members created before ``cancelled_before`` are stopped.

    ``stopped_schedules`` and ``stopped_periodic`` count the waiting members this call stopped (those that
    joined since the group's previous cancel: a repeat usually counts zeros). ``count_complete`` is False when
    the group was too large to count within the call: the counts are then a lower bound, and every member is
    stopped all the same.
    """

    group: str
    cancelled_before: datetime
    stopped_schedules: int
    stopped_periodic: int
    count_complete: bool = True
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    """The answer's JSON object as received, unknown fields included."""

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "GroupCancellation":
        """Build from the wire's JSON object, ignoring unknown fields."""
        stopped = body.get("stopped") or {}
        return cls(group=str(body["group"]), cancelled_before=_required_time(body, "cancelledBefore"),
                   stopped_schedules=int(stopped.get("schedules") or 0),
                   stopped_periodic=int(stopped.get("periodic") or 0),
                   count_complete=bool(body.get("countComplete", True)), raw=dict(body))


@dataclass(frozen=True)
class Target:
    """A target as ``GET``/``PATCH /targets/{name}`` answers it: its state, its limits, and what its item (its items,
    summed, past 250 starts a second) says of the deliveries to it.

    ``waiting`` and ``in_flight`` are estimates read from those items at the answer's instant: the deliveries holding a
    start slot ahead of now (``None`` for a target without a rate) and the places among ``maxInFlight`` held now
    (``None`` without one). ``held_until`` is when the target's own slow-down answer (a 429, a throttle) stops holding
    its deliveries back. A target without ``flow_control`` answers ``ACTIVE`` and ``None`` for all of them.
    """

    name: str
    state: TargetStateText
    """A :class:`TargetState`; the text itself when a newer server answers one this client does not know."""
    flow_control: dict[str, Any] | None = field(default=None, hash=False)
    """The target's limits as deployed (``{"rate", "periodSeconds", "maxInFlight", "perGroup"}``, those it has;
    ``perGroup``, each group's own limits, has the same fields), else ``None``."""
    waiting: int | None = None
    in_flight: int | None = None
    held_until: datetime | None = None
    group: str | None = None
    """The group whose counts ``waiting`` and ``in_flight`` are (``get_target(name, group=...)``), else ``None``."""
    raw: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    """The answer's JSON object as received, unknown fields included."""

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "Target":
        """Build from the wire's JSON object, ignoring unknown fields."""
        flow_control = body.get("flowControl")
        return cls(name=str(body["name"]), state=known(TargetState, body["state"]),
                   flow_control=None if flow_control is None else dict(flow_control), waiting=body.get("waiting"),
                   in_flight=body.get("inFlight"), held_until=parse_time(body.get("heldUntil")),
                   group=body.get("group"), raw=dict(body))


@dataclass(frozen=True)
class ScheduleRequest:
    """One item of :meth:`SchedulerClient.schedule_many`: the arguments of :meth:`SchedulerClient.schedule`."""

    at: When
    payload: Any
    id: str | None = None
    target: str | None = None
    retry: RetryPolicy | None = None
    group: str | None = None
    max_lateness: timedelta | None = None


def _lateness(body: Mapping[str, Any]) -> timedelta | None:
    """The answer's ``maxLatenessSeconds`` (absent: ``None``)."""
    seconds = body.get("maxLatenessSeconds")
    return None if seconds is None else timedelta(seconds=seconds)


def lateness_seconds(max_lateness: timedelta | None, argument: str = "max_lateness") -> int | None:
    """``max_lateness`` as the wire's ``maxLatenessSeconds`` (``None`` stays ``None``): ``ValueError`` naming
    ``argument`` unless it is whole seconds within the contract's range, ``TypeError`` unless a ``timedelta``."""
    if max_lateness is None:
        return None
    if not isinstance(max_lateness, timedelta):
        raise TypeError(f"{argument} must be a timedelta, got {type(max_lateness).__name__}")
    seconds, bounds = max_lateness.total_seconds(), contract.MAX_LATENESS_SECONDS
    if seconds != int(seconds) or not bounds.min <= seconds <= bounds.max:
        raise ValueError(f"{argument} must be whole seconds from {bounds.min} to {bounds.max} "
                         f"({bounds.max // 86400} days), got {seconds}")
    return int(seconds)


def _required_time(body: Mapping[str, Any], name: str) -> datetime:
    value = parse_time(body[name])
    if value is None:
        raise ValueError(f"the answer's {name} is null")
    return value


def format_time(value: datetime, argument: str) -> str:
    """RFC 3339 UTC with milliseconds (the server keeps milliseconds); ``ValueError`` naming ``argument`` if naive."""
    if not isinstance(value, datetime):
        raise TypeError(f"{argument} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{argument} must be a timezone-aware datetime (e.g. datetime.now(timezone.utc)), got a naive one")
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def create_body(at: When, payload: Any, schedule_id: str, target: str | None, where: str = "",
                retry: RetryPolicy | None = None, group: str | None = None,
                max_lateness: timedelta | None = None) -> dict[str, Any]:
    """The ``POST /schedules`` body: ``dueAt`` for a datetime, ``delaySeconds`` for a timedelta. ``where`` prefixes
    the arguments an error names (``items[3].`` for a batch item's)."""
    body: dict[str, Any] = {"id": schedule_id, **timing_body(at, f"{where}at"), "payload": payload}
    if target is not None:
        body["target"] = target
    if retry is not None:
        body["retry"] = retry.to_json()
    if max_lateness is not None:
        body["maxLatenessSeconds"] = lateness_seconds(max_lateness, f"{where}max_lateness")
    if group is not None:
        body["group"] = group
    return body


def timing_body(at: When, argument: str = "at") -> dict[str, Any]:
    """``{"dueAt": ...}`` for a datetime, ``{"delaySeconds": ...}`` for a timedelta (fractions kept)."""
    if isinstance(at, timedelta):
        return {"delaySeconds": at.total_seconds()}
    if isinstance(at, datetime):
        return {"dueAt": format_time(at, argument)}
    raise TypeError(f"{argument} must be a datetime or a timedelta, got {type(at).__name__}")


KEEP_PAYLOAD: Any = object()
"""``reschedule``'s default ``payload``: the schedule keeps its payload (``None`` would send JSON null)."""


def reschedule_body(at: When, payload: Any) -> dict[str, Any]:
    """The ``PATCH /schedules/{id}`` body: the new due time, and the payload unless it is :data:`KEEP_PAYLOAD`."""
    return {**timing_body(at), **({} if payload is KEEP_PAYLOAD else {"payload": payload})}


def whole_seconds(every: int | timedelta) -> int:
    """``every`` as whole seconds; ``ValueError`` for a fraction (the server counts whole seconds)."""
    if isinstance(every, timedelta):
        seconds = every.total_seconds()
        if seconds != int(seconds):
            raise ValueError(f"every must be whole seconds, got {seconds}")
        return int(seconds)
    if isinstance(every, bool) or not isinstance(every, int):
        raise TypeError(f"every must be an int of seconds or a timedelta, got {type(every).__name__}")
    return every
