"""The enqueuer's stream batches, each through a handler event on in-process moto: the same timer
twice in one batch (a stream retry after a write-back and a re-claim) is sent once and written back
once, and a stream range the enqueuer's mapping gave up on is enqueued again from its on-failure
message.
"""

import json

import pytest
from botocore.exceptions import ClientError

from scheduler_runtime.aws.recovery import RecoveryError
from scheduler_runtime.handlers import enqueuer, sweeper

from .conftest import call_api, faulty, schedule, status_of, window
from .sweeping import fresh_sandbox  # noqa: F401 - autouse: each test a cold sandbox
from .sweeping import long_timers_claimed, recording_sends, refuse_every_send, removed_id, sent_ids
from .virtual_time import now_s

pytestmark = pytest.mark.usefixtures("virtual_clock")


def recording_writes(calls: list):
    """A ``batch_write_item`` that records each call's sort keys, then makes it."""

    def write(real, **kwargs):
        (_, requests), = kwargs["RequestItems"].items()
        calls.append([r["PutRequest"]["Item"]["sk"]["S"] for r in requests])
        return real.batch_write_item(**kwargs)

    return write


def test_moto_refuses_a_batch_with_a_duplicate_key_as_dynamodb_does(aws):
    """So the write-back test below needs no wrapped client: the ValidationException is moto's own."""
    item = {"pk": {"S": "TIMER#0000"}, "sk": {"S": "000000000000001#dup"}, "token": {"S": "t"}, "createdMs": {"N": "1"}}
    with pytest.raises(ClientError, match="ValidationException.*duplicates"):
        aws.ddb.batch_write_item(RequestItems={aws.table: [{"PutRequest": {"Item": item}}] * 2})


def claimed_twice(aws, schedule_id: str, *others: str) -> list[dict]:
    """A batch as a stream retry delivers it after a claim, a write-back and a re-claim: the timer's
    REMOVE twice (the older one first), with ``others`` claimed in between."""
    first = long_timers_claimed(aws, schedule_id, *others)
    with faulty("sqs", send_message_batch=recording_sends([], refuse_every_send)):
        assert enqueuer.handler({"Records": [r for r in first if removed_id(r) == schedule_id]}) == {"batchItemFailures": []}
    assert sweeper.handler({})["claimed"] == 1  # written back, then claimed again
    again = aws.new_stream_records("REMOVE")
    assert [removed_id(r) for r in again] == [schedule_id]
    return first + again


def test_a_timer_twice_in_one_batch_is_sent_once(aws):
    records = claimed_twice(aws, "dup", "other")
    calls: list = []
    with faulty("sqs", send_message_batch=recording_sends(calls)):
        assert enqueuer.handler({"Records": records}) == {"batchItemFailures": []}
    assert sorted(sum((sent_ids(entries) for entries in calls), [])) == ["dup", "other"]
    assert status_of("dup") == status_of("other") == "QUEUED"


def test_a_timer_twice_in_one_batch_is_written_back_once_and_the_rest_with_it(aws):
    records = claimed_twice(aws, "dup", "other")
    writes: list = []
    with faulty("sqs", send_message_batch=recording_sends([], refuse_every_send)), \
            faulty("dynamodb", batch_write_item=recording_writes(writes)):
        assert enqueuer.handler({"Records": records}) == {"batchItemFailures": []}
    assert len(writes) == 1 and sorted(sk.split("#", 1)[1] for sk in writes[0]) == ["dup", "other"]
    assert status_of("dup") == status_of("other") == "SCHEDULED"  # both wait for the next sweep
    assert sweeper.handler({})["claimed"] == 2


def given_up(aws, records: list[dict]) -> dict:
    """The on-failure message a stream mapping sends when it gives up on ``records`` (one shard's range)."""
    [shard] = aws.streams.describe_stream(StreamArn=aws.stream_arn)["StreamDescription"]["Shards"]
    sequence_numbers = [r["dynamodb"]["SequenceNumber"] for r in records]
    return {"version": "1.0", "timestamp": "2026-11-22T04:00:00.000Z",
            "requestContext": {"condition": "RetryAttemptsExhausted", "approximateInvokeCount": 4},
            "DDBStreamBatchInfo": {"shardId": shard["ShardId"], "startSequenceNumber": min(sequence_numbers, key=int),
                                   "endSequenceNumber": max(sequence_numbers, key=int), "batchSize": len(records),
                                   "streamArn": aws.stream_arn}}


def fail_every_write_back(real, **kwargs):
    (table, requests), = kwargs["RequestItems"].items()
    return {"UnprocessedItems": {table: requests}}


def test_claims_the_stream_mapping_gave_up_on_are_enqueued_again_from_its_on_failure_message(aws):
    with window(1):
        periodic = call_api("PUT", "/periodic/every-hour", {"every": 3600, "startAt": round(now_s() + 20, 3),
                                                            "payload": "tick"})
    assert periodic[0] == 201
    for schedule_id in ("lost-0", "lost-1"):
        schedule(schedule_id, 20, long=True)
    assert sweeper.handler({})["claimed"] == 3  # the periodic occurrence with the two one-shots
    removes = aws.new_stream_records("REMOVE")
    assert sorted(removed_id(r) for r in removes) == ["every-hour#p", "lost-0", "lost-1"]
    with faulty("sqs", send_message_batch=recording_sends([], refuse_every_send)), \
            faulty("dynamodb", batch_write_item=fail_every_write_back):
        assert len(enqueuer.handler({"Records": removes})["batchItemFailures"]) == 3
    # The mapping gives up: no timer, no message; GET answers QUEUED and nothing would change that.
    assert aws.count_items("TIMER#") == 0 and aws.receive(aws.delayer_url) == []
    assert status_of("lost-0") == "QUEUED"

    calls: list = []
    with faulty("sqs", send_message_batch=recording_sends(calls)):
        assert enqueuer.handler({"recover": json.dumps(given_up(aws, removes))}) == {"recovered": 3}
    [entries] = calls
    sent = {json.loads(e["MessageBody"])["id"]: json.loads(e["MessageBody"])["token"] for e in entries}
    claimed = {removed_id(r).removesuffix("#p"): r["dynamodb"]["OldImage"]["token"]["S"] for r in removes}
    assert sent == claimed  # each timer's own token, so the dispatcher delivers each once


def test_recovery_skips_what_is_not_a_claim_and_refuses_a_message_without_a_range(aws):
    removes = long_timers_claimed(aws, "kept")
    assert call_api("POST", "/schedules", {"id": "short", "delaySeconds": 5, "payload": 1})[0] == 201
    inserts = aws.new_stream_records("INSERT")  # the short timer's record: in the range, not a claim
    with faulty("sqs", send_message_batch=recording_sends([], refuse_every_send)):
        assert enqueuer.handler({"recover": given_up(aws, removes + inserts)}) == {"recovered": 1}
    assert status_of("kept") == "SCHEDULED"  # SQS refused it again: written back for the next sweep
    with pytest.raises(RecoveryError, match="DDBStreamBatchInfo"):
        enqueuer.handler({"recover": {"requestContext": {}}})
