"""The client's transports against a scripted server on 127.0.0.1: signing, the wire shapes, error
mapping and retries (throttling and 5xx retried with backoff, other 4xx never)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from cdk_delayed_scheduler import client as client_module
from cdk_delayed_scheduler.client import (AccessDeniedError, ConflictError, FunctionError, NotFoundError,
                                          PayloadTooLargeError, RequestError, Schedule, SchedulerClient,
                                          ScheduleRequest, ServerError, ThrottledError, TransportError, ValidationError)
from cdk_delayed_scheduler.local.signature import signature_problem

from .conftest import FAST, invoke_answer, sent_bodies, sent_paths

CONTRACT = Path(__file__).resolve().parents[2] / "lambda" / "scheduler_runtime" / "contract.json"
CREATED = {"id": "answered", "dueAt": "2030-01-01T00:00:00.250Z", "status": "SCHEDULED", "target": "default"}
UNAVAILABLE = (503, {"message": "Service Unavailable"})
BOTH = pytest.mark.parametrize("transport", ["http", "invoke"])
THROTTLED_INVOKE = (429, {"Type": "User", "message": "Rate exceeded"}, {"x-amzn-ErrorType": "TooManyRequestsException"})


@BOTH
def test_a_create_is_retried_on_503_with_the_same_client_generated_id(over, transport):
    timers, server = over(transport, [UNAVAILABLE, UNAVAILABLE, (201, CREATED)])
    created = timers.schedule(timedelta(seconds=2.5), {"order": 42})
    assert created == Schedule.from_json(CREATED) and created.due_at == datetime(2030, 1, 1, 0, 0, 0, 250_000, timezone.utc)
    bodies = sent_bodies(server)
    assert len(bodies) == 3 and bodies[0] == bodies[1] == bodies[2]
    assert (bodies[0]["delaySeconds"], bodies[0]["payload"]) == (2.5, {"order": 42})
    assert uuid.UUID(bodies[0]["id"]).version == 4


@BOTH
def test_throttling_is_retried_then_the_answer_read(over, transport):
    timers, server = over(transport, [(429, {"message": "Too Many Requests"}), (200, {**CREATED, "payload": [1]})])
    assert timers.get("x").payload == [1]
    assert sent_paths(server) == ["/schedules/x", "/schedules/x"]


@BOTH
def test_a_400_is_raised_at_once_with_its_field_and_never_retried(over, transport):
    timers, server = over(transport, [(400, {"message": "dueAt is not RFC 3339", "field": "dueAt"}), (201, CREATED)])
    with pytest.raises(ValidationError) as raised:
        timers.schedule(datetime.now(timezone.utc), 1)
    assert (raised.value.status, raised.value.field, raised.value.message) == (400, "dueAt", "dueAt is not RFC 3339")
    assert len(server.seen) == 1


@BOTH
def test_retries_stop_at_max_attempts(over, transport):
    timers, server = over(transport, [UNAVAILABLE], max_attempts=3)
    with pytest.raises(ServerError, match="Service Unavailable"):
        timers.get("x")
    assert len(server.seen) == 3


@BOTH
@pytest.mark.parametrize("status, kind", [(403, AccessDeniedError), (404, NotFoundError), (409, ConflictError),
                                          (413, PayloadTooLargeError), (405, RequestError)])
def test_each_4xx_maps_to_its_error_once(over, transport, status, kind):
    timers, server = over(transport, [(status, {"message": "no", "field": "id"})])
    with pytest.raises(kind) as raised:
        timers.cancel("x")
    assert (raised.value.status, raised.value.field, raised.value.retryable) == (status, "id", False)
    assert len(server.seen) == 1


def test_requests_are_sigv4_signed_for_execute_api_with_ids_quoted(scripted):
    server = scripted([(200, {"id": "tenant:7.order", "status": "CANCELLED"})])
    removed = SchedulerClient(server.url, region="eu-west-3").cancel("tenant:7.order")
    assert (removed.id, removed.status) == ("tenant:7.order", "CANCELLED")
    seen = server.seen[0]
    assert (seen.method, seen.path) == ("DELETE", "/schedules/tenant%3A7.order")
    assert signature_problem(seen.headers) is None
    assert "/eu-west-3/execute-api/aws4_request" in seen.headers["authorization"]


def test_the_region_comes_from_an_execute_api_host():
    assert SchedulerClient("https://abc123.execute-api.eu-west-3.amazonaws.com/prod").region == "eu-west-3"
    assert SchedulerClient("https://timers.example.com", region="ap-south-1").region == "ap-south-1"


def test_no_answer_is_a_transport_error(scripted):
    server = scripted([(200, {})])
    url = server.url
    server.close()
    with pytest.raises(TransportError):
        SchedulerClient(url, max_attempts=1).get("x")


def test_naive_datetimes_are_refused_before_anything_is_sent(scripted):
    server = scripted([(201, CREATED)])
    timers = SchedulerClient(server.url)
    with pytest.raises(ValueError, match="at must be a timezone-aware"):
        timers.schedule(datetime(2030, 1, 1), 1)
    with pytest.raises(ValueError, match=r"items\[1\]\.at"):
        timers.schedule_many([ScheduleRequest(timedelta(1), 1), {"at": datetime(2030, 1, 1), "payload": 2}])
    with pytest.raises(ValueError, match="start_at"):
        timers.put_periodic("p", 1, every=5, start_at=datetime(2030, 1, 1))
    assert server.seen == []


@BOTH
def test_a_payload_that_is_not_json_is_refused_before_anything_is_sent(over, transport):
    timers, server = over(transport, [(201, CREATED)])
    with pytest.raises(ValueError, match="JSON"):
        timers.schedule(timedelta(seconds=1), {"ratio": float("nan")})
    assert server.seen == []


def test_put_periodic_sends_the_wire_names(scripted):
    answer = {"id": "p", "status": "ACTIVE", "every": 60, "target": "default", "nextDueAt": None,
              "firedCount": 3, "skippedCount": 1, "createdAt": "2030-01-01T00:00:00.000Z", "somethingNew": True}
    server = scripted([(201, answer)])
    start = datetime(2030, 1, 1, 1, tzinfo=timezone(timedelta(hours=1)))
    periodic = SchedulerClient(server.url).put_periodic("p", {"x": 1}, every=timedelta(minutes=1), time_zone="Europe/Paris",
                                                        start_at=start)
    assert server.seen[0].body == {"payload": {"x": 1}, "every": 60, "timeZone": "Europe/Paris",
                                   "startAt": "2030-01-01T00:00:00.000Z"}
    assert (periodic.every, periodic.next_due_at, periodic.fired_count, periodic.skipped_count) == (60, None, 3, 1)
    assert periodic.raw["somethingNew"] is True
    with pytest.raises(ValueError, match="whole seconds"):
        SchedulerClient(server.url).put_periodic("p", 1, every=timedelta(seconds=1.5))


def test_max_batch_size_is_the_contracts_and_batches_are_split_at_it(scripted):
    assert client_module.MAX_BATCH_SIZE == json.loads(CONTRACT.read_text())["maxBatchSize"] == 10

    def answer(seen):
        return 200, {"results": [{"status": 201, "body": {**CREATED, "id": item["id"]}} for item in seen.body["schedules"]]}

    server = scripted([answer])
    ids = [f"item-{n}" for n in range(23)]
    results = SchedulerClient(server.url).schedule_many([ScheduleRequest(timedelta(60), n, id=i) for n, i in enumerate(ids)])
    assert [len(seen.body["schedules"]) for seen in server.seen] == [10, 10, 3]
    assert [result.id for result in results] == ids


def test_a_batch_item_refused_with_503_is_sent_again_alone_and_errors_name_the_items_place(scripted):
    refused: set = set()

    def answer(seen):
        results = []
        for position, item in enumerate(seen.body["schedules"]):
            if item["id"] == "b11" and not refused:
                refused.add(item["id"])
                results.append({"status": 503, "body": {"message": f"schedules[{position}]: the queue refused it"}})
            elif item["id"] in ("b2", "b12"):
                results.append({"status": 400, "body": {"message": f"schedules[{position}]: bad id",
                                                        "field": f"schedules[{position}].id"}})
            else:
                results.append({"status": 201, "body": {**CREATED, "id": item["id"]}})
        return 200, {"results": results}

    server = scripted([answer])
    results = SchedulerClient(server.url, **FAST).schedule_many([{"at": timedelta(60), "payload": n, "id": f"b{n}"} for n in range(13)])
    assert [len(seen.body["schedules"]) for seen in server.seen] == [10, 3, 1]
    assert server.seen[2].body["schedules"][0]["id"] == "b11"  # the second call's 503, sent again alone
    errors = {n: r for n, r in enumerate(results) if not isinstance(r, Schedule)}
    assert set(errors) == {2, 12}
    assert [(type(e), e.field) for e in errors.values()] == [(ValidationError, "schedules[2].id"), (ValidationError, "schedules[12].id")]
    assert errors[12].message == "schedules[12]: bad id"
    assert [r.id for n, r in enumerate(results) if n not in errors] == [f"b{n}" for n in range(13) if n not in errors]


def test_a_direct_invoke_sends_the_event_and_is_retried_when_lambda_throttles(scripted, invoke_client):
    server = scripted([THROTTLED_INVOKE, invoke_answer(201, CREATED)])
    created = invoke_client(server).schedule(timedelta(seconds=1), "hi", id="x1", target="billing")
    assert created.id == "answered" and len(server.seen) == 2
    assert server.seen[0].path == "/2015-03-31/functions/timers-api/invocations"
    assert server.seen[0].body == {"method": "POST", "path": "/schedules",
                                   "body": {"id": "x1", "delaySeconds": 1.0, "payload": "hi", "target": "billing"}}


def test_lambda_throttling_raises_throttled_once_the_attempts_run_out(scripted, invoke_client):
    server = scripted([THROTTLED_INVOKE])
    with pytest.raises(ThrottledError) as raised:
        invoke_client(server, max_attempts=2).get("x")
    assert raised.value.status == 429 and len(server.seen) == 2


def test_a_function_error_is_a_typed_server_error(scripted, invoke_client):
    crash = (200, {"errorMessage": "boom", "errorType": "RuntimeError"}, {"X-Amz-Function-Error": "Unhandled"})
    server = scripted([crash])
    with pytest.raises(FunctionError, match="boom") as raised:
        invoke_client(server, max_attempts=2).get("x")
    assert raised.value.error_type == "RuntimeError" and isinstance(raised.value, ServerError)
    assert len(server.seen) == 2


@BOTH
def test_listing_follows_next_token_and_puts_the_query_in_the_path(over, transport):
    item = {"id": "l1", "dueAt": "2030-01-01T00:00:00.000Z", "status": "FAILED", "target": "default"}
    timers, server = over(transport, [(200, {"items": [item, {**item, "id": "l2"}], "nextToken": "t/1"}),
                                      (200, {"items": [{**item, "id": "l3"}]})])
    after = datetime(2030, 1, 1, tzinfo=timezone.utc)
    assert [s.id for s in timers.list(status="FAILED", due_after=after, page_size=2)] == ["l1", "l2", "l3"]
    first = "/schedules?status=FAILED&dueAfter=2030-01-01T00%3A00%3A00.000Z&limit=2"
    assert sent_paths(server) == [first, first + "&nextToken=t%2F1"]
