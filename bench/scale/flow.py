"""A burst to a limited target on AWS, simulated: the runtime's flow control (its own constants and delay rule) on
the scale section's model of AWS, one event per call.

What it models, call by call, is told in ``bench/templates/flow.md`` (the part ``simulation``), with the report.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter

from scheduler_runtime.aws.flow import WRITE_TRIES  # noqa: E402
from scheduler_runtime.core import flow as rules  # noqa: E402
from scheduler_runtime.core.contract import DEFAULT_MAX_RECEIVE_COUNT  # noqa: E402
from scheduler_runtime.core.flow import FlowLimits  # noqa: E402
from scheduler_runtime.core.window import DelayRule  # noqa: E402

from .des import Bucket, Sim
from .flow_figures import DUE0, busiest, free_figures, group_figures, outcome  # busiest: bench.flow's too
from .pipeline import SDK_ATTEMPTS

ITEM_ATTEMPTS = 1
"""Attempts of a call to a limited item: its client makes no SDK retries (``context.FLOW_CLIENT``)."""
CROWDED = object()
"""What a call answers when DynamoDB refused it for capacity after the SDK's tries."""
RULE = DelayRule()
SLICE_S = 10.0
"""How often a run's timeline is written (simulated seconds)."""
TOLERANCE_S = rules.START_TOLERANCE_MS / 1000
WAIT_IN_PLACE_S = rules.WAIT_IN_PLACE_MS / 1000


def _ms(t: float) -> int:
    return math.floor(t * 1000)


class Item:
    """One limited target's (or group's) item: its partition's capacity and what the writes left in it."""

    def __init__(self, limits: FlowLimits | None, p: dict) -> None:
        self.interval = (limits.interval_us or 0) / 1e6 if limits else 0.0
        self.writes, self.reads = Bucket(p["ddb_partition_wru"]), Bucket(p["ddb_partition_rru"])
        self.tat = -math.inf
        self.accepted = -math.inf
        """A group's item: the target slot of its group's last start allowed (``lastAt``)."""
        self.refused = 0


class Sandbox:
    """One execution environment: what it saw of each item's ``tat``, its lead, its SDK retry quota."""

    def __init__(self, p: dict) -> None:
        self.seen: dict[int, float] = {}
        self.lead_ms = rules.LEAD_MIN_MS
        self.quota, self._most, self._cost = p["sdk_retry_quota"], p["sdk_retry_quota"], p["sdk_retry_cost"]
        self.cold = True

    def retry(self) -> bool:
        if self.quota < self._cost:
            return False
        self.quota -= self._cost
        return True

    def retry_left(self) -> bool:
        return self.quota >= self._cost

    def answered(self, attempt: int) -> None:
        self.quota = min(self._most, self.quota + (self._cost if attempt else 1))


class Model:
    """``due`` (simulated seconds) to a target limited to ``limits``; ``groups``: each timer's group (None: none), each
    group limited to ``group_limits``."""

    def __init__(self, p: dict, due: list[float], limits: FlowLimits, table_wru: float,
                 groups: list[int | None] | None = None, group_limits: FlowLimits | None = None, seed: int = 1,
                 free: list[float] | None = None, flow_queue: bool = True) -> None:
        self.p, self.sim, self.rng = p, Sim(), random.Random(seed)
        n = len(due)
        self.due, self.group = due, groups or [None] * n
        self.interval = (limits.interval_us or 0) / 1e6
        """The target's own interval (all its items together start one a this)."""
        self.targets = [Item(share, p) for _, share in limits.each_item("target")]
        """The target's items (``FlowLimits.items``: one per ``STARTS_PER_ITEM`` a second), each with its share."""
        self.target_of = [self.targets[limits.item_index(f"timer-{k}")] for k in range(n)]
        """The item each timer's delivery uses (``FlowLimits.item_for``, by its id)."""
        self.items = [Item(group_limits, p) for _ in range(1 + max((g for g in self.group if g is not None), default=-1))]
        self.table = Bucket(table_wru)
        self.ticket: list[tuple[float | None, float | None] | None] = [None] * n
        """Its message's ticket, once the dispatcher sent it back (then no refused start write): its target slot (held
        on the message's first receive only) and its group slot (``groupSlot``, held however often it comes back)."""
        self.group_slot: list[float | None] = [None] * n  # the group slot its delivery holds (its ticket's, or taken)
        self.rc = [0] * n
        self.starts: list[float | None] = [None] * n
        self.paced = [False] * n
        self.crowded_times = [0] * n
        """How many times in a row each delivery's item refused its writes for capacity (its ticket's ``crowded``)."""
        """Whether each delivery's group refused its start once already (it kept its group slot then)."""
        self.visible: list[int] = []
        self.c: Counter[str] = Counter()
        self.live = n
        self.idle: list[int] = []
        self.sandboxes: list[Sandbox] = []
        self.most = min(p["esm_max"], p["lambda_account_concurrency"])
        self.step, self.backlogged, self.billed_s = p["esm_step_per_min"] / 60, False, 0.0
        self.timeline: list[list[float]] = []
        self.first_receives = 0  # the creates' messages received once
        self.first_received: list[float | None] = [None] * n  # when each was
        self.all_received_at: float | None = None  # when every one of them was
        self.free_due, self.flow_queue = free or [], flow_queue
        """Timers due meanwhile to a target without limits: in the limited messages' queue, taken in the same
        receives, unless they wait apart (``flow_queue``: the limited messages wait in the flow queue)."""
        self.free_starts: list[float | None] = [None] * len(self.free_due)
        for i in range(n):
            self.sim.at(due[i] - self.rng.random(), lambda i=i: self._surface(i))
        for j, free_due in enumerate(self.free_due):
            self.sim.at(free_due - self.rng.random(), lambda j=j: self._surface_free(j))
        self._grow(p["esm_start"])

    # --- the mapping's pollers --------------------------------------------------------------------------------
    def _grow(self, to: float) -> None:
        while len(self.sandboxes) + 1 <= min(to, self.most) + 1e-9:
            self.sandboxes.append(Sandbox(self.p))
            self.idle.append(len(self.sandboxes) - 1)
        for _ in range(min(len(self.idle), math.ceil(len(self.visible) / self.p["esm_batch"]))):
            self._receive(self.idle.pop())

    def _tick(self) -> None:
        if self.backlogged:
            self._grow(len(self.sandboxes) + self.step)
        self.backlogged = False
        if self.live:
            self.sim.after(1.0, self._tick)

    def _surface(self, i: int) -> None:
        self.visible.append(i)
        if self.idle:
            self._receive(self.idle.pop())

    def _lat(self, key: str) -> float:
        """A call's round trip: the stated latency, from half to one and a half times it."""
        return self.p[key] * (0.5 + self.rng.random())

    def _receive(self, poller: int) -> None:
        self.c["receives"] += 1
        self.sim.after(self._lat("lat_sqs_s"), lambda: self._received(poller))

    def _received(self, poller: int) -> None:
        batch: list[int] = []
        visible = self.visible
        while visible and len(batch) < self.p["esm_batch"]:
            k = self.rng.randrange(len(visible))
            visible[k], visible[-1] = visible[-1], visible[k]
            batch.append(visible.pop())
        if not batch:
            self.idle.append(poller)
            return
        self.backlogged = self.backlogged or bool(visible)
        sb = self.sandboxes[poller]
        start = self.sim.now + self._lat("lat_invoke_s") + (self.p["lat_cold_start_s"] if sb.cold else 0.0)
        sb.cold = False
        self.c["invocations"] += 1
        run = {"left": len(batch), "start": start, "poller": poller}
        free = [-1 - i for i in batch if i < 0]
        batch = [i for i in batch if i >= 0]
        for j in free:
            self.sim.at(start + self.p["cpu_per_delivery_s"], lambda j=j: self._start_free(j, run))
        for i in batch:
            self.rc[i] += 1
            if self.ticket[i] is None and self.rc[i] == 1:
                self.first_received[i] = self.sim.now
                self.first_receives += 1
                if self.first_receives == len(self.due):
                    self.all_received_at = self.sim.now

        def dispatch() -> None:
            for i in self._take_target_slots(self._take_group_slots(batch, sb, dispatch_one), sb, dispatch_one):
                self._dispatch(i, sb, run)

        def dispatch_one(i: int) -> None:
            self._dispatch(i, sb, run)
        self.sim.at(start + self.p["cpu_per_delivery_s"], dispatch)

    # --- a target without limits beside it ------------------------------------------------------------------------
    def _surface_free(self, j: int) -> None:
        """A free timer's message surfaces: among the limited ones (``-1 - j`` in the same receives), or, those waiting
        in the flow queue, in the delayer queue alone, where a waiting long poll of its mapping answers it at once."""
        if not self.flow_queue:
            return self._surface(-1 - j)
        start = self.sim.now + self._lat("lat_sqs_s") + self._lat("lat_invoke_s") + self.p["cpu_per_delivery_s"]
        self.sim.at(start, lambda: self._start_free(j, None))

    def _start_free(self, j: int, run: dict | None) -> None:
        """At its due instant, its start write; then its target (and its share of ``run``, when it had one)."""
        def started() -> None:
            self.free_starts[j] = self.sim.now
            if run is not None:
                self.sim.after(self._lat("lat_target_s"), lambda: self._done(run))
        self.sim.at(max(self.sim.now, self.free_due[j]) + self._lat("lat_ddb_write_s"), started)

    def _take_group_slots(self, batch: list[int], sb: Sandbox, then) -> list[int]:
        """``RoomTaker.take_group_slots``: a batch's first asks of one group take their group slots in one write, in
        due order (each then goes on with ``then(i)``); the rest of the batch, returned, goes on at once."""
        asking: dict[int, list[int]] = {}
        rest = []
        for i in batch:
            ticket, g = self.ticket[i], self.group[i]
            if (g is None or (ticket is not None and ticket != (None, None))
                    or RULE.timing(_ms(self.due[i]), _ms(self.sim.now)).put_back):
                rest.append(i)
            else:
                asking.setdefault(g, []).append(i)
        for g, members in asking.items():
            if len(members) < 2:
                rest += members
                continue
            members.sort(key=lambda i: self.due[i])
            item = self.items[g]

            def slotted(first, members=members, item=item) -> None:
                if first is not CROWDED:
                    self.c["group_slots"] += len(members)
                    self.c["group_slots_together"] += len(members)
                    self.c["group_slot_writes"] += 1
                    for k, i in enumerate(members):
                        self.ticket[i] = (None, first + k * item.interval)
                for i in members:
                    then(i)
            self._reserve(item, sb, self.due[members[0]], slotted, len(members))
        return rest

    def _take_target_slots(self, batch: list[int], sb: Sandbox, then) -> list[int]:
        """``RoomTaker.take_target_slots``: a batch's first asks due already to one item of the target (without a group
        rate: none here has a group) take their slots in one write, in due order (each then goes on with ``then(i)``);
        the rest of the batch, returned, goes on at once."""
        asking: dict[int, list[int]] = {}
        rest = []
        now = self.sim.now
        for i in batch:
            if self.ticket[i] is None and self.rc[i] == 1 and self.group[i] is None and self.due[i] <= now:
                asking.setdefault(id(self.target_of[i]), []).append(i)
            else:
                rest.append(i)
        for members in asking.values():
            if len(members) < 2:
                rest += members
                continue
            members.sort(key=lambda i: self.due[i])
            item = self.target_of[members[0]]

            def slotted(first, members=members, item=item) -> None:
                if first is not CROWDED:
                    self.c["target_slots_together"] += len(members)
                    self.c["target_slot_writes_together"] += 1
                    for k, i in enumerate(members):
                        self.ticket[i] = (first + k * item.interval, None)
                for i in members:
                    then(i)
            self._reserve(item, sb, self._ahead(sb), slotted, len(members))
        return rest

    def _done(self, run: dict) -> None:
        run["left"] -= 1
        if not run["left"]:
            self.billed_s += self.sim.now - run["start"]
            self.sim.after(self._lat("lat_sqs_s"), lambda: self._receive(run["poller"]))  # the batch's delete, then on

    # --- AWS calls ------------------------------------------------------------------------------------------------
    def _call(self, bucket: Bucket, sb: Sandbox, apply, answer, attempt: int = 0, attempts: int = SDK_ATTEMPTS) -> None:
        """One DynamoDB call on ``bucket``'s capacity, retried as the SDK does (``attempts``: 1 for a limited item's,
        whose client makes no retries): ``apply()`` runs when it is granted (its condition and its change),
        ``answer(result)`` a round trip later (:data:`CROWDED`: refused throughout)."""
        lat = self._lat("lat_ddb_write_s")
        if bucket.admit(self.sim.now):
            sb.answered(attempt)
            result = apply()
            self.sim.after(lat, lambda: answer(result))
        elif attempt + 1 < attempts and sb.retry():
            self.sim.after(lat + self.rng.random() * 2 ** attempt,
                           lambda: self._call(bucket, sb, apply, answer, attempt + 1, attempts))
        else:
            self.sim.after(lat, lambda: answer(CROWDED))

    def _item_call(self, bucket: Bucket, sb: Sandbox, apply, answer) -> None:
        """A call to a limited item (``FlowStore._send``): refused for capacity, it answers :data:`CROWDED` at once."""
        self._call(bucket, sb, apply, answer, attempts=ITEM_ATTEMPTS)

    def _reserve(self, item: Item, sb: Sandbox, not_before: float, then, count: int = 1) -> None:
        """``FlowStore.reserve_many``: the first of ``count`` slots (one interval apart) ``then`` gets, or
        :data:`CROWDED`."""
        n, key, step = max(self.sim.now, not_before), id(item), item.interval * count

        def idle_write(tries: int) -> None:
            def apply() -> float | None:
                if item.tat <= n:
                    item.tat = n + step
                    return n
                item.refused += 1
                return None

            def answer(slot) -> None:
                if slot is None:
                    return queued_write(tries)
                if slot is not CROWDED:
                    sb.seen[key] = n + step
                then(slot)
            self._item_call(item.writes, sb, apply, answer)

        def queued_write(tries: int) -> None:
            def apply() -> float | None:
                if item.tat > n:
                    item.tat += step
                    return item.tat - step
                item.refused += 1
                return None

            def answer(slot) -> None:
                if slot is None:
                    if tries + 1 >= WRITE_TRIES:
                        return then(CROWDED)
                    return idle_write(tries + 1)
                if slot is not CROWDED:
                    sb.seen[key] = slot + step
                then(slot)
            self._item_call(item.writes, sb, apply, answer)

        (queued_write if sb.seen.get(key, -math.inf) > n else idle_write)(0)

    # --- one message: ``Delivery.dispatch``, then ``RoomTaker.take`` ---------------------------------------------
    def _dispatch(self, i: int, sb: Sandbox, run: dict) -> None:
        ticket = self.ticket[i]
        slot = ticket[0] if ticket is not None and self.rc[i] == 1 else None
        self.group_slot[i] = None if ticket is None else ticket[1]
        start = self.due[i] if slot is None else max(self.due[i], slot)
        timing = RULE.timing(_ms(start), _ms(self.sim.now))
        if timing.put_back:  # for its start slot (``Delivery.dispatch``: waiting for room), or surfaced early
            why = "sent_back" if slot is not None and slot > self.due[i] else "put_back_early"
            return self._send(i, run, timing.put_back_seconds, why)
        # the create's message names its limited target (``Creator._with_room``): at its due time it takes room, as
        # one put back does; room waits for a lead before its slot
        self.sim.at(self.due[i], lambda: self._take(i, sb, run, slot))

    def _take(self, i: int, sb: Sandbox, run: dict, slot: float | None) -> None:
        """The group's own slot first (kept once taken), waited for; then a target slot."""
        g = self.group[i]
        if g is None or self.group_slot[i] is not None:
            return self._at_group_slot(i, sb, run, slot)

        def group_slotted(gs) -> None:
            if gs is CROWDED:
                return self._crowded(i, run)
            self.c["group_slots"] += 1
            self.group_slot[i] = gs
            self._at_group_slot(i, sb, run, slot)
        self._reserve(self.items[g], sb, self.due[i], group_slotted)

    def _at_group_slot(self, i: int, sb: Sandbox, run: dict, slot: float | None) -> None:
        gs = self.group_slot[i]
        if gs is None:
            return self._target_slot(i, sb, run, slot)
        if gs - self.sim.now > WAIT_IN_PLACE_S:
            return self._wait(i, run, None)
        self.sim.at(gs, lambda: self._target_slot(i, sb, run, slot))

    def _ahead(self, sb: Sandbox) -> float:
        """``Lead.ahead_ms``: how far ahead of now a new target slot is asked for (the lead beyond the least)."""
        return self.sim.now + (sb.lead_ms - rules.LEAD_MIN_MS) / 1000

    def _target_slot(self, i: int, sb: Sandbox, run: dict, slot: float | None) -> None:
        if slot is None or self.sim.now > slot + TOLERANCE_S:
            return self._reserve(self.target_of[i], sb, max(self._ahead(sb), self.due[i]),
                                 lambda s: self._try(i, sb, run, s, 0))
        self._try(i, sb, run, slot, 0)

    def _again(self, i: int, sb: Sandbox, run: dict, tries: int, not_before: float) -> None:
        """A new target slot, for the next of the dispatcher's tries."""
        self._reserve(self.target_of[i], sb, not_before, lambda s: self._try(i, sb, run, s, tries + 1))

    def _try(self, i: int, sb: Sandbox, run: dict, s, tries: int) -> None:
        """One of the dispatcher's ``ROOM_TRIES`` with target slot ``s``: the group's pace, then the place, the wait,
        the start."""
        if s is CROWDED:
            return self._crowded(i, run)
        if tries >= rules.ROOM_TRIES:
            return self._wait(i, run, None, "looked_again")
        if s - self.sim.now > WAIT_IN_PLACE_S:
            return self._wait(i, run, s)
        g = self.group[i]
        if g is None:
            return self.sim.at(s - sb.lead_ms / 1000, lambda: self._place(i, sb, run, s, tries))
        item = self.items[g]

        def apply() -> float | None:  # ``FlowStore.pace``: one group interval after the group's last start allowed
            if item.accepted <= s - item.interval + 1e-9:
                item.accepted = s
                return None
            item.refused += 1
            return item.accepted + item.interval

        def answer(allowed) -> None:
            if allowed is CROWDED:
                return self._crowded(i, run)
            if allowed is None:
                return self._place(i, sb, run, s, tries)
            self.c["paced"] += 1
            if not self.paced[i]:  # refused the first time: keep the group slot, a target slot where it allows
                self.paced[i] = True
                self.c["paced_kept"] += 1
                return self._again(i, sb, run, tries, max(allowed, self._ahead(sb)))

            def group_slotted(gs) -> None:  # refused again: a new group slot, from the back of its group's queue
                if gs is CROWDED:
                    return self._crowded(i, run)
                self.c["group_slots"] += 1
                self.group_slot[i] = gs
                if gs - self.sim.now > WAIT_IN_PLACE_S:
                    return self._wait(i, run, None)
                self.sim.at(gs, lambda: self._again(i, sb, run, tries, self._ahead(sb)))
            self._reserve(item, sb, max(allowed, self.sim.now), group_slotted)
        self.sim.at(s - sb.lead_ms / 1000, lambda: self._item_call(item.writes, sb, apply, answer))

    def _place(self, i: int, sb: Sandbox, run: dict, s: float, tries: int) -> None:
        """The read that the target may start (a target without places), the wait for the slot, the start."""
        asked = self.sim.now
        self.c["reads"] += 1

        def wait() -> None:
            sb.lead_ms = rules.next_lead_ms(sb.lead_ms, math.ceil((self.sim.now - asked) * 1000))
            self.sim.at(max(self.sim.now, s) + self.rng.random() * self.p["lat_wait_overshoot_s"], start)

        def start() -> None:
            now = self.sim.now
            if now > s + TOLERANCE_S:
                sb.lead_ms = rules.next_lead_ms(sb.lead_ms, None, missed=True)
                self.c["slots_missed"] += 1
                return self._again(i, sb, run, tries, self._ahead(sb))
            self._call(self.table, sb, lambda: True,
                       lambda r: self._fail(i, run) if r is CROWDED else self._started(i, run, now))
        self._item_call(self.target_of[i].reads, sb, lambda: True,
                        lambda r: self._crowded(i, run) if r is CROWDED else wait())

    def _started(self, i: int, run: dict, at: float) -> None:
        self.starts[i] = at
        self.live -= 1
        self.sim.after(self._lat("lat_target_s"), lambda: self._done(run))

    # --- where a message goes next --------------------------------------------------------------------------------
    def _wait(self, i: int, run: dict, slot: float | None, why: str = "sent_back") -> None:
        """``RoomTaker.send_back``: a ticket for target slot ``slot`` and the group slot held, waiting for the first
        of them set and ahead (else looking again in ``LOOK_AGAIN_SECONDS``)."""
        gs = self.group_slot[i]
        self.ticket[i] = (slot, gs)
        until = slot if slot is not None else gs
        now = self.sim.now
        delay = rules.LOOK_AGAIN_SECONDS if until is None or until <= now else RULE.delay_seconds(_ms(until), _ms(now))
        if why == "crowded":  # ``RoomTaker.take``: longer each time in a row
            self.crowded_times[i] += 1
            delay = rules.crowded_delay_seconds(self.crowded_times[i], f"timer-{i}")
        else:
            self.crowded_times[i] = 0
        self._send(i, run, delay, why)

    def _send(self, i: int, run: dict, delay_s: int, why: str) -> None:
        """A new message for ``i`` (its ticket as it is), visible after ``delay_s``."""
        self.c[why] += 1
        self.rc[i] = 0
        self.sim.after(self._lat("lat_sqs_s") + delay_s, lambda: self._surface(i))
        self._done(run)  # its share of the invocation ends with the send (its round trip left out of the billed time)

    def _crowded(self, i: int, run: dict) -> None:
        self._wait(i, run, None, "crowded")

    def _fail(self, i: int, run: dict) -> None:
        """The message fails: SQS hands it out again after the visibility timeout, or dead-letters it."""
        self.c["failed"] += 1
        self._done(run)

        def back() -> None:
            if self.rc[i] >= DEFAULT_MAX_RECEIVE_COUNT:
                self.c["dead_lettered"] += 1
                self.live -= 1
            else:
                self._surface(i)
        self.sim.after(self.p["visibility_s"], back)

    def run(self, until: float = math.inf, events: float = math.inf) -> None:
        """Run until every timer started or was dead-lettered, ``until`` (simulated), or ``events`` were simulated
        (a budget: a crowded burst's churn costs this machine seconds per simulated second); ``timeline`` keeps,
        every :data:`SLICE_S`, the seconds after the due second and the counts so far."""
        self.sim.after(1.0, self._tick)
        end = DUE0
        while (self.live or None in self.free_starts) and self.sim.events < events and end < until:
            end = min(until, end + SLICE_S)
            self.sim.run(end)
            self.timeline.append([end - DUE0, len(self.due) - self.live - self.c["dead_lettered"], self.c["crowded"],
                                  self.c["failed"]])
        if not self.live:
            self.sim.run()  # what is left of a finished run: its invocations' ends


def burst(p: dict, n: int, rate: int, table_wru: float, events: float = math.inf) -> dict:
    """``n`` timers due in one second to a target limited to ``rate`` a second (a rate alone), until the end or
    ``events`` (a budget)."""
    limits = FlowLimits(rate=rate)
    started = time.monotonic()
    m = Model(p, [DUE0 + k / n for k in range(n)], limits, table_wru)
    m.run(events=events)
    return outcome(m, limits, time.monotonic() - started)


def beside(p: dict, n: int, rate: int, table_wru: float, free_every_s: float, free_for_s: float, flow_queue: bool,
           events: float = math.inf) -> dict:
    """``n`` timers due in one second to a target limited to ``rate`` a second (none: the free ones alone), and beside
    them a timer due every ``free_every_s`` for ``free_for_s`` to a target without limits; the limited ones wait in
    the flow queue (or, not ``flow_queue``, in the delayer queue with the free ones). Run until every free one
    started, at most until the last is due and 60 s more."""
    limits = FlowLimits(rate=rate)
    free = [DUE0 + k * free_every_s for k in range(int(free_for_s / free_every_s))]
    started = time.monotonic()
    m = Model(p, [DUE0 + k / n for k in range(n)], limits, table_wru, free=free, flow_queue=flow_queue)
    m.run(free[-1] + 60.0, events)
    return dict(free_figures(m.free_due, m.free_starts), flow_queue=flow_queue, limited=n, rate=rate,
                free_every_s=free_every_s, limited_started=sum(1 for s in m.starts if s is not None),
                events=m.sim.events, seconds=time.monotonic() - started)


def grouped(p: dict, n: int, big: int, small_groups: int, rate: int, group_rate: int, table_wru: float,
            horizon_s: float, events: float = math.inf, seed: int = 1) -> dict:
    """``n`` timers due in one second, ``big`` of them in one group and the rest spread over ``small_groups``
    groups, to a target limited to ``rate`` a second with ``perGroup`` ``group_rate``; simulated for ``horizon_s``
    after the due second (the big group's tail, at its own rate, is read from its starts meanwhile)."""
    rng = random.Random(seed)
    members = [0] * big + [1 + k % small_groups for k in range(n - big)]
    rng.shuffle(members)
    groups: list[int | None] = list(members)
    limits, group_limits = FlowLimits(rate=rate), FlowLimits(rate=group_rate)
    started = time.monotonic()
    m = Model(p, [DUE0 + k / n for k in range(n)], limits, table_wru, groups, group_limits, seed)
    m.run(DUE0 + horizon_s, events)
    return dict(outcome(m, limits, time.monotonic() - started), horizon_s=horizon_s, group_rate=group_rate,
                **group_figures(m, members, small_groups))
