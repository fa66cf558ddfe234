"""The outcome events the kit keeps: every kind, each once, in the order they arrived."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..outcome import Outcome


class OutcomeLog:
    """The kit's outcomes target (a Lambda-style one of the engine's, called with each outcome event): keeps each
    event the first time its ``(dedupeKey, outcome)`` arrives, since an outcome event comes at least once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[dict[str, Any]] = []
        self._seen: set[tuple[str, str]] = set()

    def __call__(self, event: dict[str, Any]) -> None:
        key = (str(event.get("dedupeKey")), str(event.get("outcome")))
        with self._lock:
            if key not in self._seen:
                self._seen.add(key)
                self._events.append(event)

    def kinds(self, schedule_id: str) -> list[str]:
        """The outcome kinds of ``schedule_id``'s occurrences, in arrival order."""
        with self._lock:
            return [event["outcome"] for event in self._events if event.get("id") == schedule_id]

    def events(self, schedule_id: str | None = None) -> list[Outcome]:
        """The outcome events, typed, in arrival order: ``schedule_id``'s, or (``None``) every one."""
        from ..outcome import Outcome  # noqa: PLC0415

        with self._lock:
            kept = [event for event in self._events if schedule_id is None or event.get("id") == schedule_id]
        return [Outcome.from_json(event) for event in kept]
