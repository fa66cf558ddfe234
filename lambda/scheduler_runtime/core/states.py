"""Schedule statuses and the transitions between them.

The record stores SCHEDULED, FIRED, CANCELLED or FAILED. QUEUED is derived:
a SCHEDULED record whose timer has been claimed (deleted) is in the delayer
queue. Deriving it saves a write per timer on the hot path.
"""

from __future__ import annotations

SCHEDULED = "SCHEDULED"
QUEUED = "QUEUED"
FIRED = "FIRED"
CANCELLED = "CANCELLED"
FAILED = "FAILED"

# Stored statuses from which a cancel succeeds: until delivery starts. (The dispatcher may
# start or restart a delivery from SCHEDULED or FIRED: the store's delivery-start condition.)
CANCELLABLE_STORED = frozenset({SCHEDULED})


def visible_status(stored_status: str, timer_pending: bool) -> str:
    """The status a GET answers, given the stored one and whether the timer still waits."""
    if stored_status == SCHEDULED and not timer_pending:
        return QUEUED
    return stored_status


def cancel_outcome(stored_status: str) -> str:
    """What a cancel request does for a record in ``stored_status``.

    ``"cancel"`` to apply it, ``"already"`` when it was already cancelled
    (idempotent success), ``"conflict"`` when delivery started or ended.
    """
    if stored_status in CANCELLABLE_STORED:
        return "cancel"
    if stored_status == CANCELLED:
        return "already"
    return "conflict"
