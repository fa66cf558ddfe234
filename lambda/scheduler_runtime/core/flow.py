"""Flow control, pure: a target's limits and the arithmetic of its start slots.

A target description may carry ``flowControl``: ``{"rate": n, "periodSeconds": s, "maxInFlight": m}`` (either
limit, or both). Each limited target has one item in the Schedules table (:func:`flow_key`) that every dispatcher
writes conditionally:

- **Rate**, as a virtual schedule (GCRA without a burst allowance): starts are spaced one *interval*
  (``(periodSeconds + START_TOLERANCE) / rate``, rounded up to the microsecond) apart, and a delivery starts
  within :data:`START_TOLERANCE_MS` after its slot or takes a new one; so in any window of one period at most
  ``rate`` start, however each start falls within its tolerance. The item keeps ``tat``, the next free start
  instant (epoch microseconds). A delivery takes the slot ``max(tat, now)`` and moves ``tat`` one interval past
  it: one write, whatever the backlog.
- **Concurrency**, as ``maxInFlight`` leases (attributes ``l0`` .. ``l<m-1>``): a delivery holds one from just
  before its start until its target answered, each lease ending at the latest when the delayer queue's
  visibility timeout would hand its message out again. A dispatcher that dies mid-delivery leaves a lease that
  ends by itself then; none is ever counted twice, as each is one attribute taken by a conditional write.
- **Hold and pause**: ``paused`` stops every start until it is removed; a hold moves ``tat`` forward.
- **Spread over items**: one item is one partition, about 1,000 write units a second. A target whose rate is more
  than :data:`STARTS_PER_ITEM` a second has its limits shared among several items (:attr:`FlowLimits.items`), each
  with its own share of the rate and the places; a delivery uses the one its schedule's id falls to
  (:meth:`FlowLimits.item_for`), and a pause or a hold is written to each.

A delivery that waits for room waits in its message, never in its record: the record stays ``QUEUED`` (a cancel,
reschedule or group cancel still wins), and the message carries its reserved slot (:class:`Ticket`).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any, Mapping

from .contract import FLOW_CONTROL, FLOW_CONTROL_FIELD, PER_GROUP_FIELD
from .keys import Key

KEY_PREFIX: str = FLOW_CONTROL["keyPrefix"]
FLOW_SK = "FLOW"
DEFAULT_PERIOD_SECONDS: int = FLOW_CONTROL["periodSeconds"]["default"]
STARTS_PER_ITEM: int = FLOW_CONTROL["startsPerItem"]
"""The most starts a second one item is given: a start writes its item up to four times (a slot, a second try when
the sandbox guessed the target idle or queued wrong, a place taken and given back), and one item serves about 1,000
write units a second."""
ITEM_SEPARATOR = "~"
"""Between a target's name and an item's number in the name of its second and later items (no name may hold it)."""
HELD_POLL_SECONDS: int = FLOW_CONTROL["heldPollSeconds"]
"""How long a delivery held back by a paused target waits before it looks again."""
WAIT_IN_PLACE_MS = 1000
"""A slot this close is waited for in the dispatcher (billed); a later one in the delayer queue (a message)."""
START_TOLERANCE_MS = 50
"""How late after its slot a delivery may still start (its message surfaced late, a place took a while): a later
one takes a new slot. Every interval carries it (one tolerance per period, spread over the ``rate`` starts), so
that starts anywhere within their tolerance never put more than ``rate`` in a window of one period."""
LEAD_MIN_MS = 20
LEAD_MAX_MS = 500
"""A delivery takes its place and reads the target's pause and hold a *lead* before its slot (between these two),
then waits for the slot and starts: after the slot there is nothing left to do, so only the wait's own overshoot can
make it miss its tolerance, however slow the writes are. A sandbox's lead follows its writes (:func:`next_lead_ms`)."""
PAUSE_SETTLE_MS = LEAD_MAX_MS + START_TOLERANCE_MS
"""How long a pause waits before it is answered: a delivery that read the target before the pause has started by
then (its slot was at most a lead away, and it starts within its tolerance), so nothing starts once it is answered."""
LEASE_RETRY_PAUSES = (0.01, 0.02, 0.04)
"""Pauses before trying again for a place when all are held, while the slot's tolerance lasts; then the delivery
takes a new slot, one interval on, rather than keep writing the target's item."""
ROOM_TRIES = 3
"""How many slots within :data:`WAIT_IN_PLACE_MS` a delivery tries in the dispatcher (a slot missed, every place
held) before it waits for its next one in the delayer queue."""
LOOK_AGAIN_SECONDS = 1
"""How long a delivery waits in the delayer queue, unspent, before it takes a slot again when it found no room in
the dispatcher: every place held through its tries; and the first time DynamoDB refused its item's request for
capacity (after that, :func:`crowded_delay_seconds`)."""
CROWDED_BACKOFF_MAX_SECONDS = 64
"""The longest a delivery waits before it looks again after its item's writes were refused for capacity many times
in a row (:func:`crowded_delay_seconds`)."""
LEASE_SCALE = 1_000_000
"""A place's lease is its end (epoch ms) times this, plus a number the write drew: so the SDK's retry of a write
whose answer was lost finds its own lease and has it, and two deliveries never hold the same value."""
TAT = "tat"
LAST = "lastAt"
"""On a group's item: the target slot (epoch us) of the group's last start allowed; the next must be one group
interval after it."""
GROUP_SEPARATOR = "#"
"""Between a target's name and a group's in the name of the group's item (neither name may hold it)."""
PAUSED = "paused"
HELD_UNTIL = "heldUntil"
"""When the last hold (a throttle answer) ends, epoch ms."""
BACKOFF = "backoff"
"""The length of the last hold that had no ``Retry-After``, ms: the next one without doubles it."""
BACKOFF_FIRST_MS = 1000
BACKOFF_MAX_MS = 60_000


def next_backoff_ms(held_until_ms: int | None, last_backoff_ms: int | None, now_ms: int) -> int:
    """How long to hold a target that said slow down without saying how long: twice the hold before while the
    throttles keep coming (this one within the last hold's length after it ended), else the first backoff."""
    if held_until_ms is None or last_backoff_ms is None or now_ms > held_until_ms + last_backoff_ms:
        return BACKOFF_FIRST_MS
    return min(BACKOFF_MAX_MS, 2 * last_backoff_ms)


def crowded_delay_seconds(times: int, schedule_id: str) -> int:
    """How long a delivery waits in the delayer queue before it looks again when DynamoDB refused its item's writes
    for capacity ``times`` times in a row: :data:`LOOK_AGAIN_SECONDS` the first time, then a ceiling that doubles each
    time (up to :data:`CROWDED_BACKOFF_MAX_SECONDS`), waited from half of it to all of it. Where in that half falls
    by the schedule's id, so that a crowd of deliveries refused together comes back spread out, not together again,
    and one delivery's waits are the same on every run."""
    ceiling = min(CROWDED_BACKOFF_MAX_SECONDS, LOOK_AGAIN_SECONDS << max(0, times - 1))
    draw = zlib.crc32(f"{schedule_id}:{times}".encode()) / 2 ** 32
    return max(LOOK_AGAIN_SECONDS, math.ceil(ceiling / 2 + draw * ceiling / 2))


def next_lead_ms(lead_ms: int, took_ms: int | None, missed: bool = False) -> int:
    """A sandbox's next lead: twice the time its last place took (``took_ms``) when that is more, else its lead a fifth
    shorter; twice as long after a delivery missed its slot's tolerance; always within
    :data:`LEAD_MIN_MS`-:data:`LEAD_MAX_MS`."""
    if missed:
        lead_ms *= 2
    elif took_ms is not None:
        lead_ms = max(2 * took_ms, lead_ms * 4 // 5)
    return max(LEAD_MIN_MS, min(LEAD_MAX_MS, lead_ms))


def lease_value(end_ms: int, drawn: int) -> int:
    """The lease a delivery writes: its end and a number it drew (0 to :data:`LEASE_SCALE` - 1)."""
    return end_ms * LEASE_SCALE + drawn


def lease_end_ms(value: int) -> int:
    """When a lease ends (epoch ms)."""
    return value // LEASE_SCALE


def lease_name(index: int) -> str:
    return f"l{index}"


def flow_key(target: str) -> Key:
    """The item of a limited target (or of a group on it, :func:`group_place`)."""
    return Key(f"{KEY_PREFIX}{target}", FLOW_SK)


def item_name(target: str, index: int) -> str:
    """What names a target's item ``index`` (0: the target's own name, as a target with one item has it)."""
    return target if index == 0 else f"{target}{ITEM_SEPARATOR}{index}"


def group_place(target: str, group: str) -> str:
    """What names a group's item on a target with per-group limits (its own partition): used as a target's name."""
    return f"{target}{GROUP_SEPARATOR}{group}"


@dataclass(frozen=True)
class FlowLimits:
    """A target's limits, from its description's ``flowControl``."""

    rate: int | None = None
    period_seconds: int = DEFAULT_PERIOD_SECONDS
    max_in_flight: int | None = None
    per_group: "FlowLimits | None" = None
    """Each group's own limits (``perGroup``), within these; a delivery without a group is held to these alone."""

    @classmethod
    def of(cls, description: Mapping[str, Any]) -> "FlowLimits | None":
        """The limits of a (checked) target description; None for a target without ``flowControl``."""
        value = description.get(FLOW_CONTROL_FIELD)
        if not value:
            return None
        return cls._of(value)

    @classmethod
    def _of(cls, value: Mapping[str, Any]) -> "FlowLimits":
        group = value.get(PER_GROUP_FIELD)
        return cls(rate=value.get("rate"), period_seconds=value.get("periodSeconds", DEFAULT_PERIOD_SECONDS),
                   max_in_flight=value.get("maxInFlight"), per_group=None if group is None else cls._of(group))

    def for_group(self, group: str | None) -> "FlowLimits | None":
        """The limits a delivery of ``group`` is held to on its group's own item; None without a group (or without
        per-group limits)."""
        return None if group is None else self.per_group

    @property
    def items(self) -> int:
        """How many items share the target's limits: enough for :data:`STARTS_PER_ITEM` a second each, but never
        more than its ``maxInFlight`` (each item holds at least one place) or its ``rate`` (each at least one start a
        period). A group's own item is always one."""
        if self.rate is None:
            return 1
        count = math.ceil(self.rate / (self.period_seconds * STARTS_PER_ITEM))
        if self.max_in_flight is not None:
            count = min(count, self.max_in_flight)
        return max(1, min(count, self.rate))

    def share(self, index: int) -> "FlowLimits":
        """The limits item ``index`` holds: the rate and the places divided among the items as evenly as whole
        numbers allow (the first ones take one more), so that together they never allow more than the target's."""
        count = self.items
        if count == 1:
            return self

        def part(total: int | None) -> int | None:
            return None if total is None else total // count + (1 if index < total % count else 0)

        return FlowLimits(rate=part(self.rate), period_seconds=self.period_seconds,
                          max_in_flight=part(self.max_in_flight), per_group=self.per_group)

    def item_index(self, schedule_id: str) -> int:
        """The number of the item a delivery of ``schedule_id`` uses: always the same one for one schedule."""
        count = self.items
        return 0 if count == 1 else zlib.crc32(schedule_id.encode()) % count

    def item_for(self, target: str, schedule_id: str) -> tuple[str, "FlowLimits"]:
        """The item a delivery of ``schedule_id`` uses (:meth:`item_index`), and its share."""
        index = self.item_index(schedule_id)
        return item_name(target, index), self.share(index)

    def each_item(self, target: str) -> list[tuple[str, "FlowLimits"]]:
        """Every item of the target, with its share."""
        return [(item_name(target, index), self.share(index)) for index in range(self.items)]

    @property
    def spaced(self) -> bool:
        """Whether its starts are spaced, the target's or a group's: then a start must come within its tolerance."""
        return self.rate is not None or (self.per_group is not None and self.per_group.rate is not None)

    @property
    def interval_us(self) -> int | None:
        """The spacing of two starts, in microseconds: a period and one start tolerance over ``rate``, rounded up,
        so never more than ``rate`` starts a period, each within its tolerance."""
        if self.rate is None:
            return None
        return math.ceil((self.period_seconds * 1_000_000 + START_TOLERANCE_MS * 1000) / self.rate)


def slot_ms(slot_us: int) -> int:
    """A slot's instant in epoch ms, rounded up: a start is never before its slot."""
    return -(-slot_us // 1000)


@dataclass(frozen=True)
class TargetState:
    """What ``GET /targets/{name}`` answers of a limited target, read from its item: whether it is paused, the
    deliveries waiting for a slot (those with a slot reserved ahead of now: the slots between now and ``tat``),
    the places held now, and until when a throttle answer holds it back."""

    paused: bool
    waiting: int
    in_flight: int
    held_until_ms: int | None

    @classmethod
    def of(cls, limits: FlowLimits, now_ms: int, *, paused: bool, tat_us: int | None, held_until_ms: int | None,
           leases: list[int | None]) -> "TargetState":
        interval = limits.interval_us
        ahead_us = 0 if tat_us is None else max(0, tat_us - now_ms * 1000)
        held = held_until_ms if held_until_ms is not None and held_until_ms > now_ms else None
        if held is not None:  # the hold moved tat on: those slots are the hold, not deliveries
            ahead_us = max(0, ahead_us - (held - now_ms) * 1000)
        waiting = 0 if interval is None else max(0, -(-ahead_us // interval) - 1)  # the slots after now
        return cls(paused, waiting, sum(1 for end in leases if end is not None and lease_end_ms(end) > now_ms), held)

    @classmethod
    def total(cls, states: list["TargetState"]) -> "TargetState":
        """A target's state from its items' states: paused or held back if any item is (a pause and a hold are written
        to each), the waiting and the places held summed."""
        holds = [state.held_until_ms for state in states if state.held_until_ms is not None]
        return cls(any(state.paused for state in states), sum(state.waiting for state in states),
                   sum(state.in_flight for state in states), max(holds) if holds else None)


@dataclass(frozen=True)
class Ticket:
    """What a delayer message put back to wait for room carries: the target it waits for, its reserved start slot
    (None: the target was paused, so it looks again), and, for a retry, the tags the record may hold for the
    delivery it stands in for (the message it was put back for, and the ones before it that may have started it)
    and that message's receive count. The slot holds on the message's first receive only:
    received again, it takes a new one. A delivery of a group on a target with per-group limits carries its
    ``group`` and the group slot it took (``group_slot_ms``): it waits for that one first, then takes the target's;
    a group slot is kept however often the message comes back (it paces, the check at the start holds the rate).
    ``paced``: its group refused its start once already, and it kept its group slot then (it will not again).
    ``crowded``: how many times in a row DynamoDB refused its item's writes for capacity (it waits longer each time,
    :func:`crowded_delay_seconds`)."""

    target: str
    slot_ms: int | None
    tags: tuple[bytes, ...] = ()
    receive_count: int = 1
    group: str | None = None
    group_slot_ms: int | None = None
    paced: bool = False
    crowded: int = 0

    @property
    def waits_until(self) -> int | None:
        """The instant it waits for: its target slot, else its group slot; None when neither."""
        return self.slot_ms if self.slot_ms is not None else self.group_slot_ms

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"target": self.target}
        if self.slot_ms is not None:
            body["slot"] = self.slot_ms
        if self.tags:
            body.update(tags=[tag.hex() for tag in self.tags], rc=self.receive_count)
        if self.group is not None:
            body["group"] = self.group
        if self.group_slot_ms is not None:
            body["groupSlot"] = self.group_slot_ms
        if self.paced:
            body["paced"] = True
        if self.crowded:
            body["crowded"] = self.crowded
        return body

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Ticket":
        slot, group, group_slot = data.get("slot"), data.get("group"), data.get("groupSlot")
        tags = data.get("tags", [data["tag"]] if "tag" in data else [])  # "tag": one, as messages had it before
        return cls(str(data["target"]), None if slot is None else int(slot),
                   tuple(bytes.fromhex(str(tag)) for tag in tags), int(data.get("rc", 1)),
                   None if group is None else str(group), None if group_slot is None else int(group_slot),
                   data.get("paced") is True, int(data.get("crowded", 0)))
