"""The API's views of stored items: a schedule record and a periodic definition, as JSON bodies."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..aws.items import ScheduleRecord
from ..core.retry import MAX_LATENESS
from ..core.timeparse import format_rfc3339_ms

if TYPE_CHECKING:  # imported by the periodic routes, which load on first use
    from ..aws.definitions import Definition


def describe_record(record: ScheduleRecord, status: str, *, with_payload: bool = True) -> dict[str, Any]:
    """``GET /schedules/{id}`` (list items leave the payload out)."""
    body: dict[str, Any] = {"id": record.schedule_id, "dueAt": format_rfc3339_ms(record.due_ms), "status": status}
    if with_payload:
        body["payload"] = json.loads(record.payload_json)
    body.update(target=record.target, createdAt=format_rfc3339_ms(record.created_ms), attempts=record.attempts)
    _times(body, firedAt=record.fired_ms, endedAt=record.ended_ms)
    if record.last_error:
        body["lastError"] = record.last_error
    if record.retry is not None:
        body["retry"] = record.retry.to_json()
    if record.max_lateness_seconds is not None:
        body[MAX_LATENESS] = record.max_lateness_seconds
    if record.group is not None:
        body["group"] = record.group
    return body


def describe_definition(definition: Definition, *, with_payload: bool = True) -> dict[str, Any]:
    """The API's view of a definition (``GET /periodic/{id}``; list items leave the payload out)."""
    spec = definition.spec
    body: dict[str, Any] = {"id": definition.periodic_id, "status": definition.status}
    if spec.every_ms is not None:
        body["every"] = spec.every_ms // 1000
    else:
        body.update(cron=spec.cron, timeZone=spec.time_zone)
    _times(body, startAt=spec.start_ms, endAt=spec.end_ms)
    body.update(target=definition.target,
                nextDueAt=format_rfc3339_ms(definition.next_due_ms) if definition.next_due_ms is not None else None,
                firedCount=definition.fired_count, skippedCount=definition.skipped_count,
                pausedCount=definition.paused_count,
                createdAt=format_rfc3339_ms(definition.created_ms), updatedAt=format_rfc3339_ms(definition.updated_ms))
    _times(body, lastDueAt=definition.last_due_ms, lastFiredAt=definition.last_fired_ms, pausedAt=definition.paused_ms)
    if definition.last_error:
        body["lastError"] = definition.last_error
    if definition.retry is not None:
        body["retry"] = definition.retry.to_json()
    if definition.max_lateness_seconds is not None:
        body[MAX_LATENESS] = definition.max_lateness_seconds
    if definition.group is not None:
        body["group"] = definition.group
    if with_payload:
        body["payload"] = json.loads(definition.payload_json)
    return body


def _times(body: dict[str, Any], **instants: int | None) -> None:
    """Add each instant that is set, as RFC 3339 UTC with milliseconds."""
    body.update({name: format_rfc3339_ms(value) for name, value in instants.items() if value is not None})
