"""``cdk-delayed-scheduler redrive``: an operator's command, with AWS credentials, that sends the
schedules parked in the dead-letter queue back for delivery (:func:`cdk_delayed_scheduler.operator.redrive`).

Its defaults name the local engine's resources; against a deployed scheduler, pass the table, the
queues and the enqueuer function by their names (the stack's resources) or URLs."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

PREFIX = "delayed-scheduler"
"""The local engine's resource names start with it (``EngineOptions.name_prefix``)."""


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds, got {text}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_redrive_parser(commands: Any) -> None:
    """Add the ``redrive`` command to the CLI's sub-commands."""
    redrive = commands.add_parser(
        "redrive", help="send the schedules parked in the dead-letter queue back for delivery",
        description="Each parked delivery (and each bare delayer message whose record still holds its token) is "
                    "set FAILED -> QUEUED with a new token and its attempt count kept, sent to the delayer queue due "
                    "at once (same dedupeKey), then deleted from the dead-letter queue; a stream range is recovered "
                    "through the enqueuer. Run it again after an interruption: each schedule is delivered at most "
                    "once more. A run takes each schedule at most once: one whose delivery fails again at once is "
                    "parked again and left for a later run. Exit 1 when a selected message was skipped (with "
                    "--dry-run: would be).")
    redrive.add_argument("--table", default=f"{PREFIX}-schedules", help="the Schedules table (default: the local engine's)")
    redrive.add_argument("--delayer-queue", default=f"{PREFIX}-delayer",
                         help="the delayer queue's name or URL (default: the local engine's)")
    redrive.add_argument("--dead-letter-queue", default=f"{PREFIX}-dlq",
                         help="the dead-letter queue's name or URL (default: the local engine's)")
    redrive.add_argument("--enqueuer-function", default=f"{PREFIX}-enqueuer",
                         help="the enqueuer function, which recovers stream ranges (default: the local engine's); "
                              "'' skips stream ranges")
    redrive.add_argument("--id", dest="ids", action="append", metavar="ID",
                         help="only this schedule's messages (repeat for more; default: every message)")
    redrive.add_argument("--limit", type=_positive, help="take at most this many messages (default: all)")
    redrive.add_argument("--older-than", type=_non_negative, metavar="SECONDS",
                         help="only messages parked at least this long ago")
    redrive.add_argument("--newer-than", type=_non_negative, metavar="SECONDS",
                         help="only messages parked at most this long ago")
    redrive.add_argument("--group", help="only the schedules of this group (default: every schedule)")
    redrive.add_argument("--dry-run", action="store_true",
                         help="list what would move and what would be skipped, and why, without moving, sending or "
                              "writing anything (the messages are received, read and made visible again)")
    redrive.add_argument("--endpoint-url", help="DynamoDB's and SQS's endpoint (the local engine's moto endpoint); "
                                                "default: AWS, with the usual credentials and region")
    redrive.add_argument("--lambda-endpoint-url", help="Lambda's endpoint (the local engine's lambda_endpoint_url)")
    redrive.add_argument("--region", help="the region (default: the usual configuration)")
    redrive.add_argument("--json", action="store_true", help="print the report as JSON")


def run_redrive(args: argparse.Namespace) -> int:
    """Run the redrive the arguments describe; print its report; 1 if it skipped a message."""
    from ..operator import redrive  # noqa: PLC0415

    report = redrive(table_name=args.table, delayer_queue=args.delayer_queue, dead_letter_queue=args.dead_letter_queue,
                     enqueuer_function=args.enqueuer_function or None, ids=args.ids, limit=args.limit,
                     older_than_seconds=args.older_than, newer_than_seconds=args.newer_than, group=args.group,
                     dry_run=args.dry_run, endpoint_url=args.endpoint_url, lambda_endpoint_url=args.lambda_endpoint_url,
                     region_name=args.region)
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for line in report.lines():
            print(line)
    sys.stdout.flush()
    return 1 if report.skipped else 0
