"""``cdk-delayed-scheduler check``: an acceptance run against a deployed scheduler, given its HTTP API's URL or
its api function's name (the stack's outputs), through the typed client (:mod:`cdk_delayed_scheduler.check`).

It needs only the base install (botocore): nothing here imports the engine, moto or boto3."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from typing import Any, Callable

from .._check_plan import (DEFAULT_EVERY, DEFAULT_LONG_DELAY, DEFAULT_SHORT_DELAY, DEFAULT_TIMEOUT, DEFAULT_TIMERS,
                           PERIODIC_OCCURRENCES, SETTLE_SECONDS)

PROG = "cdk-delayed-scheduler check"


def add_check_parser(commands: Any) -> None:
    """Add the ``check`` command to the CLI's sub-commands."""
    check = commands.add_parser(
        "check", help="prove a deployed scheduler: timers on each path, a cancel, a reschedule, a periodic timer",
        description="Create timers on the short path (straight to the delayer queue) and the long one (through the "
                    "table and the sweeper), a periodic timer, a cancel on each path and a reschedule, all in one "
                    "group; wait for them; read each record and print the lateness (firedAt - dueAt) by path. Exit 1 "
                    "if any is lost, early, or delivered after its cancel or at its old due time after a reschedule, "
                    "or if a path was not exercised. The periodic timer is deleted and the group cancelled at the "
                    "end, also after a failure or an interrupt (exit 130). The target receives each delivery, with "
                    "the payload {\"check\": <run>, \"timer\": <name>}.")
    where = check.add_mutually_exclusive_group(required=True)
    where.add_argument("--api-url", metavar="URL",
                       help="the HTTP API's URL (the stack's output of timers.url), called with SigV4")
    where.add_argument("--function", metavar="NAME",
                       help="the api function's name or ARN (timers.api_function.function_name), invoked directly")
    check.add_argument("--target", help="the target to deliver to (default: the construct's default target)")
    check.add_argument("--region", help="the region (default: the URL's or ARN's, else the usual configuration)")
    check.add_argument("--profile", help="the AWS profile whose credentials sign the calls (default: the usual chain)")
    check.add_argument("--short-delay", type=float, default=DEFAULT_SHORT_DELAY, metavar="SECONDS",
                       help="the short timers fall due this long after their create; within the stack's "
                            f"delay_window (default {DEFAULT_SHORT_DELAY:g})")
    check.add_argument("--long-delay", type=float, default=DEFAULT_LONG_DELAY, metavar="SECONDS",
                       help="the long timers fall due this long after their create; it must exceed the stack's "
                            f"delay_window, or the long path is not exercised (default {DEFAULT_LONG_DELAY:g}: the "
                            "construct's default delay_window plus a minute, so a run takes about 16 minutes; "
                            "against a stack deployed with delay_window 90 s, 150 takes about 3)")
    check.add_argument("--timers", type=int, default=DEFAULT_TIMERS, metavar="N",
                       help=f"timers on each path, besides the cancels and the reschedule (default {DEFAULT_TIMERS})")
    check.add_argument("--every", type=int, default=DEFAULT_EVERY, metavar="SECONDS",
                       help=f"the periodic timer's period; the run waits for {PERIODIC_OCCURRENCES} occurrences at "
                            f"least (default {DEFAULT_EVERY})")
    check.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help="how long after the last due time a delivery may still come before it counts as lost "
                            f"(default {DEFAULT_TIMEOUT:g}; the run waits {SETTLE_SECONDS:g} s after the last due time "
                            "in any case, for deliveries that must not happen)")
    check.add_argument("--max-attempts", type=int, default=1, metavar="N",
                       help="each timer's retry.maxAttempts (default 1: a delivery the target refuses is parked at "
                            "once and reads FAILED within the run, instead of FIRED while a retry waits)")
    check.add_argument("--dry-run", action="store_true", help="print what a run would send, wait for and clean up; "
                                                              "send nothing")
    check.add_argument("--json", action="store_true", help="print the report (or, with --dry-run, the plan) as JSON")


def run_check_command(args: argparse.Namespace) -> int:
    """Run the check the arguments describe; print its report; 0 when it passed, 1 when not, 2 for bad options."""
    from ..check import make_plan, run_check  # noqa: PLC0415 - keeps --help fast

    try:
        plan = make_plan(short_delay=args.short_delay, long_delay=args.long_delay, timers=args.timers,
                         every=args.every, timeout=args.timeout, target=args.target, max_attempts=args.max_attempts)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    via = (f"through the HTTP API {args.api_url} (SigV4)" if args.api_url
           else f"by direct invoke of the function {args.function}") + (f" in {args.region}" if args.region else "")
    if args.dry_run:
        if args.json:
            print(json.dumps({"dryRun": True, "via": via, **plan.to_json()}, indent=2))
        else:
            print(f"{PROG} --dry-run: nothing is sent")
            for line in plan.lines(via):
                print(line)
        return 0
    try:
        client = _client(args)
    except Exception as exc:  # noqa: BLE001 - botocore's ProfileNotFound, no region (ValueError), ...
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    say(f"check: run {plan.run_id} {via}")
    stop = threading.Event()
    restore = _interrupt_at_safe_points(stop)
    try:
        report = run_check(client, plan, say=say, stop=stop)
    except KeyboardInterrupt:
        say(f"check: interrupted; run {plan.run_id}'s timers are in the group {plan.group}: if the clean-up above "
            f"did not finish, SchedulerClient.cancel_group({plan.group!r}) stops what is left")
        return 130
    finally:
        restore()
    print(json.dumps(report.to_json(), indent=2) if args.json else "\n".join(report.lines()), flush=True)
    return 0 if report.ok else 1


def _client(args: argparse.Namespace) -> Any:
    import botocore.session  # noqa: PLC0415

    from ..client import SchedulerClient  # noqa: PLC0415

    session = botocore.session.Session(profile=args.profile) if args.profile else botocore.session.get_session()
    if args.api_url:
        return SchedulerClient(args.api_url, session, region=args.region)
    return SchedulerClient.for_function(args.function, session, region=args.region)


def _interrupt_at_safe_points(stop: threading.Event) -> Callable[[], object]:
    """Make Ctrl-C and SIGTERM set ``stop``, which the run reads between its calls (an exception raised inside one,
    in the HTTP client's pool, could leave it unusable for the clean-up); a second signal interrupts at once. The
    function that undoes it."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # signals reach the main thread only

    def interrupt(*_: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGINT, signal.SIGTERM)}
    return lambda: [signal.signal(number, handler) for number, handler in previous.items()]
