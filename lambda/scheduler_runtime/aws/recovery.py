"""Stream recovery: the claims of a stream range that the enqueuer's mapping gave up on.

When the stream event source mapping exhausts its retries on a batch (or the records age
past the stream's 24 h retention), Lambda sends its on-failure destination (the construct's
dead-letter queue) batch metadata only: the stream, the shard and the sequence number range.
The timers those REMOVE records carried are gone from the table, so nothing would rebuild
them. The records themselves, old images included, stay readable for 24 h: this module reads
the named range back and keeps the claims (what the enqueuer's stream filter passes), which
the enqueuer then sends or writes back exactly as it does for a live batch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core import contract, keys

MAX_EMPTY_PAGES = 5
"""An open shard answers empty pages past its newest record; give up after this many in a row."""


class RecoveryError(ValueError):
    """The message names no stream range, or the range has left the stream (past its 24 h retention)."""


@dataclass(frozen=True)
class StreamRange:
    """Records ``start`` to ``end`` (sequence numbers, inclusive) of one shard of one stream."""

    stream_arn: str
    shard_id: str
    start: int
    end: int

    @classmethod
    def from_on_failure(cls, message: dict[str, Any] | str) -> "StreamRange":
        """The range in an on-failure message (its ``DDBStreamBatchInfo``), as JSON text or parsed."""
        body = json.loads(message) if isinstance(message, str) else message
        info = body.get("DDBStreamBatchInfo") if isinstance(body, dict) else None
        if not isinstance(info, dict):
            raise RecoveryError("not a stream mapping's on-failure message: it has no DDBStreamBatchInfo")
        try:
            return cls(info["streamArn"], info["shardId"], int(info["startSequenceNumber"]),
                       int(info["endSequenceNumber"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecoveryError(f"DDBStreamBatchInfo lacks a usable {exc}") from None


def is_claim(record: dict[str, Any]) -> bool:
    """What ``event_filters.json`` passes to the enqueuer: a REMOVE of a timer, neither a TTL expiry nor cancelled."""
    data = record.get("dynamodb", {})
    return (record.get("eventName") == "REMOVE" and not record.get("userIdentity")
            and data.get("Keys", {}).get("pk", {}).get("S", "").startswith(keys.TIMER_PREFIX)
            and not data.get("OldImage", {}).get("cancelled", {}).get("BOOL", False))


def claims_in_range(streams: Any, message: dict[str, Any] | str) -> list[dict[str, Any]]:
    """The claims among the records of the range that ``message`` names, in stream order.

    ``streams`` is a DynamoDB Streams client. Raises :class:`RecoveryError` once the range has
    been trimmed from the stream.
    """
    span = StreamRange.from_on_failure(message)
    try:
        iterator = streams.get_shard_iterator(
            StreamArn=span.stream_arn, ShardId=span.shard_id, ShardIteratorType="AT_SEQUENCE_NUMBER",
            SequenceNumber=str(span.start))["ShardIterator"]
    except streams.exceptions.TrimmedDataAccessException:
        raise RecoveryError(f"records {span.start}-{span.end} of {span.shard_id} are past the stream's "
                            "24 h retention") from None
    claims: list[dict[str, Any]] = []
    empty = 0
    while iterator and empty < MAX_EMPTY_PAGES:
        page = streams.get_records(ShardIterator=iterator, Limit=contract.GET_RECORDS_LIMIT)
        iterator = page.get("NextShardIterator")
        empty = 0 if page.get("Records") else empty + 1
        for record in page.get("Records", []):
            if int(record["dynamodb"]["SequenceNumber"]) > span.end:
                return claims
            if is_claim(record):
                claims.append(record)
    return claims
