"""Schedule statuses, periodic definition statuses, the reasons a delivery does not start, and the
transitions between statuses.

A schedule due within the window is sent to the delayer queue at once, so its record is
stored as QUEUED from the start. One due later is stored as SCHEDULED while its timer waits;
once the sweeper has claimed (deleted) the timer, a GET answers QUEUED, derived from the
missing timer, which saves a write per timer on the hot path. FIRED, CANCELLED and FAILED are
stored.

Every enum here is a ``str``: a member equals, hashes, formats, logs and serializes (JSON, DynamoDB
attributes) as its value, so ``Status.FIRED == "FIRED"`` and stored items and answers read the same.
"""

from __future__ import annotations

from enum import Enum


class _Text(str, Enum):
    """A ``str`` enum whose text is its value everywhere (``str()``, f-strings, ``%s``), as Python
    3.11's ``StrEnum``, which the runtime cannot use: it supports Python 3.10."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


class Status(_Text):
    """A one-shot schedule's status."""

    SCHEDULED = "SCHEDULED"
    QUEUED = "QUEUED"
    FIRED = "FIRED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"


SCHEDULED = Status.SCHEDULED
QUEUED = Status.QUEUED
FIRED = Status.FIRED
CANCELLED = Status.CANCELLED
FAILED = Status.FAILED
ALL = tuple(Status)
"""Every status a schedule can show."""
CREATED = (QUEUED, SCHEDULED)
"""The statuses of a schedule just created (201): QUEUED when due within the delay window."""

# Stored statuses from which a cancel succeeds: until delivery starts. (The dispatcher may
# start or restart a delivery from SCHEDULED or FIRED: the store's delivery-start condition.)
CANCELLABLE_STORED = frozenset({SCHEDULED, QUEUED})


class DefinitionStatus(_Text):
    """A periodic definition's status: it makes occurrences, it is paused (``PATCH``: it makes none
    until resumed), it has made its last one (``endAt``), it was deleted (a tombstone until its history
    expires)."""

    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    ENDED = "ENDED"
    DELETED = "DELETED"


class Refusal(_Text):
    """Why a delayer message does not start a delivery now; the value is the text logs show. What the
    dispatcher does with the message is :data:`ON_REFUSAL`'s (a START_DEADLINE_PASSED occurrence is sent again
    as its attempt's own message)."""

    MISSING = "missing"
    """No record (no definition): not written yet, or never (the create that sent the message failed)."""
    RECORD_NOT_WRITTEN_YET = "record not written yet"
    """MISSING while the create that sent the message may still write its record."""
    GROUP_CANCELLED = "group cancelled"
    """The schedule's (periodic timer's) group was cancelled after it was created, before its delivery started."""
    STRAY = "stray"
    """The record (definition) holds another token: a replay's, a conflicting create's, a replacement's."""
    DUPLICATE = "duplicate"
    """Another message with the token of a delivery already started (an ambiguous send made two)."""
    SUPERSEDED = "superseded"
    """A periodic occurrence whose advance was refused: the definition was deleted or replaced meanwhile."""
    DELETED_OR_REPLACED = "deleted or replaced"
    """A retry of a periodic occurrence whose definition was deleted or replaced."""
    PREDECESSOR_PENDING = "predecessor pending"
    """A periodic occurrence whose predecessor's advance has not landed yet: put back, not dropped."""
    START_DEADLINE_PASSED = "start deadline passed"
    """A periodic occurrence allowed too long before its target call: started again at once."""
    WAITING_FOR_ROOM = "waiting for room"
    """Its target has limits (``flowControl``) and it holds no start slot yet: it takes one, and waits for it."""
    # The record's status: the schedule was cancelled, or its delivery has failed for good.
    CANCELLED = Status.CANCELLED.value
    FAILED = Status.FAILED.value
    # The definition's status: deleted, paused, or ended (only its last occurrence's retries are left).
    DELETED = DefinitionStatus.DELETED.value
    PAUSED = DefinitionStatus.PAUSED.value
    ENDED = DefinitionStatus.ENDED.value


class Action(_Text):
    """What the dispatcher does with a message refused a start (:data:`ON_REFUSAL`)."""

    PUT_BACK = "put back"
    """Sent again, a little later (:func:`put_back_seconds`): what refused it may pass."""
    DROP_AS_STRAY = "drop as stray"
    """Dropped and logged as a stray: another message, or none, is the schedule's."""
    NOT_DELIVERED = "not delivered"
    """Dropped: the schedule ended otherwise (cancelled, failed, deleted, paused, ended)."""


ON_REFUSAL: dict[Refusal, Action] = {
    Refusal.RECORD_NOT_WRITTEN_YET: Action.PUT_BACK,
    Refusal.PREDECESSOR_PENDING: Action.PUT_BACK,
    Refusal.MISSING: Action.DROP_AS_STRAY,
    Refusal.STRAY: Action.DROP_AS_STRAY,
    Refusal.DUPLICATE: Action.DROP_AS_STRAY,
}
"""The action for each refusal the dispatcher puts back or drops as a stray; every other one is not delivered.
(MISSING is RECORD_NOT_WRITTEN_YET while the create that sent the message may still write its record.)"""


def put_back_seconds(refusal: Refusal, due_ms: int, now_ms: int) -> int:
    """How long a message put back for ``refusal`` waits: a second for a record or definition not written yet;
    for an occurrence whose predecessor is pending, about as long as it is late already (at most a minute), so
    each send comes about twice as late as the one before, a few sends in all."""
    if refusal is Refusal.PREDECESSOR_PENDING:
        return min(60, max(1, (now_ms - due_ms) // 1000))
    return 1


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
