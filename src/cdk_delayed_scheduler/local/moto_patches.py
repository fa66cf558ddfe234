"""Four corrections to moto, applied only to the moto that the engine runs in its own process.

Both make moto behave like the AWS service it stands in for; neither changes
what the runtime does.

1. **Long polls wake when a message becomes visible, and never spin.** moto
   re-checks a long-polled queue only when a message is sent, or after a whole
   second, so a delayed message that becomes visible waits up to 1 s longer
   than on SQS. And its wait returns at once while the queue holds any message,
   visible or not, so a long poll on a queue of delayed messages re-scans all of
   them in a tight loop (with 10,000 delayed messages, moto's whole process
   was busy with it). Waiting 5 ms between re-checks, or until a send wakes it,
   fixes both.
2. **Transactions back up only what they touch, and keep the stream.**
   Before every ``TransactWriteItems`` moto deep-copies each table it touches,
   every item and the whole stream history, and puts that copy in place of
   the table when the transaction is cancelled. That makes each create
   O(table size), and the swap installs a new stream shard object, so stream
   iterators handed out earlier stop seeing new records. Here copies of the
   items the transaction names are put back on failure; the table and its
   stream shard stay the same objects. Records of a cancelled transaction stay
   in the stream, which is harmless here: a claim of a timer that does not
   exist fails its condition.
3. **Writes are serialized, as each DynamoDB item's writes are.** moto has no
   locking: a cancelled transaction restores a snapshot taken before it, and
   would undo a claim or a create that another thread wrote in between. One
   lock around moto's DynamoDB write operations makes that impossible.
4. **Answers are not held back by Nagle's algorithm.** moto's HTTP server
   writes headers and body separately, so the body waits for the client's
   delayed ACK; with ``TCP_NODELAY`` a call's median latency drops by a third.
"""

from __future__ import annotations

import copy
import functools
import threading
from typing import Any, Callable

_applied = False


def apply() -> None:
    global _applied
    if _applied:
        return
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table
    from moto.sqs.models import Queue
    from werkzeug.serving import WSGIRequestHandler

    def wait_for_messages(self: Any, timeout: float) -> None:
        with self._messages_lock:
            self._messages_lock.wait(timeout=min(timeout, 0.005))

    write_lock = threading.RLock()

    def serialized(operation: Callable) -> Callable:
        @functools.wraps(operation)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with write_lock:
                return operation(*args, **kwargs)

        return locked

    original_transaction = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list) -> Any:
        with write_lock:
            backups = [_backup(self, entry) for entry in transact_items]
            try:
                return original_transaction(self, transact_items)
            except Exception:
                for backup in filter(None, backups):
                    _restore(*backup)
                raise

    Queue.wait_for_messages = wait_for_messages
    Table.__deepcopy__ = lambda self, memo: self  # moto's own backup: see _backup instead
    DynamoDBBackend.transact_write_items = transact_write_items
    WSGIRequestHandler.disable_nagle_algorithm = True
    for name in ("put_item", "update_item", "delete_item", "batch_write_item"):
        setattr(DynamoDBBackend, name, serialized(getattr(DynamoDBBackend, name)))
    _applied = True


def _backup(backend: Any, entry: dict) -> tuple | None:
    """``(table, hash key, range key, item or None)`` for the item one transaction entry names."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    ((_, operation),) = entry.items()
    table = backend.tables.get(operation.get("TableName"))
    key = operation.get("Key") or operation.get("Item")
    if table is None or not key or table.hash_key_attr not in key:
        return None
    hash_key = DynamoType(key[table.hash_key_attr])
    if table.range_key_attr is None:
        return table, hash_key, None, copy.deepcopy(table.items.get(hash_key))
    if table.range_key_attr not in key:
        return None
    range_key = DynamoType(key[table.range_key_attr])
    return table, hash_key, range_key, copy.deepcopy(table.items.get(hash_key, {}).get(range_key))


def _restore(table: Any, hash_key: Any, range_key: Any, item: Any) -> None:
    """Put one item back as it was before a cancelled transaction (no stream record)."""
    if range_key is None:
        if item is None:
            table.items.pop(hash_key, None)
        else:
            table.items[hash_key] = item
    elif item is None:
        table.items.get(hash_key, {}).pop(range_key, None)
    else:
        table.items[hash_key][range_key] = item
