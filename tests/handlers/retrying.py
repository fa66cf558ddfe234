"""A one-shot schedule with a retry policy, created through the api (to the broken target unless told), and its
record as the table holds it."""

from __future__ import annotations

from scheduler_runtime.core import keys

from .conftest import call_api
from .virtual_time import now_s


def create(schedule_id: str, retry: dict | None, target: str = "broken", due_in: float = 0) -> dict:
    body = {"id": schedule_id, "dueAt": round(now_s() + due_in, 3), "payload": {"keep": schedule_id},
            "target": target}
    if retry is not None:
        body["retry"] = retry
    status, answer = call_api("POST", "/schedules", body)
    assert status == 201, answer
    return answer


def stored(aws, schedule_id: str) -> dict:
    """The schedule's record item, as the table holds it."""
    key = keys.record_key(schedule_id)
    item = aws.item(key.pk, key.sk)
    assert item is not None
    return dict(item)
