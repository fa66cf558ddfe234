"""The deployed pipeline's delivery stage as a discrete-event model, and the long path's feed into it.

Delivery: the delayer queue -> the SQS event source mapping's pollers (standard mode: a start
concurrency, a scaling step a minute, a maximum; or provisioned mode) -> a dispatcher invocation
(Lambda concurrency and its scaling rate; a new execution environment's init when none was used within
``lambda_idle_keep_s``) that waits out each message's sub-second remainder in parallel, writes the FIRED
update (DynamoDB throughput) and calls the target -> the batch's delete.

Messages become visible up to a second before they are due (SQS delays are whole seconds), never
later than they reach the queue (a scenario may shift that: a lead, or ``SECOND`` precision). With a
batching window (``esm_window_s``), a poller whose receive returns messages gathers more until its
batch is full or the window has passed: a message that becomes visible meanwhile goes to a gathering
poller or to an idle one's receive in proportion to their numbers (SQS hands a message to one of the
receives waiting on the queue, and a gathering poller keeps receiving). A profile (``bench.scale.params``) says what limits what; with
``moto`` set, every DynamoDB and SQS call is served in turn by one server, as in the local engine. With ``warm_every_s``
set, a rule pings the dispatcher that often from time 0, which keeps the environment a ping used for the next invocation.
"""

from __future__ import annotations

import bisect
import math
import random
from collections import Counter, deque
from dataclasses import dataclass, field

from .des import Bucket, Server, Sim

THROTTLE_BACKOFF_S = 1.0  # a throttled invoke is retried by the mapping after this (stated)
SDK_ATTEMPTS = 3  # the runtime's botocore retry config (standard mode)


@dataclass
class Outcome:
    lateness: list[float] = field(default_factory=list)  # seconds, one per delivery
    last_delivery_s: float = float("nan")  # after the first due second
    drain_s: float = float("nan")  # after the last due time
    batches: list[int] = field(default_factory=list)  # messages per dispatcher invocation
    cold: list[bool] = field(default_factory=list)  # whether each invocation in ``batches`` started a new environment
    billed_ms: list[int] = field(default_factory=list)
    throttles: dict[str, int] = field(default_factory=dict)
    peak_concurrency: int = 0
    receives: int = 0
    empty_receives: int = 0
    failed: int = 0  # deliveries whose FIRED write was throttled on every attempt (retried by SQS later)
    peak_writes_per_s: float = 0.0  # the most FIRED writes (write units) the table granted in one whole second
    events: int = 0
    due_of: list[float] = field(default_factory=list)  # the due time of each delivery in ``lateness``
    started: list[float] = field(default_factory=list)  # the start of each invocation in ``batches``
    refused: int = 0  # creates whose record write was throttled on every attempt (the client sees a 5xx)
    stray: int = 0  # messages of refused creates: their conditional FIRED write costs a unit, delivers nothing
    capacity: list[tuple[float, float]] = field(default_factory=list)  # (time, write units a second) of each scaling
    pings: list[float] = field(default_factory=list)  # the start of each ping (no messages), apart from ``started``
    ping_cold: list[bool] = field(default_factory=list)  # whether each ping in ``pings`` started a new environment

    def since(self, t: float) -> Outcome:
        """The deliveries due from ``t`` on and the invocations and pings started from ``t`` on (a warm-up left
        out); one receive per invocation; throttles and concurrency stay the whole run's."""
        keep = [i for i, d in enumerate(self.due_of) if d >= t]
        runs = [i for i, s in enumerate(self.started) if s >= t]
        pings = [i for i, s in enumerate(self.pings) if s >= t]
        return Outcome(lateness=[self.lateness[i] for i in keep], last_delivery_s=self.last_delivery_s,
                       drain_s=self.drain_s, batches=[self.batches[i] for i in runs], cold=[self.cold[i] for i in runs],
                       billed_ms=[self.billed_ms[i] for i in runs], throttles=dict(self.throttles),
                       peak_concurrency=self.peak_concurrency, receives=len(runs), failed=self.failed,
                       peak_writes_per_s=self.peak_writes_per_s, events=self.events,
                       due_of=[self.due_of[i] for i in keep], started=[self.started[i] for i in runs],
                       pings=[self.pings[i] for i in pings], ping_cold=[self.ping_cold[i] for i in pings])


class Delivery:
    """The delivery stage for ``due`` (seconds, sorted) and ``visible`` (when each message becomes visible)."""

    def __init__(self, profile: dict, due: list[float], visible: list[float], ddb_wru: float,
                 start_pollers: float | None = None, scale_down: bool = False, creates: list[float] | None = None,
                 autoscale: tuple[float, int] | None = None) -> None:
        """``creates``: when each message's create writes its record (one write unit, the runtime's SDK retries)
        against the same table, in the order of ``due``; a create refused leaves its message a stray. ``autoscale``:
        (target share, minutes): target tracking on the table's write capacity (``_autoscale``)."""
        self.p = p = profile
        self.sim = Sim()
        order = sorted(range(len(due)), key=visible.__getitem__)
        self.due = [due[i] for i in order]
        self.create_at = [creates[i] for i in order] if creates is not None else None
        self.strays: set[int] = set()
        self.autoscale = autoscale
        self.above = 0  # consecutive whole minutes above the target
        self.visible = [visible[i] for i in order]
        self.next = 0  # index of the next message not yet visible-and-taken
        self.returned: deque[int] = deque()
        self.out = Outcome(throttles={"lambda": 0, "dynamodb": 0, "sqs": 0})
        self.table = Bucket(ddb_wru)
        self.writes_in: Counter[int] = Counter()  # write units granted, by whole second
        self.rng = random.Random(17)
        self.pending = 0  # failed deliveries waiting out the visibility timeout
        self.scaling = Bucket(p["lambda_scale_per_10s"] / 10, p["lambda_scale_per_10s"])
        self.moto = Server() if p.get("moto") else None
        self.in_use = 0
        self.warm: deque[float] = deque()  # when each idle execution environment was last used, oldest first
        if p.get("provisioned"):
            start = p["prov_min_pollers"] * p["prov_invokes_per_poller"]
            self.max_pollers = p["prov_max_pollers"] * p["prov_invokes_per_poller"]
            self.step_per_s = p["prov_step_per_min"] / 60
        else:
            start, self.max_pollers, self.step_per_s = p["esm_start"], p["esm_max"], p["esm_step_per_min"] / 60
        self.pollers = 0.0
        self.floor = start
        self.scale_down = scale_down
        self.empty_in_tick = 0
        self.idle: list[int] = []
        self.gathering: dict[int, list[int]] = {}  # poller -> the batch it is gathering (a batching window)
        self.wake_pending = False
        self.backlogged = False
        self.t0 = min(self.due) if self.due else 0.0
        self.last = -math.inf
        self._grow(start_pollers if start_pollers is not None else start)

    # --- the mapping's pollers ---------------------------------------------------------------
    def _grow(self, target: float) -> None:
        target = min(target, self.max_pollers)
        while self.pollers + 1 <= target + 1e-9:
            self.pollers += 1
            self.idle.append(int(self.pollers))
        self.pollers = max(self.pollers, target)
        self._wake()

    def _tick(self) -> None:
        if self.backlogged and self.step_per_s:
            self._grow(self.pollers + self.step_per_s)
        elif self.scale_down and self.empty_in_tick:
            # traffic low: give back up to one step of idle pollers, down to the start concurrency
            drop = min(len(self.idle), int(self.pollers - self.floor), max(1, int(self.step_per_s)))
            for _ in range(max(0, drop)):
                self.idle.pop(0)
                self.pollers -= 1
        self.backlogged = False
        self.empty_in_tick = 0
        if self.next < len(self.due) or self.returned or self.in_use or self.pending or self.gathering:
            self.sim.after(1.0, self._tick)

    def _visible_count(self) -> int:
        now = self.sim.now
        return len(self.returned) + bisect.bisect_right(self.visible, now, lo=self.next) - self.next

    def _wake(self) -> None:
        """Idle pollers long-poll: wake enough of them when messages are visible, or at the next visibility.
        Gathering pollers take their share of what is visible first."""
        if self.gathering:
            self._feed_gatherers()
        if not self.idle:
            if self.gathering and self.next < len(self.visible) and not self.wake_pending:
                self.wake_pending = True
                self.sim.at(max(self.sim.now, self.visible[self.next]), self._woken)
            return
        n = self._visible_count()
        if n:
            for _ in range(min(len(self.idle), math.ceil(n / self.p["esm_batch"]))):
                self.sim.after(0.0, self._receive_start(self.idle.pop()))
        elif self.next < len(self.visible) and not self.wake_pending:
            self.wake_pending = True
            self.sim.at(self.visible[self.next], self._woken)

    def _feed_gatherers(self) -> None:
        """Each visible message goes to a gathering poller with the probability of its share of the
        receives waiting on the queue (the gathering pollers' and the idle ones'), else is left for an idle
        poller's receive. A batch that fills is invoked at once."""
        now, size = self.sim.now, int(self.p["esm_batch"])
        while self.gathering and self.next < len(self.visible) and self.visible[self.next] <= now:
            g, i = len(self.gathering), len(self.idle)
            if i and self.rng.random() >= g / (g + i):
                return
            poller = self.rng.choice(list(self.gathering))
            batch = self.gathering[poller]
            batch.append(self.next)
            self.next += 1
            if len(batch) >= size:
                del self.gathering[poller]
                self._invoke(poller, batch)

    def _gathered(self, poller: int, batch: list[int]) -> None:
        """The batching window of ``poller``'s ``batch`` has passed: invoke with what it gathered (unless it
        filled and was invoked before)."""
        if self.gathering.get(poller) is batch:
            del self.gathering[poller]
            self._invoke(poller, batch)

    def _woken(self) -> None:
        self.wake_pending = False
        self._wake()

    def _sqs(self, t: float, service_key: str) -> float:
        if self.moto is not None:
            return self.moto.call(t, self.p[service_key])
        return t + self.p["lat_sqs_s"]

    def _receive_start(self, poller: int):
        def go() -> None:
            self.out.receives += 1
            self.sim.at(self._sqs(self.sim.now, "moto_receive_s"), lambda: self._received(poller))
        return go

    def _received(self, poller: int) -> None:
        batch: list[int] = []
        size = int(self.p["esm_batch"])
        while self.returned and len(batch) < size:
            batch.append(self.returned.popleft())
        end = bisect.bisect_right(self.visible, self.sim.now, lo=self.next)
        take = min(end - self.next, size - len(batch))
        batch.extend(range(self.next, self.next + take))
        self.next += take
        if not batch:
            self.out.empty_receives += 1
            self.empty_in_tick += 1
            self.idle.append(poller)
            self._wake()
            return
        if self._visible_count():
            self.backlogged = True
        window = self.p.get("esm_window_s", 0.0)
        if window > 0 and len(batch) < size:
            self.gathering[poller] = batch
            self.sim.after(window, lambda: self._gathered(poller, batch))
            self._wake()  # it takes its share of what becomes visible, and may fill
            return
        self._wake()  # the next message to become visible needs an idle poller woken
        self._invoke(poller, batch)

    # --- the dispatcher ------------------------------------------------------------------------
    def _environment(self, now: float) -> bool | None:
        """An environment for an invocation at ``now``: the most recently used one still kept (False), a new one
        (True), or None when Lambda throttles it (the account's concurrency, or the scaling rate for a new one)."""
        p = self.p
        while self.warm and self.warm[0] < now - p.get("lambda_idle_keep_s", math.inf):
            self.warm.popleft()  # idle too long: Lambda has reclaimed it
        cold = not self.warm
        if self.in_use >= p["lambda_account_concurrency"] or (cold and not self.scaling.admit(now)):
            self.out.throttles["lambda"] += 1
            return None
        if not cold:
            self.warm.pop()  # the most recently used
        self.in_use += 1
        self.out.peak_concurrency = max(self.out.peak_concurrency, self.in_use)
        return cold

    def _release(self, end: float) -> None:
        """An invocation ended at ``end``: its environment is kept, idle, stamped with that time."""
        self.in_use -= 1
        self.warm.append(end)

    def _rule(self) -> None:
        """The warming rule fires: a ping now, the next one ``warm_every_s`` later while the pipeline has work."""
        if self._busy():  # asked before the ping, which is work of its own
            self.sim.after(self.p["warm_every_s"], self._rule)
        self._ping()

    def _ping(self) -> None:
        """A ping: an invocation with no messages, answered ``ping_ms`` after its environment is ready (its init
        first when cold); a throttled one is retried as the mapping's invoke is."""
        p, now = self.p, self.sim.now
        cold = self._environment(now)
        if cold is None:
            self.sim.after(THROTTLE_BACKOFF_S, self._ping)
            return
        self.out.pings.append(now)
        self.out.ping_cold.append(cold)
        end = now + (p["lat_cold_start_s"] if cold else 0.0) + p["ping_ms"] / 1000
        self.sim.at(end, lambda: self._release(end))

    def _invoke(self, poller: int, batch: list[int]) -> None:
        p, now = self.p, self.sim.now
        cold = self._environment(now)
        if cold is None:
            self.sim.after(THROTTLE_BACKOFF_S, lambda: self._invoke(poller, batch))
            return
        self.out.cold.append(cold)
        start = now + p["lat_invoke_s"] + (p["lat_cold_start_s"] if cold else 0.0)
        self.out.batches.append(len(batch))
        self.out.started.append(now)
        run = {"end": start, "left": len(batch), "failed": [], "index": len(self.out.billed_ms)}
        self.out.billed_ms.append(0)  # set when its last message is done
        # Each message's FIRED write is asked for at its own moment (an event then), so that the table's
        # bucket and moto's queue see requests in time order, however far ahead a batch waits.
        for i in sorted(batch, key=self.due.__getitem__):
            self.sim.at(max(start + p["cpu_per_delivery_s"], self.due[i]), lambda i=i: self._deliver(poller, i, start, run))

    def _deliver(self, poller: int, i: int, start: float, run: dict) -> None:
        """One message of an invocation started at ``start``: its write, its target call; the invocation
        ends with its last message (``run``: its end so far, the messages left, the failed ones)."""
        p = self.p
        t = self._write(self.sim.now)
        if t is not None and i in self.strays:  # the record does not hold its token: the condition fails
            self.out.stray += 1
            run["end"] = max(run["end"], t + p["lat_ddb_write_s"])
        elif t is None:  # throttled on every attempt: the delivery fails, SQS hands the message out again later
            run["failed"].append(i)
            run["end"] = max(run["end"], start + p["cpu_per_delivery_s"])
        else:
            t += p.get("extra_per_delivery_s", 0.0)
            written = self.moto.call(t, p["moto_update_s"]) if self.moto is not None else t + p["lat_ddb_write_s"]
            delivered = written + p["lat_target_s"]
            self.out.lateness.append(delivered - self.due[i])
            self.out.due_of.append(self.due[i])
            self.last = max(self.last, delivered)
            run["end"] = max(run["end"], delivered)
        run["left"] -= 1
        if run["left"]:
            return
        end, failed = run["end"], run["failed"]
        self.out.billed_ms[run["index"]] = math.ceil((end - start) * 1000)
        self.out.failed += len(failed)
        if failed:
            self.pending += len(failed)
            self.sim.at(end + p["visibility_s"], lambda: self._return(failed))
        self.sim.at(end, lambda: self._done(poller, end))

    def _write(self, t: float) -> float | None:
        """When the FIRED write is granted, trying as the runtime's SDK does (standard mode: 3 attempts,
        a random backoff of up to 1 s, then 2 s); None when every attempt is throttled."""
        wru = self.p.get("wru_per_delivery", 1.0)
        for attempt in range(SDK_ATTEMPTS):
            if self.table.admit(t, wru):
                self.writes_in[math.floor(t)] += wru
                return t
            self.out.throttles["dynamodb"] += 1
            t += self.rng.random() * 2 ** attempt
        return None

    def _create(self, i: int) -> None:
        if self._write(self.sim.now) is None:
            self.out.refused += 1
            self.strays.add(i)

    def _busy(self) -> bool:
        return bool(self.next < len(self.due) or self.returned or self.in_use or self.pending or self.gathering)

    def _autoscale(self) -> None:
        """At each whole minute: the last minute's consumed write units over the capacity; after ``minutes``
        consecutive minutes above the target, the capacity becomes the last minute's consumed / the target."""
        target, minutes = self.autoscale
        now = self.sim.now
        consumed = sum(self.writes_in[s] for s in range(math.floor(now) - 60, math.floor(now))) / 60
        self.above = self.above + 1 if consumed > target * self.table.rate else 0
        if self.above >= minutes:
            self.table.set_rate(now, consumed / target)
            self.out.capacity.append((now, consumed / target))
            self.above = 0
        if self._busy():
            self.sim.after(60.0, self._autoscale)

    def _return(self, failed: list[int]) -> None:
        self.pending -= len(failed)
        self.returned.extend(failed)
        self._wake()

    def _done(self, poller: int, end: float) -> None:
        self._release(end)
        # the mapping deletes the batch, then the poller receives again
        self.sim.at(self._sqs(end, "moto_delete_s"), self._receive_start(poller))

    def run(self, until: float = math.inf) -> Outcome:
        """Run to the end (or to simulated time ``until``, to look at the state part-way)."""
        if not self.due:
            return self.out
        self.sim.after(1.0, self._tick)
        if self.p.get("warm_every_s"):
            self.sim.at(0.0, self._rule)  # the rule runs from deploy
        if self.create_at is not None:
            api_half = self.p["api_ms"] / 2000  # the record's PutItem, after the send
            for i, c in enumerate(self.create_at):
                self.sim.at(c + api_half, lambda i=i: self._create(i))
        if self.autoscale is not None:
            start = min(self.create_at) if self.create_at is not None else self.t0
            self.sim.at(math.floor(start) + 60.0, self._autoscale)
        self.sim.run(until)
        self.out.events = self.sim.events
        self.out.peak_writes_per_s = max(self.writes_in.values(), default=0.0)
        self.out.last_delivery_s = self.last - math.floor(self.t0)
        self.out.drain_s = self.last - max(self.due)
        return self.out


def long_path_feed(profile: dict, due: list[float], ddb_wru: float, shards: int = 16) -> tuple[list[float], dict]:
    """When each long timer's message is in the delayer queue: claimed by the sweep that first sees it
    within the window, at the claim rate the sweeper, the timer shards' partitions and the table allow,
    then sent by the enqueuer at the rate of the stream shards holding the claims (a fluid model)."""
    p = profile
    window = 870.0
    claim_rate = min(p["claim_threads"] / p["lat_ddb_write_s"], shards * p["ddb_partition_wru"], ddb_wru)
    stream_shards = min(shards, max(1, round(ddb_wru / 1000))) * p["stream_parallelization"]
    enqueue_rate = stream_shards * 100 / (p["lat_invoke_s"] + p["lat_sqs_s"])
    rate = min(claim_rate, enqueue_rate)
    in_queue: list[float] = []
    sweep = None
    k = 0
    for d in due:  # sorted
        s = math.floor((d - window) / p["sweep_interval_s"] + 1) * p["sweep_interval_s"]
        if s != sweep:
            sweep, k = s, 0
        k += 1
        in_queue.append(s + k / rate + p["lat_invoke_s"] + p["lat_sqs_s"] + 0.5)  # 0.5 s: the stream's delay (stated)
    return in_queue, {"claims_per_s": claim_rate, "enqueues_per_s": enqueue_rate, "stream_shards": stream_shards}
