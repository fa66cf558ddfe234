"""The client's raw mode (``raw``, ``raw_request``): every answer as it came, ``(status, body)`` with its
``attempts``, over both transports and from the asyncio client; no error raised, no result parsed; no answer is
status ``None``; each path built from the contract's route of the operation named."""

from __future__ import annotations

import re
import socket
from typing import Any, Iterator

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.client import Answer, AsyncSchedulerClient, SchedulerClient, ValidationError

from .async_calls import run
from .conftest import FAST, fresh_id, invoke_answer, sent_bodies, sent_paths

BOTH = pytest.mark.parametrize("transport", ["http", "invoke"])
CREATED = {"id": "a1", "dueAt": "2030-01-01T00:00:00.250Z", "status": "SCHEDULED", "target": "default"}
CONFLICT = (409, {"message": "id a1 exists with another body", "field": "id"})
UNAVAILABLE = (503, {"message": "Service Unavailable"})
THROTTLED = (429, {"message": "Too Many Requests"})


@pytest.fixture
def silent_url() -> Iterator[str]:
    """An address that takes connections and never answers (a listening socket that accepts none)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@BOTH
def test_each_answer_comes_as_it_came_2xx_4xx_and_5xx_alike(over: Any, transport: str) -> None:
    timers, server = over(transport, [(201, CREATED), CONFLICT, UNAVAILABLE], max_attempts=1)
    created = timers.raw("createSchedule", {"id": "a1", "delaySeconds": 5, "payload": 1})
    assert isinstance(created, Answer) and (created.status, created.body, created.attempts) == (201, CREATED, 1)
    status, body = timers.raw("createSchedule", {"id": "a1", "delaySeconds": 6, "payload": 1})
    assert (status, body) == CONFLICT
    assert timers.raw("getSchedule", id="a1") == UNAVAILABLE
    assert sent_paths(server) == ["/schedules", "/schedules", "/schedules/a1"]
    assert sent_bodies(server)[1] == {"id": "a1", "delaySeconds": 6, "payload": 1}


@BOTH
def test_throttling_and_5xx_are_retried_up_to_max_attempts_and_counted(over: Any, transport: str) -> None:
    timers, server = over(transport, [UNAVAILABLE, THROTTLED, (200, CREATED)], max_attempts=4)
    answer = timers.raw("getSchedule", id="a1")
    assert (answer.status, answer.body, answer.attempts) == (200, CREATED, 3) and len(server.seen) == 3
    timers, server = over(transport, [UNAVAILABLE, THROTTLED, (200, CREATED)], max_attempts=2)
    answer = timers.raw("getSchedule", id="a1")
    assert (answer.status, answer.body, answer.attempts) == (*THROTTLED, 2) and len(server.seen) == 2


@BOTH
def test_a_4xx_is_never_sent_again(over: Any, transport: str) -> None:
    timers, server = over(transport, [(404, {"message": "no schedule a1"}), (200, CREATED)], max_attempts=4)
    assert timers.raw("getSchedule", id="a1") == (404, {"message": "no schedule a1"})
    assert len(server.seen) == 1


@BOTH
def test_no_answer_is_status_none_and_not_sent_again(scripted: Any, invoke_client: Any, transport: str) -> None:
    server = scripted([(200, {})])
    timers = (SchedulerClient(server.url, sign=False, **FAST) if transport == "http" else invoke_client(server))
    server.close()
    answer = timers.raw("createSchedule", {"id": "a1", "delaySeconds": 5, "payload": 1})
    assert answer.status is None and answer.attempts == 1 and answer.body["message"]


def test_a_timeout_is_status_none(silent_url: str) -> None:
    answer = SchedulerClient(silent_url, sign=False, timeout=0.3, max_attempts=3).raw("getSchedule", id="a1")
    assert (answer.status, answer.attempts) == (None, 1) and "timeout" in answer.body["message"].lower()


def test_what_lambda_answers_for_the_function_is_a_status_and_a_message(scripted: Any, invoke_client: Any) -> None:
    throttled = (429, {"Type": "User", "message": "Rate exceeded"}, {"x-amzn-ErrorType": "TooManyRequestsException"})
    crash = (200, {"errorMessage": "boom", "errorType": "RuntimeError"}, {"X-Amz-Function-Error": "Unhandled"})
    timers = invoke_client(scripted([throttled, crash, invoke_answer(201, CREATED)]), max_attempts=1)
    status, body = timers.raw("getSchedule", id="a1")
    assert status == 429 and "Rate exceeded" in body["message"]
    status, body = timers.raw("getSchedule", id="a1")
    assert status == 500 and body == {"message": "the function failed: boom"}
    assert timers.raw("getSchedule", id="a1") == (201, CREATED)


def test_every_route_of_the_contract_is_reached_by_its_operation(scripted: Any, invoke_client: Any) -> None:
    """Through the direct-invoke event, which carries each request's method and path whatever the method."""
    server = scripted([invoke_answer(200, {})])
    timers = invoke_client(server)
    for route in contract.ROUTES:
        parameters = {name: "p/1" for name in re.findall(r"{(\w+)}", route.path)}
        assert timers.raw(route.operation, **parameters).status == 200
    sent = [(seen.body["method"], seen.body["path"]) for seen in server.seen]
    assert sent == [(route.method, re.sub(r"{\w+}", "p%2F1", route.path)) for route in contract.ROUTES]


def test_parameters_are_sent_as_given_for_the_server_to_judge(scripted: Any) -> None:
    server = scripted([(400, {"message": "id must match ...", "field": "id"})])
    timers = SchedulerClient(server.url, sign=False, **FAST)
    assert timers.raw("getSchedule", id="has space")[0] == 400
    with pytest.raises(ValidationError):  # the typed call checks it first, and sends nothing
        timers.get("has space")
    assert sent_paths(server) == ["/schedules/has%20space"]


def test_a_listing_query_leaves_out_none_and_is_encoded(over: Any) -> None:
    timers, server = over("http", [(200, {"items": []})])
    timers.raw("listSchedules", query={"status": "FAILED", "dueAfter": "2030-01-01T00:00:00Z", "group": None})
    timers.raw("listPeriodic")
    assert sent_paths(server) == ["/schedules?status=FAILED&dueAfter=2030-01-01T00%3A00%3A00Z", "/periodic"]


def test_an_unknown_operation_or_a_wrong_parameter_is_refused_before_anything_is_sent(scripted: Any) -> None:
    server = scripted([(200, {})])
    timers = SchedulerClient(server.url, sign=False)
    with pytest.raises(ValueError, match="no route has the operation 'getSchedules'"):
        timers.raw("getSchedules", id="a1")
    with pytest.raises(ValueError, match=r"getSchedule \(GET /schedules/\{id\}\) takes the parameters \['id'\]"):
        timers.raw("getSchedule", group="a1")
    with pytest.raises(ValueError, match="takes the parameters"):
        timers.raw("getSchedule")
    assert server.seen == []


@BOTH
def test_a_body_of_bytes_is_sent_as_it_is(over: Any, transport: str) -> None:
    timers, server = over(transport, [(400, {"message": "bad", "field": "dueAt"})])
    assert timers.raw("createSchedule", b'{"dueAt": "noon",  "payload": 1}')[0] == 400
    seen = server.seen[0].body
    assert (seen.get("body") if transport == "invoke" else seen) == (
        '{"dueAt": "noon",  "payload": 1}' if transport == "invoke" else {"dueAt": "noon", "payload": 1})


def test_raw_request_sends_any_method_and_path(over: Any) -> None:
    timers, server = over("http", [(404, {"message": "no route"})])
    assert timers.raw_request("DELETE", "/nowhere?x=1") == (404, {"message": "no route"})
    assert [(seen.method, seen.path) for seen in server.seen] == [("DELETE", "/nowhere?x=1")]


def test_an_unsigned_client_needs_no_region(scripted: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "empty").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "empty"))
    server = scripted([(200, CREATED)])
    timers = SchedulerClient(server.url, sign=False)
    assert timers.region is None and timers.raw("getSchedule", id="a1") == (200, CREATED)
    assert "authorization" not in server.seen[0].headers


@BOTH
def test_the_asyncio_client_answers_raw_too(scripted: Any, monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    answers = [(201, CREATED), UNAVAILABLE]
    if transport == "invoke":
        server = scripted([invoke_answer(status, body) for status, body in answers])
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", server.url)
        make = lambda: AsyncSchedulerClient.for_function("timers-api", max_attempts=1)  # noqa: E731
    else:
        server = scripted(answers)
        make = lambda: AsyncSchedulerClient(server.url, sign=False, max_attempts=1)  # noqa: E731

    async def calls(timers: AsyncSchedulerClient) -> list[Answer]:
        return [await timers.raw("createSchedule", {"id": "a1", "delaySeconds": 5, "payload": 1}),
                await timers.raw_request("GET", "/schedules/a1")]

    assert run(make, calls) == [(201, CREATED), UNAVAILABLE]
    assert sent_paths(server) == ["/schedules", "/schedules/a1"]


def test_the_async_raw_mode_answers_no_answer_as_status_none(silent_url: str) -> None:
    answer = run(lambda: AsyncSchedulerClient(silent_url, sign=False, timeout=0.3),
                 lambda timers: timers.raw("getSchedule", id="a1"))
    assert (answer.status, answer.attempts) == (None, 1)


def test_the_raw_mode_answers_what_the_engine_answers(client: SchedulerClient) -> None:
    schedule_id, group = fresh_id("raw"), fresh_id("raw-group")
    body = {"id": schedule_id, "delaySeconds": 3600, "payload": {"n": 1}, "group": group}
    created = client.raw("createSchedule", body)
    assert (created.status, created.body["id"], created.body["status"]) == (201, schedule_id, "SCHEDULED")
    assert client.raw("createSchedule", body)[0] == 200  # the same id and body again
    status, conflict = client.raw("createSchedule", {**body, "payload": {"n": 2}})
    assert status == 409 and conflict["field"] == "id"
    assert client.raw("getSchedule", id=fresh_id("none"))[0] == 404
    status, refused = client.raw("getSchedule", id="has space")
    assert status == 400 and refused["message"]
    status, listed = client.raw("listSchedules", query={"group": group})
    assert status == 200 and [item["id"] for item in listed["items"]] == [schedule_id]
    assert client.raw("cancelSchedule", id=schedule_id) == (200, {"id": schedule_id, "status": "CANCELLED"})
