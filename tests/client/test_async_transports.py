"""The asyncio client's transports against a scripted server on 127.0.0.1: retries and error mapping as
the sync client's, SigV4 signatures that verify, kept-alive connections, and an event loop that keeps
running while calls wait for their answers."""

from __future__ import annotations

import asyncio
import json
import threading
from datetime import timedelta
from typing import Any, Callable

import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from cdk_delayed_scheduler.client import (AccessDeniedError, AsyncSchedulerClient, ConflictError, FunctionError,
                                          NotFoundError, PayloadTooLargeError, RequestError, Schedule, ServerError,
                                          ThrottledError, TransportError, ValidationError)

from .async_calls import run
from .conftest import ScriptedServer, Seen

Scripted = Callable[[list[Any]], ScriptedServer]
CREATED = {"id": "answered", "dueAt": "2030-01-01T00:00:00.250Z", "status": "SCHEDULED", "target": "default"}
FAST = {"backoff_base": 0.01, "backoff_cap": 0.02}
UNAVAILABLE = (503, {"message": "Service Unavailable"})
THROTTLED_INVOKE = (429, {"Type": "User", "message": "Rate exceeded"}, {"x-amzn-ErrorType": "TooManyRequestsException"})
BOTH = pytest.mark.parametrize("transport", ["http", "invoke"])


@pytest.fixture
def over(scripted: Scripted, monkeypatch: pytest.MonkeyPatch) -> Callable[..., tuple[Callable[[], Any], Any]]:
    """``over(transport, answers)``: a maker of an async client of either transport, and a scripted server
    answering ``answers`` (``(status, API body)`` pairs) in that transport's shape."""
    def make(transport: str, answers: list[Any], **options: Any) -> tuple[Callable[[], AsyncSchedulerClient], Any]:
        if transport == "invoke":
            server = scripted([(200, {"statusCode": status, "body": body}) for status, body in answers])
            monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", server.url)
            return lambda: AsyncSchedulerClient.for_function("timers-api", **{**FAST, **options}), server
        server = scripted(answers)
        return lambda: AsyncSchedulerClient(server.url, region="us-east-1", **{**FAST, **options}), server
    return make


def sent_bodies(server: ScriptedServer) -> list[Any]:
    """The API request bodies the client sent, whichever the transport (a direct invoke's are in its event)."""
    return [seen.body.get("body") if seen.path.endswith("/invocations") else seen.body for seen in server.seen]


@BOTH
def test_a_create_is_retried_on_503_with_the_same_client_generated_id(over: Any, transport: str) -> None:
    make, server = over(transport, [UNAVAILABLE, UNAVAILABLE, (201, CREATED)])
    created = run(make, lambda timers: timers.schedule(timedelta(seconds=5), {"a": 1}))
    assert created.id == "answered"
    bodies = sent_bodies(server)
    assert len(bodies) == 3 and bodies[0]["id"] == bodies[1]["id"] == bodies[2]["id"]


@BOTH
def test_throttling_is_retried_until_the_attempts_run_out(over: Any, transport: str) -> None:
    make, server = over(transport, [(429, {"message": "slow down"})], max_attempts=3)
    with pytest.raises(ThrottledError) as raised:
        run(make, lambda timers: timers.get("x"))
    assert raised.value.status == 429 and len(server.seen) == 3


@BOTH
@pytest.mark.parametrize("status, kind", [(400, ValidationError), (403, AccessDeniedError), (404, NotFoundError),
                                          (409, ConflictError), (413, PayloadTooLargeError), (405, RequestError)])
def test_each_4xx_maps_to_its_error_once(over: Any, transport: str, status: int, kind: type[Exception]) -> None:
    make, server = over(transport, [(status, {"message": "no", "field": "id"})])
    with pytest.raises(kind) as raised:
        run(make, lambda timers: timers.cancel("x"))
    assert (raised.value.status, raised.value.field, raised.value.retryable) == (status, "id", False)
    assert len(server.seen) == 1


def test_a_batch_item_refused_with_503_is_sent_again_alone_and_errors_name_the_items_place(scripted: Scripted) -> None:
    def answer(seen: Seen) -> tuple[int, dict[str, Any]]:
        results = []
        for schedule in seen.body["schedules"]:
            n = int(schedule["id"][1:])
            if n in (2, 12):
                at = seen.body["schedules"].index(schedule)
                results.append({"status": 400, "body": {"message": f"schedules[{at}]: bad id", "field": f"schedules[{at}].id"}})
            elif n == 11 and len(seen.body["schedules"]) > 1:
                results.append({"status": 503, "body": {"message": "queue refused"}})
            else:
                results.append({"status": 201, "body": {**CREATED, "id": schedule["id"]}})
        return 200, {"results": results}

    server = scripted([answer])
    items = [{"at": timedelta(60), "payload": n, "id": f"b{n}"} for n in range(13)]
    results = run(lambda: AsyncSchedulerClient(server.url, region="us-east-1", **FAST),
                  lambda timers: timers.schedule_many(items))
    assert [len(seen.body["schedules"]) for seen in server.seen] == [10, 3, 1]
    errors = {n: r for n, r in enumerate(results) if not isinstance(r, Schedule)}
    assert [(n, type(e), e.field) for n, e in errors.items()] == [(2, ValidationError, "schedules[2].id"),
                                                                 (12, ValidationError, "schedules[12].id")]
    assert [r.id for n, r in enumerate(results) if n not in errors] == [f"b{n}" for n in range(13) if n not in errors]


def test_listing_follows_next_token_and_puts_the_query_in_the_path(scripted: Scripted) -> None:
    item = {"id": "l1", "dueAt": "2030-01-01T00:00:00.000Z", "status": "FAILED", "target": "default"}
    server = scripted([(200, {"items": [item, {**item, "id": "l2"}], "nextToken": "t/1"}),
                       (200, {"items": [{**item, "id": "l3"}]})])

    async def listed(timers: AsyncSchedulerClient) -> list[str]:
        return [s.id async for s in timers.list(status="FAILED", page_size=2)]

    assert run(lambda: AsyncSchedulerClient(server.url, region="us-east-1"), listed) == ["l1", "l2", "l3"]
    assert [seen.path for seen in server.seen] == ["/schedules?status=FAILED&limit=2",
                                                   "/schedules?status=FAILED&limit=2&nextToken=t%2F1"]


def signature_verifies(seen: Seen, url: str) -> bool:
    """Recompute the request's SigV4 signature from what the server received, with the suite's credentials."""
    fields = dict(part.strip().split("=", 1) for part in seen.headers["authorization"].split(" ", 1)[1].split(","))
    _, _, region, service, _ = fields["Credential"].split("/")
    data = None if seen.body is None else json.dumps(seen.body, ensure_ascii=False).encode("utf-8")
    request = AWSRequest(method=seen.method, url=url + seen.path, data=data,
                         headers={name: seen.headers[name] for name in fields["SignedHeaders"].split(";")})
    request.context["timestamp"] = seen.headers["x-amz-date"]
    credentials = botocore.session.get_session().get_credentials().get_frozen_credentials()
    signer = SigV4Auth(credentials, service, region)
    canonical = signer.canonical_request(request)
    return bool(signer.signature(signer.string_to_sign(request, canonical), request) == fields["Signature"])


def test_requests_carry_sigv4_signatures_that_verify_for_quoted_ids_queries_and_unicode_bodies(
        scripted: Scripted) -> None:
    server = scripted([(201, CREATED), (200, {"id": "tenant:7.order", "status": "CANCELLED"}), (200, {"items": []})])

    async def calls(timers: AsyncSchedulerClient) -> None:
        await timers.schedule(timedelta(seconds=5), {"text": "é ü → ✓"}, id="x")
        await timers.cancel("tenant:7.order")
        assert [s async for s in timers.list(status="FAILED", page_size=5)] == []

    run(lambda: AsyncSchedulerClient(server.url, region="eu-west-3"), calls)
    assert [seen.path for seen in server.seen][1] == "/schedules/tenant%3A7.order"
    assert all("/eu-west-3/execute-api/aws4_request" in seen.headers["authorization"] for seen in server.seen)
    assert [signature_verifies(seen, server.url) for seen in server.seen] == [True, True, True]


def test_sequential_calls_reuse_one_kept_alive_connection(scripted: Scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    server = scripted([(200, CREATED)])
    accepted: list[object] = []
    process = server._httpd.process_request
    monkeypatch.setattr(server._httpd, "process_request", lambda *args: (accepted.append(args[1]), process(*args)))

    async def calls(timers: AsyncSchedulerClient) -> None:
        for _ in range(5):
            await timers.get("answered")

    run(lambda: AsyncSchedulerClient(server.url, region="us-east-1"), calls)
    assert len(server.seen) == 5 and len(accepted) == 1


@BOTH
def test_the_event_loop_keeps_running_while_calls_wait_for_their_answers(over: Any, transport: str) -> None:
    both_waiting = threading.Event()
    arrived = threading.Barrier(2, action=both_waiting.set)
    loop_ran = threading.Event()
    held: list[tuple[bool, bool]] = []

    def answered_once_the_loop_ran(seen: Seen) -> tuple[int, Any]:
        """Answers each call only once both wait for their answers at once and the event loop ran meanwhile."""
        try:
            arrived.wait(timeout=5)
        except threading.BrokenBarrierError:
            pass
        held.append((both_waiting.is_set(), loop_ran.wait(timeout=5)))
        return 200, {"statusCode": 200, "body": CREATED} if seen.path.endswith("/invocations") else CREATED

    make, server = over(transport, [])
    server.script.append(answered_once_the_loop_ran)

    async def calls(timers: AsyncSchedulerClient) -> None:
        async def on_the_loop() -> None:
            await asyncio.to_thread(both_waiting.wait, 10)
            loop_ran.set()  # the loop resumed this task while both calls waited for their answers

        await asyncio.gather(timers.get("x"), timers.get("y"), on_the_loop())

    run(make, calls)
    assert held == [(True, True), (True, True)]


def test_no_answer_is_a_transport_error(scripted: Scripted) -> None:
    server = scripted([(200, {})])
    url = server.url
    server.close()
    with pytest.raises(TransportError, match="ConnectError") as raised:
        run(lambda: AsyncSchedulerClient(url, region="us-east-1", max_attempts=1), lambda timers: timers.get("x"))
    assert raised.value.status is None


def test_a_direct_invoke_is_retried_when_lambda_throttles_and_a_crash_is_a_function_error(
        scripted: Scripted, monkeypatch: pytest.MonkeyPatch) -> None:
    crash = (200, {"errorMessage": "boom", "errorType": "RuntimeError"}, {"X-Amz-Function-Error": "Unhandled"})
    server = scripted([THROTTLED_INVOKE, (200, {"statusCode": 201, "body": CREATED}), crash])
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", server.url)

    async def calls(timers: AsyncSchedulerClient) -> Schedule:
        created = await timers.schedule(timedelta(seconds=1), "hi", id="x1")
        with pytest.raises(FunctionError, match="boom") as raised:
            await timers.get("x1")
        assert raised.value.error_type == "RuntimeError" and isinstance(raised.value, ServerError)
        return created

    created = run(lambda: AsyncSchedulerClient.for_function("timers-api", max_attempts=2, **FAST), calls)
    assert created.id == "answered" and len(server.seen) == 4
    assert server.seen[0].path == "/2015-03-31/functions/timers-api/invocations"
    assert server.seen[0].body["body"]["id"] == "x1"

