"""API Gateway REST proxy handler.

``POST /schedules``, ``GET``/``DELETE /schedules/{id}``, and ``POST /schedule-batches``
(up to 10 creates in one call: one API request and one invocation instead of ten).
"""

from __future__ import annotations

import base64
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..aws.config import Config
from ..aws.context import current
from ..aws.store import CreateConflict, ScheduleRecord, ScheduleStore
from ..core import keys, states
from ..core.timeparse import format_rfc3339_ms, now_ms
from ..core.validation import ApiError, batch_items, in_batch, parse_json_body, validate_create, validate_schedule_id
from ..observability import log_event

JSON_HEADERS = {"Content-Type": "application/json"}
BATCH_RESOURCE = "schedule-batches"
# Reused across invocations of a warm function: a batch's items are written in parallel.
_batch_workers = ThreadPoolExecutor(max_workers=8, thread_name_prefix="batch")


def handler(event: dict, context: Any = None) -> dict:
    try:
        status, body = _route(event)
    except ApiError as err:
        status, body = err.status, err.body()
    except Exception:  # noqa: BLE001 - a genuine server fault: logged, never leaked
        logging.getLogger("scheduler_runtime").exception("api handler failed")
        status, body = 500, {"message": "internal error; the request may be retried", "field": None}
    return {"statusCode": status, "headers": JSON_HEADERS, "body": json.dumps(body, ensure_ascii=False)}


def _route(event: dict) -> tuple[int, dict]:
    method = str(event.get("httpMethod") or "").upper()
    segments = [s for s in str(event.get("path") or "").split("/") if s]
    ctx = current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    if segments == [BATCH_RESOURCE]:
        if method != "POST":
            raise ApiError(405, f"method {method} is not allowed on /{BATCH_RESOURCE}; use POST", None)
        return _create_batch(store, ctx.config, parse_json_body(_body_text(event)))
    if segments[:1] != ["schedules"] or len(segments) > 2:
        raise ApiError(404, f"no route for {method} {event.get('path')}", None)
    if len(segments) == 1:
        if method != "POST":
            raise ApiError(405, f"method {method} is not allowed on /schedules; use POST", None)
        return _create(store, ctx.config, parse_json_body(_body_text(event)))
    schedule_id = validate_schedule_id((event.get("pathParameters") or {}).get("id") or segments[1])
    if method == "GET":
        return _read(store, schedule_id)
    if method == "DELETE":
        return _cancel(store, ctx.config, schedule_id)
    raise ApiError(405, f"method {method} is not allowed on /schedules/{{id}}; use GET or DELETE", None)


def _create(store: ScheduleStore, config: Config, body: dict) -> tuple[int, dict]:
    """One schedule: 201 with the answer, 200 for an idempotent replay; ApiError otherwise."""
    now = now_ms()
    request = validate_create(body, now, config.targets, config.default_target)
    shard = keys.shard_for(request.schedule_id, config.shard_count)
    try:
        record, created = store.create(request, shard, now)
    except CreateConflict:
        raise ApiError(
            409, f"schedule '{request.schedule_id}' exists with a different body; ids are idempotency keys", "id"
        ) from None
    if created:
        log_event("created", id=record.schedule_id, dueMs=record.due_ms, shard=shard)
    answer = {
        "id": record.schedule_id,
        "dueAt": format_rfc3339_ms(record.due_ms),
        "status": states.SCHEDULED,
        "target": record.target,
    }
    return (201 if created else 200), answer


def _create_batch(store: ScheduleStore, config: Config, body: dict) -> tuple[int, dict]:
    """Up to 10 schedules in one call, each created (or refused) on its own, answered in order.

    The call answers 200 with ``{"results": [{"status", "body"}, ...]}``: each result is what
    ``POST /schedules`` would have answered for that item, with error fields named
    ``schedules[i].field``. One bad item never stops the others.
    """
    items = batch_items(body)

    def create_item(indexed: tuple[int, Any]) -> dict:
        index, item = indexed
        try:
            if not isinstance(item, dict):
                raise ApiError(400, "each schedule must be a JSON object", None)
            status, answer = _create(store, config, item)
        except ApiError as err:
            err = in_batch(err, index)
            status, answer = err.status, err.body()
        return {"status": status, "body": answer}

    return 200, {"results": list(_batch_workers.map(create_item, enumerate(items)))}


def _read(store: ScheduleStore, schedule_id: str) -> tuple[int, dict]:
    record = store.get(schedule_id)
    if record is None:
        raise ApiError(404, f"schedule '{schedule_id}' not found", "id")
    pending = record.status == states.SCHEDULED and store.timer_pending(record)
    return 200, _describe(record, states.visible_status(record.status, pending))


def _cancel(store: ScheduleStore, config: Config, schedule_id: str) -> tuple[int, dict]:
    record, changed = store.cancel(schedule_id, now_ms(), config.history_retention_seconds)
    if record is None:
        raise ApiError(404, f"schedule '{schedule_id}' not found", "id")
    if changed:
        log_event("cancelled", id=schedule_id)
    elif states.cancel_outcome(record.status) == "conflict":
        raise ApiError(409, f"schedule '{schedule_id}' is {record.status} and can no longer be cancelled", "id")
    return 200, {"id": schedule_id, "status": states.CANCELLED}


def _describe(record: ScheduleRecord, status: str) -> dict:
    body: dict = {
        "id": record.schedule_id,
        "dueAt": format_rfc3339_ms(record.due_ms),
        "status": status,
        "payload": json.loads(record.payload_json),
        "target": record.target,
        "createdAt": format_rfc3339_ms(record.created_ms),
        "attempts": record.attempts,
    }
    if record.fired_ms is not None:
        body["firedAt"] = format_rfc3339_ms(record.fired_ms)
    if record.ended_ms is not None:
        body["endedAt"] = format_rfc3339_ms(record.ended_ms)
    if record.last_error:
        body["lastError"] = record.last_error
    return body


def _body_text(event: dict) -> str | None:
    body = event.get("body")
    if body is None or not event.get("isBase64Encoded"):
        return body
    try:
        return base64.b64decode(body).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "request body must be UTF-8 JSON", "body") from None
