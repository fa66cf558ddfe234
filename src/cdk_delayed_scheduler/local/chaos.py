"""``cdk-delayed-scheduler chaos``: the promises, checked under every fault kind at once.

The engine runs with ``--faults`` (see :mod:`.faults`) while one-shot timers (short ones through
the delayer queue, long ones through the sweeper, overdue ones), cancels and periodic timers go
through its HTTP API, singly and in batches, from eight clients. A share of the one-shot timers name
a target of another kind (an SNS topic, an EventBridge bus, a Step Functions state machine, an HTTPS
endpoint: :mod:`.chaos_targets`), whose deliveries are read back from where they arrived; a fifth of them, due in one
burst, name a target with limits (:mod:`.chaos_flow`), a tenth of those cancelled while they wait for room. A client
retries a create or a cancel that got a 429, a 5xx or no answer, with the same id and body, as the typed client does.
Then it checks, and reports (exit 1 on any violation):

- none lost: every timer is delivered, cancelled, or FAILED with its payload and reason and in
  the dead-letter queue (FIRED with its reason where SQS's redrive parked the bare message); every
  occurrence of a periodic timer kept to the end, due while it was watched, is delivered, parked,
  or passed over by the missed-occurrence rule (within the definition's ``skippedCount``);
- none early; no timer delivered after its cancel was answered 200; no periodic occurrence
  delivered after its DELETE was answered, or off its grid;
- duplicates only under one ``dedupeKey``;
- through the operations (:mod:`.chaos_ops`: reschedules, pauses and resumes, a redrive, group cancels):
  nothing delivered at an old due time once a reschedule was answered 200, nor while paused, nor of a
  group's member after its group's cancel was answered, and every redriven timer delivered once more
  (more only under its one ``dedupeKey``) or parked again;
- every create answered 2xx was honoured, and every create whose last answer was a 429, a 5xx or
  none (one single create in ten comes from a client that does not retry) left no trace or was
  honoured as its retry;
- every timer that ended has its outcome event (every kind is sent, to a recorder, through the same
  faults), arrived or parked, of one kind per occurrence, the kind its ``GET`` reads (:mod:`.chaos_outcomes`);
- the limited target's receiver never got more than its rate in a period, nor more than its ``maxInFlight`` calls at
  once (:mod:`.chaos_flow`).
"""

from __future__ import annotations

import collections
import functools
import logging
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

from .chaos_targets import NAMED_TARGETS, SIGNING_SECRET, SignedReceiver, TargetReader, chaos_targets
from .chaos_checks import (ChaosReport, ClientCalls, Planned, PlannedPeriodic, check_groups, check_one_shots,
                           check_pauses, check_periodic, check_redrive, check_reschedules, dead_lettered)
from .chaos_ops import MendableTarget, Operations, start_operations, wait_for_deliveries
from .chaos_flow import HOLD_SECONDS, INTERVAL_SECONDS, LIMITED, LIMITS, RATE, check_flow
from .gauge import Gauge
from .chaos_outcomes import check_outcomes
from .chaos_settle import Ticker, settle, wait_for_outcomes
from ..client import Answer, SchedulerClient
from ..outcome import OutcomeKind
from .api_calls import parse_due_ms, raw_client
from .deliveries import LambdaTarget, Recorder
from .engine import Engine, EngineOptions

WINDOW_SECONDS = 5
DISPATCHER_TIMEOUT_SECONDS = 2  # the delayer queue's visibility timeout is 6 times it: 12 s
CLIENTS = 8
RETRIES = 8
DEFAULT_FAULTS = ("ddb-throttle=0.03,sqs-throttle=0.03,lambda-throttle=0.02,lost-answer=0.02,batch-fail=0.05,"
                  "batch-partial=0.05,crash=0.003,target-error=0.03,target-timeout=0.005")
# A periodic occurrence that fails is retried 30, 60, 120 s... later (contract.json's periodic retry
# delays): a definition kept to the end is watched, while an occurrence is missing, long enough for
# four attempts (one failing occurrence in a few hundred needs a third; the wait ends once none is).
PERIODIC_RETRY_WAIT_SECONDS = 240
BURST_OFFSETS = (WINDOW_SECONDS - 0.1, WINDOW_SECONDS + 0.1)
"""When the limited target's timers are due, from the moment their creates began: one burst, due within a fifth of
a second (those created within that much of its start go through the sweeper, the others through the delayer
queue)."""
WAITING_FOR_ROOM = "waiting for room"
"""The reason the runtime logs for a delivery sent back to wait for a limited target's slot or place."""


def plan(count: int, rng: random.Random, span_seconds: float) -> tuple[list[Planned], list[PlannedPeriodic]]:
    """``count`` one-shot timers due within ``span_seconds``, and a few periodic ones."""
    shares = [("short", 0.35, (0.5, WINDOW_SECONDS - 0.5)), ("long", 0.25, (WINDOW_SECONDS + 1, span_seconds)),
              ("overdue", 0.04, (-30, -1)), ("cancel", 0.14, (2, span_seconds)),
              ("poison", 0.02, (0.5, WINDOW_SECONDS - 0.5)), ("limited", 0.2, BURST_OFFSETS)]
    timers = []
    for kind, share, (low, high) in shares:
        for n in range(max(1, round(count * share))):
            batched = rng.random() < 0.5
            offset = rng.uniform(low, high)
            patient = batched or rng.random() > 0.1
            # every named target gets a share; the default (a local function) refuses the poison ones
            target = (LIMITED if kind == "limited" else None if kind == "poison"
                      else rng.choice([None, None, None, *NAMED_TARGETS]))
            timers.append(Planned(f"chaos-{kind}-{n}", kind, offset, batched, patient=patient, target=target))
    periodic = [PlannedPeriodic(f"chaos-every-{n}", 1 + n % 3, kept=n % 2 == 0) for n in range(max(4, count // 250))]
    return timers, periodic


def _retryable(status: int | None) -> bool:
    return status is None or status == 429 or status >= 500


def _answered(api: SchedulerClient, operation: str, body: Any = None, **parameters: Any) -> Answer:
    """``operation``'s call as a client that retries a 429, a 5xx or no answer sees it (the run's own reads and
    periodic calls are throttled too): the first other answer, or the last one. ``api`` sends each attempt once."""
    for attempt in range(RETRIES * 2):
        answer = api.raw(operation, body, **parameters)
        if not _retryable(answer.status):
            break
        time.sleep(0.1 * (attempt + 1))
    return answer


def _create_all(api: SchedulerClient, timers: list[Planned], calls: ClientCalls, tick: Ticker,
                since: float | None = None) -> None:
    """Create every timer (singly, or in batches of 10), retrying what a 429/5xx/no answer left open; each due its
    offset after ``since`` (epoch seconds), or else after its create's first attempt."""

    def body(timer: Planned) -> dict[str, Any]:
        target = {"target": timer.target} if timer.target else {}
        return {"id": timer.schedule_id, "dueAt": calls.due_ms[timer.schedule_id] / 1000,
                "payload": {"kind": timer.kind, "id": timer.schedule_id}, **target}

    def create(group: list[Planned]) -> None:
        now = time.time() if since is None else since  # not each attempt: however long the others took
        for timer in group:
            calls.due_ms[timer.schedule_id] = int((now + timer.offset_seconds) * 1000)
        for attempt in range(RETRIES if group[0].patient else 1):
            open_ = [t for t in group if _retryable((calls.creates.get(t.schedule_id) or [None])[-1])
                     or not calls.creates.get(t.schedule_id)]
            if not open_:
                return
            if attempt:
                calls.retried += len(open_)
                time.sleep(0.1 * attempt)
            if len(open_) == 1 and not open_[0].batched:
                status, _ = api.raw("createSchedule", body(open_[0]))
                calls.creates.setdefault(open_[0].schedule_id, []).append(status)
                continue
            status, answer = api.raw("createScheduleBatch", {"schedules": [body(t) for t in open_]})
            results = answer.get("results") if status == 200 else None
            for n, timer in enumerate(open_):
                calls.creates.setdefault(timer.schedule_id, []).append(results[n]["status"] if results else status)
        tick(lambda: f"chaos: creating: {sum(1 for i in calls.creates if i in ids)}/{len(ids)} answered "
                     f"({calls.retried} retried)")

    ids = {t.schedule_id for t in timers}
    singles = [[t] for t in timers if not t.batched]
    batched = [t for t in timers if t.batched]
    groups = singles + [batched[i:i + 10] for i in range(0, len(batched), 10)]
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        list(pool.map(create, groups))


def _cancel_all(api: SchedulerClient, moments: list[tuple[float, str]], calls: ClientCalls) -> None:
    """Cancel each timer at its moment (epoch seconds, timer id), retrying as a client would."""

    def cancel(moment_and_id: tuple[float, str]) -> None:
        moment, schedule_id = moment_and_id
        time.sleep(max(0.0, moment - time.time()))
        for attempt in range(RETRIES):
            status, _ = api.raw("cancelSchedule", id=schedule_id)
            calls.cancels.setdefault(schedule_id, []).append(status)
            if not _retryable(status):
                return
            time.sleep(0.1 * (attempt + 1))

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        list(pool.map(cancel, sorted(moments)))


def _put_periodic(api: SchedulerClient, planned: PlannedPeriodic) -> int:
    """PUT it (retrying); its first due time, in ms."""
    body = {"every": planned.every, "payload": {"periodic": planned.periodic_id}}
    status, answer = _answered(api, "putPeriodic", body, id=planned.periodic_id)
    if status not in (200, 201):
        raise RuntimeError(f"putPeriodic {planned.periodic_id} kept failing: {status}")
    return parse_due_ms(answer["nextDueAt"])


def _delete_periodic(api: SchedulerClient, periodic_id: str, skipped: dict[str, Any]) -> int:
    """Read its ``skippedCount`` into ``skipped``, then DELETE it (each retried); when the DELETE's 200
    was answered, in ms."""
    status, answer = _answered(api, "getPeriodic", id=periodic_id)
    if status == 200:
        skipped[periodic_id] = answer["skippedCount"]
    status, _ = _answered(api, "deletePeriodic", id=periodic_id)
    if status != 200:
        raise RuntimeError(f"deletePeriodic {periodic_id} kept failing: {status}")
    return time.time_ns() // 1_000_000


def run_chaos(count: int, faults: str = DEFAULT_FAULTS, seed: int = 1, span_seconds: float = 20.0,
              say: Callable[[str], None] = print) -> ChaosReport:
    """Run the workload under ``faults`` and check it; the report says what was seen."""
    rng = random.Random(seed)
    timers, periodic = plan(count, rng, span_seconds)
    recorder = Recorder()
    gauge = Gauge(recorder, HOLD_SECONDS)
    receiver = SignedReceiver(SIGNING_SECRET, lambda envelope, _headers, received_ms: recorder.record(envelope, received_ms))
    target = MendableTarget(_refusing_poison(recorder))
    outcomes = Recorder()
    options = EngineOptions(target=target, delay_window=WINDOW_SECONDS, sweep_interval=1.0, shard_count=4,
                            dispatcher_timeout=DISPATCHER_TIMEOUT_SECONDS, faults=faults, seed=seed,
                            targets={**chaos_targets(receiver.url), LIMITED: LambdaTarget(gauge, flow_control=LIMITS)},
                            outcomes=outcomes,
                            outcome_kinds=tuple(kind.value for kind in OutcomeKind))
    calls = ClientCalls()
    started = time.time()
    trail = Trail()
    with Engine(options) as engine, _reading(engine, recorder, receiver), _trailing(trail):
        api = raw_client(engine.api_url)
        say(f"chaos: {len(timers)} timers, {len(periodic)} periodic, faults {faults}, seed {seed}")
        first_due = {p.periodic_id: _put_periodic(api, p) for p in periodic}
        answered = functools.partial(_answered, api)
        ops = Operations()
        operator = start_operations(ops, answered, engine, target, recorder, count, WINDOW_SECONDS, seed)
        to_cancel = [t for t in timers if t.kind == "cancel"]
        burst = [t for t in timers if t.kind == "limited"]
        tick = Ticker(say)
        _create_all(api, burst, calls, tick, since=time.time())  # first, due together
        _create_all(api, to_cancel, calls, tick)  # then these, cancelled while the others are created
        moments = [(calls.due_ms[t.schedule_id] / 1000 - rng.uniform(0.3, 3), t.schedule_id) for t in to_cancel]
        # a tenth of the burst, once due: while it waits for room, or as it starts (then answered 409)
        moments += [(calls.due_ms[t.schedule_id] / 1000 + rng.uniform(0, len(burst) / RATE), t.schedule_id)
                    for t in burst[5::10]]
        canceller = threading.Thread(target=_cancel_all, args=(api, moments, calls), daemon=True)
        canceller.start()
        _create_all(api, [t for t in timers if t.kind not in ("cancel", "limited")], calls, tick)
        say(f"chaos: created in {time.time() - started:.1f}s ({calls.retried} retried)")
        canceller.join()
        skipped: dict[str, int] = {}
        deleted_ms = {p.periodic_id: _delete_periodic(api, p.periodic_id, skipped) for p in periodic if not p.kept}
        _wait_for_one_shots(answered, recorder, calls, engine, say, backlog_seconds=len(burst) * INTERVAL_SECONDS)
        watched_until = _wait_for_periodic(api, recorder, [p for p in periodic if p.kept], first_due, say)
        deleted_ms.update({p.periodic_id: _delete_periodic(api, p.periodic_id, skipped) for p in periodic if p.kept})
        operator.join()
        wait_for_deliveries(answered, recorder, ops, engine.options.visibility_timeout, say)
        time.sleep(2)  # any wrongful delivery after a cancel or a DELETE shows up here
        reads = _wait_for_outcomes(answered, engine, outcomes, _one_shot_ids(timers, ops), say)
        report = ChaosReport(timers=len(timers), periodic=len(periodic), seconds=round(time.time() - started, 1),
                             faults=engine.faults.by_kind() if engine.faults else {},
                             fault_stages=engine.faults.by_stage() if engine.faults else {},
                             create_retries=calls.retried)
        parked = dead_lettered(engine)
        report.refused_signatures = len(receiver.rejected)
        report.violations += [f"the HTTPS receiver refused a request: {why}" for why in receiver.rejected]
        def read(schedule_id: str) -> Answer:
            return _answered(api, "getSchedule", id=schedule_id)

        check_one_shots(report, timers, calls, recorder, read, parked)
        check_periodic(report, periodic, first_due, deleted_ms, watched_until, skipped, recorder, parked)
        check_reschedules(report, ops.moved, recorder)
        check_pauses(report, ops.paused, recorder)
        check_redrive(report, ops.redriven, recorder, parked)
        check_groups(report, ops.grouped, recorder, read, parked)
        check_outcomes(report, [d.envelope for d in outcomes.deliveries], reads, parked,
                       ops.redriven.moved | ops.redriven.refused_redrive_moved)
        burst_ids = {t.schedule_id for t in burst}
        report.limited = check_flow(report.violations, list(gauge.passages), {i: calls.due_ms[i] for i in burst_ids},
                                    {i: min(d.received_ms for d in ds) for i, ds in recorder.by_id().items()
                                     if i in burst_ids},
                                    trail.count(burst_ids, "put_back", WAITING_FOR_ROOM),
                                    trail.count(burst_ids, "held_back"))
        report.violations += [f"an operation kept failing: {error}" for error in ops.errors]
        report.trails = {key: trail.of(key) for key in dict.fromkeys(v.split(":", 1)[0] for v in report.violations)}
    return report


class Trail(logging.Handler):
    """The runtime's events by schedule id (and group), with when each was logged: what a violation quotes, so
    that a timer reported lost shows how far it got (created, claimed, enqueued, put back, not delivered...)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self._events: dict[str, list[str]] = {}
        self._counts: collections.Counter[tuple[str, str, str | None]] = collections.Counter()
        self._guard = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        fields = getattr(record, "fields", {})
        key = fields.get("id") or fields.get("group")
        if key is None:
            return
        shown = ",".join(f"{name}={value}" for name, value in fields.items() if name not in ("id", "group"))
        event = getattr(record, "event", "?")
        reason = None if fields.get("reason") is None else str(fields["reason"])
        with self._guard:
            self._events.setdefault(str(key), []).append(f"{record.created:.3f} {event}{' ' + shown if shown else ''}")
            self._counts[(str(key), event, reason)] += 1

    def count(self, keys: Iterable[str], event: str, reason: str | None = None) -> int:
        """How many times ``event`` (with ``reason``, when given) was logged about any of ``keys``."""
        wanted = set(keys)
        with self._guard:
            return sum(n for (key, logged, why), n in self._counts.items()
                       if key in wanted and logged == event and reason in (None, why))

    def of(self, key: str, last: int = 12) -> str:
        """The last ``last`` events of ``key``, oldest first."""
        with self._guard:
            events = self._events.get(key, [])[-last:]
        return "; ".join(events) or "no event logged"


@contextmanager
def _trailing(trail: Trail) -> Iterator[None]:
    runtime_logger = logging.getLogger("scheduler_runtime")
    runtime_logger.addHandler(trail)
    try:
        yield
    finally:
        runtime_logger.removeHandler(trail)


@contextmanager
def _reading(engine: Engine, recorder: Recorder, receiver: SignedReceiver) -> Iterator[None]:
    """The named targets' deliveries read into ``recorder`` while the run lasts (the receiver's as they come)."""
    reader = TargetReader(engine, recorder)
    reader.start()
    try:
        yield
    finally:
        reader.stop()
        receiver.stop()


def _refusing_poison(recorder: Recorder) -> Callable[[dict[str, Any]], None]:
    """The target: records each delivery, but always refuses a ``poison`` timer (so it is dead-lettered)."""

    def deliver(envelope: dict[str, Any]) -> None:
        if isinstance(envelope["payload"], dict) and envelope["payload"].get("kind") == "poison":
            raise RuntimeError("the target refuses poison timers")
        recorder(envelope)

    return deliver


def _wait_for_one_shots(answered: Callable[..., Answer], recorder: Recorder, calls: ClientCalls, engine: Engine,
                        say: Callable[[str], None], backlog_seconds: float) -> None:
    """Until every one-shot timer is settled (delivered, FAILED, CANCELLED, or never created), waiting on the
    engine's state (:mod:`.chaos_settle`), and at least ``backlog_seconds`` more for one that waits for room."""
    left = settle(answered, recorder, dict(calls.due_ms), engine.options.visibility_timeout, "one-shot timers", say,
                  backlog_seconds=backlog_seconds)
    if left:
        say(f"chaos: {len(left)} one-shot timers unsettled when the engine stopped changing them: "
            + ", ".join(f"{i} {p.state[0]}" for i, p in sorted(left.items())[:10]))


def _one_shot_ids(timers: list[Planned], ops: Operations) -> list[str]:
    """Every one-shot timer the run (and its operations) created or tried to."""
    ids = [t.schedule_id for t in timers] + [m.schedule_id for m in ops.moved] + list(ops.redriven.ids)
    for g in ops.grouped:
        ids += [member for member in g.members if member != g.periodic] + ([g.joined_after] if g.joined_after else [])
    return ids


def _wait_for_outcomes(answered: Callable[..., Answer], engine: Engine, outcomes: Recorder, ids: list[str],
                       say: Callable[[str], None]) -> dict[str, Answer]:
    """Until every timer of ``ids`` that exists has an outcome event, or none can still come (:func:`wait_for_outcomes`);
    then each one's ``GET``, read once more, for the check."""
    absent: set[str] = set()  # 404: a create that never landed (its client is done retrying)
    sqs = engine.client("sqs")

    def missing() -> set[str]:
        waiting = set(ids) - set(outcomes.by_id()) - absent
        absent.update(i for i in waiting if answered("getSchedule", id=i).status == 404)
        return waiting - absent

    def in_flight(queue_url: str) -> int:
        return int(sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"])[
            "Attributes"]["ApproximateNumberOfMessagesNotVisible"])

    def under_way() -> bool:
        return bool(engine.under_way()) or any(in_flight(url) for url in engine.waiting_queue_urls)

    started = time.monotonic()
    left = wait_for_outcomes(missing, lambda: len(outcomes.deliveries), under_way, engine.options.visibility_timeout, say)
    say(f"chaos: outcome events waited for {time.monotonic() - started:.1f}s; {len(left)} timers without one arrived "
        f"(parked, or missing: the check tells){': ' + ', '.join(sorted(left)[:10]) if left else ''}")
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        return dict(zip(ids, pool.map(lambda i: answered("getSchedule", id=i), ids)))


def _wait_for_periodic(api: SchedulerClient, recorder: Recorder, kept: list[PlannedPeriodic], first_due: dict[str, Any],
                       say: Callable[[str], None]) -> int:
    """Until every occurrence of the kept definitions due by now - 3 s is delivered (retries included) or
    passed over (counted in its ``skippedCount``), or the retry wait has passed; the instant (ms) up to
    which they were watched."""
    watched_until = time.time_ns() // 1_000_000 - 3000
    deadline = time.time() + PERIODIC_RETRY_WAIT_SECONDS
    say(f"chaos: periodic timers: waiting for every occurrence due so far, or its retries (up to "
        f"{PERIODIC_RETRY_WAIT_SECONDS} s)")

    def settled(planned: PlannedPeriodic) -> bool:
        delivered = {parse_due_ms(d.envelope["dueAt"]) for d in recorder.by_id().get(planned.periodic_id, [])}
        missing = set(range(first_due[planned.periodic_id], watched_until, planned.every * 1000)) - delivered
        if not missing:
            return True
        status, answer = _answered(api, "getPeriodic", id=planned.periodic_id)
        return status == 200 and len(missing) <= answer["skippedCount"]

    while time.time() < deadline and not all(settled(p) for p in kept):
        time.sleep(0.5)
    return watched_until
