"""Bulk loads: the items the API would write, written straight to moto, for sizes the API would take minutes for.

Each body is validated, given a token and turned into items by the runtime's own code
(``validate_create``, ``ScheduleRecord``, ``TimerItem``, ``TimerRef``), so the items are
exactly what a create writes; only the writes are batched:

- ``load_short``: a short timer, as the api sends it: the delayer message (delayed by the
  whole seconds left), then the record, ``QUEUED``;
- ``load_long``: a long timer, as the api writes it: the timer item in its shard, then the
  record, ``SCHEDULED``.
"""

from __future__ import annotations

import time
from typing import Any


def _clients(engine: Any) -> tuple[Any, Any]:
    import boto3

    return (boto3.client("dynamodb", endpoint_url=engine.endpoint_url, region_name="us-east-1"),
            boto3.client("sqs", endpoint_url=engine.endpoint_url, region_name="us-east-1"))


def _write(ddb: Any, table: str, items: list[dict]) -> None:
    for i in range(0, len(items), 25):
        requests = {table: [{"PutRequest": {"Item": it}} for it in items[i : i + 25]]}
        while requests:
            requests = ddb.batch_write_item(RequestItems=requests).get("UnprocessedItems") or None


def _requests(bodies: list[dict], now: int) -> list:
    from scheduler_runtime.core import keys
    from scheduler_runtime.core.validation import validate_create

    return [(validate_create(body, now, ["default"], "default"), keys.new_token()) for body in bodies]


def load_short(engine: Any, bodies: list[dict]) -> float:
    """Send each body's delayer message, then write its record; returns the seconds taken."""
    from scheduler_runtime.aws.items import ScheduleRecord
    from scheduler_runtime.clock import PROCESS
    from scheduler_runtime.core import states
    from scheduler_runtime.core.envelope import TimerRef
    from scheduler_runtime.core.window import enqueue_delay_seconds

    ddb, sqs = _clients(engine)
    now = PROCESS.now_ms()
    start = time.monotonic()
    made = _requests(bodies, now)
    refs = [TimerRef(req.schedule_id, req.due_ms, token, now) for req, token in made]
    for i in range(0, len(refs), 10):
        sent = PROCESS.now_ms()
        entries = [{"Id": str(k), "MessageBody": ref.to_message_body(),
                    "DelaySeconds": enqueue_delay_seconds(ref.due_ms, sent)} for k, ref in enumerate(refs[i : i + 10])]
        failed = sqs.send_message_batch(QueueUrl=engine.queue_url, Entries=entries).get("Failed")
        if failed:
            raise RuntimeError(f"bulk load: SQS refused {len(failed)} messages")
    _write(ddb, engine.table_name, [
        ScheduleRecord(req.schedule_id, req.due_ms, req.payload_json, req.target, states.QUEUED, token,
                       req.request_hash, now).to_item() for req, token in made])
    return time.monotonic() - start


def load_long(engine: Any, bodies: list[dict], shard_count: int) -> float:
    """Write each body's timer item, then its record; returns the seconds taken."""
    from scheduler_runtime.aws.items import ScheduleRecord, TimerItem
    from scheduler_runtime.clock import PROCESS
    from scheduler_runtime.core import keys, states

    ddb, _ = _clients(engine)
    now = PROCESS.now_ms()
    start = time.monotonic()
    made = _requests(bodies, now)
    shards = [keys.shard_for(req.schedule_id, shard_count) for req, _ in made]
    _write(ddb, engine.table_name, [TimerItem(shard, req.due_ms, req.schedule_id, token, now).to_item()
                                    for (req, token), shard in zip(made, shards)])
    _write(ddb, engine.table_name, [
        ScheduleRecord(req.schedule_id, req.due_ms, req.payload_json, req.target, states.SCHEDULED, token,
                       req.request_hash, now, shard=shard).to_item() for (req, token), shard in zip(made, shards)])
    return time.monotonic() - start
