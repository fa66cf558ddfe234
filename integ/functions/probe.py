"""The integration tests' probe: calls the scheduler through the typed client (a direct invoke of its api
function, ``SchedulerClient.for_function``) and reads what the seen table holds. Two kinds of event:

- ``{"call": <SchedulerClient method>, "args": [...], "mark": <name>?}``: answers ``{"answer": <the
  answer's JSON as the API sent it>}``, or ``{"error": <the typed error's class>, "status": <HTTP status>}``;
  with ``mark``, sets that mark once the answer is in (``after`` in the tests: "after the pause answered").
- ``{"deliveries": <id>, "since": <mark>?, "atLeast": <n>?, "waitSeconds": <s>?, "read": <bool>?}``: answers
  what reached the targets for that id (only the occurrences whose delivery started at or after the mark,
  with ``since``): ``count``; ``reached`` (count >= atLeast, default 1); ``waited`` (at least ``waitSeconds``
  since the mark); ``early`` (how many started or arrived before their due time); the ``targets``,
  ``arrivedAs``, ``attempts`` and ``executions`` seen, each sorted; ``dueAt`` of each occurrence, in due order.
  With ``read`` (a one-shot schedule), also its ``status`` as ``GET /schedules/{id}`` answers it now, and
  ``asRecorded``: whether every occurrence delivered was due when the schedule is due (so never at a due
  time a reschedule replaced).
"""

from __future__ import annotations

import os
from typing import Any

import seen
from cdk_delayed_scheduler.client import SchedulerClient, SchedulerError

CLIENT = SchedulerClient.for_function(os.environ["API_FUNCTION"])


def call(method: str, args: list[Any], mark: str | None = None) -> dict[str, Any]:
    try:
        answer = getattr(CLIENT, method)(*args)
    except SchedulerError as error:
        return {"error": type(error).__name__, "status": error.status}
    if mark:
        seen.mark(mark)
    return {"answer": answer.raw}


def deliveries(schedule_id: str, since: str | None = None, at_least: int = 1, wait_seconds: int = 0,
               read: bool = False) -> dict[str, Any]:
    start = seen.mark_time(since) if since else 0
    found = [item for item in seen.deliveries(schedule_id) if item["firedMs"] >= start]

    def kinds(name: str) -> list[Any]:
        return sorted({item[name] for item in found if name in item})

    answer = {"count": len(found), "reached": len(found) >= at_least,
              "waited": seen.now_ms() - start >= wait_seconds * 1000,
              "early": sum(1 for item in found if item["early"]), "targets": kinds("target"),
              "arrivedAs": kinds("arrivedAs"), "attempts": kinds("attempt"), "executions": kinds("execution"),
              "dueAt": [item["dueAt"] for item in found]}
    if read:
        schedule = CLIENT.get(schedule_id)
        due_ms = int(schedule.due_at.timestamp() * 1000)
        answer.update(status=schedule.raw["status"], asRecorded=all(item["dueMs"] == due_ms for item in found))
    return answer


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    if "call" in event:
        return call(event["call"], event.get("args", []), event.get("mark"))
    return deliveries(event["deliveries"], event.get("since"), event.get("atLeast", 1), event.get("waitSeconds", 0),
                      event.get("read", False))
