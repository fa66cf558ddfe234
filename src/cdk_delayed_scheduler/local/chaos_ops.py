"""The chaos run's operations on timers already made (see :mod:`.chaos`): reschedules, pauses and
resumes, and a redrive, run beside the rest of the workload under the same faults.

- Reschedules: one-shot timers moved by ``PATCH /schedules/{id}`` both ways across the delayer
  window (one due within it moved beyond it, one due beyond it moved within it), some just before their
  old due time (so a few are answered 409: delivery started). The last answer and when it came are kept.
- Pauses: periodic timers (every second) paused by ``PATCH /periodic/{id}``, half of them resumed two
  seconds later; when the pause answered and when the resume was sent are kept; each is deleted last (a
  resumed one once an occurrence after its resume has arrived, or when every receive its first occurrence's
  message has left could have come and gone: a fault on that occurrence holds the chain back).
- A redrive: timers (``retry.maxAttempts`` 1) that the target refuses until it is mended, parked in
  the dead-letter queue, redriven with :meth:`Engine.redrive` while the target still refuses (each is tried
  once more and parked again, and the redrive returns), then redriven again once it is mended.
- Group cancels: groups of short and long timers and a periodic timer (every second), cancelled by
  ``DELETE /groups/{group}`` while their members wait (some short ones already delivered), then one more
  member created after the cancel.

The checks are :func:`.chaos_checks.check_reschedules`, ``check_pauses``, ``check_redrive`` and ``check_groups``.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..client import Answer
from .chaos_checks import Grouped, Moved, Paused, Redriven
from .chaos_settle import settle
from .deliveries import Recorder
from .engine import Engine

Answered = Callable[..., Answer]
"""A call as a client that retries a 429, a 5xx or no answer sees it: ``(operation, body, **parameters)``, as
:meth:`SchedulerClient.raw <cdk_delayed_scheduler.client.SchedulerClient.raw>` takes them."""

PARK_WAIT_SECONDS = 60
REFUSED_REDRIVE_SECONDS = 60
"""How long the redrive while the target still refuses may run before it counts as one that never returns."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class MendableTarget:
    """The run's target, refusing every ``mend`` timer until :meth:`mend` (so each is parked); ``refused`` holds
    each refusal's timer id, when it came (ms) and the envelope's attempt."""

    def __init__(self, deliver: Callable[[dict[str, Any]], None]) -> None:
        self._deliver = deliver
        self.mended = threading.Event()
        self.refused: list[tuple[str, int, int]] = []

    def __call__(self, envelope: dict[str, Any]) -> None:
        payload = envelope["payload"]
        if not self.mended.is_set() and isinstance(payload, dict) and payload.get("kind") == "mend":
            self.refused.append((envelope["id"], _now_ms(), envelope["attempt"]))
            raise RuntimeError("the target refuses mend timers until it is mended")
        self._deliver(envelope)

    def mend(self) -> None:
        self.mended.set()


@dataclass
class Operations:
    """What the operations did, for the checks."""

    moved: list[Moved] = field(default_factory=list)
    paused: list[Paused] = field(default_factory=list)
    redriven: Redriven = field(default_factory=lambda: Redriven([]))
    grouped: list[Grouped] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """Operations that kept failing (each a violation)."""


def start_operations(ops: Operations, answered: Answered, engine: Engine, target: MendableTarget, recorder: Recorder,
                     count: int, window_seconds: float, seed: int) -> threading.Thread:
    """The operations for a run of ``count`` timers, recorded into ``ops``, in a thread started: it ends
    once each has been done (their deliveries: :func:`wait_for_deliveries`). ``recorder`` holds what the
    target received."""
    thread = _worker(ops, _run, ops, answered, engine, target, recorder, count, window_seconds, seed)
    thread.start()
    return thread


def _run(ops: Operations, answered: Answered, engine: Engine, target: MendableTarget, recorder: Recorder, count: int,
         window_seconds: float, seed: int) -> None:
    rng = random.Random(seed + 1)
    ops.redriven = Redriven([f"chaos-mend-{n}" for n in range(max(3, count // 200))])
    for schedule_id in ops.redriven.ids:
        _must(answered, "createSchedule", {
            "id": schedule_id, "delaySeconds": rng.uniform(0.2, 1), "payload": {"kind": "mend", "id": schedule_id},
            "retry": {"maxAttempts": 1}})
    workers = [_worker(ops, _reschedule, answered, ops, rng, n, window_seconds) for n in range(max(6, count // 50))]
    horizon = engine.options.visibility_timeout * engine.options.max_receive_count + 3
    workers += [_worker(ops, _pause, answered, ops, recorder, n, horizon) for n in range(max(2, count // 500))]
    workers += [_worker(ops, _cancel_group, answered, ops, rng, n, window_seconds)
                for n in range(max(2, count // 250))]
    for worker in workers:
        worker.start()
    _redrive(answered, engine, target, ops.redriven)
    for worker in workers:
        worker.join()


def _worker(ops: Operations, work: Callable[..., None], *args: Any) -> threading.Thread:
    """A thread doing ``work(*args)``; what it raises lands in ``ops.errors``."""

    def run() -> None:
        try:
            work(*args)
        except Exception as exc:  # noqa: BLE001 - reported as a violation
            ops.errors.append(f"{work.__name__.strip('_')}: {exc}")

    return threading.Thread(target=run, daemon=True)


def wait_for_deliveries(answered: Answered, recorder: Recorder, ops: Operations, visibility_timeout_seconds: float,
                        say: Callable[[str], None]) -> None:
    """Until every rescheduled timer, every member created after its group's cancel and every redriven timer is
    settled (delivered, or FAILED again), waiting on the engine's state (:mod:`.chaos_settle`)."""
    due_ms = {m.schedule_id: max(m.old_due_ms, m.new_due_ms) for m in ops.moved}
    due_ms.update({g.joined_after: (g.cancelled_ms or 0) + 2000 for g in ops.grouped if g.joined_after is not None})
    due_ms.update(dict.fromkeys(ops.redriven.moved, ops.redriven.mended_ms))
    settle(answered, recorder, due_ms, visibility_timeout_seconds, "operations", say)


def _reschedule(answered: Answered, ops: Operations, rng: random.Random, n: int, window: float) -> None:
    """Create a timer, then move it across the window: later if ``n`` is even, earlier if odd."""
    schedule_id = f"chaos-move-{n}"
    later = n % 2 == 0
    created = time.time()
    old_offset = rng.uniform(2, window - 1) if later else rng.uniform(window + 2, window + 4)
    _must(answered, "createSchedule", {"id": schedule_id, "dueAt": round(created + old_offset, 3),
                                       "payload": {"kind": "move", "id": schedule_id}})
    old_due_ms = round((created + old_offset) * 1000)
    # later: a third of them just before (or at) the old due time, where delivery may have started
    moment = old_due_ms / 1000 - (rng.uniform(-0.1, 0.3) if later and n % 3 == 0 else rng.uniform(0.8, 1.5))
    time.sleep(max(0.0, moment - time.time()))
    new_due_ms = round((time.time() + (rng.uniform(window + 1, window + 3) if later else rng.uniform(1, 3))) * 1000)
    status, _ = answered("rescheduleSchedule", {"dueAt": new_due_ms / 1000}, id=schedule_id)
    ops.moved.append(Moved(schedule_id, old_due_ms, new_due_ms, status, _now_ms()))


def _pause(answered: Answered, ops: Operations, recorder: Recorder, n: int, horizon: float) -> None:
    """PUT a timer every second, pause it after 2 s, resume it (if ``n`` is even) after 2 s more, and delete it
    5 s after that; a resumed one no sooner, and not before an occurrence after its resume has arrived, for up to
    ``horizon`` seconds: a fault that stops its first occurrence's dispatcher (a throttle, a crash) holds the
    chain back until SQS hands that message out again, a visibility timeout later each time."""
    periodic_id = f"chaos-pause-{n}"
    _must(answered, "putPeriodic", {"every": 1, "payload": {"periodic": periodic_id}}, id=periodic_id)
    time.sleep(2)
    _must(answered, "setPeriodicState", {"state": "PAUSED"}, id=periodic_id)
    paused_ms = _now_ms()
    resumed_ms = None
    time.sleep(2)
    if n % 2 == 0:
        resumed_ms = _now_ms()
        _must(answered, "setPeriodicState", {"state": "ACTIVE"}, id=periodic_id)
    time.sleep(5)
    deadline = time.monotonic() + horizon - 5
    while (resumed_ms is not None and time.monotonic() < deadline
           and not any(d.received_ms > resumed_ms for d in recorder.by_id().get(periodic_id, []))):
        time.sleep(0.5)
    _must(answered, "deletePeriodic", id=periodic_id)
    ops.paused.append(Paused(periodic_id, paused_ms, resumed_ms, _now_ms()))


def _cancel_group(answered: Answered, ops: Operations, rng: random.Random, n: int, window: float) -> None:
    """Two short and two long timers and a periodic one in a group, the group cancelled 1-3 s later, then one more
    member created after the cancel; the periodic timer is deleted last."""
    group = f"chaos-group-{n}"
    created = time.time()
    plan = [(f"{group}-short-{k}", rng.uniform(1.5, window - 1)) for k in range(2)]
    plan += [(f"{group}-long-{k}", rng.uniform(window + 1, window + 4)) for k in range(2)]
    for schedule_id, offset in plan:
        _must(answered, "createSchedule", {
            "id": schedule_id, "dueAt": round(created + offset, 3), "group": group,
            "payload": {"kind": "grouped", "id": schedule_id}})
    periodic = f"{group}-tick"
    _must(answered, "putPeriodic", {"every": 1, "payload": {"periodic": periodic}, "group": group}, id=periodic)
    grouped = Grouped(group, [schedule_id for schedule_id, _ in plan] + [periodic], periodic=periodic)
    time.sleep(rng.uniform(1, 3))
    status, answer = _must(answered, "cancelGroup", group=group)
    grouped.cancelled_ms = _now_ms()
    grouped.stopped = sum(answer.get("stopped", {}).values())
    grouped.joined_after = f"{group}-after"
    _must(answered, "createSchedule", {
        "id": grouped.joined_after, "delaySeconds": rng.uniform(0.5, 2), "group": group,
        "payload": {"kind": "grouped", "id": grouped.joined_after}})
    ops.grouped.append(grouped)
    time.sleep(3)
    answered("deletePeriodic", id=periodic)  # stopped already (404 once the sweep deleted it): nothing to check
    grouped.read_cancelled = sum(answered("getSchedule", id=schedule_id)[1].get("status") == "CANCELLED"
                                 for schedule_id, _ in plan)


def _must(answered: Answered, operation: str, body: Any = None, **parameters: Any) -> Answer:
    """``answered(operation, body, **parameters)``, unless it is not a 2xx: then the operation kept failing (raised,
    reported as a violation)."""
    answer = answered(operation, body, **parameters)
    if answer.status not in (200, 201):
        raise RuntimeError(f"{operation} {parameters or body} kept failing: {answer.status} {answer.body}")
    return answer


def _redrive(answered: Answered, engine: Engine, target: MendableTarget, redriven: Redriven) -> None:
    """Wait until every ``mend`` timer is FAILED (parked); redrive them while the target still refuses, and wait
    until each it moved is FAILED again; mend the target, redrive them again (again for any the redrive did not
    find yet, for a while)."""
    _until_failed(answered, set(redriven.ids))
    redriven.refused_redrive_ms = _now_ms()
    report = _returned(lambda: engine.redrive(ids=sorted(redriven.ids)), REFUSED_REDRIVE_SECONDS)
    redriven.refused_redrive_returned = report is not None
    if report is not None:
        redriven.refused_redrive_moved = {entry["id"] for entry in report.moved}
        redriven.failed_again = _until_failed(answered, set(redriven.refused_redrive_moved))
    target.mend()
    redriven.mended_ms = _now_ms()
    redriven.refused = list(target.refused)
    left = set(redriven.ids)
    for _ in range(10):
        report = engine.redrive(ids=sorted(left))
        redriven.moved |= {entry["id"] for entry in report.moved}
        redriven.skipped.update({entry["id"]: entry["reason"] for entry in report.skipped})
        left -= redriven.moved
        if not left:
            return
        time.sleep(1)


def _until_failed(answered: Answered, ids: set[str]) -> set[str]:
    """Wait until each of ``ids`` reads FAILED, for up to :data:`PARK_WAIT_SECONDS`; those that did."""
    deadline = time.time() + PARK_WAIT_SECONDS
    waiting = set(ids)
    while waiting and time.time() < deadline:
        waiting = {i for i in waiting if answered("getSchedule", id=i)[1].get("status") != "FAILED"}
        if waiting:
            time.sleep(0.5)
    return ids - waiting


def _returned(call: Callable[[], Any], seconds: float) -> Any:
    """``call()``'s answer, or None when it has not returned within ``seconds`` (it goes on in its thread)."""
    answer: list[Any] = []
    thread = threading.Thread(target=lambda: answer.append(call()), daemon=True)
    thread.start()
    thread.join(seconds)
    return answer[0] if answer else None
