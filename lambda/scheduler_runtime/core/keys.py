"""Item keys and shard choice for the single Schedules table.

Three item kinds share the table:

- the *schedule record*, one per schedule, keyed by id: the source of truth
  for GET, idempotency and the status;
- the *periodic definition*, one per periodic timer, in one of a fixed number of
  partitions sorted by id (so ``GET /periodic`` pages through them without a scan):
  the definition, and the token of its one pending occurrence;
- the *timer*, one per pending occurrence (of a schedule or of a periodic timer) due
  beyond the window, in a shard partition sorted by due time: the work queue that the
  sweeper queries and that claims delete. A periodic occurrence's sort key ends in
  ``#p``; ids never hold ``#``, so the two kinds never share a key.

"Timer" alone, in the API and the docs, is what a user schedules (a one-shot schedule or a periodic
timer). Here and in the adapters it is the third kind of item (``TimerItem``, the ``TIMER#``
partitions): one row per pending occurrence due beyond the window. A schedule due within the window
never has one.
"""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass
from typing import Any

from .contract import LISTING

RECORD_PREFIX = "SCHEDULE#"
RECORD_SK = "RECORD"
TIMER_PREFIX = "TIMER#"
DEFINITION_PREFIX = "PERIODIC#"
DEFINITION_PARTITIONS = 16
"""Fixed, unlike ``shard_count``: a definition's key must not move when that prop changes."""
PERIODIC_SUFFIX = "#p"
# 13 digits cover every epoch millisecond up to year 2286; we pad to 15 so
# the lexical order of sort keys is the numeric order up to year 9999.
_DUE_DIGITS = 15


@dataclass(frozen=True)
class Key:
    pk: str
    sk: str

    def as_item_key(self) -> dict[str, Any]:
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


def timer_sort_key(due_ms: int, schedule_id: str, periodic: bool = False) -> str:
    return f"{due_ms:0{_DUE_DIGITS}d}#{schedule_id}" + (PERIODIC_SUFFIX if periodic else "")


def timer_key(shard: int, due_ms: int, schedule_id: str, periodic: bool = False) -> Key:
    return Key(timer_partition(shard), timer_sort_key(due_ms, schedule_id, periodic))


def definition_partition(index: int) -> str:
    return f"{DEFINITION_PREFIX}{index:02d}"


def definition_key(periodic_id: str) -> Key:
    return Key(definition_partition(shard_for(periodic_id, DEFINITION_PARTITIONS)), periodic_id)


def due_cutoff_sort_key(cutoff_ms: int) -> str:
    """The smallest sort key greater than every timer due at or before ``cutoff_ms``."""
    return f"{cutoff_ms:0{_DUE_DIGITS}d}$"  # '$' sorts after '#'


def parse_timer_sort_key(sort_key: str) -> tuple[int, str]:
    """``(due_ms, id)`` back from a timer's sort key (a schedule's, or a periodic timer's)."""
    due, _, schedule_id = sort_key.removesuffix(PERIODIC_SUFFIX).partition("#")
    return int(due), schedule_id


def is_periodic_sort_key(sort_key: str) -> bool:
    return sort_key.endswith(PERIODIC_SUFFIX)


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


def index_keys(stored_status: str, schedule_id: str, due_ms: int, shard_count: int) -> dict[str, Any]:
    """The listing index's attributes of a record in a listed status (attribute-value form):
    ``<status>#<shard>`` and the due time and id (see :mod:`.listing`)."""
    return {LISTING["partitionKey"]: {"S": f"{stored_status}#{shard_for(schedule_id, shard_count):02d}"},
            LISTING["sortKey"]: {"S": timer_sort_key(due_ms, schedule_id)}}
