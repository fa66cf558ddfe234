"""Which timer shards a sweep must query: every shard any deployment has written to.

Timers are written to ``crc32(id) % SHARD_COUNT``, so a deployment that lowers ``shard_count``
leaves the timers already written to the shards it dropped where they are. The sweeper
therefore queries ``range(max(SHARD_COUNT, highest))``, where ``highest`` is a high-water mark
kept in one table item: the largest shard count a sweeper has ever run with. The sweeper
raises it (one conditional write per increase) before it sweeps, and never lowers it.

A table written by a release without the mark is probed once, shard by shard up to the
contract's maximum, for the highest shard that holds any timer.

A sandbox's ``SHARD_COUNT`` never changes (a new value is a new deployment, with new sandboxes),
and the mark only rises, so a sandbox settles the count once, on its first sweep: one ``Query``
per cold start, and one write per increase. Sweeps in a warm sandbox read nothing more.
"""

from __future__ import annotations

import logging
from concurrent.futures import Executor
from typing import Any

from botocore.exceptions import ClientError

from ..core import keys
from ..core.contract import MAX_SHARD_COUNT
from ..observability import log_event

MARK_KEY = keys.Key("SHARDS", "HIGHEST")
"""The mark's item: its own partition, so no listing, stream filter or sweep ever meets it."""
_settled: dict[tuple[str, int], int] = {}
"""(table, this sandbox's shard count) -> shards to sweep, once the mark holds at least that count."""


class ShardMark:
    def __init__(self, dynamodb: Any, table_name: str) -> None:
        self._ddb = dynamodb
        self._table = table_name

    def read(self) -> int | None:
        """The highest shard count ever swept, or None when no sweeper has written it yet.

        A ``Query`` (the sweeper's own permission), eventually consistent: half a read unit.
        """
        items = self._ddb.query(
            TableName=self._table, KeyConditionExpression="pk = :p AND sk = :s",
            ExpressionAttributeValues={":p": {"S": MARK_KEY.pk}, ":s": {"S": MARK_KEY.sk}},
        ).get("Items", [])
        return int(items[0]["highest"]["N"]) if items else None

    def raise_to(self, shard_count: int) -> None:
        """Make the mark at least ``shard_count`` (a lower or concurrent higher one is left alone)."""
        try:
            self._ddb.update_item(
                TableName=self._table, Key=MARK_KEY.as_item_key(), UpdateExpression="SET highest = :n",
                ConditionExpression="attribute_not_exists(highest) OR highest < :n",
                ExpressionAttributeValues={":n": {"N": str(shard_count)}},
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise

    def probe(self, shard_count: int, pool: Executor) -> int:
        """``shard_count``, or one more than the highest shard above it that holds a timer (one
        ``Query`` of at most one item per shard up to the contract's maximum, in parallel)."""

        def holds_a_timer(shard: int) -> bool:
            return bool(self._ddb.query(
                TableName=self._table, KeyConditionExpression="pk = :p", Limit=1, ProjectionExpression="pk",
                ExpressionAttributeValues={":p": {"S": keys.timer_partition(shard)}},
            ).get("Items"))

        above = range(shard_count, MAX_SHARD_COUNT)
        found = [shard for shard, held in zip(above, pool.map(holds_a_timer, above)) if held]
        return max(found) + 1 if found else shard_count

    def shards_to_sweep(self, shard_count: int, pool: Executor) -> int:
        """How many shards to query, ``max(shard_count, highest)``, raising the mark to it first when needed.

        If the mark cannot be written, the sweeps still cover what was read or probed, and the next
        sandbox tries again: the error is logged, not raised, since this sweep loses nothing by it.
        """
        settled = _settled.get((self._table, shard_count))
        if settled is not None:
            return settled
        highest = self.read()
        shards = max(shard_count, highest if highest is not None else self.probe(shard_count, pool))
        if highest is None or highest < shard_count:
            try:
                self.raise_to(shards)
            except ClientError as exc:
                log_event("shard_mark_not_written", level=logging.ERROR, shards=shards, error=str(exc))
        _settled[(self._table, shard_count)] = shards
        return shards
