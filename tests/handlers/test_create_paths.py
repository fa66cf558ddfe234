"""Every crash point of a create, made to happen: nothing is delivered that should not be, nothing accepted is lost.

Short timers (due within the fixture's 60 s window) are sent to the delayer queue, then
recorded; long ones are written as a timer, then recorded. Each write carries the attempt's
token, and the dispatcher delivers only a message whose token the record holds.
"""

import json
import threading

import pytest

from scheduler_runtime.core import window
from scheduler_runtime.handlers import api, dispatcher, sweeper

from .conftest import call_api, faulty, service_error
from .dispatching import dispatch_all, dispatch_until_empty
from .virtual_time import now_s, now_ms

pytestmark = pytest.mark.usefixtures("virtual_clock")


def post(body):
    return call_api("POST", "/schedules", body)


def record_write_fails(real, **kwargs):
    if kwargs["Item"]["pk"]["S"].startswith("SCHEDULE#"):
        raise service_error("PutItem")
    return real.put_item(**kwargs)


def test_short_record_write_fails_after_the_send_then_the_retry_is_delivered_once(aws, monkeypatch):
    body = {"id": "s1", "delaySeconds": 0, "payload": {"n": 1}}
    with faulty("dynamodb", put_item=record_write_fails):
        status, answer = post(body)
    assert status == 500 and "retried" in answer["message"]
    assert call_api("GET", "/schedules/s1")[0] == 404  # nothing was accepted
    # The stray's create might still be writing: it is put back, not delivered and not dropped.
    assert dispatch_all(aws) == []
    assert aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])[
        "Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    assert post(body)[0] == 201  # the client's retry
    monkeypatch.setattr(window, "STRAY_AFTER_MS", 0)  # the put-back stray surfaces after its create can no longer write
    assert [d["payload"] for d in dispatch_until_empty(aws)] == [{"n": 1}]


def test_long_record_write_fails_after_the_timer_then_the_retry_adopts_the_timer(aws):
    body = {"id": "l1", "dueAt": round(now_s() + 75, 3), "payload": "long"}
    with faulty("dynamodb", put_item=record_write_fails):
        assert post(body)[0] == 500
    assert aws.count_items("TIMER#") == 1 and aws.count_items("SCHEDULE#") == 0
    assert post(body) == (201, {"id": "l1", "dueAt": post(body)[1]["dueAt"], "status": "SCHEDULED", "target": "default"})
    assert aws.count_items("TIMER#") == 1  # the retry adopted the first attempt's timer and its token
    assert sweeper.handler({})["claimed"] == 0  # not due within the window yet


def test_long_record_write_fails_and_no_retry_comes_the_stray_timer_is_never_delivered(aws, monkeypatch):
    body = {"id": "l2", "dueAt": round(now_s() + 75, 3), "payload": "lost cause"}
    with faulty("dynamodb", put_item=record_write_fails):
        assert post(body)[0] == 500
    monkeypatch.setenv("DELAY_WINDOW_SECONDS", "120")
    assert sweeper.handler({})["claimed"] == 1  # the sweeper removes the stray timer by claiming it
    removes = aws.new_stream_records("REMOVE")
    from scheduler_runtime.handlers import enqueuer

    assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    monkeypatch.setattr(window, "STRAY_AFTER_MS", 0)
    ref = json.loads(aws.sqs.receive_message(QueueUrl=aws.delayer_url).get("Messages", [{"Body": "{}"}])[0]["Body"] or "{}")
    assert ref == {}  # delayed ~75 s; dispatch its reference as it will surface
    timer = removes[0]["dynamodb"]["OldImage"]
    stray = {"id": "l2", "dueMs": now_ms() - 1, "token": timer["token"]["S"],
             "createdMs": int(timer["createdMs"]["N"])}
    record = {"messageId": "m", "body": json.dumps(stray), "attributes": {"ApproximateReceiveCount": "1"}}
    assert dispatcher.handler({"Records": [record]}) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == [] and aws.count_items("TIMER#") == 0
    assert call_api("GET", "/schedules/l2")[0] == 404


def test_long_replays_and_conflicts_remove_the_timers_they_wrote(aws):
    body = {"id": "r", "dueAt": round(now_s() + 75, 3), "payload": "original"}
    assert post(body)[0] == 201
    assert post(body)[0] == 200  # same key: meets the original timer, writes nothing new
    assert post({**body, "payload": "other"})[0] == 409
    assert post({**body, "dueAt": body["dueAt"] + 5})[0] == 409  # another key: its own timer is removed
    assert post({"id": "r", "delaySeconds": 80, "payload": "original"})[0] == 409
    assert aws.count_items("TIMER#") == 1


def test_short_strays_of_a_replay_and_a_conflict_are_dropped_and_the_original_delivered_once(aws):
    body = {"id": "r", "delaySeconds": 0, "payload": "original"}
    assert post(body)[0] == 201
    assert post(body)[0] == 200
    assert post({**body, "payload": "other"})[0] == 409
    delivered = dispatch_all(aws)
    assert [d["payload"] for d in delivered] == ["original"]
    assert aws.receive(aws.delayer_url) == []  # the strays were dropped (token differs), not put back


def test_a_message_that_overtakes_its_record_waits_for_it_and_is_delivered(aws, virtual_clock, monkeypatch):
    """The create sends its message, then writes its record; a dispatcher that reads the message first finds no
    record, waits, and finds it written during its first wait."""
    tried, written = threading.Event(), threading.Event()
    threads: list[threading.Thread] = []
    dispatched: list = []
    real_sleep = virtual_clock.sleep

    def note_the_try(real, **kwargs):
        try:
            return real.update_item(**kwargs)
        finally:
            tried.set()

    def wait_while_the_record_is_written(seconds):
        real_sleep(seconds)
        assert written.wait(5), "the create did not write its record"

    def note_the_write(real, **kwargs):
        try:
            return real.put_item(**kwargs)
        finally:
            if kwargs["Item"]["pk"]["S"].startswith("SCHEDULE#"):
                written.set()

    def send_then_dispatch_before_the_record_is_written(real, **kwargs):
        response = real.send_message(**kwargs)
        if kwargs["QueueUrl"] != aws.delayer_url:  # the delivery to the target
            return response
        threads.append(threading.Thread(target=lambda: dispatched.extend(dispatch_all(aws))))
        threads[0].start()
        assert tried.wait(5), "the dispatcher did not try"  # the record is written only after the dispatcher's try
        return response

    monkeypatch.setattr(virtual_clock, "sleep", wait_while_the_record_is_written)
    with faulty("sqs", send_message=send_then_dispatch_before_the_record_is_written), \
            faulty("dynamodb", update_item=note_the_try, put_item=note_the_write):
        assert post({"id": "race", "delaySeconds": 0, "payload": "made it"})[0] == 201
        threads[0].join(timeout=5)
    assert [d["payload"] for d in dispatched] == ["made it"]


def test_a_batch_item_whose_send_fails_is_answered_on_its_own_and_nothing_is_recorded(aws):
    def refuse_b(real, **kwargs):
        entries = kwargs["Entries"]
        kept = [e for e in entries if '"id":"b"' not in e["MessageBody"]]
        response = real.send_message_batch(QueueUrl=kwargs["QueueUrl"], Entries=kept)
        response.setdefault("Failed", []).extend(
            {"Id": e["Id"], "Code": "InternalError", "SenderFault": False} for e in entries if e not in kept)
        return response

    with faulty("sqs", send_message_batch=refuse_b):
        status, body = call_api("POST", "/schedule-batches", {"schedules": [
            {"id": "a", "delaySeconds": 0, "payload": 1},
            {"id": "b", "delaySeconds": 0, "payload": 2},
            {"id": "c", "delaySeconds": 3600, "payload": 3},
        ]})
    assert status == 200
    assert [r["status"] for r in body["results"]] == [201, 503, 201]
    assert "retry" in body["results"][1]["body"]["message"]
    assert [r["body"].get("status") for r in body["results"]] == ["QUEUED", None, "SCHEDULED"]
    assert call_api("GET", "/schedules/b")[0] == 404
    assert len(aws.receive(aws.delayer_url)) == 1  # one batch call carried the short ones


def test_the_three_doors_give_the_same_answers(aws):
    body = {"id": "door", "delaySeconds": 600, "payload": {"x": 1}}
    rest = call_api("POST", "/schedules", body)
    http = api.handler({
        "version": "2.0", "routeKey": "GET /schedules/{id}", "rawPath": "/v1/schedules/door",
        "requestContext": {"stage": "v1", "http": {"method": "GET"}}, "pathParameters": {"id": "door"},
    })
    direct = api.handler({"method": "POST", "path": "/schedules", "body": body})
    direct_text = api.handler({"method": "POST", "path": "/schedules", "body": json.dumps(body)})
    assert rest == (201, {"id": "door", "dueAt": rest[1]["dueAt"], "status": "SCHEDULED", "target": "default"})
    assert http["statusCode"] == 200 and json.loads(http["body"])["payload"] == {"x": 1}
    assert direct == {"statusCode": 200, "body": rest[1]} == direct_text
    bad = api.handler({"method": "POST", "path": "/schedules", "body": {"delaySeconds": -1, "payload": 1}})
    assert bad == {"statusCode": 400, "body": {"message": "delaySeconds must be >= 0", "field": "delaySeconds"}}
    assert api.handler({"path": "/schedules"})["statusCode"] == 400
    assert api.handler(["not", "an", "object"])["statusCode"] == 400
