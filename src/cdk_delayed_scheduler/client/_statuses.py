"""The statuses the scheduler answers, as ``str``-valued enums the client exports.

Each member is its text everywhere (``==``, hashing, ``str()``, f-strings, JSON), so
``schedule.status == "FIRED"`` holds as well as ``schedule.status is ScheduleStatus.FIRED``. A
status a newer server answers that this client does not know is kept as the plain ``str`` it sent,
never an exception: fields typed ``ScheduleStatus | str`` hold a member, or the unknown text.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar, Union


class _Text(str, Enum):
    """A ``str`` enum whose text is its value in ``str()`` and formatting too (3.11's ``StrEnum`` on 3.10)."""

    def __str__(self) -> str:
        return str.__str__(self)

    def __format__(self, spec: str) -> str:
        return str.__format__(self, spec)


class ScheduleStatus(_Text):
    """A one-shot schedule's status."""

    SCHEDULED = "SCHEDULED"
    """Due beyond the delay window: a timer waits for the sweeper."""
    QUEUED = "QUEUED"
    """In the delayer queue, to be delivered when due."""
    FIRED = "FIRED"
    """Its delivery started (and, while ``attempts`` grows, is being retried)."""
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    """Every delivery attempt failed; ``last_error`` says why."""


class PeriodicStatus(_Text):
    """A periodic timer's status."""

    ACTIVE = "ACTIVE"
    """Makes occurrences."""
    PAUSED = "PAUSED"
    """Paused (``pause_periodic``): makes none until ``resume_periodic``."""
    ENDED = "ENDED"
    """Past ``end_at``: it made its last occurrence."""
    DELETED = "DELETED"
    """Deleted: what ``delete_periodic`` answers."""


class TargetState(_Text):
    """A target's state (``get_target``): pausing needs the target's ``flow_control``."""

    ACTIVE = "ACTIVE"
    """Deliveries to it start, within its limits."""
    PAUSED = "PAUSED"
    """Paused (``pause_target``): no delivery to it starts until ``resume_target``; none is dropped."""


E = TypeVar("E", bound=_Text)
ScheduleStatusText = Union[ScheduleStatus, str]
"""A :class:`ScheduleStatus`, or the text of one this client does not know."""
PeriodicStatusText = Union[PeriodicStatus, str]
"""A :class:`PeriodicStatus`, or the text of one this client does not know."""
TargetStateText = Union[TargetState, str]
"""A :class:`TargetState`, or the text of one this client does not know."""


def known(kind: type[E], value: object) -> E | str:
    """``value`` as a member of ``kind`` when it names one, else as the text it is."""
    text = str(value)
    try:
        return kind(text)
    except ValueError:
        return text


def removed_status(value: object) -> ScheduleStatus | PeriodicStatus | str:
    """A cancel's ``CANCELLED`` or a periodic delete's ``DELETED`` (or an unknown text, kept)."""
    status = known(ScheduleStatus, value)
    return status if isinstance(status, ScheduleStatus) else known(PeriodicStatus, value)
