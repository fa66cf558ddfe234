"""The two ways a delivery to a target fails, shared by every deliverer (``targets`` re-exports both)."""

from __future__ import annotations


class DeliveryError(Exception):
    """The target refused or failed the delivery; the message says why."""


class Undeliverable(DeliveryError):
    """The target refuses this envelope for good (retrying cannot help): park it now, with the reason."""
