"""A Lambda target is invoked once per delivery attempt, through dispatcher handler events on
in-process moto and a fake Lambda endpoint: an invoke whose answer is lost or slow is not repeated
within the attempt (the target may have run), and only a throttled one, which never ran it, is tried
again at once."""

from __future__ import annotations

import json
import os

import pytest

from scheduler_runtime.aws import context

from .conftest import schedule
from .dispatching import dispatch, receive

pytestmark = pytest.mark.usefixtures("virtual_clock")


class FakeLambda:
    """Lambda's Invoke endpoint on 127.0.0.1 that counts invokes and, per ``mode``, answers (an ``Event`` invoke
    with 202, as Lambda, unless ``answer-200``), reads the request and drops the connection without an answer
    (``drop``), or holds its answer until it is closed (``hold``: a function slower than any read timeout)."""

    def __init__(self, mode: str) -> None:
        import http.server
        import threading

        self.calls = 0
        self.invocation_types: list[str] = []
        self._closed = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.calls += 1
                fake.invocation_types.append(self.headers.get("X-Amz-Invocation-Type", ""))
                if mode == "hold":
                    fake._closed.wait()
                    return
                if mode == "drop":
                    self.close_connection = True
                    return
                if mode == "throttle-once" and fake.calls == 1:
                    body = b'{"Type": "User", "message": "Rate exceeded"}'
                    self.send_response(429)
                    self.send_header("x-amzn-ErrorType", "TooManyRequestsException")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if fake.invocation_types[-1] == "Event" and mode != "answer-200":  # Lambda accepts the event
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"null")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        # (shutdown waits for the loop to look at its flag, at most ``poll_interval`` after asking: 0.5 s by default)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def close(self) -> None:
        self._closed.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def lambda_target(aws, monkeypatch):
    """Use as ``lambda_target(mode, **fields)``: schedules naming target ``slow`` go to a fresh fake
    endpoint; ``fields`` are more fields of the target's description (``invocationType="Event"``)."""
    started: list[FakeLambda] = []

    def start(mode: str, **fields: str) -> FakeLambda:
        fake = FakeLambda(mode)
        started.append(fake)
        targets = json.loads(os.environ["TARGETS"])
        targets["slow"] = {"type": "lambda", "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:slow",
                           **fields}
        monkeypatch.setenv("TARGETS", json.dumps(targets))
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", fake.url)
        return fake

    yield start
    for fake in started:
        fake.close()


def test_an_invoke_whose_answer_is_lost_is_not_repeated_within_the_attempt(aws, lambda_target):
    fake = lambda_target("drop")
    schedule("lost-answer", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert fake.calls == 1  # the target may have run: only the next receive tries again


@pytest.mark.slow  # real time: the 1 s read timeout runs out on the socket, not on the virtual clock
def test_a_target_slower_than_the_read_timeout_is_invoked_once_and_the_timeout_follows_the_dispatchers(
        aws, lambda_target, monkeypatch):
    monkeypatch.setenv("DISPATCHER_TIMEOUT_SECONDS", "1")  # the read timeout: at least the dispatcher's own
    fake = lambda_target("hold")
    schedule("slow-target", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert fake.calls == 1


def test_the_lambda_clients_read_timeout_covers_the_longest_dispatcher_and_it_never_retries(aws, monkeypatch):
    monkeypatch.setenv("DISPATCHER_TIMEOUT_SECONDS", "900")
    config = context.current().client("lambda").meta.config
    assert config.read_timeout >= 900
    assert config.retries["total_max_attempts"] == 1
    assert context.current().client("sqs").meta.config.read_timeout == 60  # the other clients as they were


def test_a_throttled_invoke_never_ran_the_target_so_it_is_tried_again_at_once(aws, lambda_target):
    fake = lambda_target("throttle-once")
    schedule("throttled-invoke", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert fake.calls == 2


def test_a_synchronous_invoke_is_the_default(aws, lambda_target):
    fake = lambda_target("answer")
    schedule("sync-invoke", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert fake.invocation_types == ["RequestResponse"]


def test_an_event_invoke_is_delivered_when_lambda_accepts_the_event(aws, lambda_target):
    fake = lambda_target("answer", invocationType="Event")
    schedule("event-invoke", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert fake.invocation_types == ["Event"]


def test_an_event_invoke_answered_otherwise_than_202_is_a_failed_delivery(aws, lambda_target):
    fake = lambda_target("answer-200", invocationType="Event")  # not how Lambda accepts an event
    schedule("event-not-accepted", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert fake.invocation_types == ["Event"]


def test_a_throttled_event_invoke_is_tried_again_at_once(aws, lambda_target):
    fake = lambda_target("throttle-once", invocationType="Event")
    schedule("throttled-event", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert fake.invocation_types == ["Event", "Event"]
