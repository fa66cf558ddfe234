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

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Mapping

__all__ = ["Envelope"]

WIRE_FIELDS = ("id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target")
"""The envelope's keys on the wire, as the dispatcher builds it."""
_WRAPPERS = 4
"""How many wrappers deep an envelope may sit: an SNS notification in an SQS record's body is two."""
_NOT_A_DELIVERY = ("has none of dueAt and dedupeKey (an envelope), body (an SQS record), Sns (an SNS record), "
                   "Message (an SNS notification) or detail (an EventBridge event)")


def parse_time(value: Any) -> datetime | None:
    """An aware UTC ``datetime`` from the wire's RFC 3339 text (``None`` stays ``None``)."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


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
        records = _records(event)
        if records is None:
            return cls._from_delivery(event, "event")
        if len(records) != 1:
            raise ValueError(f"the event holds {len(records)} records, not one: Envelope.all_from_event(event) "
                             "answers one envelope per record")
        return cls._from_delivery(records[0], "event.Records[0]")

    @classmethod
    def all_from_event(cls, event: Any) -> list["Envelope"]:
        """One envelope per record of an SQS or SNS event, in the records' order; ``[from_event(event)]`` for
        an event that holds one envelope (a Lambda target's, an EventBridge event)."""
        records = _records(event)
        if records is None:
            return [cls._from_delivery(event, "event")]
        return [cls._from_delivery(record, f"event.Records[{index}]") for index, record in enumerate(records)]

    @classmethod
    def from_json(cls, body: Mapping[str, Any], where: str = "the envelope") -> "Envelope":
        """Build from the envelope's JSON object (``{"id", "dueAt", "firedAt", "attempt", "dedupeKey", ...}``)."""
        missing = [name for name in WIRE_FIELDS if name not in body]
        if missing:
            raise ValueError(f"{where} lacks {', '.join(missing)} (an envelope has {', '.join(WIRE_FIELDS)})")
        attempt = body["attempt"]
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1:
            raise ValueError(f"{where}'s attempt must be an integer >= 1, got {attempt!r:.40}")
        return cls(id=_text(body, "id", where), due_at=_time(body, "dueAt", where),
                   fired_at=_time(body, "firedAt", where), attempt=attempt,
                   dedupe_key=_text(body, "dedupeKey", where), payload=body["payload"],
                   target=_text(body, "target", where), raw=dict(body))

    @classmethod
    def _from_delivery(cls, value: Any, where: str) -> "Envelope":
        for _ in range(_WRAPPERS + 1):
            value = _json_object(value, where)
            if "dueAt" in value or "dedupeKey" in value:
                return cls.from_json(value, where)
            value, where = _inner(value, where)
        raise ValueError(f"{where}: no envelope within {_WRAPPERS} wrappers")


def _records(event: Any) -> list[Any] | None:
    """An SQS or SNS event's records; ``None`` for an event that is not a batch."""
    if not isinstance(event, Mapping) or "Records" not in event:
        return None
    records = event["Records"]
    if not isinstance(records, list) or not records:
        raise ValueError("the event's Records must be a non-empty list (an SQS or SNS event)")
    return records


def _json_object(value: Any, where: str) -> Mapping[str, Any]:
    if isinstance(value, (str, bytes, bytearray)):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{where} is not JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _inner(value: Mapping[str, Any], where: str) -> tuple[Any, str]:
    """What one wrapper (an SQS record, an SNS record or notification, an EventBridge event) holds."""
    if "Sns" in value:
        sns = _json_object(value["Sns"], f"{where}.Sns")
        if "Message" not in sns:
            raise ValueError(f"{where}.Sns lacks Message (an SNS record's message)")
        return sns["Message"], f"{where}.Sns.Message"
    for name in ("body", "Message", "detail"):
        if name in value:
            return value[name], f"{where}.{name}"
    raise ValueError(f"{where} {_NOT_A_DELIVERY}")


def _text(body: Mapping[str, Any], name: str, where: str) -> str:
    value = body[name]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}'s {name} must be a non-empty string, got {value!r:.40}")
    return value


def _time(body: Mapping[str, Any], name: str, where: str) -> datetime:
    text = _text(body, name, where)
    try:
        parsed = parse_time(text)
    except ValueError as exc:
        raise ValueError(f"{where}'s {name} must be an RFC 3339 time, got {text!r:.40}: {exc}") from None
    assert parsed is not None  # parse_time answers None for None only
    return parsed
