"""Issue 11's findings on the dispatcher, the queues and the target call (F1, F4, F5, F6, F8), each
through a dispatcher handler event on in-process moto: the record outlives every attempt, a duplicate
message never delivers twice, whatever parks a schedule leaves it findable, a slow Lambda target is
invoked once per attempt, and what can never fit its target is refused with the reason."""

from __future__ import annotations

import json
import os
import time

import pytest

from scheduler_runtime.aws import context
from scheduler_runtime.handlers import dispatcher

from .conftest import call_api, faulty, schedule, service_error

VISIBILITY_SECONDS = 6 * 60  # the construct's default: 6 x a 60-second dispatcher timeout


def receive(message: dict, receive_count: int, message_id: str | None = None) -> dict:
    """``message`` as SQS hands it to the dispatcher on receive ``receive_count`` (another ``message_id``:
    another message with the same body, as an ambiguous send makes)."""
    attributes = {**message["attributes"], "ApproximateReceiveCount": str(receive_count)}
    return {**message, "attributes": attributes, "messageId": message_id or message["messageId"]}


def dispatch(*messages: dict) -> dict:
    return dispatcher.handler({"Records": list(messages)})


def expire_as_ttl_would(aws, at_epoch_seconds: float) -> list[str]:
    """Delete what DynamoDB's TTL may have deleted by ``at_epoch_seconds``; the keys it deleted."""
    gone = []
    for item in aws.ddb.scan(TableName=aws.table)["Items"]:
        if "expiresAt" in item and int(item["expiresAt"]["N"]) < at_epoch_seconds:
            aws.ddb.delete_item(TableName=aws.table, Key={"pk": item["pk"], "sk": item["sk"]})
            gone.append(item["pk"]["S"])
    return gone


# --- F1: a record outlives every remaining attempt -----------------------------------------------


def test_f1_a_fired_record_outlives_the_retry_that_comes_after_the_visibility_timeout(aws, monkeypatch):
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")  # the construct's least
    schedule("short-history", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    # The next receive comes a visibility timeout later; TTL has run meanwhile.
    assert expire_as_ttl_would(aws, time.time() + VISIBILITY_SECONDS + 5) == []
    assert dispatch(receive(message, 2)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert expire_as_ttl_would(aws, time.time() + VISIBILITY_SECONDS + 5) == []
    assert dispatch(receive(message, 3)) == {"batchItemFailures": []}  # the last receive (MAX_RECEIVE_COUNT 3)
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": "me"}
    assert "after 3 attempts" in parked["messageAttributes"]["reason"]["stringValue"]


def test_f1_a_record_stays_readable_for_the_history_retention_after_its_message_can_last_be_parked(aws, monkeypatch):
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")
    schedule("parked-late", 0, target="broken")
    [message] = aws.receive(aws.delayer_url)
    began = time.time()
    dispatch(receive(message, 1))
    # Receives 2 and 3 may each end without the dispatcher (a timeout, throttling); SQS then parks the
    # message one visibility timeout after the last one. The record must still be there a retention later.
    parked_by = began + 3 * VISIBILITY_SECONDS
    assert expire_as_ttl_would(aws, parked_by + 60 - 5) == []
    assert call_api("GET", "/schedules/parked-late")[1]["status"] == "FIRED"


# --- F5: a second message for a delivered occurrence is never delivered -------------------------


def test_f5_a_duplicate_message_with_the_same_token_is_not_delivered_again(aws):
    schedule("twice", 0, payload={"n": 1})
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert len(aws.receive(aws.target_url)) == 1
    # An ambiguous send made a second message with the same body: another messageId.
    assert dispatch(receive(message, 1, message_id="duplicate")) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    read = call_api("GET", "/schedules/twice")[1]
    assert (read["status"], read["attempts"]) == ("FIRED", 1)


def test_f5_a_stale_duplicate_failing_on_its_last_receive_does_not_mark_a_delivered_schedule_failed(aws):
    schedule("kept", 0)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    aws.receive(aws.target_url)

    def target_down(real, **kwargs):
        if kwargs["QueueUrl"] == aws.target_url:
            raise service_error("SendMessage")
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=target_down):
        assert dispatch(receive(message, 3, message_id="stale")) == {"batchItemFailures": []}
    assert aws.receive(aws.dlq_url) == []
    assert call_api("GET", "/schedules/kept")[1]["status"] == "FIRED"


def test_f5_the_same_message_received_again_is_still_retried(aws):
    schedule("again", 0, target="broken")
    [message] = aws.receive(aws.delayer_url)
    for receive_count in (1, 2):
        assert dispatch(receive(message, receive_count)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert call_api("GET", "/schedules/again")[1]["attempts"] == 2


# --- F6: whatever parks a schedule, it stays findable with its payload and a reason -------------


class Killed(BaseException):
    """Lambda ending the dispatcher at its timeout: nothing after this point of the code runs."""


def redrive(aws, message: dict) -> dict:
    """What SQS's redrive parks once the receives ran out without the dispatcher: the bare message."""
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=message["body"])
    [parked] = aws.receive(aws.dlq_url)
    return json.loads(parked["body"])


def test_f6_a_last_receive_whose_dead_letter_send_is_throttled_leaves_the_schedule_failed_with_its_reason(aws):
    schedule("throttled", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    dispatch(receive(message, 1))
    dispatch(receive(message, 2))

    def dlq_throttled(real, **kwargs):
        if kwargs["QueueUrl"] == aws.dlq_url:
            raise service_error("SendMessage", "ThrottlingException")
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=dlq_throttled):
        assert dispatch(receive(message, 3)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    bare = redrive(aws, message)
    assert "payload" not in bare
    status, read = call_api("GET", f"/schedules/{bare['id']}")
    assert status == 200 and read["status"] == "FAILED" and read["payload"] == {"keep": "me"}
    assert "after 3 attempts" in read["lastError"]


def test_f6_a_last_receive_cut_short_by_the_dispatcher_timeout_leaves_the_schedule_findable_with_a_reason(aws, monkeypatch):
    monkeypatch.setenv("HISTORY_RETENTION_SECONDS", "60")
    schedule("timed-out", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    dispatch(receive(message, 1))
    dispatch(receive(message, 2))

    def hang(real, **kwargs):
        raise Killed()

    with faulty("sqs", send_message=hang), pytest.raises(Killed):
        dispatch(receive(message, 3))
    # SQS parks the bare message one visibility timeout later; TTL has run by then, and a retention more.
    assert expire_as_ttl_would(aws, time.time() + VISIBILITY_SECONDS + 60 - 5) == []
    bare = redrive(aws, message)
    status, read = call_api("GET", f"/schedules/{bare['id']}")
    assert status == 200 and read["payload"] == {"keep": "me"} and read["attempts"] == 3
    assert read["status"] == "FIRED" and "receive 2 of 3 ended without a delivery" in read["lastError"]


# --- F4: a Lambda target is invoked once per delivery attempt -----------------------------------


class FakeLambda:
    """Lambda's Invoke endpoint on 127.0.0.1 that counts invokes and, per ``mode``, sleeps ``sleep`` seconds
    and answers, or reads the request and drops the connection without an answer."""

    def __init__(self, mode: str, sleep: float = 0.0) -> None:
        import http.server
        import threading

        self.calls = 0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.calls += 1
                time.sleep(sleep)
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
                self.send_response(200)
                self.send_header("Content-Length", "4")
                self.end_headers()
                self.wfile.write(b"null")

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def lambda_target(aws, monkeypatch):
    """Use as ``lambda_target(mode, sleep)``: schedules naming target ``slow`` go to a fresh fake endpoint."""
    started: list[FakeLambda] = []

    def start(mode: str, sleep: float = 0.0) -> FakeLambda:
        fake = FakeLambda(mode, sleep)
        started.append(fake)
        targets = json.loads(os.environ["TARGETS"])
        targets["slow"] = {"type": "lambda", "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:slow"}
        monkeypatch.setenv("TARGETS", json.dumps(targets))
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", fake.url)
        return fake

    yield start
    for fake in started:
        fake.close()


def test_f4_an_invoke_whose_answer_is_lost_is_not_repeated_within_the_attempt(aws, lambda_target):
    fake = lambda_target("drop")
    schedule("lost-answer", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert fake.calls == 1  # the target may have run: only the next receive tries again


def test_f4_a_target_slower_than_the_read_timeout_is_invoked_once_and_the_timeout_follows_the_dispatchers(
        aws, lambda_target, monkeypatch):
    monkeypatch.setenv("DISPATCHER_TIMEOUT_SECONDS", "1")  # the read timeout: at least the dispatcher's own
    fake = lambda_target("answer", sleep=1.6)
    schedule("slow-target", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert fake.calls == 1


def test_f4_the_lambda_clients_read_timeout_covers_the_longest_dispatcher_and_it_never_retries(aws, monkeypatch):
    monkeypatch.setenv("DISPATCHER_TIMEOUT_SECONDS", "900")
    config = context.current().client("lambda").meta.config
    assert config.read_timeout >= 900
    assert config.retries["total_max_attempts"] == 1
    assert context.current().client("sqs").meta.config.read_timeout == 60  # the other clients as they were


def test_f4_a_throttled_invoke_never_ran_the_target_so_it_is_tried_again_at_once(aws, lambda_target):
    fake = lambda_target("throttle-once")
    schedule("throttled-invoke", 0, target="slow")
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert fake.calls == 2


# --- F8: the SQS target's envelope is compact, and what can never fit is parked at once ---------

SQS_CLASSIC_MAX = 262_144  # a queue's maximum message size before SQS raised its default to 1 MiB


@pytest.fixture
def small_queue_target(aws, monkeypatch) -> str:
    """Target ``small``: a queue that takes at most 256 KiB a message. Its URL."""
    url = aws.sqs.create_queue(QueueName="small", Attributes={"MaximumMessageSize": str(SQS_CLASSIC_MAX)})["QueueUrl"]
    targets = json.loads(os.environ["TARGETS"])
    targets["small"] = {"type": "sqs", "queueUrl": url, "fifo": False}
    monkeypatch.setenv("TARGETS", json.dumps(targets))
    return url


def test_f8_a_200_kb_compact_payload_reaches_a_256_kib_queue(aws, small_queue_target):
    payload = [1] * 100_000  # 200,001 bytes compact; 299,999 with json's default ", " separators
    schedule("compact", 0, target="small", payload=payload)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [delivered] = aws.receive(small_queue_target)
    assert json.loads(delivered["body"])["payload"] == payload


def test_f8_an_envelope_that_can_never_fit_its_queue_is_parked_at_once_with_the_reason(aws, small_queue_target):
    payload = "x" * (SQS_CLASSIC_MAX - 100)  # accepted (at most 256 KiB serialized); its envelope is not
    schedule("too-big", 0, target="small", payload=payload)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}  # no pointless retries
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == payload
    reason = parked["messageAttributes"]["reason"]["stringValue"]
    assert "undeliverable" in reason and "shorter than 262144 bytes" in reason
    read = call_api("GET", "/schedules/too-big")[1]
    assert (read["status"], read["attempts"]) == ("FAILED", 1) and read["lastError"] == reason


def test_f8_an_envelope_too_large_for_the_dead_letter_queue_too_is_parked_without_its_payload(aws, small_queue_target):
    aws.sqs.set_queue_attributes(QueueUrl=aws.dlq_url, Attributes={"MaximumMessageSize": str(SQS_CLASSIC_MAX)})
    payload = "x" * (SQS_CLASSIC_MAX - 100)
    schedule("too-big-twice", 0, target="small", payload=payload)
    [message] = aws.receive(aws.delayer_url)
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    body = json.loads(parked["body"])
    assert "payload" not in body and body["id"] == "too-big-twice" and body["attempt"] == 1
    assert "GET /schedules/too-big-twice" in parked["messageAttributes"]["reason"]["stringValue"]
    assert call_api("GET", "/schedules/too-big-twice")[1]["payload"] == payload


def test_f8_a_periodic_occurrence_that_can_never_fit_is_parked_at_once_without_retry_messages(aws, small_queue_target):
    payload = "x" * (SQS_CLASSIC_MAX - 100)
    start = int(time.time()) + 2
    status, _ = call_api("PUT", "/periodic/too-big", {"every": 60, "payload": payload, "target": "small", "startAt": start})
    assert status == 201
    [message] = aws.wait_for_messages(aws.delayer_url, timeout=5)
    sent: list = []

    def keep_delayer_sends(real, **kwargs):
        if kwargs["QueueUrl"] == aws.delayer_url:
            sent.append(json.loads(kwargs["MessageBody"]))
            return {"MessageId": "kept"}
        return real.send_message(**kwargs)

    with faulty("sqs", send_message=keep_delayer_sends):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    assert not [body for body in sent if body.get("attempt")]  # no retry message
    [parked] = aws.receive(aws.dlq_url)
    assert "undeliverable" in parked["messageAttributes"]["reason"]["stringValue"]
    assert "undeliverable" in call_api("GET", "/periodic/too-big")[1]["lastError"]
