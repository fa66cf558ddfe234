"""Groups in the Schedules table: a group's cancel item, its members through the ``ByGroup`` index, the gate a
grouped delivery passes before its target is called, and the background sweep of a cancelled group.

- **Cancel** (``DELETE /groups/{group}``): one conditional write stamps the cancel item with the call's start
  (only ever later), the index counts the members it stops, one sweep message per kind starts the clean-up from
  where the sweeps already started end, a second write records that start, and the call answers ``SETTLE_MS``
  after its first write.
- **The gate**: a grouped schedule or periodic occurrence whose delivery the dispatcher has started reads the
  cancel item (one strongly consistent read, for grouped members only) and calls its target only within
  ``START_DEADLINE_MS`` of that read: so a delivery stopped by a cancel never starts after the cancel answered.
- **The sweep**: a page of members a message, each cancelled as ``DELETE`` would (a schedule CANCELLED and its
  timer removed; a periodic timer DELETED), the next page in a message of its own. GET answers ``CANCELLED``
  (a periodic timer: 404) for a stopped member the sweep has not reached yet.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from botocore.exceptions import ClientError

from ..clock import Clock
from ..core import groups, keys, states, window
from ..core.groups import GroupSweep
from ..core.outcomes import CancelReason, Kind
from ..observability import log_event
from .context import Context
from .items import is_condition_failure
from .outcomes import OutcomeSink
from .store import ScheduleStore, query_pages

STOP_CHUNK = 10
"""Members a sweep stops at once (in threads), between its checks of its time budget."""
COUNT_PAGE = 10_000
"""Members a cancel counts a page."""
GATE_READS = 3
"""Reads of the cancel item before a start that keeps reading slower than ``START_DEADLINE_MS`` is retried later."""
SWEEP_BUDGET_MS = 10_000
"""The most a sweep message spends stopping members before it hands the rest to the next message (and at most a
quarter of the delayer queue's visibility timeout)."""
SWEEP_PROGRESS = "sweptTo"
"""The cancel item's record of each sweep, ``sweptTo<kind><its cancel's stamp>``: the last member key it passed."""
# Reused across invocations of a warm function: a sweep page's members are cancelled ten at a time.
_stoppers = ThreadPoolExecutor(max_workers=10, thread_name_prefix="group-sweep")


class GateTimedOut(Exception):
    """The cancel item kept answering too slowly for a safe start: SQS hands the message out again."""


class GroupStore:
    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    def cancelled_before(self, group: str) -> int | None:
        """The group's cancel stamp (members stamped before it are stopped); None when it was never cancelled."""
        item = self._ddb.get_item(TableName=self._table, Key=groups.cancel_key(group).as_item_key(),
                                  ConsistentRead=True, ProjectionExpression=groups.CANCELLED_BEFORE).get("Item")
        return int(item[groups.CANCELLED_BEFORE]["N"]) if item else None

    def cancel(self, group: str, now_ms: int) -> groups.CancelRanges:
        """Stop every member stamped before ``now_ms`` (one conditional write, only ever later). Returns what the
        cancel counts (from the cancel before it) and what it sweeps (from where the sweeps already started end),
        both read from the item as the write found it."""
        item, moved = self._only_later(group, groups.CANCELLED_BEFORE, now_ms)
        return groups.cancel_ranges(item, now_ms, moved)

    def sweep_started(self, group: str, before_ms: int) -> None:
        """Record that every member stamped before ``before_ms`` has a sweep started (only ever later)."""
        self._only_later(group, groups.SWEEP_STARTED_BEFORE, before_ms)

    def _only_later(self, group: str, name: str, stamp_ms: int) -> tuple[dict[str, Any], bool]:
        """Set the cancel item's ``name`` to ``stamp_ms`` unless it holds a later one: the item as the write found it
        (attribute-value form, empty for none), and whether it was set."""
        try:
            old = self._ddb.update_item(
                TableName=self._table, Key=groups.cancel_key(group).as_item_key(), UpdateExpression=f"SET {name} = :at",
                ConditionExpression=f"attribute_not_exists({name}) OR {name} < :at",
                ExpressionAttributeValues={":at": {"N": str(stamp_ms)}}, ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            ).get("Attributes", {})
        except ClientError as exc:
            if is_condition_failure(exc):
                return exc.response.get("Item") or {}, False
            raise
        return old, True

    def count(self, group: str, kind: str, after_ms: int, before_ms: int, deadline_ms: int,
              clock: Clock) -> tuple[int, bool]:
        """The pending members of ``kind`` stamped in ``[after_ms, before_ms)`` (the index is eventually consistent:
        one created in the last moment may be missing), a page (1 MB of keys, some 10,000 members) at a time until
        ``deadline_ms`` on ``clock``; whether it counted them all."""
        key_range = groups.stamp_range(kind, after_ms, before_ms)
        if key_range is None:
            return 0, True
        # a page is at most COUNT_PAGE members (1 MB of keys on DynamoDB is about as many): the budget is checked
        # between pages, and a page never runs long
        kwargs = {**self._query(group, key_range), "Select": "COUNT", "Limit": COUNT_PAGE}
        total = 0
        while True:
            page = self._ddb.query(**kwargs)
            total += page.get("Count", 0)
            if "LastEvaluatedKey" not in page:
                return total, True
            if clock.now_ms() >= deadline_ms:
                return total, False
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def advance_sweep(self, group: str, kind: str, before_ms: int, started_from: str | None, reached: str) -> bool:
        """Record that the sweep of ``kind`` for the cancel stamped ``before_ms`` moved from ``started_from`` (None:
        its first page) to ``reached``, only if no other message of it got there first: one chain continues, whatever
        SQS hands out twice. Whether it was recorded (then, and only then, the next page's message is sent)."""
        name = f"{SWEEP_PROGRESS}{kind}{before_ms}"  # each cancel's sweep its own, so a repeat never stops another
        values = {":to": {"S": reached}}
        if started_from is None:
            condition = f"attribute_not_exists({name})"
        else:
            condition, values[":from"] = f"{name} = :from", {"S": started_from}
        try:
            self._ddb.update_item(
                TableName=self._table, Key=groups.cancel_key(group).as_item_key(), UpdateExpression=f"SET {name} = :to",
                ConditionExpression=condition, ExpressionAttributeValues=values)
        except ClientError as exc:
            if is_condition_failure(exc):
                return False
            raise
        return True

    def members(self, group: str, key_range: tuple[str, str], limit: int) -> tuple[list[dict[str, Any]], bool]:
        """Up to ``limit`` index entries (table and index keys) in ``key_range``, in key order; whether more follow."""
        found: list[dict[str, Any]] = []
        for items in query_pages(self._ddb, {**self._query(group, key_range), "Limit": limit + 1}):
            found.extend(items)
            if len(found) > limit:
                break
        return found[:limit], len(found) > limit

    def _query(self, group: str, key_range: tuple[str, str]) -> dict[str, Any]:
        return {"TableName": self._table, "IndexName": groups.INDEX_NAME,
                "KeyConditionExpression": "#g = :g AND #gs BETWEEN :low AND :high",
                "ExpressionAttributeNames": {"#g": groups.PARTITION_KEY, "#gs": groups.SORT_KEY},
                "ExpressionAttributeValues": {":g": {"S": group}, ":low": {"S": key_range[0]},
                                              ":high": {"S": key_range[1]}}}


def may_start(store: GroupStore, group: str, stamp_ms: int, clock: Clock) -> bool:
    """Read ``group``'s cancel for a member stamped ``stamp_ms`` whose delivery is about to start: False when the
    cancel stopped it; True when it did not, and the read began within ``START_DEADLINE_MS`` on ``clock`` (the
    target must be called at once). Raises :class:`GateTimedOut` when every read was slower than that."""
    for _ in range(GATE_READS):
        read_at = clock.now_ms()
        if groups.is_stopped(stamp_ms, store.cancelled_before(group)):
            return False
        if clock.now_ms() - read_at <= window.START_DEADLINE_MS:
            return True
    raise GateTimedOut(f"reading the cancel of group '{group}' took longer than {window.START_DEADLINE_MS} ms "
                       f"{GATE_READS} times")


def stopped_reason(group: str) -> str:
    """What a member stopped by its group's cancel keeps as ``lastError``."""
    return f"group '{group}' was cancelled before this delivery started"


class OutcomesUnsent(Exception):
    """Some members' ``CANCELLED`` events were neither sent nor parked: SQS hands the sweep message out again, and
    those members, still in their group's index, are answered again."""


class GroupSweeper:
    """The background half of a group's cancel: one page of one kind's members a message.

    In a deployment that sends ``CANCELLED`` outcome events, a member the sweep stops stays in its group's index
    until its event has been sent (or parked), a second write each: so a sweep message that ends between the two
    (its sandbox stopped) and is handed out again still finds the member, and sends its event again. Without them,
    the stop takes the member out of the index in its one write."""

    def __init__(self, ctx: Context) -> None:
        self._ctx = ctx
        outcomes = OutcomeSink.of(ctx)
        self._outcomes = outcomes if outcomes is not None and outcomes.wants(Kind.CANCELLED) else None
        """Where the ``CANCELLED`` event of each member stopped goes (a deployment that wants them), sent a chunk
        of members at a time."""
        self._clock = ctx.clock
        self._groups = GroupStore(ctx.dynamodb, ctx.config.table_name)
        self._store = ScheduleStore.for_config(ctx.dynamodb, ctx.config)
        self._queue = ctx.delayer_queue()

    def start(self, group: str, after_ms: int, before_ms: int) -> None:
        """Send the first sweep message of each kind, a few seconds out (the index has caught up with the last
        members created before the cancel by then), then record the start on the cancel item: a cancel that dies
        before the record leaves its range to the next cancel's sweep."""
        for kind in groups.KINDS:
            self._queue.send_one(GroupSweep(group, kind, after_ms, before_ms), groups.SWEEP_FIRST_DELAY_SECONDS)
        self._groups.sweep_started(group, before_ms)

    def sweep(self, sweep: GroupSweep) -> int:
        """Stop a page of members (fewer when its time budget runs out first) and send the sweep of the rest, once:
        a message handed out again meanwhile finds its progress recorded and stops. How many it stopped."""
        key_range = groups.stamp_range(sweep.kind, sweep.after_ms, sweep.before_ms, sweep.cursor)
        if key_range is None:
            return 0
        began = self._clock.now_ms()
        # well inside the delayer queue's visibility timeout: SQS does not hand the message out again meanwhile
        budget_ms = min(SWEEP_BUDGET_MS, self._ctx.config.visibility_timeout_seconds * 1000 // 4)
        page, more = self._groups.members(sweep.group, key_range, groups.SWEEP_PAGE_SIZE)
        stopped = done = 0
        while done < len(page) and (done == 0 or self._clock.now_ms() - began < budget_ms):
            stopped += self._stop_chunk(sweep.kind, page[done:done + STOP_CHUNK])
            done = min(len(page), done + STOP_CHUNK)
        more = more or done < len(page)
        if more and done:
            reached = page[done - 1][groups.SORT_KEY]["S"]
            if self._groups.advance_sweep(sweep.group, sweep.kind, sweep.before_ms, sweep.cursor, reached):
                self._queue.send_one(sweep.next(reached), 0)
            else:
                log_event("group_sweep_superseded", group=sweep.group, kind=sweep.kind)
                more = False
        log_event("group_swept", group=sweep.group, kind=sweep.kind, stopped=stopped, more=more)
        return stopped

    def _stop_chunk(self, kind: str, entries: list[dict[str, Any]]) -> int:
        """Stop ``entries`` (in threads); with outcome events, send theirs, then take them out of the group's index.
        How many it stopped (those another call stopped first, answered again, are not counted)."""
        stop = self._stop_schedule if kind == groups.SCHEDULES else self._stop_periodic
        answered = list(_stoppers.map(stop, entries))
        if self._outcomes is not None:
            if not self._outcomes.flush():
                raise OutcomesUnsent("the CANCELLED events of group members were neither sent nor parked")
            leave = self._leave_schedule if kind == groups.SCHEDULES else self._leave_periodic
            list(_stoppers.map(leave, [entry for entry, (_, member) in zip(entries, answered) if member]))
        return sum(changed for changed, _ in answered)

    def _stop_schedule(self, entry: dict[str, Any]) -> tuple[bool, bool]:
        """``(changed, answered)``: whether this call cancelled it, and whether its ``CANCELLED`` event was gathered
        (it stays in the index until sent)."""
        schedule_id = keys.schedule_id_of(entry["pk"]["S"])
        config = self._ctx.config
        record, changed = self._store.cancel(schedule_id, self._clock.now_ms(), config.history_retention_seconds,
                                             leave_group=self._outcomes is None)
        if self._outcomes is None or record is None or record.status != states.CANCELLED:
            return changed, False
        # again when a sweep message comes back: its first receive may have ended before the event was sent
        self._outcomes.cancelled_schedule(record, CancelReason.GROUP_CANCELLED)
        return changed, True

    def _leave_schedule(self, entry: dict[str, Any]) -> None:
        self._store.leave_group(keys.schedule_id_of(entry["pk"]["S"]))

    def _stop_periodic(self, entry: dict[str, Any]) -> tuple[bool, bool]:
        """As :meth:`_stop_schedule`, for a periodic timer (its pending occurrence's event)."""
        from . import periodic  # noqa: PLC0415 - a deployment without periodic timers never loads it

        ctx = self._ctx
        service = periodic.Periodic(periodic.DefinitionStore(ctx.dynamodb, ctx.config.table_name), self._store,
                                    self._queue, ctx.config, self._clock)
        old = service.stop_for_group(entry["sk"]["S"], entry[groups.SORT_KEY]["S"], self._clock.now_ms(),
                                     leave_group=self._outcomes is None)
        if old is None:
            return False, False
        first = old.status != periodic.DELETED  # else a stop before this one kept it a member, its event unsent
        if self._outcomes is not None:
            # an occurrence pending when the group stopped it: ACTIVE then (a paused one has none)
            self._outcomes.cancelled_periodic(old if first else replace(old, status=periodic.ACTIVE),
                                              CancelReason.GROUP_CANCELLED)
        return first, self._outcomes is not None

    def _leave_periodic(self, entry: dict[str, Any]) -> None:
        from .definitions import DefinitionStore  # noqa: PLC0415 - as in _stop_periodic

        DefinitionStore(self._ctx.dynamodb, self._ctx.config.table_name).leave_group(entry["sk"]["S"],
                                                                                       entry[groups.SORT_KEY]["S"])


def member_sort_key(definition: Any) -> str:
    """A grouped definition's index sort key, from its stamp (it must have one)."""
    return groups.member_sort_key(groups.PERIODIC, definition.group_stamp_ms, definition.periodic_id)


def shown_status(store: GroupStore, group: str | None, stamp_ms: int, status: str) -> str:
    """A schedule's status as GET shows it: CANCELLED for a waiting member its group's cancel stopped (one more
    read, for grouped waiting schedules only); ``status`` otherwise."""
    if group is None or status not in states.CANCELLABLE_STORED:
        return status
    return states.CANCELLED if groups.is_stopped(stamp_ms, store.cancelled_before(group)) else status


__all__ = ["GateTimedOut", "GroupStore", "GroupSweeper", "OutcomesUnsent", "may_start", "member_sort_key", "shown_status",
           "stopped_reason"]
