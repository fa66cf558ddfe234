"""The delivery envelope, typed, for the code a target runs: ``from cdk_delayed_scheduler.envelope import Envelope``.

Standard library only: a consumer bundles it without aws-cdk-lib, jsii, boto3 or even botocore
(``cdk_delayed_scheduler.client`` exports the same class).

```python
from cdk_delayed_scheduler.envelope import Envelope

def handler(event, context):                      # a Lambda target: the event is the envelope
    envelope = Envelope.from_event(event)
    settle(envelope.payload["order"], late_by=envelope.lateness)

def consume(event, context):                      # a queue's consumer: one envelope per record
    for envelope in Envelope.all_from_event(event):
        ...
```
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Mapping

from ._wire import parse_time as parse_time  # one of this module's public names
from ._wire import integer, is_envelope, items, only_item, text, time, unwrap

__all__ = ["Envelope"]

WIRE_FIELDS = ("id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target")
"""The envelope's keys on the wire, as the dispatcher builds it."""


@dataclass(frozen=True)
class Envelope:
    """What the scheduler delivers to a target when a schedule (or a periodic occurrence) is due.

    ``id`` is the schedule's (for a periodic occurrence, the timer's); ``due_at`` when it was due and
    ``fired_at`` when this delivery started (aware UTC datetimes, never ``fired_at < due_at``);
    ``attempt`` 1 for the first delivery, 2 for the first retry; ``dedupe_key`` the same for every
    attempt of one schedule or occurrence (drop repeats by it); ``payload`` the JSON value given at
    create; ``target`` the target's name. ``raw`` is the envelope's JSON object as received.
    """

    id: str
    due_at: datetime
    fired_at: datetime
    attempt: int
    dedupe_key: str
    payload: Any = field(hash=False)
    target: str
    raw: dict[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)

    @property
    def lateness(self) -> timedelta:
        """How long after ``due_at`` this delivery started (``fired_at - due_at``)."""
        return self.fired_at - self.due_at

    @classmethod
    def from_event(cls, event: Any) -> "Envelope":
        """The envelope in one Lambda event or record, whichever target delivered it.

        Takes the envelope itself (a Lambda target's event, or its JSON text), an SQS or SNS event
        holding exactly one record, one record of either (``event["Records"][i]``, for a consumer that
        answers partial batch failures), an EventBridge event (the envelope is its ``detail``), and
        these nested (an SNS notification or an EventBridge event in an SQS message's body). An event
        with several records raises ``ValueError``: :meth:`all_from_event` answers one per record.
        Bad input raises ``ValueError`` naming what is missing or malformed.
        """
        return cls._from_delivery(*only_item(event, "Envelope.all_from_event(event) answers one envelope per record"))

    @classmethod
    def all_from_event(cls, event: Any) -> list["Envelope"]:
        """One envelope per record of an SQS or SNS event, in the records' order; ``[from_event(event)]`` for
        an event that holds one envelope (a Lambda target's, an EventBridge event)."""
        return [cls._from_delivery(value, where) for value, where in items(event)]

    @classmethod
    def from_json(cls, body: Mapping[str, Any], where: str = "the envelope") -> "Envelope":
        """Build from the envelope's JSON object (``{"id", "dueAt", "firedAt", "attempt", "dedupeKey", ...}``)."""
        missing = [name for name in WIRE_FIELDS if name not in body]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(missing)} (an envelope has {', '.join(WIRE_FIELDS)})")
        return cls(id=text(body, "id", where), due_at=time(body, "dueAt", where),
                   fired_at=time(body, "firedAt", where), attempt=integer(body, "attempt", where, 1),
                   dedupe_key=text(body, "dedupeKey", where), payload=body["payload"],
                   target=text(body, "target", where), raw=dict(body))

    @classmethod
    def _from_delivery(cls, value: Any, where: str) -> "Envelope":
        found, where = unwrap(value, where, is_envelope, "dueAt and dedupeKey (an envelope)", "envelope")
        return cls.from_json(found, where)
