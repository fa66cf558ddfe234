"""The HTTP API front door, through the typed client: ``SchedulerClient(API_URL)`` signs each request with
SigV4 (service ``execute-api``) with this function's role, to which the stack gave ``grant_schedule``.

- ``{"scenario": "door"}`` makes each kind of call once and answers what each answered (statuses, error
  classes): a create, a read, a batch, a reschedule, a cancel, a periodic timer paused and stopped by its
  group's cancel, an unknown id, and a request sent unsigned (which IAM must refuse).
- ``{"list": <status>}`` answers the ``ids`` the listing (``GET /schedules?status=``) holds, of this scenario's.
- ``{"get": <id>}`` answers the schedule's ``status``.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from cdk_delayed_scheduler.client import SchedulerClient, SchedulerError

API_URL = os.environ["API_URL"]
CLIENT = SchedulerClient(API_URL)


def error_of(call: Any) -> str:
    """The class of the typed error ``call()`` raises ("none" when it answers)."""
    try:
        call()
    except SchedulerError as error:
        return type(error).__name__
    return "none"


def scenario() -> dict[str, Any]:
    created = CLIENT.schedule(timedelta(seconds=30), {"door": "http"}, id="door-short")
    read = CLIENT.get("door-short")
    batch = CLIENT.schedule_many([
        {"at": timedelta(seconds=600), "payload": {"door": "moved"}, "id": "door-moved"},
        {"at": timedelta(seconds=30), "payload": {"door": "cancelled"}, "id": "door-cancelled"},
    ])
    moved = CLIENT.reschedule("door-moved", timedelta(seconds=40))
    cancelled = CLIENT.cancel("door-cancelled")
    periodic = CLIENT.put_periodic("door-hourly", {"door": "periodic"}, every=3600, group="door")
    paused = CLIENT.pause_periodic("door-hourly")
    group = CLIENT.cancel_group("door")
    unsigned = SchedulerClient(API_URL, sign=False)
    return {
        "created": created.status, "read": {"status": read.status, "payload": read.payload},
        "batch": [item.status if not isinstance(item, SchedulerError) else type(item).__name__ for item in batch],
        "moved": moved.status, "cancelled": cancelled.status,
        "periodic": periodic.status, "paused": paused.status, "group": group.group,
        "periodicAfterGroup": error_of(lambda: CLIENT.get_periodic("door-hourly")),
        "missing": error_of(lambda: CLIENT.get("door-missing")),
        "unsigned": error_of(lambda: unsigned.get("door-short")),
    }


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    if "get" in event:
        return {"status": CLIENT.get(event["get"]).status}
    if "list" in event:
        return {"ids": sorted(s.id for s in CLIENT.list(status=event["list"]) if s.id.startswith("door-"))}
    return scenario()
