"""Redrive from the dead-letter queue, the decisions: what a dead-letter message is, whether a run
takes it, and what to do with the schedule record it names (:mod:`..aws.redrive` makes the calls).

Three kinds of message sit in the dead-letter queue (docs/runtime.md, "How a parked schedule is
found" and "Stream recovery"):

- a *parked delivery*: the dispatcher's envelope (``id``, ``dedupeKey``, ``attempt``, usually
  ``payload``) with the ``reason`` attribute, parked after the schedule's record was marked FAILED;
- a *bare delayer message*: ``{"id", "dueMs", "token", "createdMs"}`` (``"v"`` for a periodic
  occurrence) that SQS's redrive parked when the receives ran out without the dispatcher's verdict;
- a *stream range*: the enqueuer mapping's on-failure message (``DDBStreamBatchInfo``);
- a *group sweep* that ran out of receives, and an *outcome event* its target never took (``{"outcome": ...}``,
  with a ``reason`` starting ``outcome``): a run sends either back to the delayer queue as it is.

A schedule is re-armed by one conditional write (:func:`decide` says whether, the store repeats the
condition): QUEUED with a new token, the attempt count kept, and ``redriveMsg``, the tag of the
dead-letter message that re-armed it. The new token makes every older message for the schedule a
stray; the tag lets a run that stopped between that write and the send find its own work again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from . import states
from .groups import SWEEP_MARKER
from .outcomes import MARKER as OUTCOME_MARKER


class Kind(str, Enum):
    PARKED = "parked delivery"
    BARE = "bare delayer message"
    STREAM_RANGE = "stream range"
    GROUP_SWEEP = "group sweep"
    OUTCOME = "outcome event"
    UNKNOWN = "unknown message"

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class DeadLetter:
    """One message received from the dead-letter queue, read."""

    message_id: str
    receipt_handle: str
    body: str
    kind: Kind
    sent_ms: int
    schedule_id: str | None = None
    due_ms: int | None = None
    attempt: int | None = None
    """A parked delivery's ``attempt``: the record's ``attempts`` when it was parked."""
    token: str | None = None
    """A bare message's token."""
    periodic: bool = False
    """A bare message of a periodic occurrence (``"v"``)."""
    group: str | None = None
    """A group sweep's group, an outcome event's."""


def read_message(message: dict[str, Any]) -> DeadLetter:
    """A received SQS message (``ReceiveMessage``'s ``Messages`` entry, with ``SentTimestamp``) as a :class:`DeadLetter`."""
    body = message.get("Body", "")
    sent_ms = int(message.get("Attributes", {}).get("SentTimestamp", 0))
    base = {"message_id": message["MessageId"], "receipt_handle": message["ReceiptHandle"], "body": body,
            "sent_ms": sent_ms}
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return DeadLetter(kind=Kind.UNKNOWN, **base)
    if isinstance(data.get(SWEEP_MARKER), str):  # a cancelled group's clean-up, parked after its receives ran out
        return DeadLetter(kind=Kind.GROUP_SWEEP, group=data[SWEEP_MARKER], **base)
    if isinstance(data.get(OUTCOME_MARKER), dict):  # an outcome event its target never took
        outcome = data[OUTCOME_MARKER]
        schedule_id, _, due = str(outcome.get("dedupeKey", "")).rpartition("@")
        if schedule_id and due.isdigit():
            group = outcome.get("group")
            return DeadLetter(kind=Kind.OUTCOME, schedule_id=schedule_id, due_ms=int(due),
                              group=group if isinstance(group, str) else None, **base)
        return DeadLetter(kind=Kind.UNKNOWN, **base)
    if isinstance(data.get("DDBStreamBatchInfo"), dict):
        return DeadLetter(kind=Kind.STREAM_RANGE, **base)
    try:
        if "token" in data:
            return DeadLetter(kind=Kind.BARE, schedule_id=str(data["id"]), due_ms=int(data["dueMs"]),
                              token=str(data["token"]), periodic="v" in data, **base)
        if "dedupeKey" in data:
            schedule_id, _, due = str(data["dedupeKey"]).rpartition("@")
            if schedule_id != str(data["id"]):
                raise ValueError("dedupeKey does not name the id")
            return DeadLetter(kind=Kind.PARKED, schedule_id=schedule_id, due_ms=int(due),
                              attempt=int(data["attempt"]), **base)
    except (KeyError, TypeError, ValueError):
        pass
    return DeadLetter(kind=Kind.UNKNOWN, **base)


@dataclass(frozen=True)
class Selection:
    """Which dead-letter messages a run takes; the rest are left in the queue.

    ``ids``: only the messages naming one of these schedules (a stream range names none, so it is left).
    ``limit``: take at most this many messages. ``older_than_ms`` / ``newer_than_ms``: only messages
    sent to the dead-letter queue at least / at most this long ago (SQS's ``SentTimestamp``: for a
    bare message SQS's redrive parked, when it was first sent to the delayer queue). ``group``: only the
    schedules of this group (:meth:`in_group`, told once the schedule's record is read: a parked message
    does not carry its group; a stream range is left).
    """

    ids: frozenset[str] | None = None
    limit: int | None = None
    older_than_ms: int | None = None
    newer_than_ms: int | None = None
    group: str | None = None

    def __post_init__(self) -> None:
        for name in ("limit", "older_than_ms", "newer_than_ms"):
            value = getattr(self, name)
            if value is not None and value < (1 if name == "limit" else 0):
                raise ValueError(f"{name} must be {'>= 1' if name == 'limit' else '>= 0'}, got {value}")

    def in_group(self, record_group: str | None) -> bool:
        """Whether a schedule whose record names ``record_group`` is in the selected group (any, without one)."""
        return self.group is None or record_group == self.group

    def takes(self, letter: DeadLetter, now_ms: int) -> bool:
        if self.ids is not None and letter.schedule_id not in self.ids:
            return False
        if self.group is not None and letter.kind is Kind.STREAM_RANGE:
            return False
        if letter.kind in (Kind.GROUP_SWEEP, Kind.OUTCOME) and self.group not in (None, letter.group):
            return False
        age = now_ms - letter.sent_ms
        if self.older_than_ms is not None and age < self.older_than_ms:
            return False
        return self.newer_than_ms is None or age <= self.newer_than_ms


@dataclass(frozen=True)
class Rearm:
    """Re-arm the schedule: QUEUED with a new token (the write's condition is :func:`rearm_condition`'s)."""

    again: bool
    """True when this message re-armed it already (a run that stopped before its delete)."""


@dataclass(frozen=True)
class Done:
    """This message re-armed the schedule before and its new delivery started: delete the message."""

    status: str


@dataclass(frozen=True)
class Skip:
    reason: str


REARMABLE_FROM_BARE = (states.FAILED, states.FIRED, states.QUEUED, states.SCHEDULED)
"""A bare message's record, holding its token: FAILED (the park's own send failed), FIRED (the last
receive was cut short: maybe delivered, so a redrive may deliver once more under the same ``dedupeKey``),
QUEUED or SCHEDULED (throttling kept it from the dispatcher)."""


def decide(letter: DeadLetter, record: dict[str, Any] | None, tag: bytes) -> Rearm | Done | Skip:
    """What to do with a one-shot schedule's dead-letter message, given its record (the item) or None."""
    if record is None:
        return Skip("no schedule record: it expired (past its history retention) or was never written")
    status = record.get("status", {}).get("S", "")
    if record.get("redriveMsg", {}).get("B") == tag:
        return Rearm(again=True) if status == states.QUEUED else Done(status)
    if letter.due_ms != int(record.get("dueMs", {}).get("N", -1)):
        return Skip("the record is due at another time than the message")
    if letter.kind is Kind.PARKED:
        attempts = int(record.get("attempts", {}).get("N", 0))
        if status != states.FAILED:
            return Skip(f"the record is {status}, not FAILED")
        if attempts != letter.attempt:
            return Skip(f"the record has {attempts} attempts, the message {letter.attempt}: a later delivery "
                        "stands for this one")
        return Rearm(again=False)
    if record.get("token", {}).get("S") != letter.token:
        return Skip("the record holds another token: a stray, or re-armed since")
    if status not in REARMABLE_FROM_BARE:
        return Skip(f"the record is {status}")
    return Rearm(again=False)


def rearm_condition(letter: DeadLetter) -> tuple[str, dict[str, Any]]:
    """The re-arm write's condition (``#st`` the status, ``#tok`` the token) and its values (plain
    ``str``/``int``; the caller adds ``:tag``): what :func:`decide` checked, or this message's own re-arm."""
    own = "(#st = :queued AND redriveMsg = :tag)"
    values: dict[str, Any] = {":queued": states.QUEUED, ":due": letter.due_ms}
    if letter.kind is Kind.PARKED:
        values.update({":failed": states.FAILED, ":att": letter.attempt})
        return f"(#st = :failed AND attempts = :att AND dueMs = :due) OR {own}", values
    names = [f":s{i}" for i in range(len(REARMABLE_FROM_BARE))]
    values.update(dict(zip(names, REARMABLE_FROM_BARE)))
    values[":old"] = letter.token
    return f"(#tok = :old AND dueMs = :due AND #st IN ({', '.join(names)})) OR {own}", values


def requeued_listing_key(list_pk: str | None) -> str | None:
    """A listed record's listing partition once QUEUED: the same shard, QUEUED's partition (``<status>#<shard>``)."""
    if list_pk is None:
        return None
    _, _, shard = list_pk.partition("#")
    return f"{states.QUEUED}#{shard}"


@dataclass
class SentBack:
    """What one run has sent back for delivery (a dry run: would have): the one-shot occurrences it re-armed, and
    the messages it sent to the delayer queue as they were (a group sweep; SQS keeps a message's id when its
    redrive parks it), and the outcome events it sent back (parked again as new messages). A dead-letter message
    of any of them is not taken again by that run: its delivery failed again and was parked again while the run
    went on, or it is another message of a schedule the run sent back. So a run sends each schedule back at most
    once, and ends once only such messages are left."""

    occurrences: set[tuple[str, int]] = field(default_factory=set)
    message_ids: set[str] = field(default_factory=set)
    outcomes: set[tuple[str, int]] = field(default_factory=set)

    def add(self, letter: DeadLetter) -> None:
        """A one-shot schedule's message this run re-armed."""
        assert letter.schedule_id is not None and letter.due_ms is not None
        self.occurrences.add((letter.schedule_id, letter.due_ms))

    def holds(self, letter: DeadLetter) -> bool:
        if letter.message_id in self.message_ids:
            return True
        if letter.kind is Kind.OUTCOME:
            return (letter.schedule_id or "", letter.due_ms or 0) in self.outcomes
        return (letter.kind in (Kind.PARKED, Kind.BARE) and not letter.periodic
                and (letter.schedule_id or "", letter.due_ms or 0) in self.occurrences)


PARKED_AGAIN_REASON = ("this run sent it back already (a run takes each schedule at most once): its delivery "
                       "failed again and was parked again, or this is another of its messages; left for a later run")
PARKED_AGAIN_DRY_REASON = ("this run would send it back already (a run takes each schedule at most once): another of "
                           "its messages, left for a later run")


@dataclass
class Report:
    """What a run did with each dead-letter message it saw (a dry run: what it would do)."""

    moved: list[dict[str, Any]] = field(default_factory=list)
    """Re-armed (or recovered) and deleted from the dead-letter queue."""
    skipped: list[dict[str, Any]] = field(default_factory=list)
    """Taken but left in the dead-letter queue, each with its reason."""
    left: int = 0
    """Not selected, left in the dead-letter queue untouched."""
    parked_again: list[dict[str, Any]] = field(default_factory=list)
    """Messages of what this run sent back (:class:`SentBack`), not taken: left in the dead-letter queue."""
    dry_run: bool = False
    """Nothing was moved or written: ``moved`` and ``skipped`` say what a run would move and skip."""

    def move(self, letter: DeadLetter, note: str) -> None:
        self.moved.append(_entry(letter, note=note))

    def skip(self, letter: DeadLetter, reason: str) -> None:
        self.skipped.append(_entry(letter, reason=reason))

    def again(self, letter: DeadLetter) -> None:
        reason = PARKED_AGAIN_DRY_REASON if self.dry_run else PARKED_AGAIN_REASON
        self.parked_again.append(_entry(letter, reason=reason))

    def to_json(self) -> dict[str, Any]:
        return {"dryRun": self.dry_run, "moved": self.moved, "skipped": self.skipped,
                "parkedAgain": self.parked_again, "left": self.left}


def _entry(letter: DeadLetter, **text: str) -> dict[str, Any]:
    return {"kind": str(letter.kind), "id": letter.schedule_id, "messageId": letter.message_id, **text}
