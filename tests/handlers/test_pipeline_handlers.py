"""fast track, sweeper, enqueuer and dispatcher, each fed real stream records and queue messages from moto."""

import json
import time

import pytest
from botocore.exceptions import ClientError

from scheduler_runtime.aws import context
from scheduler_runtime.aws.store import ScheduleStore
from scheduler_runtime.handlers import dispatcher, enqueuer, fast_track, sweeper

from .conftest import call_api


def schedule(schedule_id: str, in_seconds: float, target: str = "default", payload=None) -> None:
    body = {"id": schedule_id, "dueAt": round(time.time() + in_seconds, 3), "payload": payload or {"id": schedule_id}}
    if target != "default":
        body["target"] = target
    assert call_api("POST", "/schedules", body)[0] == 201


def status_of(schedule_id: str) -> str:
    return call_api("GET", f"/schedules/{schedule_id}")[1]["status"]


def promote(aws) -> list[dict]:
    """Run the enqueuer over new REMOVEs and return the delayer messages it produced."""
    removes = [r for r in aws.new_stream_records("REMOVE") if "cancelled" not in r["dynamodb"]["OldImage"]]
    assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    return aws.receive(aws.delayer_url, max_messages=10)


def test_fast_track_claims_only_what_is_due_within_the_window(aws):
    schedule("soon", 5)
    schedule("later", 3600)
    schedule("overdue", -30)
    inserts = [r for r in aws.new_stream_records("INSERT") if r["dynamodb"]["Keys"]["pk"]["S"].startswith("TIMER#")]
    assert fast_track.handler({"Records": inserts}) == {"batchItemFailures": []}
    assert {status_of(i) for i in ("soon", "overdue")} == {"QUEUED"}
    assert status_of("later") == "SCHEDULED"


def test_sweeper_claims_due_and_overdue_across_shards_and_leaves_the_rest(aws):
    for n in range(12):
        schedule(f"due-{n}", 30 if n % 2 else -600)
    schedule("far", 3600)
    result = sweeper.handler({"source": "aws.events"})
    assert result["claimed"] == 12 and result["complete"]
    assert status_of("far") == "SCHEDULED"
    assert sweeper.handler({})["claimed"] == 0  # nothing is promoted twice


def test_sweeper_queries_paginate(aws):
    for n in range(10):
        schedule(f"p-{n}", 10)
    ctx = context.current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    pages = [page for shard in range(4) for page in store.due_timer_pages(shard, int(time.time() * 1000) + 60_000, page_size=2)]
    assert sum(len(p) for p in pages) == 10 and max(len(p) for p in pages) == 2


def test_sweeper_stops_early_when_the_invocation_runs_out_of_time(aws):
    schedule("t", 10)

    class NearlyOutOfTime:
        @staticmethod
        def get_remaining_time_in_millis():
            return 1_000

    assert sweeper.handler({}, NearlyOutOfTime())["complete"] is False


def test_a_claim_succeeds_exactly_once(aws):
    schedule("race", 10)
    ctx = context.current()
    store = ScheduleStore(ctx.dynamodb, ctx.config.table_name)
    timer = next(iter(store.due_timer_pages(store.get("race").shard, int(time.time() * 1000) + 60_000)))[0]
    assert [store.claim(timer) for _ in range(3)] == [True, False, False]


def test_enqueuer_sends_a_delayed_reference(aws):
    schedule("e1", 20)
    sweeper.handler({})
    assert promote(aws) == []  # invisible for ~19 s: whole seconds left, rounded down
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"
    assert status_of("e1") == "QUEUED"


def test_enqueuer_writes_back_what_sqs_refused(aws):
    for n in range(3):
        schedule(f"w-{n}", 20)
    sweeper.handler({})
    ctx = context.current()
    real_sqs = ctx.sqs

    class RefusingSecondEntry:
        def send_message_batch(self, QueueUrl, Entries):
            response = real_sqs.send_message_batch(QueueUrl=QueueUrl, Entries=[Entries[0], Entries[2]])
            response["Failed"] = [{"Id": Entries[1]["Id"], "Code": "InternalError", "SenderFault": False}]
            return response

    ctx._clients["sqs"] = RefusingSecondEntry()
    removes = aws.new_stream_records("REMOVE")
    assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    ctx._clients["sqs"] = real_sqs
    refused = json.loads(json.dumps(removes[1]["dynamodb"]["OldImage"]))["id"]["S"]
    assert status_of(refused) == "SCHEDULED"  # written back: the sweeper will claim it again
    assert sweeper.handler({})["claimed"] == 1


def test_enqueuer_reports_a_record_it_could_neither_send_nor_write_back(aws):
    schedule("stuck", 20)
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
    result = enqueuer.handler({"Records": removes})
    ctx._clients["sqs"], ctx._clients["dynamodb"] = real_sqs, real_ddb
    assert result == {"batchItemFailures": [{"itemIdentifier": removes[0]["dynamodb"]["SequenceNumber"]}]}


def test_dispatcher_delivers_the_envelope_never_early(aws):
    schedule("d1", 0.6, payload={"hello": "world"})
    sweeper.handler({})
    messages = promote(aws)
    assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    delivered_at_ms = time.time() * 1000
    [delivery] = aws.receive(aws.target_url)
    envelope = json.loads(delivery["body"])
    assert set(envelope) == {"id", "dueAt", "firedAt", "attempt", "dedupeKey", "payload", "target"}
    assert envelope["payload"] == {"hello": "world"} and envelope["attempt"] == 1
    assert envelope["firedAt"] >= envelope["dueAt"]
    assert delivered_at_ms >= json.loads(messages[0]["body"])["dueMs"]
    assert status_of("d1") == "FIRED"
    assert call_api("DELETE", "/schedules/d1")[0] == 409


def test_fifo_target_gets_group_and_deduplication_ids(aws):
    schedule("f1", 0, target="ordered")
    sweeper.handler({})
    dispatcher.handler({"Records": promote(aws)})
    messages = aws.sqs.receive_message(QueueUrl=aws.fifo_target_url, AttributeNames=["All"]).get("Messages", [])
    assert len(messages) == 1
    assert messages[0]["Attributes"]["MessageGroupId"] == "orders"
    assert len(messages[0]["Attributes"]["MessageDeduplicationId"]) == 64


def test_cancel_wins_while_in_the_delayer_queue(aws):
    schedule("c", 0)
    sweeper.handler({})
    messages = promote(aws)
    assert status_of("c") == "QUEUED"
    assert call_api("DELETE", "/schedules/c")[0] == 200
    assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    assert status_of("c") == "CANCELLED"


def test_early_message_is_put_back_for_the_rest_of_its_delay(aws):
    schedule("early", 30)
    sweeper.handler({})
    removes = aws.new_stream_records("REMOVE")
    ref = json.loads(json.dumps({"id": "early", "dueMs": int(removes[0]["dynamodb"]["OldImage"]["dueMs"]["N"]), "target": "default"}))
    early = [{"messageId": "m1", "body": json.dumps(ref), "attributes": {"ApproximateReceiveCount": "1"}}]
    assert dispatcher.handler({"Records": early}) == {"batchItemFailures": []}
    assert aws.receive(aws.target_url) == []
    assert status_of("early") == "QUEUED"
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"


def test_failed_delivery_retries_then_parks_the_envelope_with_its_reason(aws):
    schedule("b", 0, target="broken", payload={"keep": "me"})
    sweeper.handler({})
    [message] = promote(aws)
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


def test_malformed_delayer_message_is_left_to_the_redrive_policy(aws):
    record = {"messageId": "bad", "body": "not json", "attributes": {"ApproximateReceiveCount": "1"}}
    assert dispatcher.handler({"Records": [record]}) == {"batchItemFailures": [{"itemIdentifier": "bad"}]}


@pytest.mark.parametrize("handler", [fast_track.handler, enqueuer.handler, dispatcher.handler])
def test_empty_batches(aws, handler):
    assert handler({"Records": []}) == {"batchItemFailures": []}
