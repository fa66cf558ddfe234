"""The ways a delivery to a target fails, shared by every deliverer (``targets`` re-exports them)."""

from __future__ import annotations


class DeliveryError(Exception):
    """The target refused or failed the delivery; the message says why."""


class Undeliverable(DeliveryError):
    """The target refuses this envelope for good (retrying cannot help): park it now, with the reason."""


class Throttled(DeliveryError):
    """The target said slow down (an HTTPS 429 or 503, a throttling error of its service): a target with flow
    control is held back for ``retry_after_seconds`` (when it said) or a backoff, and the attempt is not spent."""

    def __init__(self, message: str, retry_after_seconds: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds
