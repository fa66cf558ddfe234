"""Operator actions on a deployed scheduler, with AWS credentials (botocore), never through its API.

:func:`redrive` sends the schedules parked in the dead-letter queue back for delivery and recovers
the stream ranges the enqueuer gave up on. It is not an API route: it needs ``sqs:ReceiveMessage``
and ``sqs:DeleteMessage`` on the dead-letter queue and ``lambda:InvokeFunction`` on the enqueuer,
which the API function (on every request's path) should not hold. Run it as an operator, as
``cdk-delayed-scheduler redrive`` does, or on the local engine (:meth:`Engine.redrive
<cdk_delayed_scheduler.local.engine.Engine.redrive>`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable

from ._runtime_asset import runtime_asset_path


@dataclass(frozen=True)
class RedriveReport:
    """What a redrive did (a dry run: would do): each entry names the message's ``kind``, the schedule ``id``
    (None for a stream range) and its ``messageId``, with a ``note`` (moved) or a ``reason`` (the others)."""

    moved: list[dict[str, Any]]
    """Re-armed for delivery (or recovered, a stream range) and deleted from the dead-letter queue; with
    ``dry_run``, what a run would move."""
    skipped: list[dict[str, Any]]
    """Selected but left in the dead-letter queue, each with its reason; with ``dry_run``, what a run would skip."""
    left: int
    """Not selected: left in the dead-letter queue untouched."""
    parked_again: list[dict[str, Any]] = field(default_factory=list)
    """Not taken: messages of a schedule this run had sent back already (its delivery failed again at once and
    was parked again while the run went on), left in the dead-letter queue. A run takes each schedule at most once."""
    dry_run: bool = False
    """Nothing was moved, sent or written: ``moved`` and ``skipped`` list what a run would move and skip."""

    def lines(self) -> list[str]:
        """The report as text, one line per message after a summary line."""
        move, skip = ("would move", "would skip") if self.dry_run else ("moved", "skipped")
        width = len(skip)
        summary = f"{move} {len(self.moved)}, {skip} {len(self.skipped)}, left {self.left}"
        if self.parked_again:
            summary += f", parked again {len(self.parked_again)}"
        return ([f"dry run, nothing moved: {summary}" if self.dry_run else summary]
                + [f"  {move:<{width}} {e['kind']} {e['id'] or '-'}: {e['note']}" for e in self.moved]
                + [f"  {skip:<{width}} {e['kind']} {e['id'] or '-'}: {e['reason']}" for e in self.skipped]
                + [f"  parked again {e['kind']} {e['id'] or '-'}: {e['reason']}" for e in self.parked_again])

    def to_json(self) -> dict[str, Any]:
        return {"dryRun": self.dry_run, "moved": self.moved, "skipped": self.skipped,
                "parkedAgain": self.parked_again, "left": self.left}


def redrive(*, table_name: str, delayer_queue: str, dead_letter_queue: str, enqueuer_function: str | None = None,
            ids: Iterable[str] | None = None, limit: int | None = None, older_than_seconds: float | None = None,
            newer_than_seconds: float | None = None, group: str | None = None, dry_run: bool = False,
            endpoint_url: str | None = None, lambda_endpoint_url: str | None = None,
            region_name: str | None = None) -> RedriveReport:
    """Send the parked schedules in the dead-letter queue back for delivery (or the selected ones).

    Each parked delivery, and each bare delayer message whose record still holds its token, is
    re-armed (``FAILED`` → ``QUEUED``, a new token, the attempt count kept), sent to the delayer
    queue due at once (same ``dedupeKey``), and only then deleted from the dead-letter queue. A
    stream range is recovered by invoking ``enqueuer_function`` with ``{"recover": <message>}``.
    Run it again after an interruption: each schedule is delivered at most once more. A run takes each
    schedule at most once: one whose delivery fails again at once is parked again, reported in
    ``parked_again`` and left for a later run, and the run ends once only such messages are left.

    :param table_name: the Schedules table.
    :param delayer_queue: the delayer queue's URL or name.
    :param dead_letter_queue: the dead-letter queue's URL or name.
    :param enqueuer_function: the enqueuer function's name or ARN. Default: stream ranges are skipped.
    :param ids: only the messages of these schedule ids. Default: every id (and stream ranges).
    :param limit: take at most this many messages. Default: all.
    :param older_than_seconds: only messages parked at least this long ago. Default: no bound.
    :param newer_than_seconds: only messages parked at most this long ago. Default: no bound.
    :param group: only the schedules of this group (read from each one's record; stream ranges are left). Default:
        every group, and schedules without one.
    :param dry_run: only report what would be moved and skipped, each with its note or reason: the messages are
        received and the records read, then the messages made visible again; nothing is written, sent, invoked
        or deleted. Default: False.
    :param endpoint_url: the DynamoDB and SQS endpoint. Default: AWS (``AWS_ENDPOINT_URL`` if set).
    :param lambda_endpoint_url: Lambda's endpoint. Default: AWS (``AWS_ENDPOINT_URL_LAMBDA`` if set).
    :param region_name: the region. Default: the usual configuration.
    """
    _runtime_on_path()
    import botocore.session  # noqa: PLC0415
    from scheduler_runtime.aws.redrive import Redrive  # noqa: PLC0415 - importable once the path is set
    from scheduler_runtime.core.redrive import Selection  # noqa: PLC0415

    selection = Selection(ids=None if ids is None else frozenset(ids), limit=limit,
                          older_than_ms=_ms(older_than_seconds), newer_than_ms=_ms(newer_than_seconds), group=group)
    session = botocore.session.get_session()
    sqs = session.create_client("sqs", endpoint_url=endpoint_url, region_name=region_name)
    dynamodb = session.create_client("dynamodb", endpoint_url=endpoint_url, region_name=region_name)
    recover = None
    if enqueuer_function:
        lambda_client = session.create_client("lambda", endpoint_url=lambda_endpoint_url, region_name=region_name)
        recover = _enqueuer_recovery(lambda_client, enqueuer_function)
    run = Redrive(dynamodb, sqs, table_name, _queue_url(sqs, delayer_queue), _queue_url(sqs, dead_letter_queue),
                  recover).run(selection, dry_run=dry_run)
    return RedriveReport(run.moved, run.skipped, run.left, run.parked_again, run.dry_run)


def _enqueuer_recovery(lambda_client: Any, function_name: str) -> Any:
    def recover(body: str) -> Any:
        response = lambda_client.invoke(FunctionName=function_name, Payload=json.dumps({"recover": body}).encode())
        answer = response["Payload"].read().decode()
        if response.get("FunctionError"):
            raise RuntimeError(answer[:500])
        return json.loads(answer) if answer else None

    return recover


def _queue_url(sqs: Any, url_or_name: str) -> str:
    if url_or_name.startswith(("https://", "http://")):
        return url_or_name
    url: str = sqs.get_queue_url(QueueName=url_or_name)["QueueUrl"]
    return url


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else int(seconds * 1000)


def _runtime_on_path() -> None:
    path = str(runtime_asset_path())
    if path not in sys.path:
        sys.path.insert(0, path)
