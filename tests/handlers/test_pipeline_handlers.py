"""sweeper, enqueuer and dispatcher, each fed real stream records and queue messages from moto.

The fixture's window is 60 s: a schedule due sooner is sent straight to the delayer queue by
the api handler; ``schedule(..., long=True)`` shrinks the window to 1 s for the create, so a
schedule due a few seconds out waits as a timer for the sweeper (whose window is 60 s).
"""

import hashlib
import json

import pytest
from botocore.exceptions import ClientError

from cdk_delayed_scheduler.local.pollers import LambdaContext
from scheduler_runtime.aws import context
from scheduler_runtime.handlers import dispatcher, enqueuer, sweeper

from .conftest import call_api, faulty, promote, schedule, status_of, store
from .virtual_time import now_ms

pytestmark = pytest.mark.usefixtures("virtual_clock")


def test_a_short_timer_goes_straight_to_the_queue_with_the_records_token(aws):
    schedule("soon", 0, payload={"p": 1})
    assert aws.count_items("TIMER#") == 0 and aws.new_stream_records("REMOVE") == []
    [message] = aws.receive(aws.delayer_url)
    body = json.loads(message["body"])
    assert body["token"] == store().get("soon").token and "payload" not in body
    assert status_of("soon") == "QUEUED"


def test_a_long_timer_waits_as_a_timer_holding_the_records_token(aws):
    schedule("later", 3600, long=True)
    [timer] = [page for shard in range(4) for page in store().due_timer_pages(shard, now_ms() + 7_200_000) if page][0]
    assert timer.token == store().get("later").token and timer.schedule_id == "later"
    assert aws.receive(aws.delayer_url) == []
    assert status_of("later") == "SCHEDULED"


def test_sweeper_claims_due_and_overdue_across_shards_and_leaves_the_rest(aws):
    for n in range(12):
        schedule(f"due-{n}", 30 if n % 2 else 5, long=True)
    schedule("far", 3600, long=True)
    result = sweeper.handler({"source": "aws.events"})
    assert result["claimed"] == 12 and result["complete"]
    assert status_of("far") == "SCHEDULED" and status_of("due-1") == "QUEUED"
    assert sweeper.handler({})["claimed"] == 0  # nothing is promoted twice


def test_sweeper_queries_paginate(aws):
    for n in range(10):
        schedule(f"p-{n}", 10, long=True)
    pages = [page for shard in range(4) for page in store().due_timer_pages(shard, now_ms() + 60_000, page_size=2)]
    assert sum(len(p) for p in pages) == 10 and max(len(p) for p in pages) == 2


def test_sweeper_stops_early_when_the_invocation_runs_out_of_time(aws):
    schedule("t", 10, long=True)
    assert sweeper.handler({}, LambdaContext("sweeper", timeout_seconds=1))["complete"] is False


def test_a_claim_succeeds_exactly_once(aws):
    schedule("race", 10, long=True)
    timer = next(iter(store().due_timer_pages(store().get("race").shard, now_ms() + 60_000)))[0]
    assert [store().claim(timer) for _ in range(3)] == [True, False, False]


def test_enqueuer_sends_a_delayed_reference_with_the_token(aws):
    schedule("e1", 20, long=True)
    sweeper.handler({})
    assert promote(aws) == []  # invisible for ~19 s: whole seconds left, rounded down
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    assert status_of("e1") == "QUEUED"


def test_enqueuer_resends_then_writes_back_what_sqs_keeps_refusing(aws):
    for n in range(3):
        schedule(f"w-{n}", 20, long=True)
    sweeper.handler({})
    ctx = context.current()
    real_sqs = ctx.sqs
    calls = []

    class RefusingSecondEntry:
        def send_message_batch(self, QueueUrl, Entries):
            calls.append(len(Entries))
            kept = [e for e in Entries if e["Id"] != "1"]
            response = real_sqs.send_message_batch(QueueUrl=QueueUrl, Entries=kept) if kept else {"Successful": []}
            if len(kept) < len(Entries):
                response["Failed"] = [{"Id": "1", "Code": "InternalError", "SenderFault": False}]
            return response

    ctx._clients["sqs"] = RefusingSecondEntry()
    removes = aws.new_stream_records("REMOVE")
    try:
        assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    finally:
        ctx._clients["sqs"] = real_sqs
    assert calls == [3, 1]  # the refused entry is sent once more before it is written back
    refused = removes[1]["dynamodb"]["Keys"]["sk"]["S"].split("#", 1)[1]
    assert status_of(refused) == "SCHEDULED"  # written back: the sweeper will claim it again
    assert sweeper.handler({})["claimed"] == 1


def test_enqueuer_reports_a_record_it_could_neither_send_nor_write_back(aws):
    schedule("stuck", 20, long=True)
    sweeper.handler({})
    ctx = context.current()
    real_sqs, real_ddb = ctx.sqs, ctx.dynamodb

    class Down:
        def __getattr__(self, name):
            def fail(**kwargs):
                raise ClientError({"Error": {"Code": "ServiceUnavailable", "Message": "down"}}, name)
            return fail

    ctx._clients["sqs"] = ctx._clients["dynamodb"] = Down()
    removes = aws.new_stream_records("REMOVE")
    try:
        result = enqueuer.handler({"Records": removes})
    finally:
        ctx._clients["sqs"], ctx._clients["dynamodb"] = real_sqs, real_ddb
    assert result == {"batchItemFailures": [{"itemIdentifier": removes[0]["dynamodb"]["SequenceNumber"]}]}


def send_times(sent: list):
    """A ``send_message`` override that records when each target send starts (ms), and its parameters."""

    def send(real, **kwargs):
        sent.append((now_ms(), kwargs))
        return real.send_message(**kwargs)

    return send


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
def test_dispatcher_delivers_the_envelope_never_early(aws, long):
    # Due 0.9 s past a whole second: SQS's delay (whole seconds, rounded down) surfaces the
    # message 0.9 s early, and the dispatcher must wait out that remainder.
    schedule("d", 2.9 if long else 1.9, payload={"hello": "world"}, long=long)
    if long:
        sweeper.handler({})
        assert promote(aws) == []
    [message] = aws.wait_for_messages(aws.delayer_url)
    due_ms = json.loads(message["body"])["dueMs"]
    assert now_ms() == due_ms - 900  # surfaced 0.9 s early
    sent: list = []
    with faulty("sqs", send_message=send_times(sent)):
        assert dispatcher.handler({"Records": [message]}) == {"batchItemFailures": []}
    [(sent_at_ms, _)] = sent
    assert sent_at_ms == due_ms  # waited out the remainder: never early, and not late
    [delivery] = aws.receive(aws.target_url)
    envelope = json.loads(delivery["body"])
    assert set(envelope) == {"id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target"}
    assert envelope["payload"] == {"hello": "world"} and envelope["attempt"] == 1
    assert envelope["firedAt"] == envelope["dueAt"]
    assert status_of(envelope["id"]) == "FIRED"
    assert call_api("DELETE", f"/schedules/{envelope['id']}")[0] == 409


def test_fifo_target_gets_group_and_a_deduplication_id_stable_across_retries(aws):
    schedule("f1", 0, target="ordered")
    [message] = aws.receive(aws.delayer_url)
    sent: list = []
    with faulty("sqs", send_message=send_times(sent)):
        dispatcher.handler({"Records": [message]})
        message["attributes"]["ApproximateReceiveCount"] = "2"
        dispatcher.handler({"Records": [message]})  # a redelivery of the same occurrence
    first, retry = (kwargs for _, kwargs in sent)
    assert json.loads(retry["MessageBody"])["attempt"] == 2  # a real second attempt...
    assert retry["MessageDeduplicationId"] == first["MessageDeduplicationId"]  # ...with the same deduplication id
    got = aws.sqs.receive_message(QueueUrl=aws.fifo_target_url, AttributeNames=["All"], MaxNumberOfMessages=10).get("Messages", [])
    assert len(got) == 1  # so SQS dropped the second send
    assert got[0]["Attributes"]["MessageGroupId"] == "orders"
    assert got[0]["Attributes"]["MessageDeduplicationId"] == hashlib.sha256(
        json.loads(got[0]["Body"])["dedupeKey"].encode()).hexdigest()


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
def test_cancel_wins_while_in_the_delayer_queue(aws, long):
    schedule("c", 2.5 if long else 0, long=long)  # long: beyond the 1 s window even if the create is slow
    if long:
        sweeper.handler({})
    messages = (promote(aws) if long else []) or aws.wait_for_messages(aws.delayer_url)
    assert len(messages) == 1 and status_of("c") == "QUEUED"
    assert call_api("DELETE", "/schedules/c") == (200, {"id": "c", "status": "CANCELLED"})
    assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    assert status_of("c") == "CANCELLED"


def test_early_message_is_put_back_for_the_rest_of_its_delay(aws):
    schedule("early", 30)
    assert aws.receive(aws.delayer_url) == []  # delayed 29 s
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    record = store().get("early")
    early_body = json.dumps({"id": "early", "dueMs": record.due_ms, "token": record.token, "createdMs": record.created_ms})
    early = [{"messageId": "m1", "body": early_body, "attributes": {"ApproximateReceiveCount": "1"}}]
    assert dispatcher.handler({"Records": early}) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    assert status_of("early") == "QUEUED"
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "2"


def test_failed_delivery_retries_then_parks_the_envelope_with_its_reason(aws):
    schedule("b", 0, target="broken", payload={"keep": "me"})
    [message] = aws.receive(aws.delayer_url)
    for receive_count in (1, 2):
        message["attributes"]["ApproximateReceiveCount"] = str(receive_count)
        assert dispatcher.handler({"Records": [message]}) == {"batchItemFailures": [{"itemIdentifier": message["messageId"]}]}
    assert status_of("b") == "FIRED"
    message["attributes"]["ApproximateReceiveCount"] = "3"
    assert dispatcher.handler({"Records": [message]}) == {"batchItemFailures": []}
    [parked] = aws.receive(aws.dlq_url)
    assert json.loads(parked["body"])["payload"] == {"keep": "me"}
    assert "after 3 attempts" in parked["messageAttributes"]["reason"]["stringValue"]
    status, read = call_api("GET", "/schedules/b")
    assert read["status"] == "FAILED" and read["attempts"] == 3 and "after 3 attempts" in read["lastError"]
    assert call_api("DELETE", "/schedules/b")[0] == 409


@pytest.mark.parametrize("body", ["not json", "[1, 2]", "7", '{"id": "x"}'], ids=["text", "array", "number", "partial"])
def test_malformed_delayer_message_is_left_to_the_redrive_policy(aws, body):
    record = {"messageId": "bad", "body": body, "attributes": {"ApproximateReceiveCount": "1"}}
    assert dispatcher.handler({"Records": [record]}) == {"batchItemFailures": [{"itemIdentifier": "bad"}]}


@pytest.mark.parametrize("handler", [enqueuer.handler, dispatcher.handler])
def test_empty_batches(aws, handler):
    assert handler({"Records": []}) == {"batchItemFailures": []}
