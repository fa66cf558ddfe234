"""An acceptance run against a deployed scheduler, through its typed client (``cdk-delayed-scheduler check``).

It creates timers on each path (short: straight to the delayer queue; long: through the table and the sweeper),
a periodic timer, a cancel on each path and a reschedule (:func:`make_plan`); waits for them; reads each one's
record (``GET``) and judges it: delivered (``FIRED``), never early (``firedAt >= dueAt``), nothing delivered
after a cancel or at a rescheduled timer's old due time, the periodic timer's occurrences all fired
(:mod:`._check_report`). It cleans up after itself, even when a call fails or the run is interrupted: it deletes
the periodic timer and cancels the run's group. It needs only the client (botocore), not the ``local`` extra::

    import sys
    from cdk_delayed_scheduler.check import make_plan, run_check
    from cdk_delayed_scheduler.client import SchedulerClient

    report = run_check(SchedulerClient.for_function("Timers-TimersApiFunction1A2B3C"), make_plan(long_delay=150))
    print("\\n".join(report.lines()))
    sys.exit(0 if report.ok else 1)
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from typing import Callable

from ._check_plan import PERIODIC_OCCURRENCES, CheckPlan, PlannedTimer, make_plan
from ._check_report import (CheckReport, PeriodicFacts, PeriodicResult, TimerFacts, TimerResult, judge_periodic,
                            judge_timer)
from .client import ConflictError, NotFoundError, RetryPolicy, SchedulerClient, SchedulerError

__all__ = ["CheckPlan", "CheckReport", "PeriodicResult", "PlannedTimer", "TimerResult", "make_plan", "run_check"]

POLL_SECONDS = 0.5
"""How often a run reads the records of the timers already due and not yet delivered."""
PROGRESS_SECONDS = 30.0
"""A run that waits says how far it is at least this often."""
ENDED = frozenset({"FIRED", "FAILED", "CANCELLED"})


def run_check(client: SchedulerClient, plan: CheckPlan, *, say: Callable[[str], None] | None = None,
              poll_interval: float = POLL_SECONDS, stop: threading.Event | None = None) -> CheckReport:
    """Run ``plan`` against the scheduler ``client`` reaches and answer the verdicts; ``say`` receives progress lines.

    The clean-up runs whatever happens; an interrupt (``KeyboardInterrupt``) is raised again after it. ``stop``, set
    from elsewhere (a signal handler), interrupts the run at its next safe point, between two calls and never inside
    one, so that the clean-up's calls find the client whole: ``KeyboardInterrupt`` after the clean-up."""
    run = _Run(client, plan, say or (lambda line: None), poll_interval, stop or threading.Event())
    setup_error = None
    try:
        setup_error = run.set_up()
        if setup_error is None:
            run.wait()
            run.read_all()
    finally:
        cleanup, cleanup_problems = run.clean_up()
    if setup_error is not None:
        return CheckReport(plan, setup_error=setup_error, cleanup=cleanup, cleanup_problems=cleanup_problems)
    return CheckReport(plan, tuple(judge_timer(f) for f in run.timers), judge_periodic(run.periodic, plan.settle),
                       cleanup=cleanup, cleanup_problems=cleanup_problems)


class _Run:
    def __init__(self, client: SchedulerClient, plan: CheckPlan, say: Callable[[str], None], poll: float,
                 stop: threading.Event) -> None:
        self.client, self.plan, self.say, self.poll, self.stop = client, plan, say, poll, stop
        self.timers = [TimerFacts(t, plan.schedule_id(t)) for t in plan.timers]
        self.periodic = PeriodicFacts(plan.periodic_id, plan.every)
        self.sent = False
        self.retry = RetryPolicy(max_attempts=plan.max_attempts)

    def set_up(self) -> str | None:
        """Create everything, cancel and reschedule; the error that stopped it, or None."""
        plan, client, started = self.plan, self.client, time.monotonic()
        self.sent = True
        try:
            self._go_on()
            self.periodic.sent_at = time.monotonic()
            self.periodic.created = client.put_periodic(plan.periodic_id, plan.payload("periodic"), every=plan.every,
                                                        target=plan.target, retry=self.retry, group=plan.group)
            self.periodic.answered_at = time.monotonic()
            for facts in self.timers:
                self._go_on()
                self._create(facts)
        except SchedulerError as error:
            return f"{type(error).__name__} {error}"
        self.say(f"check: created {len(self.timers)} timers and a periodic one in {time.monotonic() - started:.1f} s "
                 f"(group {plan.group}); the last falls due in about {plan.last_due_seconds:.0f} s, then "
                 f"{plan.settle:g} s more, and at most {plan.timeout:g} s for late deliveries")
        return None

    def _create(self, facts: TimerFacts) -> None:
        timer, client = facts.timer, self.client
        facts.created = client.schedule(timedelta(seconds=timer.delay), self.plan.payload(timer.name),
                                        id=facts.schedule_id, target=self.plan.target, retry=self.retry,
                                        group=self.plan.group)
        facts.due_at, facts.local_due = facts.created.due_at, time.monotonic() + timer.delay
        try:
            if timer.action == "cancel":
                client.cancel(facts.schedule_id)
            elif timer.action == "reschedule" and timer.new_delay is not None:
                moved = client.reschedule(facts.schedule_id, timedelta(seconds=timer.new_delay))
                facts.old_due_at, facts.due_at = facts.due_at, moved.due_at
                facts.local_due = time.monotonic() + timer.new_delay
        except ConflictError as refused:
            facts.action_error = f"{refused.status}: {refused.message}"

    def _awaited(self) -> list[TimerFacts]:
        return [f for f in self.timers if f.timer.delivered_expected and f.action_error is None]

    def wait(self) -> None:
        """Until every timer awaited has ended and the periodic timer fired enough, and the settle time passed;
        or until the timeout after the last due time."""
        plan, periodic = self.plan, self.periodic
        periodic_due = periodic.answered_at + plan.every * PERIODIC_OCCURRENCES
        last_due = max([periodic_due, *(f.local_due for f in self.timers)])
        earliest_end, deadline = last_due + plan.settle, last_due + plan.timeout
        said, said_at = None, time.monotonic()
        while True:
            self._go_on()
            now = time.monotonic()
            for facts in self._awaited():
                if facts.local_due <= now and (facts.record is None or facts.record.status not in ENDED):
                    self._read(facts)
            if now >= periodic_due and self._periodic_short():
                self._read_periodic()
            ended = sum(1 for f in self._awaited() if f.record is not None and f.record.status in ENDED)
            fired = periodic.record.fired_count if periodic.record else 0
            done = ended == len(self._awaited()) and not self._periodic_short()
            if (done and now >= earliest_end) or now >= deadline:
                return
            progress = (ended, fired)
            if (progress != said and now - said_at >= 2) or now - said_at >= PROGRESS_SECONDS:
                self.say(f"check: {ended}/{len(self._awaited())} timers delivered or ended, the periodic one fired "
                         f"{fired} times; {max(0.0, last_due - now):.0f} s to the last due time")
                said, said_at = progress, now
            self.stop.wait(self.poll)

    def _go_on(self) -> None:
        """A safe point: ``KeyboardInterrupt`` once ``stop`` is set."""
        if self.stop.is_set():
            raise KeyboardInterrupt

    def _periodic_short(self) -> bool:
        record = self.periodic.record
        return record is None or record.fired_count < PERIODIC_OCCURRENCES

    def _read(self, facts: TimerFacts) -> None:
        try:
            facts.record, facts.read_error = self.client.get(facts.schedule_id), None
        except SchedulerError as error:
            facts.read_error = f"{type(error).__name__} {error}"
        facts.read_at = time.monotonic()

    def _read_periodic(self) -> None:
        periodic = self.periodic
        periodic.read_from = time.monotonic()
        try:
            periodic.record, periodic.read_error = self.client.get_periodic(periodic.periodic_id), None
        except SchedulerError as error:
            periodic.read_error = f"{type(error).__name__} {error}"
        periodic.read_at = time.monotonic()

    def read_all(self) -> None:
        """The records the verdicts are made from: each timer's, and the periodic timer's."""
        for facts in self.timers:
            self._go_on()
            self._read(facts)
        self._read_periodic()

    def clean_up(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """Delete the periodic timer and cancel the group: what was done, and what failed."""
        if not self.sent:
            return (), ()
        plan, done, failed = self.plan, [], []
        try:
            self.client.delete_periodic(plan.periodic_id)
            done.append(f"deleted the periodic timer {plan.periodic_id}")
        except NotFoundError:
            done.append(f"no periodic timer {plan.periodic_id} to delete")
        except Exception as error:  # noqa: BLE001 - the group's cancel must still be tried; the error is reported
            failed.append(f"DELETE /periodic/{plan.periodic_id} failed: {type(error).__name__} {error}")
        try:
            stopped = self.client.cancel_group(plan.group)
            done.append(f"cancelled the group {plan.group}: {stopped.stopped_schedules} timers were still waiting")
        except Exception as error:  # noqa: BLE001 - reported, with what is left
            failed.append(f"DELETE /groups/{plan.group} failed: {type(error).__name__} {error}; its waiting timers "
                          f"are left: cancel them with SchedulerClient.cancel_group({plan.group!r})")
        for line in (*done, *failed):
            self.say(f"check: clean-up: {line}")
        return tuple(done), tuple(failed)
