"""The verdicts of ``cdk-delayed-scheduler check``, from the records alone (``GET``), and its report: pure.

A one-shot timer that must be delivered passes when its record reads ``FIRED`` with ``firedAt`` at or after
its ``dueAt`` (a rescheduled one: at or after its new due time, which its record must hold). A cancelled one
passes when it reads ``CANCELLED`` with no ``firedAt``. The periodic timer passes when it fired every
occurrence due well before it was read, none early, none skipped, on its grid, and none failed. Each create
must also answer the path its timer was made for (``QUEUED``: short; ``SCHEDULED``: long), or that path was
not exercised. Lateness is ``firedAt - dueAt``, in milliseconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ._check_plan import DELIVERED_PATHS, CheckPlan, PlannedTimer
from .client import Periodic, Schedule

MS = timedelta(milliseconds=1)
HINTS = {"long": "--long-delay must exceed the deployment's delay_window",
         "short": "--short-delay must be within the deployment's delay_window"}


@dataclass
class TimerFacts:
    """What a run saw of one one-shot timer: its answers, and the record it read last."""

    timer: PlannedTimer
    schedule_id: str
    created: Schedule | None = None
    due_at: datetime | None = None
    """When it must be delivered: the create's ``dueAt``, or the reschedule's."""
    old_due_at: datetime | None = None
    """A rescheduled timer's first due time."""
    action_error: str | None = None
    """Its cancel or reschedule was refused: the error."""
    local_due: float = 0.0
    """When it is due at the latest, on this machine's monotonic clock."""
    record: Schedule | None = None
    read_error: str | None = None
    read_at: float = 0.0
    """When its record was read last (monotonic)."""


@dataclass
class PeriodicFacts:
    """What a run saw of its periodic timer; times on this machine's monotonic clock."""

    periodic_id: str
    every: int
    created: Periodic | None = None
    sent_at: float = 0.0
    answered_at: float = 0.0
    record: Periodic | None = None
    read_error: str | None = None
    read_from: float = 0.0
    read_at: float = 0.0


@dataclass(frozen=True)
class TimerResult:
    id: str
    row: str
    action: str | None
    status: str | None
    due_at: datetime | None
    fired_at: datetime | None
    attempts: int | None
    lateness_ms: int | None
    """``firedAt - dueAt`` when it was delivered."""
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "path": self.row, "action": self.action, "status": self.status,
                "dueAt": _text(self.due_at), "firedAt": _text(self.fired_at), "attempts": self.attempts,
                "latenessMs": self.lateness_ms, "problems": list(self.problems)}


@dataclass(frozen=True)
class PeriodicResult:
    id: str
    every: int
    fired_count: int
    due_at_least: int
    """Occurrences due more than the settle time before it was read: each must have fired."""
    skipped_count: int
    last_lateness_ms: int | None
    """The last occurrence's ``lastFiredAt - lastDueAt`` (the definition keeps only the last one's)."""
    problems: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "every": self.every, "firedCount": self.fired_count, "dueAtLeast": self.due_at_least,
                "skippedCount": self.skipped_count, "lastLatenessMs": self.last_lateness_ms,
                "problems": list(self.problems)}


def _text(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _ms(later: datetime, earlier: datetime) -> int:
    return (later - earlier) // MS


def judge_timer(facts: TimerFacts) -> TimerResult:
    """The verdict on one one-shot timer, from its answers and its last record."""
    timer, record = facts.timer, facts.record
    problems = _path_problems(facts)
    lateness = None
    if facts.action_error is not None:
        problems.append(f"{timer.action} refused ({facts.action_error}), so it proves nothing: raise --short-delay")
    elif facts.read_error is not None:
        problems.append(f"its record could not be read: {facts.read_error}")
    elif record is not None and timer.action == "cancel":
        if record.fired_at is not None:
            problems.append(f"delivered after its cancel was answered: reads {record.status}, firedAt "
                            f"{_text(record.fired_at)}")
        elif record.status != "CANCELLED":
            problems.append(f"reads {record.status} after its cancel was answered CANCELLED")
    elif record is not None:
        lateness = _delivered(facts, record, problems)
    return TimerResult(facts.schedule_id, timer.row, timer.action, record.status if record else None,
                       facts.due_at, record.fired_at if record else None, record.attempts if record else None,
                       lateness, tuple(problems))


def _path_problems(facts: TimerFacts) -> list[str]:
    created = facts.created
    if created is None:
        return ["not created"]
    expected = facts.timer.expected_status
    if created.status == expected:
        return []
    took = "short" if created.status == "QUEUED" else "long"
    return [f"created {created.status}: it took the {took} path, so the {facts.timer.path} path was not exercised "
            f"({HINTS[facts.timer.path]})"]


def _delivered(facts: TimerFacts, record: Schedule, problems: list[str]) -> int | None:
    """A timer that must be delivered: its lateness, or None with the reason in ``problems``."""
    due = facts.due_at or record.due_at
    if facts.old_due_at is not None and record.due_at != due:
        problems.append(f"its record's dueAt {_text(record.due_at)} is not the rescheduled one, {_text(due)}")
    if record.status == "FIRED" and record.fired_at is not None:
        lateness = _ms(record.fired_at, due)
        if lateness < 0 and facts.old_due_at is not None:
            problems.append(f"delivered before its new due time, after its reschedule: firedAt {_text(record.fired_at)}, "
                            f"old dueAt {_text(facts.old_due_at)}, new dueAt {_text(due)}")
        elif lateness < 0:
            problems.append(f"early: fired {-lateness} ms before its due time")
        return lateness
    if record.status == "FAILED":
        problems.append(f"not delivered: parked in the dead-letter queue ({record.last_error})")
    elif record.status == "CANCELLED":
        problems.append("not delivered: reads CANCELLED, though the check did not cancel it")
    else:
        problems.append(f"not delivered: reads {record.status} {facts.read_at - facts.local_due:.0f} s after its due time")
    return None


def judge_periodic(facts: PeriodicFacts, settle: float) -> PeriodicResult:
    """The verdict on the periodic timer, from its PUT's answer and its last definition read."""
    record, every = facts.record, facts.every
    due_at_least = max(0, math.floor((facts.read_from - settle - facts.answered_at) / every))
    problems: list[str] = []
    lateness = None
    if facts.created is None or facts.created.next_due_at is None:
        problems.append("not created")
    elif facts.read_error is not None or record is None:
        problems.append(f"its definition could not be read: {facts.read_error}")
    else:
        fired, skipped = record.fired_count, record.skipped_count
        could_be_due = math.floor((facts.read_at - facts.sent_at) / every)
        if record.status != "ACTIVE":
            problems.append(f"reads {record.status}, not ACTIVE")
        if fired < due_at_least:
            problems.append(f"fired {fired} occurrences; {due_at_least} were due more than {settle:g} s before it "
                            f"was read")
        if fired + skipped > could_be_due:
            problems.append(f"fired {fired} occurrences, but only {could_be_due} can have been due: one fired early")
        if skipped or record.paused_count:
            problems.append(f"passed over {skipped + record.paused_count} occurrences, never delivered")
        if record.raw.get("lastError"):
            problems.append(f"an occurrence failed: {record.raw['lastError']}")
        if record.last_due_at is not None and record.last_fired_at is not None:
            lateness = _ms(record.last_fired_at, record.last_due_at)
            if lateness < 0:
                problems.append(f"early: its last occurrence fired {-lateness} ms before its due time")
            on_grid = facts.created.next_due_at + timedelta(seconds=every * (fired + skipped - 1))
            if record.last_due_at != on_grid:
                problems.append(f"its last occurrence was due at {_text(record.last_due_at)}, not at "
                                f"{_text(on_grid)}, occurrence {fired + skipped} of its grid")
    return PeriodicResult(facts.periodic_id, every, record.fired_count if record else 0, due_at_least,
                          record.skipped_count if record else 0, lateness, tuple(problems))


def nearest_rank(values: list[int], fraction: float) -> int:
    """The nearest-rank percentile of ``values`` (not empty; 0 < fraction <= 1)."""
    ordered = sorted(values)
    return ordered[max(1, math.ceil(fraction * len(ordered))) - 1]


def lateness_rows(results: tuple[TimerResult, ...]) -> list[tuple[str, int, int, int, int | None, int | None, int | None]]:
    """``(path, timers, delivered, early, p50, p99, max)`` per path of the timers that must be delivered, then ``all``."""
    rows = []
    for path in (*DELIVERED_PATHS, "all"):
        timers = [r for r in results if r.action != "cancel" and path in (r.row, "all")]
        late = [r.lateness_ms for r in timers if r.lateness_ms is not None]
        figures = [nearest_rank(late, f) for f in (0.5, 0.99, 1.0)] if late else [None, None, None]
        rows.append((path, len(timers), len(late), sum(1 for x in late if x < 0), *figures))
    return rows


def lateness_table(results: tuple[TimerResult, ...]) -> list[str]:
    """The lateness table as text lines, as the demo prints it."""
    header = ("path", "timers", "delivered", "early", "p50", "p99", "max")
    cells = [header, *([str(v) if v is not None else "-" for v in row] for row in lateness_rows(results))]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["lateness from the records, firedAt - dueAt (ms):",
            *("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
              for row in cells)]


@dataclass(frozen=True)
class CheckReport:
    """A run's outcome: each timer's verdict, the periodic timer's, and what the clean-up did. ``ok`` when none
    has a problem."""

    plan: CheckPlan
    timers: tuple[TimerResult, ...] = ()
    periodic: PeriodicResult | None = None
    setup_error: str | None = None
    """A call that set the run up failed: nothing was judged."""
    cleanup: tuple[str, ...] = ()
    cleanup_problems: tuple[str, ...] = field(default=())

    @property
    def problems(self) -> list[str]:
        """Each problem, named by the timer's id (or ``setup``, ``clean-up``)."""
        periodic = [f"{self.periodic.id}: {p}" for p in self.periodic.problems] if self.periodic else []
        return [*([f"setup: {self.setup_error}"] if self.setup_error else []),
                *(f"{r.id}: {p}" for r in self.timers for p in r.problems),
                *periodic,
                *(f"clean-up: {p}" for p in self.cleanup_problems)]

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        lines = [f"cdk-delayed-scheduler check: run {self.plan.run_id}"]
        if self.setup_error is None:
            lines += lateness_table(self.timers)
        if self.periodic is not None and self.periodic.fired_count:
            p = self.periodic
            late = f", the last one {p.last_lateness_ms} ms late" if p.last_lateness_ms is not None else ""
            lines.append(f"periodic every {p.every} s: fired {p.fired_count} occurrences ({p.due_at_least} due well "
                         f"before the read), skipped {p.skipped_count}{late}")
        cancels = [r for r in self.timers if r.action == "cancel"]
        if cancels:
            lines.append(f"cancelled {len(cancels)} ({', '.join(r.id for r in cancels)}): delivered after the cancel "
                         f"{sum(1 for r in cancels if r.fired_at is not None)}")
        for moved in (r for r in self.timers if r.action == "reschedule"):
            early = moved.lateness_ms is not None and moved.lateness_ms < 0
            lines.append(f"rescheduled {moved.id}: delivered before its new due time {int(early)}")
        retried = [r.id for r in self.timers if (r.attempts or 0) > 1]
        if retried:
            lines.append(f"delivered after a retry (the first attempt failed): {', '.join(retried)}")
        lines += [f"clean-up: {line}" for line in self.cleanup]
        problems = self.problems
        lines += ["problems:", *(f"  {p}" for p in problems)] if problems else []
        lines.append(f"FAILED: {len(problems)} problem{'s' if len(problems) != 1 else ''}" if problems else
                     "OK: none lost, none early, nothing delivered after a cancel or a reschedule")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "run": self.plan.run_id, "group": self.plan.group, "setupError": self.setup_error,
                "lateness": [dict(zip(("path", "timers", "delivered", "early", "p50Ms", "p99Ms", "maxMs"), row))
                             for row in lateness_rows(self.timers)],
                "timers": [r.to_json() for r in self.timers],
                "periodic": self.periodic.to_json() if self.periodic else None,
                "cleanup": list(self.cleanup), "problems": self.problems}
