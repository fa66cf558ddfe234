"""Outcome events, typed, for the code an outcomes target runs: ``from cdk_delayed_scheduler.outcome import Outcome``.

Standard library only, as :mod:`cdk_delayed_scheduler.envelope`: a consumer bundles it without aws-cdk-lib,
jsii, boto3 or botocore (``cdk_delayed_scheduler.client`` exports the same classes).

```python
from cdk_delayed_scheduler.outcome import Outcome, OutcomeKind

def consume(event, context):                      # an SQS outcomes queue's consumer: one outcome per record
    for outcome in Outcome.all_from_event(event):
        if outcome.kind in (OutcomeKind.FAILED, OutcomeKind.STALE):
            reopen(outcome.id, because=outcome.reason)
```

An outcome event comes at least once: drop repeats by :attr:`Outcome.repeat_key`, ``(dedupeKey, outcome)``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Mapping

from ._wire import integer, is_envelope, items, only_item, text, time, unwrap

__all__ = ["Outcome", "OutcomeKind"]

WIRE_FIELDS = ("outcome", "id", "target", "dueAt", "dedupeKey", "attempts", "endedAt")
"""The keys every outcome event has (and ``group``, null when the occurrence has none)."""


class OutcomeKind(str, enum.Enum):
    """How an occurrence ended; the values are the events' ``outcome``."""

    DELIVERED = "DELIVERED"
    """Its target answered."""
    FAILED = "FAILED"
    """Parked in the dead-letter queue after its retries (or refused for good by its target)."""
    STALE = "STALE"
    """Its lateness bound (``maxLatenessSeconds``) passed before an attempt could start: never delivered."""
    CANCELLED = "CANCELLED"
    """Cancelled, by itself, by its group, or (a periodic timer's pending occurrence) by a DELETE. Sent only to a
    deployment that asks for it."""


_KIND_FIELDS: dict[OutcomeKind, tuple[str, ...]] = {
    OutcomeKind.DELIVERED: ("firedAt", "latenessMs"), OutcomeKind.FAILED: ("reason",),
    OutcomeKind.STALE: ("reason",), OutcomeKind.CANCELLED: ("reason",)}
"""The keys each kind's event adds to :data:`WIRE_FIELDS` (``answer``, ``lastError`` and ``payload`` may be absent)."""


@dataclass(frozen=True)
class Outcome:
    """How one occurrence (a one-shot schedule, or one occurrence of a periodic timer) ended, as its outcome
    event says.

    ``kind`` how it ended; ``id`` the schedule's (for a periodic occurrence, the timer's); ``group`` its group
    (``None`` without one); ``target`` the name of the target it was for; ``due_at`` when it was due;
    ``dedupe_key`` the occurrence's key, the envelope's ``dedupeKey``; ``attempts`` the delivery attempts
    started; ``ended_at`` when it ended (aware UTC datetimes). A ``DELIVERED`` outcome has ``fired_at`` (when
    the delivery that succeeded started), ``lateness`` (how long after ``due_at``) and ``answer`` (a short
    summary of the target's answer: ``{"messageId"}`` from SQS or SNS, ``{"statusCode", "result"}`` from a
    Lambda function, ``{"status", "body"}`` from an HTTPS endpoint, ...); the other kinds have ``reason``
    (what ``GET /schedules/{id}`` answers as ``lastError``; ``cancelled``, ``group cancelled`` or ``deleted``
    for ``CANCELLED``), and a ``FAILED`` one after a failed attempt ``last_error`` too. ``payload`` is the
    schedule's payload where the deployment sends it (``include_payload``), else ``None``. ``raw`` is the
    event's JSON object as received.
    """

    kind: OutcomeKind
    id: str
    group: str | None
    target: str
    due_at: datetime
    dedupe_key: str
    attempts: int
    ended_at: datetime
    fired_at: datetime | None = None
    lateness: timedelta | None = None
    answer: dict[str, Any] | None = field(default=None, hash=False)
    reason: str | None = None
    last_error: str | None = None
    payload: Any = field(default=None, hash=False)
    raw: dict[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @property
    def repeat_key(self) -> tuple[str, str]:
        """``(dedupe_key, kind)``: the same for every copy of one outcome event, which comes at least once; a
        consumer acts once per key."""
        return self.dedupe_key, self.kind.value

    @classmethod
    def from_event(cls, event: Any) -> "Outcome":
        """The outcome event in one Lambda event or record, whichever target delivered it.

        Takes what :meth:`Envelope.from_event <cdk_delayed_scheduler.envelope.Envelope.from_event>` takes: the
        event itself (an outcomes Lambda function's event, or its JSON text), an SQS or SNS event holding
        exactly one record, one record of either, an EventBridge event (the outcome is its ``detail``), and
        these nested. An event with several records raises ``ValueError``: :meth:`all_from_event` answers one
        per record. Bad input raises ``ValueError`` naming what is missing or malformed, and so does a delivery
        envelope (what a schedule's target receives) given here instead of an outcome event.
        """
        return cls._from_delivery(*only_item(event, "Outcome.all_from_event(event) answers one outcome per record"))

    @classmethod
    def all_from_event(cls, event: Any) -> list["Outcome"]:
        """One outcome per record of an SQS or SNS event, in the records' order; ``[from_event(event)]`` for an
        event that holds one outcome (a Lambda function's, an EventBridge event)."""
        return [cls._from_delivery(value, where) for value, where in items(event)]

    @classmethod
    def from_json(cls, body: Mapping[str, Any], where: str = "the outcome event") -> "Outcome":
        """Build from the outcome event's JSON object (``{"outcome", "id", "group", "target", "dueAt", ...}``)."""
        if "outcome" not in body and is_envelope(body):
            raise ValueError(f"{where} is a delivery envelope (dueAt and dedupeKey but no outcome), not an outcome "
                             "event: Envelope.from_event reads what a schedule's target receives")
        missing = [name for name in WIRE_FIELDS if name not in body]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(missing)} (an outcome event has {', '.join(WIRE_FIELDS)})")
        kind = _kind(body, where)
        missing = [name for name in _KIND_FIELDS[kind] if name not in body]
        if missing:
            raise ValueError(f"{where} is a {kind.value} outcome but lacks {', '.join(missing)}")
        delivered = kind is OutcomeKind.DELIVERED
        return cls(
            kind=kind, id=text(body, "id", where), group=_optional_text(body, "group", where),
            target=text(body, "target", where), due_at=time(body, "dueAt", where),
            dedupe_key=text(body, "dedupeKey", where), attempts=integer(body, "attempts", where, 0),
            ended_at=time(body, "endedAt", where), fired_at=time(body, "firedAt", where) if delivered else None,
            lateness=timedelta(milliseconds=integer(body, "latenessMs", where, 0)) if delivered else None,
            answer=_answer(body, where), reason=_optional_text(body, "reason", where),
            last_error=_optional_text(body, "lastError", where), payload=body.get("payload"), raw=dict(body))

    @classmethod
    def _from_delivery(cls, value: Any, where: str) -> "Outcome":
        found, where = unwrap(value, where, _is_outcome_or_envelope, "outcome (an outcome event)", "outcome event")
        return cls.from_json(found, where)


def _is_outcome_or_envelope(value: Mapping[str, Any]) -> bool:
    """An outcome event, or an envelope given instead, which :meth:`Outcome.from_json` refuses by name."""
    return "outcome" in value or is_envelope(value)


def _kind(body: Mapping[str, Any], where: str) -> OutcomeKind:
    try:
        return OutcomeKind(body["outcome"])
    except (ValueError, TypeError):
        raise ValueError(f"{where}'s outcome must be one of {', '.join(kind.value for kind in OutcomeKind)}, "
                         f"got {body['outcome']!r:.40}") from None


def _optional_text(body: Mapping[str, Any], name: str, where: str) -> str | None:
    """``body[name]``: a non-empty string, or ``None`` when it is absent or null."""
    return None if body.get(name) is None else text(body, name, where)


def _answer(body: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    answer = body.get("answer")
    if answer is not None and not isinstance(answer, Mapping):
        raise ValueError(f"{where}'s answer must be a JSON object, got {type(answer).__name__}")
    return None if answer is None else dict(answer)
