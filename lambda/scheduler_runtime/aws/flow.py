"""Flow control in the Schedules table: a limited target's item, its start slots and its leases
(the rules in :mod:`scheduler_runtime.core.flow`).

Every call here is one conditional ``UpdateItem`` on the target's one item (a failed one returns the item, so no
read is ever needed): a slot costs one write, idle or with deliveries queued for it (a sandbox tries first the
write that fits what it saw last, :data:`_SEEN_QUEUED`; two when the target went from one to the other since), a
lease one write to take and one to give back. A request DynamoDB refuses for capacity raises :class:`Crowded` at
once, without the SDK's retries: the delivery waits for room, unspent, rather than fail or hold its dispatcher. One
item is one partition: about 1,000 write units a second, shared by the slots, the leases and the refused writes of
every delivery to the target, so a target faster than :data:`~..core.flow.STARTS_PER_ITEM` a second spreads its
limits over several items (``FlowLimits.items``): each call here is made on one of them, except a pause, a hold and
a read of the target's state, which take them all (docs/design.md gives the rates one target can reach).
"""

from __future__ import annotations

import logging
import random
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterator

from botocore.exceptions import ClientError, ConnectionError as BotoConnectionError, HTTPClientError

from ..core import flow
from ..core.contract import HELD_BACK_METRIC, LATENESS_METRIC, WAITING_FOR_ROOM_METRIC
from ..core.flow import FlowLimits
from ..observability import log_event
from .items import is_condition_failure

CAPACITY_CODES = frozenset({"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"})
"""DynamoDB's answers that a write found no capacity (its partition's, the table's or the account's)."""
WRITE_TRIES = 4
"""Tries of a slot's two writes, or of a lease, before the caller treats the target as full."""
SEND_ATTEMPTS = 3
"""Attempts of one request to an item when the first found no connection, timed out or met a server error, as the
SDK's standard mode would make: the dispatcher's client for these items makes none of its own
(:data:`~.context.FLOW_CLIENT`), so that a request refused for capacity comes back at once (:class:`Crowded`)."""
_SEEN_QUEUED: dict[str, int] = {}
"""Per target, the ``tat`` this sandbox last saw ahead of now (epoch us): while it is still ahead, deliveries are
queued, and the slot's write that moves ``tat`` on is tried first (one write, not a refused one and then that)."""


class TargetFigures:
    """What one invocation's deliveries to limited targets did, per target, for its metrics: the deliveries sent
    back to wait for room, the answers that said slow down, and the lateness of each delivery made. A target
    without limits never appears (nothing is counted, nothing emitted)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._figures: dict[str, dict[str, Any]] = defaultdict(dict)

    def waited(self, target: str) -> None:
        self._count(target, WAITING_FOR_ROOM_METRIC)

    def held_back(self, target: str) -> None:
        self._count(target, HELD_BACK_METRIC)

    def delivered(self, target: str, late_ms: int) -> None:
        with self._lock:
            self._figures[target].setdefault(LATENESS_METRIC, []).append(late_ms)

    def _count(self, target: str, name: str) -> None:
        with self._lock:
            self._figures[target][name] = self._figures[target].get(name, 0) + 1

    def by_target(self) -> Iterator[tuple[str, dict[str, Any]]]:
        with self._lock:
            yield from ((target, dict(figures)) for target, figures in self._figures.items())


def _number(item: dict[str, Any], name: str) -> int | None:
    value = item.get(name, {}).get("N")
    return None if value is None else int(value)


class Crowded(Exception):
    """A request to a limited target's item that DynamoDB refused for capacity (at once: no SDK retries)."""


@dataclass(frozen=True)
class Lease:
    """A place a delivery holds among its target's ``maxInFlight`` (``index`` -1: none, a target without places)."""

    index: int
    value: int = 0
    """What the place's attribute holds while it is this delivery's (:func:`~..core.flow.lease_value`)."""


NO_PLACE = Lease(-1)
"""What a delivery to a target without ``maxInFlight`` holds: nothing to give back."""


def forget() -> None:
    """Forget what this sandbox learned of its targets (their queues, its lead): a new sandbox's state."""
    _SEEN_QUEUED.clear()
    Lead.ms = flow.LEAD_MIN_MS


class Lead:
    """How long before its slot a delivery in this sandbox takes its place (:func:`~..core.flow.next_lead_ms`)."""

    ms: int = flow.LEAD_MIN_MS

    @classmethod
    def took(cls, took_ms: int) -> None:
        cls.ms = flow.next_lead_ms(cls.ms, took_ms)

    @classmethod
    def ahead_ms(cls) -> int:
        """How far ahead of now a new slot is asked for: none while the writes are quick (the least lead); the lead
        beyond that while they are slow, so the slot's write and the place's are done before it."""
        return cls.ms - flow.LEAD_MIN_MS

    @classmethod
    def missed(cls) -> None:
        cls.ms = flow.next_lead_ms(cls.ms, None, missed=True)


class FlowStore:
    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name
        self.held_until_ms: int | None = None
        """When the hold that refused the last :meth:`acquire` (or :meth:`may_start`) ends, a throttle answer's."""
        self.paused = False
        """Whether the target's pause refused the last :meth:`acquire` (or :meth:`may_start`)."""

    def reserve(self, target: str, limits: FlowLimits, now_ms: int) -> int | None:
        """The start slot (epoch ms, never before ``now_ms``) this delivery takes; None while the target is paused."""
        slots = self.reserve_many(target, limits, now_ms, 1)
        return None if slots is None else slots[0]

    def reserve_many(self, target: str, limits: FlowLimits, now_ms: int, count: int) -> list[int] | None:
        """``count`` consecutive start slots (epoch ms, one interval apart, the first never before ``now_ms``) in one
        write, for as many deliveries; None while the target is paused."""
        interval = limits.interval_us
        if interval is None:
            return [now_ms] * count
        now_us, step = now_ms * 1000, interval * count
        queued = _SEEN_QUEUED.get(target, 0) > now_us
        for _ in range(WRITE_TRIES):
            if not queued:  # idle: the first slot is now
                old = self._update(target, f"SET {flow.TAT} = :next",
                                   f"(attribute_not_exists({flow.TAT}) OR {flow.TAT} <= :now) AND "
                                   f"attribute_not_exists({flow.PAUSED})",
                                   {":next": now_us + step, ":now": now_us})
                if old is None:
                    _SEEN_QUEUED[target] = now_us + step
                    return [flow.slot_ms(now_us + k * interval) for k in range(count)]
                if flow.PAUSED in old:
                    return None
            # queued: the first slot is tat, which moves ``count`` intervals on
            new = self._update(target, f"SET {flow.TAT} = {flow.TAT} + :step",
                               f"{flow.TAT} > :now AND attribute_not_exists({flow.PAUSED})",
                               {":step": step, ":now": now_us}, returns="UPDATED_NEW")
            if isinstance(new, int):
                _SEEN_QUEUED[target] = new
                return [flow.slot_ms(new - step + k * interval) for k in range(count)]
            if new is not None and flow.PAUSED in new:
                return None
            queued = False
        raise Crowded(f"target {target!r}: no start slot after {WRITE_TRIES} tries (its item changed under each)")

    def acquire(self, target: str, limits: FlowLimits, now_ms: int, lease_end_ms: int) -> Lease | None:
        """A lease on one of the target's ``maxInFlight`` places, held until ``lease_end_ms`` at most (:data:`NO_PLACE`
        for a target without places, once it may start), or None when every place is held (or the target is
        paused or held back)."""
        places = limits.max_in_flight
        self.held_until_ms, self.paused = None, False
        if places is None:
            return NO_PLACE if self.may_start(target, now_ms) else None
        mine = flow.lease_value(lease_end_ms, random.randrange(flow.LEASE_SCALE))
        index = random.randrange(places)
        for _ in range(WRITE_TRIES):
            name = flow.lease_name(index)
            old = self._update(target, f"SET {name} = :mine",
                               f"(attribute_not_exists({name}) OR {name} < :ended OR {name} = :mine)"
                               f" AND attribute_not_exists({flow.PAUSED})"
                               f" AND (attribute_not_exists({flow.HELD_UNTIL}) OR {flow.HELD_UNTIL} <= :now)",
                               {":mine": mine, ":ended": (now_ms + 1) * flow.LEASE_SCALE, ":now": now_ms})
            if old is None:
                return Lease(index, mine)
            if not self._free_to_start(old, now_ms):
                return None
            free = [i for i in range(places)
                    if flow.lease_end_ms(int(old.get(flow.lease_name(i), {}).get("N", 0))) <= now_ms]
            if not free:
                return None
            index = random.choice(free)
        return None

    def pace(self, place: str, interval_us: int, slot_ms: int) -> int | None:
        """Allow a group's start at target slot ``slot_ms`` if it is at least one group interval (``interval_us``)
        after the group's last start allowed (on the group's item, ``place``): None once allowed; else the instant
        (epoch ms) from which the group's next start may be."""
        slot_us = slot_ms * 1000
        old = self._update(place, f"SET {flow.LAST} = :slot",
                           f"attribute_not_exists({flow.LAST}) OR {flow.LAST} <= :latest",
                           {":slot": slot_us, ":latest": slot_us - interval_us})
        if old is None:
            return None
        last = _number(old, flow.LAST)
        return slot_ms if last is None else flow.slot_ms(last + interval_us)

    def may_start(self, target: str, now_ms: int) -> bool:
        """Whether a delivery holding its slot may start now on a target without places (``maxInFlight``): not paused,
        nor held back since the slot was taken (one consistent read; a target with places learns it from the lease's
        own write)."""
        self.held_until_ms, self.paused = None, False
        item = self._send(target, "get_item", TableName=self._table, Key=flow.flow_key(target).as_item_key(),
                          ConsistentRead=True, ProjectionExpression=f"{flow.PAUSED}, {flow.HELD_UNTIL}").get("Item", {})
        return self._free_to_start(item, now_ms)

    def _free_to_start(self, item: dict[str, Any], now_ms: int) -> bool:
        """Whether the item (as read, or as a refused write found it) lets a delivery start now; else records why."""
        held = _number(item, flow.HELD_UNTIL)
        self.paused = flow.PAUSED in item
        self.held_until_ms = held if held is not None and held > now_ms and not self.paused else None
        return not self.paused and self.held_until_ms is None

    def release(self, target: str, lease: Lease) -> None:
        """Give back ``lease`` if it is still this delivery's (one that ended by itself may be another's now). A
        write that fails leaves the lease to end by itself: the delivery it served is over, whatever happens here."""
        if lease.index < 0:
            return
        name = flow.lease_name(lease.index)
        try:
            self._update(target, f"REMOVE {name}", f"{name} = :mine", {":mine": lease.value})
        except (ClientError, Crowded) as exc:
            log_event("place_left", level=logging.WARNING, target=target, reason=str(exc)[:200])

    def hold(self, target: str, limits: FlowLimits, now_ms: int, retry_after_ms: int | None) -> int:
        """Hold the target back after it said slow down (a 429, a throttle): no slot starts before the instant this
        answers, on any of its items. ``retry_after_ms``, when the target said how long; else a backoff that doubles
        (from :data:`~..core.flow.BACKOFF_FIRST_MS` to :data:`~..core.flow.BACKOFF_MAX_MS`) while throttles keep
        coming within the hold before them, and starts again from the first once they stop (as its first item
        keeps them)."""
        item = self._ddb.get_item(TableName=self._table, Key=flow.flow_key(target).as_item_key(), ConsistentRead=True,
                                  ProjectionExpression=f"{flow.HELD_UNTIL}, {flow.BACKOFF}").get("Item", {})
        backoff_ms = flow.next_backoff_ms(_number(item, flow.HELD_UNTIL), _number(item, flow.BACKOFF), now_ms)
        until_ms = now_ms + (retry_after_ms if retry_after_ms is not None else backoff_ms)
        values = {":until": {"N": str(until_ms * 1000)}, ":held": {"N": str(until_ms)},
                  ":backoff": {"N": str(backoff_ms)}}
        for name, _ in limits.each_item(target):
            try:
                self._ddb.update_item(
                    TableName=self._table, Key=flow.flow_key(name).as_item_key(),
                    UpdateExpression=f"SET {flow.TAT} = :until, {flow.HELD_UNTIL} = :held, {flow.BACKOFF} = :backoff",
                    ConditionExpression=f"attribute_not_exists({flow.TAT}) OR {flow.TAT} < :until",
                    ExpressionAttributeValues=values)
            except ClientError as exc:
                if not is_condition_failure(exc):
                    raise
        return until_ms

    def set_paused(self, target: str, limits: FlowLimits, paused: bool, now_ms: int) -> None:
        """Pause the target (no slot and no place is given on any of its items until it is resumed), or resume it."""
        for name, _ in limits.each_item(target):
            key = flow.flow_key(name).as_item_key()
            if paused:
                self._ddb.update_item(TableName=self._table, Key=key, UpdateExpression=f"SET {flow.PAUSED} = :at",
                                      ExpressionAttributeValues={":at": {"N": str(now_ms)}})
            else:
                self._ddb.update_item(TableName=self._table, Key=key, UpdateExpression=f"REMOVE {flow.PAUSED}")

    def state(self, target: str, limits: FlowLimits, now_ms: int) -> flow.TargetState:
        """The target's state as ``GET /targets/{name}`` shows it (one consistent read of each of its items)."""
        return flow.TargetState.total([self._item_state(name, share, now_ms)
                                       for name, share in limits.each_item(target)])

    def group_state(self, target: str, group: str, limits: FlowLimits, now_ms: int) -> flow.TargetState:
        """A group's counts on ``target`` (``limits``: its ``perGroup``), from its one item: a group's is never
        spread, whatever its rate."""
        return self._item_state(flow.group_place(target, group), limits, now_ms)

    def _item_state(self, name: str, limits: FlowLimits, now_ms: int) -> flow.TargetState:
        item = self._ddb.get_item(TableName=self._table, Key=flow.flow_key(name).as_item_key(),
                                  ConsistentRead=True).get("Item", {})
        leases = [_number(item, flow.lease_name(i)) for i in range(limits.max_in_flight or 0)]
        return flow.TargetState.of(limits, now_ms, paused=flow.PAUSED in item, tat_us=_number(item, flow.TAT),
                                   held_until_ms=_number(item, flow.HELD_UNTIL), leases=leases)

    def _send(self, target: str, operation: str, **request: Any) -> Any:
        """One request to the item of ``target``: raises :class:`Crowded` at once when DynamoDB refused it for
        capacity; sent again, up to :data:`SEND_ATTEMPTS` in all, when it found no connection, timed out or met a
        server error (a write sent again finds what its first made: a lease its own, a slot one interval on)."""
        for attempt in range(1, SEND_ATTEMPTS + 1):
            try:
                return getattr(self._ddb, operation)(**request)
            except ClientError as exc:
                error = exc.response.get("Error", {})
                if error.get("Code") in CAPACITY_CODES:
                    raise Crowded(f"target {target!r}: {exc}") from exc
                status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
                if status < 500 or attempt == SEND_ATTEMPTS:
                    raise
            except (BotoConnectionError, HTTPClientError):
                if attempt == SEND_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _update(self, target: str, update: str, condition: str, values: dict[str, int],
                returns: str = "NONE") -> Any:
        """One conditional write: None (or, with ``returns``, the new ``tat``) when it was made; the item as it was
        (attribute-value form, ``{}`` for none) when its condition refused it."""
        try:
            answer = self._send(
                target, "update_item", TableName=self._table, Key=flow.flow_key(target).as_item_key(),
                UpdateExpression=update, ConditionExpression=condition,
                ExpressionAttributeValues={name: {"N": str(value)} for name, value in values.items()},
                ReturnValues=returns, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as exc:
            if is_condition_failure(exc):
                return exc.response.get("Item") or {}
            raise
        if returns == "UPDATED_NEW":
            return int(answer["Attributes"][flow.TAT]["N"])
        return None
