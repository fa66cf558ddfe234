"""What the kit's targets received: :class:`Delivery`, and the recording targets behind each name."""

from __future__ import annotations

import json
import threading
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Mapping

from ..envelope import Envelope
from ._mock_aws import mock_aws_hint

LambdaHandler = Callable[[dict[str, Any], Any], Any]
"""A Lambda-style target: called as ``handler(envelope, None)``; raising is a failed delivery."""


@dataclass(frozen=True)
class WebhookRequest:
    """A request an ``HttpsTarget`` sent: what its URL would have received, taken by the kit in its place."""

    method: str
    url: str
    """The target's URL, as configured."""
    headers: Mapping[str, str]
    """As sent (``Scheduler-Signature`` and the others of the runtime, the target's own ``headers``), ``Host`` the
    URL's."""
    body: bytes
    """The raw body, exactly the bytes signed: ``verify_signature(request.body, request.headers, secret)``."""

    @property
    def envelope(self) -> Envelope:
        """The envelope the body carries."""
        return Envelope.from_json(json.loads(self.body))


@dataclass(frozen=True)
class Delivery:
    """One delivery a target received, in the order they arrived."""

    target: str
    """The target's name (``default`` unless the schedule named another)."""
    envelope: Envelope
    """The envelope, typed (``envelope.raw`` is the JSON object as received)."""
    received_at: datetime
    """When the target received it, on the kit's clock (which :meth:`LocalScheduler.advance` moves)."""
    error: str | None = None
    """Why the delivery failed: what a Lambda-style target's handler raised, or what the kit answered an
    ``HttpsTarget`` (``"answered 503"``) when it was not a 2xx."""
    sqs_record: dict[str, Any] | None = field(default=None, repr=False)
    """For a queue target: the message as a Lambda SQS event record, to hand a consumer as
    ``{"Records": [d.sqs_record for d in deliveries]}``."""
    request: WebhookRequest | None = field(default=None, repr=False)
    """For an ``HttpsTarget`` the kit receives: the signed request, as its URL would have received it."""

    @property
    def id(self) -> str:
        return self.envelope.id

    @property
    def payload(self) -> Any:
        return self.envelope.payload

    @property
    def due_at(self) -> datetime:
        return self.envelope.due_at

    @property
    def lateness(self) -> timedelta:
        """How long after ``due_at`` the target received it (never negative: nothing is delivered early)."""
        return self.received_at - self.envelope.due_at


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


class DeliveryLog:
    """Every delivery of every target, in arrival order."""

    def __init__(self, now_ms: Callable[[], int]) -> None:
        self.now_ms = now_ms
        """The kit's clock, in epoch milliseconds."""
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._executions_read: set[str] = set()
        self._warned = False

    def add(self, target: str, envelope: dict[str, Any], received_ms: int | None = None, error: str | None = None,
            sqs_record: dict[str, Any] | None = None, request: WebhookRequest | None = None) -> None:
        received = _at(self.now_ms() if received_ms is None else received_ms)
        delivery = Delivery(target, Envelope.from_event(envelope), received, error, sqs_record, request)
        with self._lock:
            self._deliveries.append(delivery)

    def of(self, target: str | None) -> list[Delivery]:
        with self._lock:
            return [d for d in self._deliveries if target is None or d.target == target]

    def lambda_target(self, name: str, handler: LambdaHandler | None) -> Callable[[dict[str, Any]], Any]:
        """The engine's local function for target ``name``: records each envelope, then runs ``handler``."""

        def deliver(envelope: dict[str, Any]) -> Any:
            received_ms = self.now_ms()
            try:
                result = handler(envelope, None) if handler is not None else None
            except Exception as exc:
                hint = mock_aws_hint(exc, name)
                error = f"{type(exc).__name__}: {exc}"
                self.add(name, envelope, received_ms, error=f"{error} ({hint})" if hint else error)
                if hint:
                    self._warn_once(hint)
                raise
            self.add(name, envelope, received_ms)
            return result

        return deliver

    def _warn_once(self, hint: str) -> None:
        """A warning (once a scheduler) that the test's output shows, beside the delivery's error."""
        with self._lock:
            warned, self._warned = self._warned, True
        if not warned:
            try:
                warnings.warn(hint, UserWarning, stacklevel=1)
            except UserWarning:  # warnings made errors: raised in the engine's thread, it would reach no test
                pass

    def drain_queue(self, name: str, sqs: Any, queue_url: str, queue_arn: str) -> None:
        """Receive and delete every message of a queue target, recorded with its SQS record."""
        from ..local.pollers import lambda_sqs_record  # noqa: PLC0415
        from ..local.resources import REGION  # noqa: PLC0415

        while True:
            messages = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0,
                                           AttributeNames=["All"], MessageAttributeNames=["All"]).get("Messages", [])
            if not messages:
                return
            for message in messages:
                record = lambda_sqs_record(message, queue_arn, REGION)
                self.add(name, json.loads(message["Body"]), int(message["Attributes"]["SentTimestamp"]),
                         sqs_record=record)
            sqs.delete_message_batch(QueueUrl=queue_url, Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)])

    def read_executions(self, name: str, stepfunctions: Any, state_machine_arn: str) -> None:
        """Record each execution of a state machine target not recorded yet, in the order they started."""
        from ..local.named_targets import executions  # noqa: PLC0415

        for execution in executions(stepfunctions, state_machine_arn, frozenset(self._executions_read)):
            self._executions_read.add(execution.arn)
            self.add(name, execution.envelope, execution.started_ms)
