import base64
import json

import pytest

from scheduler_runtime.core.contract import MAX_BATCH_SIZE
from scheduler_runtime.handlers import api

from .conftest import api_event, call_api
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")


def future(seconds: float = 3600) -> float:
    return round(now_s() + seconds, 3)


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


def test_a_conflicting_replay_does_not_add_a_timer_and_a_replay_gets_the_first_answer(aws, virtual_clock):
    status, first = call_api("POST", "/schedules", {"id": "a", "delaySeconds": 100, "payload": 1})
    assert (status, first["status"]) == (201, "SCHEDULED")
    status, conflict = call_api("POST", "/schedules", {"id": "a", "delaySeconds": 200, "payload": 1})
    assert (status, conflict["field"]) == (409, "id")
    virtual_clock.advance(0.002)  # the replay's own dueAt would differ: it must answer the first one
    assert call_api("POST", "/schedules", {"id": "a", "delaySeconds": 100, "payload": 1}) == (200, first)
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
    assert call_api("PATCH", "/schedules") == (405, {"message": "method PATCH is not allowed on /schedules; use POST "
                                                                "or GET", "field": None})
    status, body = call_api("GET", "/schedules")  # listing is off unless the deployment turns it on
    assert status == 404 and "listing=True" in body["message"] and "--listing" in body["message"]
    assert call_api("PUT", "/schedules/x")[0] == 405
    assert call_api("POST", "/periodic/x") == (405, {"message": "method POST is not allowed on /periodic/{id}; use PUT "
                                                                "or GET or PATCH or DELETE", "field": None})
    assert call_api("DELETE", "/periodic") == (405, {"message": "method DELETE is not allowed on /periodic; use GET",
                                                     "field": None})
    assert call_api("GET", "/periodic/a/b") == (404, {"message": "no route for GET /periodic/a/b", "field": None})
    assert call_api("GET", "/elsewhere") == (404, {"message": "no route for GET /elsewhere", "field": None})
    assert call_api("GET", "/schedules/a/b")[0] == 404
    for method in ("GET", "PUT"):  # a bad id is refused before the method is looked at
        status, body = call_api(method, "/schedules/" + "x" * 129)
        assert status == 400 and body["field"] == "id"
    status, body = call_api("POST", "/periodic/a b")
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

    monkeypatch.setattr(ScheduleStore, "put_record", explode)
    response = api.handler(api_event("POST", "/schedules", {"delaySeconds": 1, "payload": 1}))
    assert response["statusCode"] == 500
    assert "secret" not in response["body"] and json.loads(response["body"])["message"]


def test_batch_create_answers_each_item_in_order(aws):
    call_api("POST", "/schedules", {"id": "exists", "delaySeconds": 100, "payload": 1})
    status, body = call_api("POST", "/schedule-batches", {"schedules": [
        {"id": "b-1", "delaySeconds": 600, "payload": {"n": 1}},
        {"id": "b-2", "dueAt": "2026-11-21T10:00:00", "payload": 2},
        {"id": "exists", "delaySeconds": 100, "payload": 1},
        {"id": "exists", "delaySeconds": 100, "payload": "other"},
        "not an object",
        {"delaySeconds": 60, "payload": "x" * (256 * 1024)},
    ]})
    assert status == 200
    results = body["results"]
    assert [r["status"] for r in results] == [201, 400, 200, 409, 400, 413]
    assert results[0]["body"]["id"] == "b-1" and results[0]["body"]["status"] == "SCHEDULED"
    assert results[1]["body"]["field"] == "schedules[1].dueAt" and "offset" in results[1]["body"]["message"]
    assert results[3]["body"]["field"] == "schedules[3].id"
    assert results[4]["body"]["field"] == "schedules[4]"
    assert results[5]["body"]["field"] == "schedules[5].payload"
    assert call_api("GET", "/schedules/b-1")[1]["payload"] == {"n": 1}
    assert call_api("GET", "/schedules/b-2")[0] == 404
    assert aws.count_items("TIMER#") == 2  # exists and b-1 (the conflict's and the replay's own timers were removed)


def test_batch_envelope_rules(aws):
    for body, field in (
        ({}, "schedules"),
        ({"schedules": []}, "schedules"),
        ({"schedules": {"id": "x"}}, "schedules"),
        ({"schedules": [{"delaySeconds": 1, "payload": 1}] * 11}, "schedules"),
        ({"schedules": [], "extra": 1}, "extra"),
        ([], "body"),
    ):
        status, answer = call_api("POST", "/schedule-batches", body)
        assert (status, answer["field"]) == (400, field)
    assert call_api("GET", "/schedule-batches")[0] == 405


def test_a_batch_of_the_largest_size_is_created_whole_and_one_more_item_is_refused(aws):
    items = [{"id": f"max-{n}", "delaySeconds": 600 * (n % 2), "payload": n} for n in range(MAX_BATCH_SIZE)]
    status, body = call_api("POST", "/schedule-batches", {"schedules": items})
    assert status == 200 and len(body["results"]) == MAX_BATCH_SIZE
    assert [(r["status"], r["body"]["id"]) for r in body["results"]] == [(201, item["id"]) for item in items]
    assert [r["body"]["status"] for r in body["results"]] == ["QUEUED", "SCHEDULED"] * (MAX_BATCH_SIZE // 2)
    assert len(aws.receive(aws.delayer_url)) == (MAX_BATCH_SIZE + 1) // 2  # the short ones, sent together

    one_more = [{**item, "id": f"over-{n}"} for n, item in enumerate(items)] + [{"id": "over-last", "payload": 0,
                                                                                "delaySeconds": 0}]
    status, body = call_api("POST", "/schedule-batches", {"schedules": one_more})
    assert (status, body["field"]) == (400, "schedules") and str(MAX_BATCH_SIZE) in body["message"]
    assert aws.count_items("SCHEDULE#over-") == 0
