"""Reading what the scheduler sends out of the event a consumer receives: the shared, standard-library-only part of
:mod:`cdk_delayed_scheduler.envelope` and :mod:`cdk_delayed_scheduler.outcome`.

Both a delivery envelope and an outcome event reach their consumer the same ways: as a Lambda function's event, an
SQS record's body, an SNS record's or notification's ``Message``, an EventBridge event's ``detail``, or nested (an
SNS notification or an EventBridge event in an SQS message's body). :func:`unwrap` peels those wrappers off until
it meets the object a caller looks for; the other functions read one field each, naming where a bad one sits.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

WRAPPERS = 4
"""How many wrappers deep an object may sit: an SNS notification in an SQS record's body is two."""
_WRAPPER_NAMES = "body (an SQS record), Sns (an SNS record), Message (an SNS notification) or detail (an EventBridge event)"


def parse_time(value: Any) -> datetime | None:
    """An aware UTC ``datetime`` from the wire's RFC 3339 text (``None`` stays ``None``)."""
    if value is None:
        return None
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).astimezone(timezone.utc)


def items(event: Any) -> list[tuple[Any, str]]:
    """What ``event`` holds, each with where it sits: one per record of an SQS or SNS event
    (``event.Records[1]``), else the event itself (``event``)."""
    if not isinstance(event, Mapping) or "Records" not in event:
        return [(event, "event")]
    found = event["Records"]
    if not isinstance(found, list) or not found:
        raise ValueError("the event's Records must be a non-empty list (an SQS or SNS event)")
    return [(record, f"event.Records[{index}]") for index, record in enumerate(found)]


def only_item(event: Any, instead: str) -> tuple[Any, str]:
    """The one item :func:`items` finds in ``event``; for several records a ``ValueError`` that says ``instead``
    (the call that answers one per record)."""
    found = items(event)
    if len(found) != 1:
        raise ValueError(f"the event holds {len(found)} records, not one: {instead}")
    return found[0]


def unwrap(value: Any, where: str, is_it: Callable[[Mapping[str, Any]], bool], looked_for: str,
           noun: str) -> tuple[Mapping[str, Any], str]:
    """The first JSON object, from ``value`` inward through at most :data:`WRAPPERS` wrappers, that ``is_it``
    accepts, and where it sits (``event.Records[0].body.Message``). ``looked_for`` names the fields ``is_it``
    looks for (``"outcome (an outcome event)"``) and ``noun`` what it is, for the errors."""
    for _ in range(WRAPPERS + 1):
        value = json_object(value, where)
        if is_it(value):
            return value, where
        value, where = _inner(value, where, looked_for)
    raise ValueError(f"{where}: no {noun} within {WRAPPERS} wrappers")


def is_envelope(value: Mapping[str, Any]) -> bool:
    """Whether ``value`` is (or claims to be) a delivery envelope: it has ``dueAt`` or ``dedupeKey``."""
    return "dueAt" in value or "dedupeKey" in value


def json_object(value: Any, where: str) -> Mapping[str, Any]:
    """``value`` as a JSON object: parsed when it is JSON text; ``ValueError`` naming ``where`` otherwise."""
    if isinstance(value, (str, bytes, bytearray)):
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise ValueError(f"{where} is not JSON: {exc}") from None
    if not isinstance(value, Mapping):
        raise ValueError(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _inner(value: Mapping[str, Any], where: str, looked_for: str) -> tuple[Any, str]:
    """What one wrapper (an SQS record, an SNS record or notification, an EventBridge event) holds."""
    if "Sns" in value:
        sns = json_object(value["Sns"], f"{where}.Sns")
        if "Message" not in sns:
            raise ValueError(f"{where}.Sns lacks Message (an SNS record's message)")
        return sns["Message"], f"{where}.Sns.Message"
    for name in ("body", "Message", "detail"):
        if name in value:
            return value[name], f"{where}.{name}"
    raise ValueError(f"{where} has none of {looked_for}, {_WRAPPER_NAMES}")


def text(body: Mapping[str, Any], name: str, where: str) -> str:
    """``body[name]``, a non-empty string."""
    value = body[name]
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}'s {name} must be a non-empty string, got {value!r:.40}")
    return value


def integer(body: Mapping[str, Any], name: str, where: str, minimum: int) -> int:
    """``body[name]``, an integer (not a bool) of at least ``minimum``."""
    value = body[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{where}'s {name} must be an integer >= {minimum}, got {value!r:.40}")
    return value


def time(body: Mapping[str, Any], name: str, where: str) -> datetime:
    """``body[name]``, an RFC 3339 time, as an aware UTC ``datetime``."""
    value = text(body, name, where)
    try:
        parsed = parse_time(value)
    except ValueError as exc:
        raise ValueError(f"{where}'s {name} must be an RFC 3339 time, got {value!r:.40}: {exc}") from None
    assert parsed is not None  # parse_time answers None for None only
    return parsed
