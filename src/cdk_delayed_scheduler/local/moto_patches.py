"""Corrections to moto, applied only to the moto that the engine runs in its own process.

Each makes moto behave like the AWS service it stands in for, or removes a cost
that grows with the data or with every request; none changes what the runtime
does. Each has a test in ``tests/e2e/test_moto_patches.py``.

1. **Long polls wake when a message becomes ready, and never spin.** moto
   re-checks a long-polled queue only when a message is sent, or after a whole
   second, so a delayed message that becomes visible waits up to 1 s longer
   than on SQS. And its wait returns at once while the queue holds any message,
   visible or not, so a long poll on a queue of delayed messages re-scans all of
   them in a tight loop. Here a long poll sleeps until the earliest message
   becomes ready, or until a send wakes it.
2. **Transactions back up only what they touch, and keep the stream.**
   Before every ``TransactWriteItems`` moto deep-copies each table it touches,
   every item and the whole stream history, and puts that copy in place of
   the table when the transaction is cancelled. That makes each transaction
   O(table size), and the swap installs a new stream shard object, so stream
   iterators handed out earlier stop seeing new records. Here copies of the
   items the transaction names are put back on failure; the table and its
   stream shard stay the same objects.
3. **Writes are serialized, as each DynamoDB item's writes are.** moto has no
   locking: a cancelled transaction restores a snapshot taken before it, and
   would undo a write that another thread made in between. One lock around
   moto's DynamoDB write operations makes that impossible.
4. **Answers are not held back by Nagle's algorithm** (``TCP_NODELAY``), for
   moto's own server when it is used; the engine's child serves moto with a
   keep-alive server that sets it too.
5. **Requests are routed without a rescan under a global lock.** For each
   request moto's dispatcher takes one process-wide lock, lists its package
   directory (about 200 ``stat`` calls) and tries a regular expression per
   service. Here the application for a signed DynamoDB, Streams or SQS request
   is looked up by its signing scope and ``X-Amz-Target`` prefix, which are what
   decide it, and the directory is listed once.
6. **A Query reads only its partition.** moto's Query sorts the whole table
   (every item of every partition) and then filters by the partition key, so a
   sweep's Query costs O(table) however few timers it finds. Here a Query on
   the table's own key sees only the items of the partition it names. When the
   sort key is a string, only the items that meet the sort-key condition
   (tested with moto's own comparison, on the raw string), already in order
   (Python's string order is DynamoDB's, code point by code point): moto's own
   per-item work, which weighs each item's size before it even tests the
   condition, then runs on the matches alone and stops at the limit.
7. **SQS finds messages without scanning them one property call at a time.**
   A receive builds the list of ready messages with two clock reads per
   message; a delete scans every message twice to find its receipt handle;
   and every send reads the queue's attributes, which counts the visible,
   delayed and in-flight messages (three more scans), only to look up
   ``ContentBasedDeduplication``. Here ready messages are found with one clock
   read, a delete finds its message through an index of receipt handles, and
   the counts are computed only when an attribute that holds one is read.
8. **Stream iterators are forgotten.** moto keeps every shard iterator it has
   handed out, for ever; each ``GetRecords`` adds one. AWS expires them after
   15 minutes. Here the newest 1,000 are kept, so an idle engine's memory is flat.
10. **Stream records are answered as stored.** moto keeps each stream record in
    its wire form, then rebuilds it attribute by attribute through its generic
    response serializer: about 0.8 ms per record, so a page of 1,000 records
    took most of a second of moto's core. Here ``GetRecords`` writes the stored
    records with one ``json.dumps`` (times in epoch seconds and binary values in
    base64, as AWS sends them).
9. **Each request's reflection is done once.** For every request moto lists
   the methods of its response class with ``inspect`` and converts the action
   name to snake case; both answers never change, so they are remembered.
11. **A receive reads the message groups in flight from a snapshot.** When a
    receive meets a message whose visibility timeout ran out (a retry, on any
    queue), moto builds the set of groups with messages in flight by iterating the
    queue's in-flight set in Python, while another request's thread may receive or
    delete from it: under load a receive failed with ``Set changed size during
    iteration`` (a 500). Here the set is copied first, in one step the interpreter
    does not interrupt.
12. **A Query of an index is not torn by a write.** moto filters an index's
    items by their key attributes, then sorts them by the index's sort key; a
    write in between (another request's thread) that removes that attribute
    from an item (a sparse index's member leaving it) makes the sort fail with
    a ``KeyError`` (a 500). DynamoDB answers an index Query from a consistent
    view of the index. Here an index Query holds the write lock of 3.
13. **A read never sees half a write.** moto applies an ``UpdateItem`` to the
    stored item in place, one action of its expression after the other, and
    answers a ``GetItem`` or a Query from that same item without the lock of
    3: a read between two actions saw an item no write ever made, such as a
    resumed periodic timer's new token with its status still PAUSED, which
    refused the occurrence the resume had just armed and so ended the timer.
    DynamoDB applies each item write whole. And an ``UpdateItem`` copies the
    item for its ``ALL_OLD`` answer before it takes the lock, so that answer
    could be of an older write than the one replaced, or the copy failed
    (``dictionary changed size during iteration``, a 500) while another
    thread wrote the item. Here every DynamoDB request, from its parse to
    its serialized answer, holds the lock of 3.
14. **An api invocation's writes stop at its timeout.** Lambda stops an
    invocation at its timeout; the engine runs the api handler in a thread
    that nothing stops, and a loaded machine can hold one of its writes back
    longer than that. The runtime takes a message whose record is still
    missing for a stray once the create that sent it can no longer write, so
    a record written later names a message already dropped. Here a DynamoDB
    request marked with its invocation's deadline (``deadlines``) is refused
    when its turn under the lock of 3 comes after it."""

from __future__ import annotations

import collections
import base64
import copy
import datetime
import functools
import json
import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any, Callable

from .._contract import contract

_applied = False
_ROUTED_BY_SCOPE = {"dynamodb", "sqs"}  # signing names whose backend the scope and target prefix decide
STREAM_ITERATORS_KEPT = 1000


def apply() -> None:
    global _applied
    if _applied:
        return
    _patch_dynamodb()
    _patch_sqs()
    _patch_dispatcher()
    _patch_streams()
    _patch_reflection()
    from werkzeug.serving import WSGIRequestHandler

    WSGIRequestHandler.disable_nagle_algorithm = True
    _applied = True


# --- DynamoDB: 2, 3, 6, 12, 13 -----------------------------------------------------------
def _patch_dynamodb() -> None:
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.responses import DynamoHandler

    write_lock = threading.RLock()

    def serialized(operation: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(operation)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with write_lock:
                return operation(*args, **kwargs)

        return locked

    original_transaction = DynamoDBBackend.transact_write_items

    def transact_write_items(self: Any, transact_items: list[Any]) -> Any:
        with write_lock:
            backups = [_backup(self, entry) for entry in transact_items]
            try:
                return original_transaction(self, transact_items)
            except Exception:
                for backup in filter(None, backups):
                    _restore(*backup)
                raise

    original_query = Table.query

    @functools.wraps(original_query)
    def query(self: Any, hash_key: Any, range_comparison: Any, range_objs: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = args[4] if len(args) > 4 else kwargs.get("index_name")
        if index_name:
            with write_lock:  # 12: no write between the index's filter and its sort
                return original_query(self, hash_key, range_comparison, range_objs, *args, **kwargs)
        if hash_key is None or not self.range_key_attr or len(kwargs.get("range_key_conditions") or []) > 1:
            return original_query(self, hash_key, range_comparison, range_objs, *args, **kwargs)
        partition = _Partition(self, hash_key, range_comparison, range_objs)
        return original_query(partition, hash_key, range_comparison, range_objs, *args, **kwargs)  # type: ignore[arg-type]

    Table.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]  # moto's own backup: see _backup instead
    Table.query = query  # type: ignore[method-assign]
    DynamoDBBackend.transact_write_items = transact_write_items  # type: ignore[method-assign]
    for name in ("put_item", "update_item", "delete_item", "batch_write_item"):
        setattr(DynamoDBBackend, name, serialized(getattr(DynamoDBBackend, name)))
    DynamoHandler.call_action = serialized(_within_deadline(DynamoHandler.call_action))  # type: ignore[method-assign]  # 13, 14


def _within_deadline(call_action: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """14: a request of an api invocation whose time was up when its turn came is refused, not applied."""
    from .deadlines import expired

    @functools.wraps(call_action)
    def call(self: Any) -> Any:
        if expired(self.headers):
            body = {"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError",
                    "message": "the api invocation that sent this request timed out before it was applied"}
            return 500, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(body)
        return call_action(self)

    return call


class _Partition:
    """The table as one Query sees it: every attribute of the table, but only one partition's items.

    With a string sort key the items come sorted by the raw strings (in C), and only those that
    meet the Query's sort-key condition, tested with moto's own comparison on the raw value: moto
    then sorts and tests just those, and stops at the Query's limit.
    """

    def __init__(self, table: Any, hash_key: Any, range_comparison: str | None, range_objs: list[Any] | None) -> None:
        self._table = table
        self._hash_key = hash_key
        self._comparison = range_comparison
        self._range_objs = range_objs or []

    def all_items(self) -> list[Any]:
        from moto.dynamodb.comparisons import get_comparison_func

        items = list(self._table.items.get(self._hash_key, {}).values())
        if self._table.range_key_type != "S" or any(o.type != "S" for o in self._range_objs):
            return items
        if self._comparison:
            test, values = get_comparison_func(self._comparison), [o.value for o in self._range_objs]
            items = [item for item in items if test(item.range_key.value, *values)]
        items.sort(key=lambda item: item.range_key.value)
        return items

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def _backup(backend: Any, entry: dict[str, Any]) -> tuple[Any, ...] | None:
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


# --- SQS: 1, 7, 11 -----------------------------------------------------------------------
def _patch_sqs() -> None:
    from moto.core.utils import unix_time_millis
    from moto.sqs.models import Message, Queue

    by_handle: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()

    def messages(self: Any) -> list[Any]:
        now = unix_time_millis()
        return [m for m in self._messages if m.visible_at <= now and m.delayed_until <= now]

    def wait_for_messages(self: Any, timeout: float) -> None:
        with self._messages_lock:
            now = unix_time_millis()
            ready_at = min((max(m.visible_at, m.delayed_until) for m in self._messages), default=None)
            if ready_at is None:
                wait = timeout
            elif ready_at < now:  # ready, yet not received (a FIFO group is busy): check again soon
                wait = min(timeout, 0.005)
            else:
                wait = min(timeout, (ready_at - now) / 1000 + 0.001)
            self._messages_lock.wait(timeout=wait)

    original_mark_received = Message.mark_received

    def mark_received(self: Any, visibility_timeout: int | None = None) -> None:
        original_mark_received(self, visibility_timeout)
        by_handle[self.receipt_handle] = self

    original_delete = Queue.delete_message

    def delete_message(self: Any, receipt_handle: str) -> None:
        message = by_handle.get(receipt_handle)
        if message is None or receipt_handle in self.deleted_messages:
            return original_delete(self, receipt_handle)
        try:
            self._messages.remove(message)  # identity comparison, in C
        except ValueError:  # not (or no longer) in this queue: moto's own answer
            return original_delete(self, receipt_handle)
        self.pending_messages.discard(message)
        self.deleted_messages.update(message.all_receipt_handles)
        return None

    def pending_message_groups(self: Any) -> set[str]:
        return {m.group_id for m in self._pending_messages.copy() if m.group_id is not None}

    Queue.messages = property(messages)  # type: ignore[method-assign,assignment]
    Queue.pending_message_groups = property(pending_message_groups)  # type: ignore[method-assign,assignment]
    Queue.attributes = property(_QueueAttributes)  # type: ignore[method-assign,assignment]
    Queue.wait_for_messages = wait_for_messages  # type: ignore[method-assign]
    Queue.delete_message = delete_message  # type: ignore[method-assign]
    Message.mark_received = mark_received  # type: ignore[method-assign]


class _QueueAttributes(Mapping[str, Any]):
    """``Queue.attributes`` as moto builds it, with each value computed when it is read."""

    def __init__(self, queue: Any) -> None:
        self._queue = queue
        self._names = list(queue.BASE_ATTRIBUTES)
        if queue.fifo_queue:
            self._names += queue.FIFO_ATTRIBUTES
        if queue.kms_master_key_id:
            self._names += queue.KMS_ATTRIBUTES

    def __getitem__(self, name: str) -> Any:
        from moto.core.utils import camelcase_to_underscores

        if name not in self._names:
            raise KeyError(name)
        if name == "RedrivePolicy" and self._queue.redrive_policy:
            return json.dumps(self._queue.redrive_policy)
        value = getattr(self._queue, camelcase_to_underscores(name))
        return str(value).lower() if isinstance(value, bool) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


# --- the request dispatcher: 5 -------------------------------------------------------
def _patch_dispatcher() -> None:
    from moto import backends
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication

    modules = tuple(backends.list_of_moto_modules())
    backends.list_of_moto_modules = lambda: modules
    original = DomainDispatcherApplication.get_application
    apps: dict[tuple[int, tuple[Any, ...] | None], Any] = {}

    def get_application(self: Any, environ: dict[str, Any]) -> Any:
        key = _routing_key(environ)
        if key is None:
            return original(self, environ)
        app = apps.get((id(self), key))
        if app is None:
            app = apps[(id(self), key)] = original(self, environ)
        return app

    DomainDispatcherApplication.get_application = get_application  # type: ignore[method-assign]


def _routing_key(environ: dict[str, Any]) -> tuple[Any, ...] | None:
    """``(service, region, target prefix)`` of a signed request to a service routed by them, else None."""
    try:
        scope = environ["HTTP_AUTHORIZATION"].split(",", 1)[0].split()[1].split("/")
        _, _, region, service, _ = scope
    except (KeyError, IndexError, ValueError):
        return None
    if service not in _ROUTED_BY_SCOPE or environ.get("PATH_INFO", "").startswith(("/moto-api", "/latest/")):
        return None
    return service, region, environ.get("HTTP_X_AMZ_TARGET", "").split(".", 1)[0]


# --- DynamoDB Streams: 8, 10 -------------------------------------------------------------
def _patch_streams() -> None:
    from moto.dynamodbstreams.models import DynamoDBStreamsBackend
    from moto.dynamodbstreams.responses import DynamoDBStreamsHandler

    def get_records(self: Any) -> str:
        limit = self._get_param("Limit") or contract.GET_RECORDS_LIMIT
        result = self.backend.get_records(self._get_param("ShardIterator"), limit)
        return json.dumps(result, default=_wire_value)

    DynamoDBStreamsHandler.get_records = get_records  # type: ignore[method-assign,assignment]

    class _Newest(collections.OrderedDict[str, Any]):
        def __setitem__(self, key: Any, value: Any) -> None:
            super().__setitem__(key, value)
            while len(self) > STREAM_ITERATORS_KEPT:
                self.popitem(last=False)

    original_init = DynamoDBStreamsBackend.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        self.shard_iterators = _Newest()

    DynamoDBStreamsBackend.__init__ = __init__  # type: ignore[method-assign]


def _wire_value(value: Any) -> Any:
    """What AWS sends for the values ``json`` cannot write: epoch seconds for times, base64 for binary."""
    if isinstance(value, datetime.datetime):  # moto's naive UTC times
        return value.replace(tzinfo=datetime.timezone.utc).timestamp()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


# --- per-request reflection: 9 -------------------------------------------------------
def _patch_reflection() -> None:
    from moto.core import responses

    responses.method_names_from_class = functools.lru_cache(maxsize=None)(responses.method_names_from_class)  # type: ignore[attr-defined]
    responses.camelcase_to_underscores = functools.lru_cache(maxsize=4096)(responses.camelcase_to_underscores)  # type: ignore[attr-defined]
