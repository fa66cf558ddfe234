"""A one-shot schedule created through the api to come due in so many seconds, and its PATCH."""

from __future__ import annotations

from .conftest import call_api
from .virtual_time import now_s


def create(schedule_id: str, in_seconds: float, **extra) -> dict:
    status, answer = call_api("POST", "/schedules", {"id": schedule_id, "dueAt": round(now_s() + in_seconds, 3),
                                                     "payload": {"v": 1}, **extra})
    assert status == 201
    return answer


def patch(schedule_id: str, body) -> tuple[int, dict]:
    return call_api("PATCH", f"/schedules/{schedule_id}", body)
