"""Flow control in the Schedules table: a limited target's item, its start slots and its leases
(the rules in :mod:`scheduler_runtime.core.flow`).

Every call here is one conditional ``UpdateItem`` on the target's one item (a failed one returns the item, so no
read is ever needed): a slot costs one write when the target is idle and two when deliveries queue for it (the
first write finds ``tat`` ahead of now), a lease one write to take and one to give back. One item is one
partition: about 1,000 writes a second, so a target's rate tops out near 1,000 starts a second with a rate
alone, and near 330 with ``maxInFlight`` too (three writes a start).
"""

from __future__ import annotations

import random
from typing import Any

from botocore.exceptions import ClientError

from ..core import flow
from ..core.flow import FlowLimits
from .items import is_condition_failure

_ATTEMPTS = 4
"""Tries of a slot's two writes, or of a lease, before the caller treats the target as full."""


class FlowStore:
    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    def reserve(self, target: str, limits: FlowLimits, now_ms: int) -> int | None:
        """The start slot (epoch ms, never before ``now_ms``) this delivery takes; None while the target is paused."""
        interval = limits.interval_us
        if interval is None:
            return now_ms
        now_us = now_ms * 1000
        for _ in range(_ATTEMPTS):
            # idle: the slot is now
            old = self._update(target, f"SET {flow.TAT} = :next",
                               f"(attribute_not_exists({flow.TAT}) OR {flow.TAT} <= :now) AND "
                               f"attribute_not_exists({flow.PAUSED})",
                               {":next": now_us + interval, ":now": now_us})
            if old is None:
                return now_ms
            if flow.PAUSED in old:
                return None
            # queued: the slot is tat, which moves one interval on
            new = self._update(target, f"SET {flow.TAT} = {flow.TAT} + :step",
                               f"{flow.TAT} > :now AND attribute_not_exists({flow.PAUSED})",
                               {":step": interval, ":now": now_us}, returns="UPDATED_NEW")
            if isinstance(new, int):
                return flow.slot_ms(new - interval)
            if new is not None and flow.PAUSED in new:
                return None
        raise RuntimeError(f"target {target!r}: no start slot after {_ATTEMPTS} tries")

    def acquire(self, target: str, limits: FlowLimits, now_ms: int, lease_end_ms: int) -> int | None:
        """A lease on one of the target's ``maxInFlight`` places, held until ``lease_end_ms`` at most: its index, or
        None when every place is held (or the target is paused)."""
        places = limits.max_in_flight
        if places is None:
            return -1
        index = random.randrange(places)
        for _ in range(_ATTEMPTS):
            name = flow.lease_name(index)
            old = self._update(target, f"SET {name} = :end",
                               f"(attribute_not_exists({name}) OR {name} <= :now) AND attribute_not_exists({flow.PAUSED})",
                               {":end": lease_end_ms, ":now": now_ms})
            if old is None:
                return index
            if flow.PAUSED in old:
                return None
            free = [i for i in range(places) if int(old.get(flow.lease_name(i), {}).get("N", 0)) <= now_ms]
            if not free:
                return None
            index = random.choice(free)
        return None

    def release(self, target: str, index: int, lease_end_ms: int) -> None:
        """Give back lease ``index`` if it is still this delivery's (one that ended by itself may be another's now)."""
        if index < 0:
            return
        name = flow.lease_name(index)
        self._update(target, f"REMOVE {name}", f"{name} = :end", {":end": lease_end_ms})

    def _update(self, target: str, update: str, condition: str, values: dict[str, int],
                returns: str = "NONE") -> Any:
        """One conditional write: None (or, with ``returns``, the new ``tat``) when it was made; the item as it was
        (attribute-value form, ``{}`` for none) when its condition refused it."""
        try:
            answer = self._ddb.update_item(
                TableName=self._table, Key=flow.flow_key(target).as_item_key(), UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues={name: {"N": str(value)} for name, value in values.items()},
                ReturnValues=returns, ReturnValuesOnConditionCheckFailure="ALL_OLD")
        except ClientError as exc:
            if is_condition_failure(exc):
                return exc.response.get("Item") or {}
            raise
        if returns == "UPDATED_NEW":
            return int(answer["Attributes"][flow.TAT]["N"])
        return None
