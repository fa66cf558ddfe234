"""Item keys and shard choice for the single Schedules table.

Two item kinds share the table (generic ``pk``/``sk`` leave room for more, such
as periodic definitions and their next occurrence):

- the *schedule record*, one per schedule, keyed by id: the source of truth
  for GET, idempotency and the status;
- the *timer*, one per pending occurrence, in a shard partition sorted by due
  time: the work queue that the sweeper queries and that claims delete.
"""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass

from .contract import ID_PATTERN  # noqa: F401 - re-exported: the id rule lives in contract.json

RECORD_PREFIX = "SCHEDULE#"
RECORD_SK = "RECORD"
TIMER_PREFIX = "TIMER#"
# 13 digits cover every epoch millisecond up to year 2286; we pad to 15 so
# the lexical order of sort keys is the numeric order up to year 9999.
_DUE_DIGITS = 15


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


def shard_of_partition(timer_pk: str) -> int:
    return int(timer_pk[len(TIMER_PREFIX):])


def timer_sort_key(due_ms: int, schedule_id: str) -> str:
    return f"{due_ms:0{_DUE_DIGITS}d}#{schedule_id}"


def timer_key(shard: int, due_ms: int, schedule_id: str) -> Key:
    return Key(timer_partition(shard), timer_sort_key(due_ms, schedule_id))


def due_cutoff_sort_key(cutoff_ms: int) -> str:
    """The smallest sort key greater than every timer due at or before ``cutoff_ms``."""
    return f"{cutoff_ms:0{_DUE_DIGITS}d}$"  # '$' sorts after '#'


def parse_timer_sort_key(sort_key: str) -> tuple[int, str]:
    """``(due_ms, schedule_id)`` back from a timer's sort key."""
    due, _, schedule_id = sort_key.partition("#")
    return int(due), schedule_id


def schedule_id_of(record_pk: str) -> str:
    return record_pk[len(RECORD_PREFIX):]


def new_token() -> str:
    """A random per-attempt token (72 bits, 12 URL-safe characters).

    The message or timer written first carries it, the record written last holds it, and
    only a message whose token the record holds may start a delivery.
    """
    return secrets.token_urlsafe(9)


def dedupe_key(schedule_id: str, due_ms: int) -> str:
    """Stable across retries and duplicates of one occurrence; differs per occurrence."""
    return f"{schedule_id}@{due_ms}"
