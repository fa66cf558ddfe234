"""The delivery envelope and the delayer-queue message: their shapes live here only, with the tag
that tells one delayer message from another."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from .flow import Ticket
from .keys import dedupe_key
from .timeparse import format_rfc3339_ms

# What SQS refuses in a message body or a string attribute: anything outside #x9 | #xA | #xD |
# #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF. In valid JSON text that leaves the noncharacters
# U+FFFE and U+FFFF (and lone surrogates, which a payload never holds: it must encode as UTF-8).
_SQS_REFUSED = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class TimerRef:
    """What travels through the delayer queue: a reference and a token, never the payload.

    ``token`` is the create attempt's token: the dispatcher starts a delivery only when the
    record holds the same one. ``created_ms`` is when that attempt began, so a message whose
    record is missing can be told apart (still being written, or a stray).

    The dispatcher reads the payload in the same conditional write that starts the delivery,
    so the queue message stays small whatever the payload size, and a cancel is always seen.
    """

    schedule_id: str
    due_ms: int
    token: str
    created_ms: int
    version: int | None = None
    """Set for an occurrence of a periodic timer: the version of the definition that armed it."""
    attempt: int = 0
    """Set (>= 1) on a periodic occurrence whose delivery has started: the attempt it carries."""
    ticket: Ticket | None = None
    """Set on a message put back to wait for room on a limited target (:mod:`.flow`)."""

    @property
    def periodic(self) -> bool:
        return self.version is not None

    def to_message_body(self) -> str:
        body: dict[str, Any] = {"id": self.schedule_id, "dueMs": self.due_ms, "token": self.token, "createdMs": self.created_ms}
        if self.version is not None:
            body["v"] = self.version
        if self.attempt:
            body["attempt"] = self.attempt
        if self.ticket is not None:
            body["room"] = self.ticket.to_json()
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_message_body(cls, body: str) -> "TimerRef":
        return cls.from_json(json.loads(body))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TimerRef":
        """A reference from its message body's JSON (:meth:`to_message_body`)."""
        version, room = data.get("v"), data.get("room")
        return cls(schedule_id=str(data["id"]), due_ms=int(data["dueMs"]), token=str(data["token"]),
                   created_ms=int(data["createdMs"]), version=None if version is None else int(version),
                   attempt=int(data.get("attempt", 0)), ticket=None if room is None else Ticket.from_json(room))


def message_tag(message_id: str) -> bytes:
    """Eight bytes that tell one SQS message from another (a hash of its ``messageId``).

    SQS keeps a message's id across its redeliveries and gives every send a new one, so the tag tells
    a retry (the same message again) from a duplicate (another message with the same token). Eight
    binary bytes instead of the 36-character id: the write that keeps it grows by 13 bytes, not 41.
    """
    return hashlib.blake2b(message_id.encode("utf-8"), digest_size=8).digest()


def build_envelope(
    schedule_id: str, due_ms: int, fired_ms: int, attempt: int, payload_json: str, target: str
) -> dict[str, Any]:
    """``{"id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target"}``."""
    return {
        "id": schedule_id,
        "dueAt": format_rfc3339_ms(due_ms),
        "firedAt": format_rfc3339_ms(fired_ms),
        "attempt": attempt,
        "dedupeKey": dedupe_key(schedule_id, due_ms),
        "payload": json.loads(payload_json),
        "target": target,
    }


def sqs_safe_json(value: Any) -> str:
    """Compact JSON of ``value`` that SQS accepts as a message body, whatever strings it holds.

    JSON text escapes control characters already; what SQS still refuses (U+FFFE, U+FFFF) can
    only stand inside a string, so it is written as its ``\\uXXXX`` escape: the same JSON value
    for the receiver, 6 bytes instead of 3 for each such character. Every other character stays
    UTF-8, so non-ASCII text does not grow (``ensure_ascii`` would make it up to three times
    larger, and a payload near the size limit would no longer fit a message). An ASCII body,
    the common case, is returned after one ``isascii`` check.
    """
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if text.isascii():
        return text
    return _SQS_REFUSED.sub(lambda refused: f"\\u{ord(refused.group()):04x}", text)


def sqs_safe_text(text: str) -> str:
    """``text`` as an SQS string attribute can hold it: each character SQS refuses becomes U+FFFD."""
    return text if text.isascii() and text.isprintable() else _SQS_REFUSED.sub("\ufffd", text)
