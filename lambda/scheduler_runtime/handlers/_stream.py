"""Shared shape of the DynamoDB stream handlers: per-record work, partial batch failures."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable

logger = logging.getLogger("scheduler_runtime")
# Reused across invocations of a warm function; threads start on first use.
_workers = ThreadPoolExecutor(max_workers=16, thread_name_prefix="record")


def sequence_number(record: dict) -> str:
    return record["dynamodb"]["SequenceNumber"]


def each_record(records: Iterable[dict], work: Callable[[dict], None]) -> dict:
    """Run ``work`` per record, in parallel; answer ``batchItemFailures`` for those that raised.

    Only for work that is independent per record and safe in any order, such
    as conditional claims.
    """

    def succeeded(record: dict) -> bool:
        try:
            work(record)
            return True
        except Exception:  # noqa: BLE001 - reported to the event source, retried from there
            logger.exception("stream record %s failed", record.get("eventID"))
            return False

    records = list(records)
    outcomes = list(_workers.map(succeeded, records))
    return {"batchItemFailures": [{"itemIdentifier": sequence_number(r)} for r, ok in zip(records, outcomes) if not ok]}
