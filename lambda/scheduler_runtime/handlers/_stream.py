"""Shared shape of the DynamoDB stream handlers: per-record work, partial batch failures."""

from __future__ import annotations

import logging
from typing import Callable, Iterable

logger = logging.getLogger("scheduler_runtime")


def sequence_number(record: dict) -> str:
    return record["dynamodb"]["SequenceNumber"]


def each_record(records: Iterable[dict], work: Callable[[dict], None]) -> dict:
    """Run ``work`` per record; answer ``batchItemFailures`` for the ones that raised."""
    failures = []
    for record in records:
        try:
            work(record)
        except Exception:  # noqa: BLE001 - reported to the event source, retried from there
            logger.exception("stream record %s failed", record.get("eventID"))
            failures.append({"itemIdentifier": sequence_number(record)})
    return {"batchItemFailures": failures}
