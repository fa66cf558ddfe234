"""Room on a limited target for one delivery (the rules in :mod:`scheduler_runtime.core.flow`): a start slot, a
place among its ``maxInFlight``, and, for a delivery of a group on a target with per-group limits, its group's own.

A delivery of a group takes its group's slot first (on the group's own item): it waits for it, in the delayer
queue when it is far, so a group with a million deliveries enters the target's queue at its own rate and cannot
fill it ahead of another group's ten. At its group slot it takes a slot on the target. A lead before that slot
(:class:`~.flow.Lead`) it asks the group's item to allow a start there: one group interval after the group's last
start allowed. Refused the first time, it keeps its group slot and takes a target slot again from the instant the
group allows (so a member that woke a little late, behind the next member's target slot, keeps its place and its
group its rate); refused again, it takes a new group slot (at the back of its group's queue: the instant the group
allows is the next group slot, which another delivery holds) and a target slot again once that comes. Then it
takes its places, the group's and the target's (whose write reads the target's pause and holds), waits for the
slot, and starts within its tolerance, or gives them back and takes a new slot. The first asks of one group in a
dispatcher batch take their group slots together, in one write (:meth:`RoomTaker.take_group_slots`), and so do the
first asks, due already, to one item of a target (:meth:`RoomTaker.take_target_slots`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, Callable

from ..clock import Clock, wait_until
from ..core import flow
from ..core.envelope import TimerRef
from ..core.flow import FlowLimits, Ticket
from ..core.states import Refusal
from ..observability import log_event
from .config import Config
from .delayer import DelayerQueue
from .flow import Crowded, FlowStore, Lead, Lease, TargetFigures

logger = logging.getLogger("scheduler_runtime")
Release = Callable[[], None]


def nothing_held() -> None:
    """The release of a delivery that holds no place."""


class RoomTaker:
    """Takes room for deliveries on one environment's limited targets, or sends them back to wait for it."""

    def __init__(self, store: FlowStore, config: Config, clock: Clock, queue: DelayerQueue,
                 figures: TargetFigures) -> None:
        self._room, self._config, self._clock, self._queue, self._figures = store, config, clock, queue, figures

    def take(self, ref: TimerRef, held_tags: tuple[bytes, ...], receive_count: int, target: str, group: str | None,
             slot: int | None) -> Release | None:
        """Room for a delivery to ``target``: what gives it back, or None when the message was sent back to wait
        (``held_tags``: the tags the record may hold for the retry it is, when it is one). ``slot``: the one its
        message holds, if any. A target without limits has room at once."""
        limits = self._config.flow_limits.get(target)
        if limits is None:  # no limits (or no more, since the message was put back)
            return nothing_held
        item, share = limits.item_for(target, ref.schedule_id)
        wait = _Waiter(self, ref, held_tags, receive_count, target, item,
                       group if limits.for_group(group) else None)
        try:
            return self._take(wait, share, slot)
        except Crowded as exc:  # the item is out of capacity: wait, unspent, longer each time, and take a slot again
            wait.crowded += 1
            wait(None, look_again_seconds=flow.crowded_delay_seconds(wait.crowded, ref.schedule_id), crowded=True)
            log_event("crowded", level=logging.WARNING, id=ref.schedule_id, target=target, reason=str(exc)[:200])
            return None

    def take_group_slots(self, works: list[Any]) -> list[Any]:
        """``works`` (a batch's, in order), its deliveries of one group (with a rate of its own on a limited target)
        holding their group slots, taken in one write for them all, in due order; one alone, or whose group's write
        was refused, takes its own when it takes room. A group with a million deliveries then asks its item for a
        slot once a batch instead of once a delivery: its one partition, not the target's, bounds how fast they
        enter its queue. Only first asks are taken together: a message that holds its group slot, holds a target
        slot, or will be put back for surfacing early, is left as it is."""
        now, rule = self._clock.now_ms(), self._config.delay_rule
        asking: dict[tuple[str, str, FlowLimits], list[int]] = {}
        for index, work in enumerate(works):
            ticket = work.ticket if isinstance(work, TimerRef) and not work.periodic else None
            if (ticket is None or ticket.group is None or ticket.group_slot_ms is not None or ticket.slot_ms is not None
                    or rule.timing(work.due_ms, now).put_back):
                continue
            limits = self._config.flow_limits.get(ticket.target)
            group_limits = None if limits is None else limits.for_group(ticket.group)
            if group_limits is not None and group_limits.rate is not None:
                asking.setdefault((ticket.target, ticket.group, group_limits), []).append(index)
        taken = list(works)
        for (target, group, group_limits), indexes in asking.items():
            if len(indexes) < 2:
                continue
            indexes.sort(key=lambda i: works[i].due_ms)
            slots = self._slots_together(flow.group_place(target, group), group_limits,
                                         max(now, works[indexes[0]].due_ms), len(indexes))
            for index, slot in zip(indexes, slots or []):
                ref = works[index]
                taken[index] = replace(ref, ticket=replace(ref.ticket, group_slot_ms=slot))
        return taken

    def take_target_slots(self, works: list[Any], receive_counts: list[int]) -> list[Any]:
        """``works`` (a batch's, in order, and each message's receive count), its deliveries due already to one item
        of a limited target with a rate holding their start slots, taken in one write for them all, in due order;
        one alone, or whose item's write was refused, takes its own when it takes room. A backlog then asks its
        target's partition for slots once a batch instead of once a delivery. Only first asks are taken together: a
        one-shot's message received for the first time, naming its target, holding no slot, and without a group rate
        of its own (whose group slot comes first); a message not due yet (surfaced early), a periodic occurrence's
        (which reads its definition first) and one received again are left as they are."""
        now = self._clock.now_ms()
        asking: dict[tuple[str, str], tuple[FlowLimits, list[int]]] = {}
        for index, work in enumerate(works):
            ticket = work.ticket if isinstance(work, TimerRef) and not work.periodic else None
            if ticket is None or ticket.slot_ms is not None or receive_counts[index] != 1 or work.due_ms > now:
                continue
            limits = self._config.flow_limits.get(ticket.target)
            if limits is None or limits.rate is None:
                continue
            group_limits = limits.for_group(ticket.group)
            if group_limits is not None and group_limits.rate is not None:
                continue
            item, share = limits.item_for(ticket.target, work.schedule_id)
            asking.setdefault((ticket.target, item), (share, []))[1].append(index)
        taken = list(works)
        for (_, item), (share, indexes) in asking.items():
            if len(indexes) < 2:
                continue
            indexes.sort(key=lambda i: works[i].due_ms)
            slots = self._slots_together(item, share, now + Lead.ahead_ms(), len(indexes))
            for index, slot in zip(indexes, slots or []):
                ref = works[index]
                taken[index] = replace(ref, ticket=replace(ref.ticket, slot_ms=slot))
        return taken

    def _slots_together(self, item: str, limits: FlowLimits, not_before_ms: int, count: int) -> list[int] | None:
        """``count`` slots of ``item`` in one write; None when the item's write was refused for capacity or failed (a
        failed write fails no message of the batch: each asks on its own)."""
        try:
            return self._room.reserve_many(item, limits, not_before_ms, count)
        except Crowded:
            return None  # each asks on its own, and waits longer if it is refused too
        except Exception:  # noqa: BLE001 - as a refusal: each asks on its own
            logger.warning("taking %d slots of %s together failed", count, item, exc_info=True)
            return None

    def _take(self, wait: "_Waiter", limits: FlowLimits, slot: int | None) -> Release | None:
        """Room on ``wait``'s item of the target, whose share of the target's limits ``limits`` is."""
        clock, room, ref = self._clock, self._room, wait.ref
        group_limits = limits.for_group(wait.group)
        if group_limits is not None and group_limits.rate is not None:
            # the group's own slot first: it enters the target's queue at its own rate
            assert wait.group is not None
            if wait.group_slot is None:
                wait.group_slot = room.reserve(flow.group_place(wait.target, wait.group), group_limits,
                                               max(clock.now_ms(), ref.due_ms))
                if wait.group_slot is None:
                    raise AssertionError("a group's item is never paused")
            if wait.group_slot - clock.now_ms() > flow.WAIT_IN_PLACE_MS:
                wait(None)
                return None
            wait_until(clock, wait.group_slot)
        if slot is None or clock.now_ms() > slot + flow.START_TOLERANCE_MS:  # none, or one passed: a new one
            slot = room.reserve(wait.item, limits, max(clock.now_ms() + Lead.ahead_ms(), ref.due_ms))
        for _ in range(flow.ROOM_TRIES):
            if slot is None or slot - clock.now_ms() > flow.WAIT_IN_PLACE_MS:
                break
            allowed_from = self._paced(wait, group_limits, slot)
            if allowed_from is not None and not wait.paced:
                # the group started too recently for this slot: keep the group slot, a target slot where it allows
                wait.paced = True
                slot = room.reserve(wait.item, limits, max(allowed_from, clock.now_ms() + Lead.ahead_ms()))
                continue
            if allowed_from is not None:
                # refused again: a new group slot, from the back of the group's queue (the instant the group allows
                # is the next group slot, which another delivery holds)
                assert group_limits is not None and wait.group is not None
                wait.group_slot = room.reserve(flow.group_place(wait.target, wait.group), group_limits,
                                               max(allowed_from, clock.now_ms()))
                if wait.group_slot is None or wait.group_slot - clock.now_ms() > flow.WAIT_IN_PLACE_MS:
                    wait(None)
                    return None
                wait_until(clock, wait.group_slot)
                slot = room.reserve(wait.item, limits, clock.now_ms() + Lead.ahead_ms())
                continue
            leases = self._places_for(wait, limits, group_limits, slot)
            if leases is not None:
                return lambda: self._release(wait, leases)
            # every place held, the target paused or held back, or the place came too late for the slot: a new slot
            held = room.held_until_ms
            slot = None if room.paused else room.reserve(wait.item, limits,
                                                         max(clock.now_ms() + Lead.ahead_ms(), held or 0))
            if slot is not None and held is not None:
                slot = max(slot, held)
        else:  # no room in as many tries: look again a little later
            wait(None, look_again_seconds=flow.LOOK_AGAIN_SECONDS)
            return None
        wait(slot)
        return None

    def _paced(self, wait: "_Waiter", group_limits: FlowLimits | None, slot: int) -> int | None:
        """A lead before ``slot``, ask the group's item to allow a start there (its rate): None when allowed (or the
        delivery has no group rate); else the instant from which the group allows one."""
        interval = None if group_limits is None else group_limits.interval_us
        if interval is None:
            return None
        assert wait.group is not None
        wait_until(self._clock, slot - Lead.ms)
        return self._room.pace(flow.group_place(wait.target, wait.group), interval, slot)

    def _places_for(self, wait: "_Waiter", limits: FlowLimits, group_limits: FlowLimits | None,
                    slot: int) -> list[tuple[str, Lease]] | None:
        """Take the delivery's places a lead before ``slot`` (its group's, then its target's, whose write reads the
        target's pause and holds), and wait for the slot: the places, or None when one was not to be had within the
        slot's tolerance (or came too late for it; those taken are given back)."""
        clock, room = self._clock, self._room
        wait_until(clock, slot - Lead.ms)
        lease_end = clock.now_ms() + self._config.visibility_timeout_seconds * 1000
        asked = clock.now_ms()
        held: list[tuple[str, Lease]] = []
        wanted = [(wait.item, limits)]
        if group_limits is not None and group_limits.max_in_flight is not None:
            assert wait.group is not None
            wanted.insert(0, (flow.group_place(wait.target, wait.group), replace(group_limits, per_group=None)))
        for place, place_limits in wanted:
            lease = room.acquire(place, place_limits, asked, lease_end)
            for pause in flow.LEASE_RETRY_PAUSES:
                if (lease is not None or room.held_until_ms is not None or room.paused
                        or clock.now_ms() + pause * 1000 > slot + flow.START_TOLERANCE_MS):
                    break
                clock.sleep(pause)
                lease = room.acquire(place, place_limits, clock.now_ms(), lease_end)
            if lease is None:
                self._release(wait, held)
                return None
            held.append((place, lease))
        Lead.took(clock.now_ms() - asked)
        wait_until(clock, slot)
        if limits.spaced and clock.now_ms() > slot + flow.START_TOLERANCE_MS:
            self._release(wait, held)
            Lead.missed()
            return None
        return held

    def _release(self, wait: "_Waiter", leases: list[tuple[str, Lease]]) -> None:
        for place, lease in leases:
            self._room.release(place, lease)

    def send_back(self, ref: TimerRef, ticket: Ticket, look_again_seconds: int = flow.HELD_POLL_SECONDS) -> None:
        """Send the message back to wait in the delayer queue for its ticket's slot (without one, a paused target's
        or a crowded one's: to look again in ``look_again_seconds``); the record stays as it is, so a cancel still
        wins meanwhile."""
        self._figures.waited(ticket.target)
        now = self._clock.now_ms()
        slot, until = ticket.slot_ms, ticket.waits_until
        delay = (look_again_seconds if until is None or until <= now
                 else self._config.delay_rule.delay_seconds(until, now))
        self._queue.send_one(replace(ref, ticket=ticket), delay)
        log_event("put_back", id=ref.schedule_id, delaySeconds=delay, reason=Refusal.WAITING_FOR_ROOM, slotMs=slot)


class _Waiter:
    """How one delivery goes back to wait: its message, with a ticket for the slot it waits for (and its group's)."""

    def __init__(self, taker: RoomTaker, ref: TimerRef, tags: tuple[bytes, ...], receive_count: int, target: str,
                 item: str, group: str | None) -> None:
        self._taker, self.ref, self._tags, self._receive_count = taker, ref, tags, receive_count
        self.target, self.item, self.group = target, item, group
        """The target, the item of it this delivery uses (:meth:`~..core.flow.FlowLimits.item_for`), its group."""
        ticket = ref.ticket
        ours = ticket if group is not None and ticket is not None and ticket.group == group else None
        self.group_slot = None if ours is None else ours.group_slot_ms
        """The group slot this delivery took (or the instant its group allows a start): kept while it waits."""
        self.paced = ours is not None and ours.paced
        """Whether its group refused its start once already (it kept its group slot then)."""
        self.crowded = 0 if ticket is None else ticket.crowded
        """How many times in a row its item's writes were refused for capacity (:class:`~..core.flow.Ticket`)."""

    def __call__(self, slot: int | None, look_again_seconds: int = flow.HELD_POLL_SECONDS,
                 crowded: bool = False) -> None:
        """Send it back (``crowded``: because its item's writes were refused for capacity; the count starts again
        when it goes back for anything else)."""
        ticket = Ticket(self.target, slot, self._tags, self._receive_count, self.group, self.group_slot, self.paced,
                        self.crowded if crowded else 0)
        self._taker.send_back(self.ref, ticket, look_again_seconds)


__all__ = ["Release", "RoomTaker", "nothing_held"]
