"""The delivery envelope and the delayer-queue message: their shapes live here only."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .keys import dedupe_key
from .timeparse import format_rfc3339_ms


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

    @property
    def periodic(self) -> bool:
        return self.version is not None

    def to_message_body(self) -> str:
        body: dict = {"id": self.schedule_id, "dueMs": self.due_ms, "token": self.token, "createdMs": self.created_ms}
        if self.version is not None:
            body["v"] = self.version
        if self.attempt:
            body["attempt"] = self.attempt
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_message_body(cls, body: str) -> "TimerRef":
        data = json.loads(body)
        version = data.get("v")
        return cls(schedule_id=str(data["id"]), due_ms=int(data["dueMs"]), token=str(data["token"]),
                   created_ms=int(data["createdMs"]), version=None if version is None else int(version),
                   attempt=int(data.get("attempt", 0)))


def build_envelope(
    schedule_id: str, due_ms: int, fired_ms: int, attempt: int, payload_json: str, target: str
) -> dict:
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
