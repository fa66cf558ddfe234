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
from dataclasses import dataclass
from typing import Any, Iterable

from ._runtime_asset import runtime_asset_path


@dataclass(frozen=True)
class RedriveReport:
    """What a redrive did: each entry names the message's ``kind``, the schedule ``id`` (None for a stream
    range) and its ``messageId``, with a ``note`` (moved) or a ``reason`` (skipped)."""

    moved: list[dict[str, Any]]
    """Re-armed for delivery (or recovered, a stream range) and deleted from the dead-letter queue."""
    skipped: list[dict[str, Any]]
    """Selected but left in the dead-letter queue, each with its reason."""
    left: int
    """Not selected: left in the dead-letter queue untouched."""

    def lines(self) -> list[str]:
        """The report as text, one line per message after a summary line."""
        return ([f"moved {len(self.moved)}, skipped {len(self.skipped)}, left {self.left}"]
                + [f"  moved   {e['kind']} {e['id'] or '-'}: {e['note']}" for e in self.moved]
                + [f"  skipped {e['kind']} {e['id'] or '-'}: {e['reason']}" for e in self.skipped])

    def to_json(self) -> dict[str, Any]:
        return {"moved": self.moved, "skipped": self.skipped, "left": self.left}


def redrive(*, table_name: str, delayer_queue: str, dead_letter_queue: str, enqueuer_function: str | None = None,
            ids: Iterable[str] | None = None, limit: int | None = None, older_than_seconds: float | None = None,
            newer_than_seconds: float | None = None, group: str | None = None, endpoint_url: str | None = None,
            lambda_endpoint_url: str | None = None, region_name: str | None = None) -> RedriveReport:
    """Send the parked schedules in the dead-letter queue back for delivery (or the selected ones).

    Each parked delivery, and each bare delayer message whose record still holds its token, is
    re-armed (``FAILED`` → ``QUEUED``, a new token, the attempt count kept), sent to the delayer
    queue due at once (same ``dedupeKey``), and only then deleted from the dead-letter queue. A
    stream range is recovered by invoking ``enqueuer_function`` with ``{"recover": <message>}``.
    Run it again after an interruption: each schedule is delivered at most once more.

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
                  recover).run(selection)
    return RedriveReport(run.moved, run.skipped, run.left)


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
