"""Every AWS call the runtime makes, counted, and what each call and each log line would be billed for.

:class:`RequestCounter` counts every botocore call by caller, service and operation.
:class:`CapacityMeter` observes it: for every DynamoDB call it computes the capacity units
from the actual items, by DynamoDB's size rules (``bench.pricing``): the item a write sends,
and the item it replaces or deletes, as the writes of this process left it (a shadow of
item sizes; an uncounted GetItem for a key it does not know). An UpdateItem is billed by the larger of the old and new item, a
PutItem likewise, a DeleteItem by the item it deletes, and a conditional write that fails by
the existing item (at least one unit). Reads: the full item (a projection does not lower the
bill), 4 KB units, half for eventually consistent reads; a Query by the items it returned.
SQS requests are counted in 64 KB chunks of their payload.

:class:`LogMeter` measures the runtime's log lines as Lambda's JSON log format would write
them, at the default level (WARNING and above) and, apart, at INFO.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import sys
import threading
from typing import Any, Callable

from .pricing import PRICES, item_size, read_units, runtime_log_line_bytes, write_units

_WRITES = ("PutItem", "UpdateItem", "DeleteItem")


_HANDLER_FILES = {"api.py": "api", "sweeper.py": "sweeper", "enqueuer.py": "enqueuer", "dispatcher.py": "dispatcher"}


class RequestCounter:
    """Counts every botocore API call in this process by caller, service and operation.

    The caller is the runtime handler on the stack (``api``, ``sweeper``, ``enqueuer``,
    ``dispatcher``); calls made by the engine's pollers (standing in for Lambda event source
    mappings) are ``esm:<poller>``; anything else (set-up, the bench itself) is ``other``.
    Work a handler hands to a thread pool (the api's parallel record writes, the delayer's
    parallel sends, the dispatcher's deliveries) keeps the caller of the thread that submitted
    it: ``ThreadPoolExecutor.submit`` is wrapped while counting. ReceiveMessage and GetRecords
    calls that returned something are counted apart from empty ones.

    ``observers`` see each counted call: ``before(raw, service, operation, params)`` returns a
    context, and ``after(raw, caller, service, operation, params, context, result, error)`` runs
    once the call returned or failed; ``raw(operation, params)`` makes an uncounted call on the
    same client. While not counting, ``track(service, operation, params, result)`` sees each
    call that succeeded.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: collections.Counter = collections.Counter()
        self.enabled = False
        self.observers: list = []
        self._original: Callable | None = None
        self._original_submit: Callable | None = None
        self._local = threading.local()

    def install(self) -> None:
        import botocore.client
        from concurrent.futures import ThreadPoolExecutor

        if self._original is not None:
            return
        original = self._original = botocore.client.BaseClient._make_api_call
        submit = self._original_submit = ThreadPoolExecutor.submit
        counter = self

        def counted(client: Any, operation_name: str, api_params: dict) -> Any:
            if not counter.enabled:
                result = original(client, operation_name, api_params)
                for o in counter.observers:  # e.g. item sizes written before counting started
                    o.track(client.meta.service_model.service_name, operation_name, api_params, result)
                return result
            caller = counter.caller()
            service = client.meta.service_model.service_name
            def raw(op: str, params: dict) -> Any:  # an uncounted call on the same client
                return original(client, op, params)

            contexts = [o.before(raw, service, operation_name, api_params) for o in counter.observers]
            try:
                result = original(client, operation_name, api_params)
            except Exception as exc:
                counter._add(caller, service, operation_name, "error")
                for o, ctx in zip(counter.observers, contexts):
                    o.after(raw, caller, service, operation_name, api_params, ctx, None, exc)
                raise
            tag = ""
            if operation_name == "ReceiveMessage":
                tag = "non-empty" if result.get("Messages") else "empty"
            elif operation_name == "GetRecords":
                tag = "non-empty" if result.get("Records") else "empty"
            counter._add(caller, service, operation_name, tag)
            for o, ctx in zip(counter.observers, contexts):
                o.after(raw, caller, service, operation_name, api_params, ctx, result, None)
            return result

        def tagged_submit(executor: Any, fn: Callable, /, *args: Any, **kwargs: Any) -> Any:
            if counter.enabled:
                tag = counter.caller()
                if tag != "other":
                    inner = fn

                    def fn(*a: Any, **k: Any) -> Any:  # noqa: ANN202 - runs on the pool's thread
                        counter._local.caller = tag
                        try:
                            return inner(*a, **k)
                        finally:
                            counter._local.caller = None

            return submit(executor, fn, *args, **kwargs)

        botocore.client.BaseClient._make_api_call = counted
        ThreadPoolExecutor.submit = tagged_submit

    def uninstall(self) -> None:
        import botocore.client
        from concurrent.futures import ThreadPoolExecutor

        if self._original is not None:
            botocore.client.BaseClient._make_api_call = self._original
            self._original = None
        if self._original_submit is not None:
            ThreadPoolExecutor.submit = self._original_submit
            self._original_submit = None

    def caller(self) -> str:
        """Who is running on this thread: a handler's name, ``esm:<poller>``, or ``other``."""
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if "scheduler_runtime" in filename and "handlers" in filename:
                base = os.path.basename(filename)
                if base in _HANDLER_FILES:
                    return _HANDLER_FILES[base]
            if filename.endswith(os.path.join("local", "pollers.py")):
                name = threading.current_thread().name
                if name.startswith("invoke:"):  # the SQS mapping's invocation pool
                    return "esm:sqs:" + name[len("invoke:"):].split("_")[0]
                return "esm:" + ":".join(name.split(":")[:2])
            frame = frame.f_back
        return getattr(self._local, "caller", None) or "other"

    def _add(self, caller: str, service: str, operation: str, tag: str) -> None:
        with self.lock:
            self.calls[(caller, service, operation, tag)] += 1

    def snapshot(self) -> collections.Counter:
        with self.lock:
            return collections.Counter(self.calls)

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()
        for o in self.observers:
            o.reset()


def stored_item(raw: Callable, table_name: str, key: dict) -> dict | None:
    """The item under ``key`` as stored now (attribute-value form), or None: an uncounted,
    strongly consistent GetItem on the caller's client (moto may run in this process or not)."""
    try:
        return raw("GetItem", {"TableName": table_name, "Key": key, "ConsistentRead": True}).get("Item")
    except Exception:  # noqa: BLE001 - no such table: nothing stored
        return None


def _key_of(item: dict) -> tuple:
    return tuple(str(item.get(k, {}).get("S", "")) for k in ("pk", "sk"))


def _item_kind(operation: str, params: dict) -> str:
    """Which of the table's item kinds a call touches: ``record``, ``timer`` or ``definition`` (by key prefix)."""
    if operation == "Query":
        return "timers"
    key = params.get("Key") or params.get("Item")
    if key is None:
        return "items"
    pk = str(key.get("pk", {}).get("S", ""))
    kinds = {"SCHEDULE#": "record", "TIMER#": "timer", "PERIODIC#": "definition"}
    return next((kind for prefix, kind in kinds.items() if pk.startswith(prefix)), "item")


def _condition_failed(error: BaseException | None) -> bool:
    response = getattr(error, "response", None) or {}
    return response.get("Error", {}).get("Code") == "ConditionalCheckFailedException"


def _sqs_bytes(entries: list[dict]) -> int:
    total = 0
    for e in entries:
        total += len(str(e.get("MessageBody", e.get("Body", ""))).encode("utf-8"))
        for name, attr in (e.get("MessageAttributes") or {}).items():
            total += len(name) + len(attr.get("DataType", "")) + len(str(attr.get("StringValue", "")).encode("utf-8"))
    return total


class CapacityMeter:
    """Capacity units and request chunks per (caller, service, operation, item kind), summed while counting.

    The size of the item a write replaces or deletes comes from a shadow of the item sizes
    every write in this process left behind (kept whether counting or not; :meth:`forget`
    empties it for a fresh table), so metering adds no request to the handlers' time. A key
    the shadow does not know is read back with an uncounted GetItem (``shadow_misses``).
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.sums: dict = collections.defaultdict(lambda: collections.Counter())
        self._sizes: dict = {}
        self.shadow_misses = 0

    def reset(self) -> None:
        with self.lock:
            self.sums.clear()
            self.shadow_misses = 0

    def forget(self) -> None:
        with self.lock:
            self._sizes.clear()

    def snapshot(self) -> dict:
        with self.lock:
            return {k: dict(v) for k, v in self.sums.items()}

    def _old_size(self, raw: Callable, table: str, key: dict, must_exist: bool) -> int:
        with self.lock:
            size = self._sizes.get((table, *_key_of(key)))
        if size is None and must_exist:
            with self.lock:
                self.shadow_misses += 1
            size = item_size(stored_item(raw, table, key))
        return size or 0

    # --- observer interface (RequestCounter) ----------------------------------------------
    def track(self, service: str, operation: str, params: dict, result: dict | None) -> None:
        """Remember the size each successful write left its item at."""
        if service != "dynamodb":
            return
        table = params.get("TableName", "")
        with self.lock:
            if operation == "PutItem":
                self._sizes[(table, *_key_of(params["Item"]))] = item_size(params["Item"])
            elif operation == "DeleteItem":
                self._sizes.pop((table, *_key_of(params["Key"])), None)
            elif operation == "UpdateItem":
                attrs = (result or {}).get("Attributes")
                if params.get("ReturnValues") == "ALL_NEW" and attrs:
                    self._sizes[(table, *_key_of(params["Key"]))] = item_size(attrs)
                else:
                    self._sizes.pop((table, *_key_of(params["Key"])), None)  # unknown now: read back if needed
            elif operation == "BatchWriteItem":
                for table_name, requests in params.get("RequestItems", {}).items():
                    for r in requests:
                        if "PutRequest" in r:
                            item = r["PutRequest"]["Item"]
                            self._sizes[(table_name, *_key_of(item))] = item_size(item)
                        else:
                            self._sizes.pop((table_name, *_key_of(r["DeleteRequest"]["Key"])), None)

    def before(self, raw: Callable, service: str, operation: str, params: dict) -> Any:
        if service != "dynamodb":
            return None
        table = params.get("TableName", "")
        if operation in ("UpdateItem", "DeleteItem"):
            return self._old_size(raw, table, params["Key"], must_exist=True)
        if operation == "PutItem":
            return self._old_size(raw, table, params["Item"], must_exist=False)
        if operation == "BatchWriteItem":
            old = []
            for table_name, requests in params.get("RequestItems", {}).items():
                for r in requests:
                    if "PutRequest" in r:
                        item = r["PutRequest"]["Item"]
                        old.append((item_size(item), self._old_size(raw, table_name, item, must_exist=False)))
                    else:
                        old.append((0, self._old_size(raw, table_name, r["DeleteRequest"]["Key"], must_exist=True)))
            return old
        return None

    def after(self, raw: Callable, caller: str, service: str, operation: str, params: dict, old: Any,
              result: dict | None, error: BaseException | None) -> None:
        s: collections.Counter = collections.Counter()
        item = ""
        if service == "dynamodb":
            item = _item_kind(operation, params)
            s["calls"] += 1
            self._dynamodb(raw, s, operation, params, old, result, error)
            if error is None:
                self.track(service, operation, params, result)
        elif service == "sqs":
            self._sqs(s, operation, params, result)
        elif service == "lambda" and operation == "Invoke":
            s["payload_bytes"] += len(params.get("Payload") or b"")
        if s:
            with self.lock:
                self.sums[(caller, service, operation, item)].update(s)

    def _dynamodb(self, raw: Callable, s: collections.Counter, operation: str, params: dict, old: Any,
                  result: dict | None, error: BaseException | None) -> None:
        failed = _condition_failed(error)
        if error is not None and not failed:
            return  # throttled or refused before any work: not billed
        if operation in _WRITES:
            if failed:
                s["condition_failed"] += 1
                s["wru"] += write_units(old)
                return
            if operation == "PutItem":
                new = item_size(params["Item"])
            elif operation == "UpdateItem":
                attrs = (result or {}).get("Attributes")
                new = item_size(attrs) if params.get("ReturnValues") == "ALL_NEW" and attrs else \
                    item_size(stored_item(raw, params["TableName"], params["Key"]))
            else:
                new = 0
            s["wru"] += write_units(max(old, new))
            s["item_bytes"] += max(old, new)
        elif operation == "BatchWriteItem":
            for new, previous in old or []:
                s["wru"] += write_units(max(new, previous))
                s["item_bytes"] += max(new, previous)
        elif operation == "GetItem":
            size = self._old_size(raw, params["TableName"], params["Key"], must_exist=False) or item_size(
                (result or {}).get("Item"))
            s["rru"] += read_units(size, bool(params.get("ConsistentRead")))
        elif operation == "Query":
            consistent = bool(params.get("ConsistentRead"))
            size = sum(item_size(i) for i in (result or {}).get("Items", []))
            s["rru"] += read_units(size, consistent)
            # Per item, at scale (pages full of items): its share of 4 KB units, without rounding.
            s["rru_marginal"] += size / 4096 * (1 if consistent else 0.5)
            s["items_read"] += len((result or {}).get("Items", []))

    def _sqs(self, s: collections.Counter, operation: str, params: dict, result: dict | None) -> None:
        chunk = PRICES["sqs_chunk_bytes"]
        if operation == "SendMessage":
            size = _sqs_bytes([params])
        elif operation == "SendMessageBatch":
            size = _sqs_bytes(params.get("Entries", []))
        elif operation == "ReceiveMessage":
            size = _sqs_bytes((result or {}).get("Messages", []))
        else:
            size = 0
        s["chunks"] += max(1, math.ceil(size / chunk))
        s["payload_bytes"] += size


class LogMeter(logging.Handler):
    """Bytes of the runtime's log lines per caller, at the default level (WARNING+) and at INFO."""

    def __init__(self, counter: Any) -> None:
        super().__init__(logging.DEBUG)
        self._counter = counter
        self._sums_lock = threading.Lock()  # not `lock`: logging.Handler's own
        self.bytes: collections.Counter = collections.Counter()
        self.lines: collections.Counter = collections.Counter()
        self.samples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if not self._counter.enabled:
            return
        caller = self._counter.caller()
        level = "default" if record.levelno >= logging.WARNING else "info"
        size = runtime_log_line_bytes(record.getMessage(), record.levelname)
        with self._sums_lock:
            self.bytes[(caller, level)] += size
            self.lines[(caller, level)] += 1
            if level == "default" and len(self.samples) < 5:
                self.samples.append(record.getMessage()[:200])

    def reset(self) -> None:
        with self._sums_lock:
            self.bytes.clear()
            self.lines.clear()
            self.samples.clear()

    def install(self) -> None:
        logging.getLogger("scheduler_runtime").addHandler(self)

    def uninstall(self) -> None:
        logging.getLogger("scheduler_runtime").removeHandler(self)
