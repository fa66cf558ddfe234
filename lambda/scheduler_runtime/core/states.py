"""Schedule statuses and the transitions between them.

A schedule due within the window is sent to the delayer queue at once, so its record is
stored as QUEUED from the start. One due later is stored as SCHEDULED while its timer waits;
once the sweeper has claimed (deleted) the timer, a GET answers QUEUED, derived from the
missing timer, which saves a write per timer on the hot path. FIRED, CANCELLED and FAILED are
stored.
"""

from __future__ import annotations

SCHEDULED = "SCHEDULED"
QUEUED = "QUEUED"
FIRED = "FIRED"
CANCELLED = "CANCELLED"
FAILED = "FAILED"
ALL = (SCHEDULED, QUEUED, FIRED, CANCELLED, FAILED)
"""Every status a schedule can show."""
CREATED = (QUEUED, SCHEDULED)
"""The statuses of a schedule just created (201): QUEUED when due within the delay window."""

# Stored statuses from which a cancel succeeds: until delivery starts. (The dispatcher may
# start or restart a delivery from SCHEDULED or FIRED: the store's delivery-start condition.)
CANCELLABLE_STORED = frozenset({SCHEDULED, QUEUED})


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
