"""Item keys and shard choice for the single Schedules table.

Two item kinds share the table (generic ``pk``/``sk`` leave room for more, such
as periodic definitions and their next occurrence):

- the *schedule record*, one per schedule, keyed by id: the source of truth
  for GET, idempotency and the status;
- the *timer*, one per pending occurrence, in a shard partition sorted by due
  time: the work queue that the sweeper queries and that claims delete.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass

RECORD_PREFIX = "SCHEDULE#"
RECORD_SK = "RECORD"
TIMER_PREFIX = "TIMER#"
# 13 digits cover every epoch millisecond up to year 2286; we pad to 15 so
# the lexical order of sort keys is the numeric order up to year 9999.
_DUE_DIGITS = 15
ID_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass(frozen=True)
class Key:
    pk: str
    sk: str

    def as_item_key(self) -> dict:
        """The key in DynamoDB's attribute-value form."""
        return {"pk": {"S": self.pk}, "sk": {"S": self.sk}}


def shard_for(schedule_id: str, shard_count: int) -> int:
    """A stable shard in ``[0, shard_count)`` for an id (CRC-32, evenly spread)."""
    if shard_count < 1:
        raise ValueError("shard_count must be at least 1")
    return zlib.crc32(schedule_id.encode("utf-8")) % shard_count


def record_key(schedule_id: str) -> Key:
    return Key(f"{RECORD_PREFIX}{schedule_id}", RECORD_SK)


def timer_partition(shard: int) -> str:
    return f"{TIMER_PREFIX}{shard:04d}"


def timer_sort_key(due_ms: int, schedule_id: str) -> str:
    return f"{due_ms:0{_DUE_DIGITS}d}#{schedule_id}"


def timer_key(shard: int, due_ms: int, schedule_id: str) -> Key:
    return Key(timer_partition(shard), timer_sort_key(due_ms, schedule_id))


def due_cutoff_sort_key(cutoff_ms: int) -> str:
    """The smallest sort key greater than every timer due at or before ``cutoff_ms``."""
    return f"{cutoff_ms:0{_DUE_DIGITS}d}$"  # '$' sorts after '#'


def dedupe_key(schedule_id: str, due_ms: int) -> str:
    """Stable across retries and duplicates of one occurrence; differs per occurrence."""
    return f"{schedule_id}@{due_ms}"
