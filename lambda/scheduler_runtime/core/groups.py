"""Groups, pure: a group's name, its members' index keys, the rule a group's cancel applies, and the
message that carries its background sweep.

A schedule or a periodic timer created with a ``group`` keeps it (``group``) and, while it is pending,
a second attribute, ``groupSk``: the keys of a sparse, keys-only index, ``ByGroup``. Its sort key is
``<kind>#<stamp>#<id>``: the kind (``S`` a schedule, ``P`` a periodic timer), when the create (the PUT)
that put it in the group began, and its id. A member leaves the index when it stops being pending
(``groupSk`` removed at delivery start, cancel, a periodic timer's end or DELETE): one index write in,
one out. An item without a group has neither attribute and pays nothing.

``DELETE /groups/{group}`` stamps the group's *cancel* item with the call's start: every member whose
stamp is earlier is stopped, at once for every delivery start (which reads the cancel item, for grouped
members only), and in the background for the records themselves (a sweep through the index, a page a
message). Members created later are not affected. A cancel sweeps from where the sweeps already started end
(``sweepStartedBeforeMs``), not from the cancel before it: what a cancel that died before its sweep started has
stopped is swept by the next one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .contract import GROUPS
from .keys import Key
from .validation import GROUP_FIELD as FIELD
from .validation import validate_group

__all__ = ["FIELD", "validate_group"]  # re-exported: the group's field and its rule live with the other fields'
SCHEDULES, PERIODIC = "S", "P"
"""The two kinds of member, as the first character of their index sort key."""
KINDS = (SCHEDULES, PERIODIC)
CANCEL_PREFIX = "GROUP#"
CANCEL_SK = "CANCEL"
CANCELLED_BEFORE = "cancelledBeforeMs"
"""The cancel item's stop: members stamped before it are stopped."""
SWEEP_STARTED_BEFORE = "sweepStartedBeforeMs"
"""The cancel item's record of the sweeps started: every member stamped before it has one (its first messages were
sent). Written after those sends, so a cancel that dies between its stop and its sweep leaves it behind, and the next
cancel sweeps from there. Absent: none recorded, so from the first stamp."""
SWEEP_MARKER = "groupSweep"
"""The field that tells a group's sweep message from a delivery's on the delayer queue."""
INDEX_NAME: str = GROUPS["indexName"]
PARTITION_KEY: str = GROUPS["partitionKey"]
SORT_KEY: str = GROUPS["sortKey"]
SWEEP_PAGE_SIZE: int = GROUPS["sweepPageSize"]
SWEEP_FIRST_DELAY_SECONDS: int = GROUPS["sweepFirstDelaySeconds"]
_STAMP_DIGITS = 15
# Ids hold only A-Za-z0-9._:- (all above '$'), so "<kind>#<stamp>$" sorts after every key of that stamp.
_AFTER_STAMP = "$"
_AFTER_KEY = ","  # below every id character: the key followed by ',' sorts after it and before the next


def member_sort_key(kind: str, stamp_ms: int, member_id: str) -> str:
    return f"{kind}#{stamp_ms:0{_STAMP_DIGITS}d}#{member_id}"


def parse_member_sort_key(sort_key: str) -> tuple[str, int, str]:
    """``(kind, stamp_ms, id)`` back from a member's index sort key."""
    kind, stamp, member_id = sort_key.split("#", 2)
    return kind, int(stamp), member_id


def member_attributes(group: str | None, kind: str, stamp_ms: int, member_id: str) -> dict[str, Any]:
    """A grouped item's two attributes (attribute-value form); none for an item without a group."""
    if group is None:
        return {}
    return {PARTITION_KEY: {"S": group}, SORT_KEY: {"S": member_sort_key(kind, stamp_ms, member_id)}}


def stamp_of(item: dict[str, Any]) -> int | None:
    """A pending member's stamp, from its ``groupSk``; None for an item not (or no longer) in a group's index."""
    sort_key = item.get(SORT_KEY, {}).get("S")
    return None if sort_key is None else parse_member_sort_key(sort_key)[1]


def is_stopped(stamp_ms: int, cancelled_before_ms: int | None) -> bool:
    """Whether a member stamped ``stamp_ms`` is stopped by its group's cancel (None: never cancelled)."""
    return cancelled_before_ms is not None and stamp_ms < cancelled_before_ms


@dataclass(frozen=True)
class CancelRanges:
    """What a group's cancel counts (the members it stops, stamped in ``[counted_from_ms, its own stamp)``) and
    sweeps (the members stamped in ``[swept_from_ms, before_ms)``: every one stopped that no sweep was started for)."""

    counted_from_ms: int
    swept_from_ms: int
    before_ms: int


def cancel_ranges(item: dict[str, Any], now_ms: int, moved: bool) -> CancelRanges:
    """The ranges of a cancel stamped ``now_ms``, from the cancel item as it was before its write (attribute-value
    form; empty for none). ``moved``: whether the write moved the stop to ``now_ms``; when a later stamp stood, the
    cancel counts none, and sweeps up to that stamp."""

    def number(name: str) -> int:
        return int(item[name]["N"]) if name in item else 0

    standing = number(CANCELLED_BEFORE)
    if moved:
        return CancelRanges(standing, number(SWEEP_STARTED_BEFORE), now_ms)
    return CancelRanges(now_ms, number(SWEEP_STARTED_BEFORE), max(standing, now_ms))


def cancel_key(group: str) -> Key:
    return Key(f"{CANCEL_PREFIX}{group}", CANCEL_SK)


def stamp_range(kind: str, after_ms: int, before_ms: int, cursor: str | None = None) -> tuple[str, str] | None:
    """The inclusive index sort-key range of the members of ``kind`` stamped in ``[after_ms, before_ms)``,
    past ``cursor`` (the last key already read); None when it is empty."""
    low = f"{kind}#{after_ms:0{_STAMP_DIGITS}d}#"
    if cursor is not None:
        low = max(low, cursor + _AFTER_KEY)
    high = f"{kind}#{before_ms - 1:0{_STAMP_DIGITS}d}{_AFTER_STAMP}"
    return (low, high) if before_ms > after_ms and low <= high else None


def kind_range(kind: str, cursor: str | None = None) -> tuple[str, str]:
    """Every member of ``kind`` past ``cursor``: a listing's range."""
    low, high = f"{kind}#", f"{kind}{_AFTER_STAMP}"
    return (max(low, cursor + _AFTER_KEY) if cursor is not None else low), high


@dataclass(frozen=True)
class GroupSweep:
    """The background cancel of a group's members of one kind stamped in ``[after_ms, before_ms)``, one page
    a message, each naming where the one before stopped (``cursor``)."""

    group: str
    kind: str
    after_ms: int
    before_ms: int
    cursor: str | None = None

    def to_message_body(self) -> str:
        body: dict[str, Any] = {SWEEP_MARKER: self.group, "kind": self.kind, "after": self.after_ms,
                                "before": self.before_ms}
        if self.cursor is not None:
            body["cursor"] = self.cursor
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "GroupSweep":
        kind = str(data["kind"])
        if kind not in KINDS:
            raise ValueError(f"unknown member kind {kind!r}")
        cursor = data.get("cursor")
        return cls(validate_group(data[SWEEP_MARKER]), kind, int(data["after"]), int(data["before"]),
                   None if cursor is None else str(cursor))

    def next(self, cursor: str) -> "GroupSweep":
        return GroupSweep(self.group, self.kind, self.after_ms, self.before_ms, cursor)
