import base64
import json
import time

from scheduler_runtime.handlers import api

from .conftest import api_event, call_api


def future(seconds: float = 3600) -> float:
    return round(time.time() + seconds, 3)


def test_create_get_replay_conflict(aws):
    body = {"id": "order-1", "dueAt": future(), "payload": {"n": 1}}
    status, created = call_api("POST", "/schedules", body)
    assert status == 201
    assert created == {"id": "order-1", "dueAt": created["dueAt"], "status": "SCHEDULED", "target": "default"}
    assert created["dueAt"].endswith("Z") and len(created["dueAt"]) == 24

    assert call_api("POST", "/schedules", body) == (200, created)
    status, conflict = call_api("POST", "/schedules", {**body, "payload": {"n": 2}})
    assert status == 409 and conflict["field"] == "id"

    status, read = call_api("GET", "/schedules/order-1")
    assert status == 200
    assert read["status"] == "SCHEDULED" and read["payload"] == {"n": 1} and read["attempts"] == 0
    assert aws.count_items("TIMER#") == 1 and aws.count_items("SCHEDULE#") == 1


def test_a_conflicting_replay_does_not_add_a_timer(aws):
    call_api("POST", "/schedules", {"id": "a", "delaySeconds": 100, "payload": 1})
    call_api("POST", "/schedules", {"id": "a", "delaySeconds": 200, "payload": 1})
    call_api("POST", "/schedules", {"id": "a", "delaySeconds": 100, "payload": 1})
    assert aws.count_items("TIMER#") == 1


def test_generated_ids_are_distinct(aws):
    ids = {call_api("POST", "/schedules", {"delaySeconds": 60, "payload": None})[1]["id"] for _ in range(5)}
    assert len(ids) == 5


def test_cancel_before_it_is_queued(aws):
    call_api("POST", "/schedules", {"id": "c1", "dueAt": future(), "payload": 1})
    assert call_api("DELETE", "/schedules/c1") == (200, {"id": "c1", "status": "CANCELLED"})
    assert call_api("DELETE", "/schedules/c1") == (200, {"id": "c1", "status": "CANCELLED"})  # idempotent
    status, read = call_api("GET", "/schedules/c1")
    assert read["status"] == "CANCELLED" and "endedAt" in read
    assert aws.count_items("TIMER#") == 0
    # The timer was flagged before its delete, so the REMOVE carries the flag the enqueuer filter drops.
    removes = aws.new_stream_records("REMOVE")
    assert [r["dynamodb"]["OldImage"]["cancelled"] for r in removes] == [{"BOOL": True}]


def test_unknown_ids_are_404(aws):
    for method in ("GET", "DELETE"):
        status, body = call_api(method, "/schedules/nope")
        assert status == 404 and body["field"] == "id" and "nope" in body["message"]


def test_routes_and_methods(aws):
    assert call_api("GET", "/schedules")[0] == 405
    assert call_api("PUT", "/schedules/x")[0] == 405
    assert call_api("GET", "/elsewhere")[0] == 404
    assert call_api("GET", "/schedules/a/b")[0] == 404
    status, body = call_api("GET", "/schedules/" + "x" * 129)
    assert status == 400 and body["field"] == "id"


def test_base64_body(aws):
    event = api_event("POST", "/schedules")
    event["body"] = base64.b64encode(json.dumps({"id": "b64", "delaySeconds": 5, "payload": "é"}).encode()).decode()
    event["isBase64Encoded"] = True
    assert api.handler(event)["statusCode"] == 201
    event["body"] = base64.b64encode(b"\xff\xfe").decode()
    response = api.handler(event)
    assert response["statusCode"] == 400 and json.loads(response["body"])["field"] == "body"


def test_an_aws_fault_is_a_500_without_internals(aws, monkeypatch):
    from scheduler_runtime.aws.store import ScheduleStore

    def explode(*args, **kwargs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(ScheduleStore, "create", explode)
    response = api.handler(api_event("POST", "/schedules", {"delaySeconds": 1, "payload": 1}))
    assert response["statusCode"] == 500
    assert "secret" not in response["body"] and json.loads(response["body"])["message"]
