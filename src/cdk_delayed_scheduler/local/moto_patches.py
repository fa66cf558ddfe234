"""Four corrections to moto, applied only to the moto that the engine runs in its own process.

Both make moto behave like the AWS service it stands in for; neither changes
what the runtime does.

1. **Long polls wake when a message becomes visible.** moto re-checks a
   long-polled queue only when a message is sent, or after a whole second,
   so a delayed message that becomes visible waits up to 1 s longer than on
   SQS. Re-checking every 5 ms restores SQS's behaviour.
2. **Transactions snapshot cheaply and keep the stream.** Before every
   ``TransactWriteItems`` moto deep-copies each table it touches, including
   every item and the whole stream history, and restores that copy when the
   transaction is cancelled. The copy makes each create O(table size), and
   the restore swaps in a new stream shard object, so stream iterators handed
   out earlier stop seeing new records. The snapshot here copies the item
   index only (puts and deletes replace items, they do not mutate them, which
   is all the runtime's transactions do) and keeps the one stream shard.
   Records of a cancelled transaction stay in the stream, which is harmless
   here: a claim of a timer that does not exist fails its condition.
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
from collections import defaultdict
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
            self._messages_lock.wait_for(lambda: self.messages, timeout=min(timeout, 0.005))

    def snapshot(self: Any, memo: dict) -> Any:
        clone = copy.copy(self)
        if self.range_key_attr is not None:
            clone.items = defaultdict(dict, {h: dict(r) for h, r in self.items.items()})
        else:
            clone.items = copy.copy(self.items)
        return clone

    write_lock = threading.RLock()

    def serialized(operation: Callable) -> Callable:
        @functools.wraps(operation)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with write_lock:
                return operation(*args, **kwargs)

        return locked

    Queue.wait_for_messages = wait_for_messages
    Table.__deepcopy__ = snapshot
    WSGIRequestHandler.disable_nagle_algorithm = True
    for name in ("put_item", "update_item", "delete_item", "transact_write_items", "batch_write_item"):
        setattr(DynamoDBBackend, name, serialized(getattr(DynamoDBBackend, name)))
    _applied = True
