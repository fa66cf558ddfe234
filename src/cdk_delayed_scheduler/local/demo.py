"""``cdk-delayed-scheduler demo``: a mix of timers through the local engine's HTTP API, with figures.

The delay window is shrunk to 4 s and the sweep interval to 1 s, so both
paths run in seconds: timers due within 4 s go straight to the delayer queue
(short), later ones wait as timers for the sweeper (long). Some are overdue,
some are cancelled (long ones before and after they reach the delayer queue,
short ones while they wait in it), and one id is replayed. A periodic timer fires every
2 s meanwhile and is deleted at the end. The run fails (exit 1) if any timer is lost, early,
delivered after its cancel, or promoted twice, or if the periodic timer drifts off its grid,
fires early, or fires after its DELETE was answered.
"""

from __future__ import annotations

from typing import Any

import random
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..client import Answer, SchedulerClient
from .api_calls import parse_due_ms, raw_client
from .deliveries import Recorder, percentile
from .engine import Engine, EngineOptions

WINDOW_SECONDS = 4
PERIODIC_ID, PERIODIC_EVERY = "demo-every-2s", 2


@dataclass(frozen=True)
class PlannedTimer:
    schedule_id: str
    path: str  # short | long | overdue | cancel-scheduled | cancel-queued | cancel-short
    offset_seconds: float

    @property
    def delivered_expected(self) -> bool:
        return not self.path.startswith("cancel")


def plan(count: int, seed: int = 7) -> list[PlannedTimer]:
    rng = random.Random(seed)
    shares = [("short", 0.45, (1, 3.9)), ("long", 0.30, (8, 15)), ("overdue", 0.05, (-30, -1)),
              ("cancel-scheduled", 0.07, (10, 15)), ("cancel-queued", 0.07, (7, 9)), ("cancel-short", 0.06, (2, 3.9))]
    timers = []
    for path, share, (low, high) in shares:
        for n in range(max(1, round(count * share))):
            timers.append(PlannedTimer(f"demo-{path}-{n}", path, rng.uniform(low, high)))
    return timers


def run_demo(count: int) -> int:
    console = Console()
    recorder = Recorder()
    options = EngineOptions(target=recorder, delay_window=WINDOW_SECONDS, sweep_interval=1.0, shard_count=4)
    timers = plan(count)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        console.print(f"[bold]cdk-delayed-scheduler demo[/]: local engine at {engine.api_url}, "
                      f"delay window {WINDOW_SECONDS}s, sweep every 1s, {len(timers)} timers")
        start = time.time()
        periodic = api.raw("putPeriodic", {"every": PERIODIC_EVERY, "payload": {"path": "periodic"}}, id=PERIODIC_ID)
        due: dict[str, float] = {}
        created_ms: dict[str, int] = {}

        def create(timer: PlannedTimer) -> int | None:
            due[timer.schedule_id] = round(time.time() + timer.offset_seconds, 3)
            status = api.raw("createSchedule", {"id": timer.schedule_id, "dueAt": due[timer.schedule_id],
                                                "payload": {"path": timer.path}}).status
            created_ms[timer.schedule_id] = time.time_ns() // 1_000_000
            return status

        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(create, timers))
        console.print(f"scheduled {len(timers)} timers through the API in {time.time() - start:.1f}s")
        if any(status != 201 for status in statuses):
            console.print(f"[red]create failed: {sorted(set(statuses), key=str)}[/]")  # None: no answer
            return 1
        replay = timers[0]
        replay_status = api.raw("createSchedule", {"id": replay.schedule_id, "dueAt": due[replay.schedule_id],
                                                   "payload": {"path": replay.path}}).status
        conflict_status = api.raw("createSchedule", {"id": replay.schedule_id, "dueAt": due[replay.schedule_id] + 1,
                                                     "payload": {}}).status

        cancels = _cancel(api, [t for t in timers if t.path.startswith("cancel")])
        expected = {t.schedule_id for t in timers if t.delivered_expected}
        last_due = max(due[i] for i in expected)
        with Progress(TextColumn("delivering"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=console, transient=False) as progress:
            task = progress.add_task("deliveries", total=len(expected))
            deadline = last_due + 15
            while time.time() < deadline:
                delivered = expected & set(recorder.by_id())
                progress.update(task, completed=len(delivered))
                if len(delivered) == len(expected):
                    break
                time.sleep(0.1)
        deleted_ms = _delete_periodic(api)
        time.sleep(1.5)  # let any wrongful delivery of a cancelled timer, or of the deleted periodic one, show up
        claims = dict(engine.stats.claims)

    periodic_failed = _report_periodic(console, recorder, periodic, deleted_ms)
    return _report(console, timers, recorder, cancels, claims, created_ms, replay_status, conflict_status, periodic_failed)


def _delete_periodic(api: SchedulerClient) -> int:
    status = api.raw("deletePeriodic", id=PERIODIC_ID).status
    return time.time_ns() // 1_000_000 if status == 200 else -1


def _report_periodic(console: Console, recorder: Recorder, put: Answer, deleted_ms: int) -> int:
    """The periodic timer's line: on its grid, never early, nothing after DELETE. 1 when any of it fails."""
    status, answer = put
    deliveries = sorted(recorder.by_id().get(PERIODIC_ID, []), key=lambda d: d.received_ms)
    if status != 201 or not deliveries or deleted_ms < 0:
        console.print(f"[red]periodic timer: PUT answered {status}, {len(deliveries)} deliveries, DELETE ok: {deleted_ms >= 0}[/]")
        return 1
    first = parse_due_ms(answer["nextDueAt"])
    dues = [parse_due_ms(d.envelope["dueAt"]) for d in deliveries]
    on_grid = dues == [first + PERIODIC_EVERY * 1000 * k for k in range(len(dues))]
    early = sum(1 for d in deliveries if d.lateness_ms < 0)
    after_delete = sum(1 for d in deliveries if d.received_ms > deleted_ms)
    late = [d.lateness_ms for d in deliveries]
    console.print(f"periodic timer every {PERIODIC_EVERY}s: {len(deliveries)} occurrences, "
                  f"{'on its grid' if on_grid else 'OFF its grid'}, early {early}, lateness p50 "
                  f"{percentile(late, 0.5):.0f} ms, max {max(late)} ms, delivered after DELETE {after_delete}")
    return 1 if (not on_grid or early or after_delete) else 0


def _cancel(api: SchedulerClient, timers: list[PlannedTimer]) -> dict[str, tuple[str, int | None]]:
    """Cancel each timer: waiting ones at once, queued ones as soon as GET shows them QUEUED.

    Returns id -> (the status GET showed just before the cancel, the cancel's HTTP code).
    """
    outcome = {}
    queued = [t for t in timers if t.path == "cancel-queued"]
    for timer in timers:
        if timer.path in ("cancel-scheduled", "cancel-short"):
            outcome[timer.schedule_id] = (api.raw("getSchedule", id=timer.schedule_id).body.get("status", "?"),
                                          api.raw("cancelSchedule", id=timer.schedule_id).status)
    deadline = time.time() + 10
    while queued and time.time() < deadline:
        for timer in list(queued):
            seen = api.raw("getSchedule", id=timer.schedule_id).body.get("status", "?")
            if seen == "QUEUED" or time.time() > deadline - 0.5:
                outcome[timer.schedule_id] = (seen, api.raw("cancelSchedule", id=timer.schedule_id).status)
                queued.remove(timer)
        time.sleep(0.05)
    return outcome


def _report(console: Console, timers: list[PlannedTimer], recorder: Recorder, cancels: dict[str, Any], claims: dict[str, Any],
            created_ms: dict[str, Any], replay_status: int | None, conflict_status: int | None,
            periodic_failed: int) -> int:
    by_id = recorder.by_id()
    expected = [t for t in timers if t.delivered_expected]
    lost = [t.schedule_id for t in expected if t.schedule_id not in by_id]
    # A cancel refused with 409 came after the delivery had started (a loaded machine can be that slow with a
    # timer due in seconds): its delivery is right. Only a cancel answered 200 must stop every delivery.
    wrongly_delivered = [i for i, (_, code) in cancels.items() if code == 200 and i in by_id]
    too_late = sum(1 for _, code in cancels.values() if code == 409)
    first = [by_id[t.schedule_id][0] for t in expected if t.schedule_id in by_id]
    early = [d for d in first if d.lateness_ms < 0]
    double_promoted = [i for i, n in claims.items() if n != 1]

    table = Table(title="lateness at the target (ms)")
    for column in ("path", "delivered", "early", "p50", "p99", "max"):
        table.add_column(column, justify="right")
    for path in ("short", "long", "all on time"):
        rows = [by_id[t.schedule_id][0].lateness_ms for t in expected
                if t.schedule_id in by_id and t.path != "overdue" and path in (t.path, "all on time")]
        table.add_row(path, str(len(rows)), str(sum(1 for r in rows if r < 0)),
                      *(f"{percentile(rows, f):.0f}" if rows else "-" for f in (0.5, 0.99, 1.0)))
    console.print(table)
    overdue = [by_id[t.schedule_id][0].received_ms - created_ms[t.schedule_id] for t in expected
               if t.path == "overdue" and t.schedule_id in by_id]
    if overdue:
        console.print(f"overdue timers (due in the past): {len(overdue)} delivered, at most "
                      f"{max(overdue)} ms after they were accepted")
    queued_cancels = sum(1 for seen, _ in cancels.values() if seen == "QUEUED")
    for line in (
        f"delivered {len(first)}/{len(expected)}, lost {len(lost)}, early {len(early)}",
        f"cancelled {sum(1 for _, code in cancels.values() if code == 200)}/{len(cancels)} "
        f"({queued_cancels} while QUEUED{f'; {too_late} refused with 409, its delivery had started' if too_late else ''}),"
        f" delivered despite cancel {len(wrongly_delivered)}",
        f"promoted other than once {len(double_promoted)}",
        f"idempotent replay {replay_status}, conflicting replay {conflict_status}",
    ):
        console.print(line)
    failed = (lost or early or wrongly_delivered or double_promoted or replay_status != 200 or conflict_status != 409
              or periodic_failed)
    console.print("[red]FAILED[/]" if failed else "[green]OK: none lost, none early[/]")
    return 1 if failed else 0
