"""What ``cdk-delayed-scheduler check`` creates on a deployed scheduler, and when each timer falls due: pure.

One run makes, all in one group named after the run (``check-<8 hex>``), each with the payload
``{"check": <run>, "timer": <name>}``:

- ``short-1`` .. ``short-N``: due ``short_delay`` seconds after their create (``STEP_SECONDS`` apart), within
  the deployment's delay window, so the api handler sends them straight to the delayer queue (``QUEUED``);
- ``long-1`` .. ``long-N``: due ``long_delay`` seconds after, beyond the window, so they wait in the table
  (``SCHEDULED``) for the sweeper, the stream and the enqueuer;
- ``cancel-short`` (cancelled while it waits in the delayer queue) and ``cancel-long`` (while it waits in
  the table), each cancelled as soon as its create is answered;
- ``reschedule``: created on the short path and moved at once to twice its delay, so it is due later than at
  first: a delivery at its old due time reads as one before its new due time;
- ``periodic``: a periodic timer every ``every`` seconds, watched for at least ``PERIODIC_OCCURRENCES``
  occurrences.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from ._contract import contract

STEP_SECONDS = 0.35
"""How far apart the timers of one path fall due: not whole seconds, so each one's sub-second rest is waited out."""
PERIODIC_OCCURRENCES = 3
"""How many occurrences of the periodic timer a run waits for, at least."""
SETTLE_SECONDS = 3.0
"""How long after the last due time a run still waits, so that a delivery that should not happen (after a cancel,
at a rescheduled timer's old due time, a target's refusal) shows in the records before they are judged."""
DEFAULT_SHORT_DELAY = 10.0
DEFAULT_LONG_DELAY = float((contract.DELAY_WINDOW_SECONDS.default or 0) + 60)
"""The construct's default ``delay_window`` (870 s) plus a minute, so that a sweep claims the timer: a run with the
defaults takes about 16 minutes. Against a stack deployed with a small ``delay_window`` (90 s at least), pass a
``long_delay`` a minute or so above it."""
DEFAULT_EVERY = 30
DEFAULT_TIMEOUT = 120.0
DEFAULT_TIMERS = 5
MAX_TIMERS = 100
DELIVERED_PATHS = ("short", "long", "reschedule")
"""The rows of the lateness table for one-shot timers that must be delivered (a timer's ``row``)."""


@dataclass(frozen=True)
class PlannedTimer:
    """One one-shot timer of a run: created on ``path`` (``short``: answered ``QUEUED``; ``long``: ``SCHEDULED``),
    due ``delay`` seconds after the create; then cancelled (``action="cancel"``) or moved to ``new_delay`` seconds
    after the reschedule (``action="reschedule"``), or left to be delivered (``action=None``)."""

    name: str
    path: str
    delay: float
    action: str | None = None
    new_delay: float | None = None

    @property
    def delivered_expected(self) -> bool:
        return self.action != "cancel"

    @property
    def row(self) -> str:
        """Its row in the lateness table: its path, or ``reschedule``."""
        return "reschedule" if self.action == "reschedule" else self.path

    @property
    def expected_status(self) -> str:
        """What its create must answer, when it took the path it was made for."""
        return "QUEUED" if self.path == "short" else "SCHEDULED"

    @property
    def last_due_seconds(self) -> float:
        """Seconds after its create (for a rescheduled one, after the reschedule) that it is last due."""
        return self.new_delay if self.new_delay is not None else self.delay


@dataclass(frozen=True)
class CheckPlan:
    """Everything a run creates and how long it waits. ``run_id`` names the run and its group; every id starts with it."""

    run_id: str
    timers: tuple[PlannedTimer, ...]
    every: int
    timeout: float
    target: str | None = None
    max_attempts: int = 1
    """Each timer's ``retry.maxAttempts``: with 1, a delivery its target refuses is parked at once and its record
    reads ``FAILED`` within the run, instead of ``FIRED`` while a retry waits."""

    @property
    def group(self) -> str:
        return self.run_id

    @property
    def periodic_id(self) -> str:
        return f"{self.run_id}-periodic"

    def schedule_id(self, timer: PlannedTimer) -> str:
        return f"{self.run_id}-{timer.name}"

    def payload(self, name: str) -> dict[str, str]:
        """What each timer carries to the target, so that a consumer can tell the check's deliveries apart."""
        return {"check": self.run_id, "timer": name}

    @property
    def settle(self) -> float:
        return min(SETTLE_SECONDS, self.timeout)

    @property
    def last_due_seconds(self) -> float:
        """When, after the creates, the last thing the run waits for falls due (the periodic timer's last
        awaited occurrence included)."""
        return max(max(t.last_due_seconds for t in self.timers), self.every * PERIODIC_OCCURRENCES)

    def lines(self, via: str) -> list[str]:
        """The plan as text: what a run would send, wait for and clean up (``--dry-run``)."""
        target = self.target or "the default target"
        lines = [f"run {self.run_id}: {len(self.timers)} one-shot timers and a periodic one, group {self.group}, "
                 f"target {target}, {via}",
                 f"each timer: payload {{\"check\": \"{self.run_id}\", \"timer\": <name>}}, "
                 f"retry maxAttempts {self.max_attempts}",
                 f"  PUT /periodic/{self.periodic_id}  every {self.every} s, until at least "
                 f"{PERIODIC_OCCURRENCES} occurrences have fired"]
        for timer in self.timers:
            then = (", then DELETE at once" if timer.action == "cancel" else
                    f", then PATCH at once to delaySeconds {timer.new_delay:g}" if timer.action == "reschedule" else "")
            lines.append(f"  POST /schedules {self.schedule_id(timer)}  delaySeconds {timer.delay:g} "
                         f"(expects {timer.expected_status}: the {timer.path} path){then}")
        lines += [f"wait: about {self.last_due_seconds + self.settle:.0f} s after the creates (the last due time, plus "
                  f"{self.settle:g} s for deliveries that must not happen), at most {self.timeout:g} s more for late ones",
                  f"read: GET /schedules/{{id}} of each timer and GET /periodic/{self.periodic_id}; judge them",
                  f"clean up: DELETE /periodic/{self.periodic_id}, DELETE /groups/{self.group}"]
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run_id, "group": self.group, "target": self.target, "maxAttempts": self.max_attempts,
                "periodic": {"id": self.periodic_id, "every": self.every, "occurrences": PERIODIC_OCCURRENCES},
                "timers": [{"id": self.schedule_id(t), "path": t.path, "delaySeconds": t.delay, "action": t.action,
                            "newDelaySeconds": t.new_delay} for t in self.timers],
                "waitSeconds": round(self.last_due_seconds + self.settle, 3), "timeoutSeconds": self.timeout}


def make_plan(*, short_delay: float = DEFAULT_SHORT_DELAY, long_delay: float = DEFAULT_LONG_DELAY,
              timers: int = DEFAULT_TIMERS, every: int = DEFAULT_EVERY, timeout: float = DEFAULT_TIMEOUT,
              target: str | None = None, max_attempts: int = 1, run_id: str | None = None) -> CheckPlan:
    """A run's plan; ``ValueError`` naming the option (``--long-delay``...) and its rule when one is out of range."""
    if not 1 <= timers <= MAX_TIMERS:
        raise ValueError(f"--timers must be 1-{MAX_TIMERS}, got {timers}")
    if not short_delay > 0:
        raise ValueError(f"--short-delay must be > 0 seconds, got {short_delay:g}")
    if not 1 <= every:
        raise ValueError(f"--every must be >= 1 second, got {every}")
    if not timeout > 0:
        raise ValueError(f"--timeout must be > 0 seconds, got {timeout:g}")
    attempts = contract.MAX_RECEIVE_COUNT
    if not attempts.min <= max_attempts <= attempts.max:
        raise ValueError(f"--max-attempts must be {attempts.min}-{attempts.max}, got {max_attempts}")
    shorts = [PlannedTimer(f"short-{n + 1}", "short", round(short_delay + n * STEP_SECONDS, 3)) for n in range(timers)]
    shorts.append(PlannedTimer("cancel-short", "short", round(short_delay + timers * STEP_SECONDS, 3), "cancel"))
    shorts.append(PlannedTimer("reschedule", "short", short_delay, "reschedule", 2 * short_delay))
    latest_short = max(t.last_due_seconds for t in shorts)
    if not long_delay > latest_short:
        raise ValueError(f"--long-delay must be longer than the short timers' last due time ({latest_short:g} s) and "
                         f"than the deployment's delay_window, got {long_delay:g}")
    longs = [PlannedTimer(f"long-{n + 1}", "long", round(long_delay + n * STEP_SECONDS, 3)) for n in range(timers)]
    longs.append(PlannedTimer("cancel-long", "long", round(long_delay + timers * STEP_SECONDS, 3), "cancel"))
    run = run_id or f"check-{secrets.token_hex(4)}"
    if not contract.GROUP_PATTERN.match(run):  # a group name; each id is it and a short suffix
        raise ValueError(f"run_id must be 1-64 characters of A-Za-z0-9._:-, got {run!r}")
    return CheckPlan(run, (*shorts, *longs), every, timeout, target, max_attempts)
