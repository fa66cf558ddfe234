"""Issue 11's sweeper and stream findings, each through a handler event (F2, F7, F10, F11).

- F10: the same timer twice in one enqueuer batch is sent once and written back once;
- F2: a sweep that stopped early is resumed where it stopped, so the last shards never starve,
  and claim errors before the early stop still raise ``SweepIncomplete``;
- F7: timers in shards that a lower ``shard_count`` dropped are still swept;
- F11: a stream range the enqueuer's mapping gave up on is re-enqueued from its on-failure message.
"""

import json
import time

import pytest
from botocore.exceptions import ClientError

from scheduler_runtime.aws import shards
from scheduler_runtime.aws.recovery import RecoveryError
from scheduler_runtime.core.keys import shard_for
from scheduler_runtime.handlers import enqueuer, sweeper
from scheduler_runtime.handlers.sweeper import SweepIncomplete

from .conftest import call_api, faulty, schedule, service_error, status_of, window
from .test_enqueue_and_sweep_paths import (RunsOutAfter, long_timers_claimed, recording_sends, refuse_every_send,
                                           removed_id, sent_ids)


@pytest.fixture(autouse=True)
def fresh_sandbox():
    """Each test is a cold sandbox: no sweep to resume, no shard count settled (moto is new too)."""
    sweeper._resume_at.clear()
    shards._settled.clear()
    yield
    sweeper._resume_at.clear()
    shards._settled.clear()


def recording_writes(calls: list):
    """A ``batch_write_item`` that records each call's sort keys, then makes it."""

    def write(real, **kwargs):
        (_, requests), = kwargs["RequestItems"].items()
        calls.append([r["PutRequest"]["Item"]["sk"]["S"] for r in requests])
        return real.batch_write_item(**kwargs)

    return write


def test_moto_refuses_a_batch_with_a_duplicate_key_as_dynamodb_does(aws):
    """So F10's write-back test needs no wrapped client: the ValidationException is moto's own."""
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
        periodic = call_api("PUT", "/periodic/every-hour", {"every": 3600, "startAt": round(time.time() + 20, 3),
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


# --- F2: an early-stopped sweep is resumed where it stopped ---------------------------------------

def spread_over_shards(prefix: str, per_shard: int, shard_count: int = 4, lowest: int = 0) -> list[str]:
    """Ids, ``per_shard`` in each shard from ``lowest`` to ``shard_count - 1``."""
    ids: dict[int, list[str]] = {shard: [] for shard in range(lowest, shard_count)}
    n = 0
    while any(len(found) < per_shard for found in ids.values()):
        candidate, n = f"{prefix}-{n}", n + 1
        found = ids.get(shard_for(candidate, shard_count))
        if found is not None and len(found) < per_shard:
            found.append(candidate)
    return sorted(sum(ids.values(), []))


def test_sweeps_that_keep_stopping_early_still_reach_every_shard(aws):
    ids = spread_over_shards("load", 2)
    for schedule_id in ids:
        schedule(schedule_id, 20, long=True)
    results = [sweeper.handler({}, RunsOutAfter(checks=1)) for _ in range(2)]  # each has time for two shards
    assert [r["complete"] for r in results] == [False, False]
    claimed = [removed_id(r) for r in aws.new_stream_records("REMOVE")]
    assert sorted(claimed) == ids  # every shard, each timer once


def test_a_claim_error_before_an_early_stop_still_raises(aws):
    ids = spread_over_shards("bad", 1) + spread_over_shards("good", 1)  # whichever shard comes first holds a bad one

    def claims_of_bad_fail(real, **kwargs):
        if "#bad-" in kwargs["Key"]["sk"]["S"]:
            raise service_error("DeleteItem", "ProvisionedThroughputExceededException")
        return real.delete_item(**kwargs)

    for schedule_id in ids:
        schedule(schedule_id, 20, long=True)
    with faulty("dynamodb", delete_item=claims_of_bad_fail), pytest.raises(SweepIncomplete, match="1 claims failed"):
        sweeper.handler({}, RunsOutAfter(checks=0))  # stops after its first shard
    again = sweeper.handler({})
    assert again["complete"] is True and again["claimed"] == len(ids) - 1


# --- F7: a lower shard_count strands nothing --------------------------------------------------------

def written_under_sixteen_shards(monkeypatch) -> list[str]:
    """One-shots and a periodic occurrence, all in shards 4-15 of 16, due in 20 s; their timer ids."""
    monkeypatch.setenv("SHARD_COUNT", "16")
    one_shots = spread_over_shards("wide", 1, shard_count=16, lowest=4)
    for schedule_id in one_shots:
        schedule(schedule_id, 20, long=True)
    periodic = next(i for i in (f"tick-{n}" for n in range(100)) if shard_for(i, 16) >= 4)
    with window(1):
        assert call_api("PUT", f"/periodic/{periodic}", {"every": 3600, "startAt": round(time.time() + 20, 3),
                                                        "payload": "tick"})[0] == 201
    return sorted(one_shots + [f"{periodic}#p"])


def test_timers_written_under_sixteen_shards_are_delivered_after_the_count_drops_to_four(aws, monkeypatch):
    expected = written_under_sixteen_shards(monkeypatch)
    with window(1):
        assert sweeper.handler({})["claimed"] == 0  # a sweep under 16: nothing due yet, the mark says 16
    monkeypatch.setenv("SHARD_COUNT", "4")
    result = sweeper.handler({})
    assert sorted(removed_id(r) for r in aws.new_stream_records("REMOVE")) == expected
    assert (result["claimed"], result["shards"]) == (len(expected), 16)


def test_a_table_without_the_mark_is_probed_once_then_swept_with_one_query_a_shard(aws, monkeypatch):
    expected = written_under_sixteen_shards(monkeypatch)  # no sweep ran under 16: no mark
    monkeypatch.setenv("SHARD_COUNT", "4")
    result = sweeper.handler({})
    assert sorted(removed_id(r) for r in aws.new_stream_records("REMOVE")) == expected
    assert (result["claimed"], result["shards"]) == (len(expected), 16)
    assert shards.ShardMark(aws.ddb, aws.table).read() == 16
    queries: list = []

    def count(real, **kwargs):
        queries.append(kwargs["ExpressionAttributeValues"][":p"]["S"])
        return real.query(**kwargs)

    with faulty("dynamodb", query=count):
        assert sweeper.handler({})["shards"] == 16
    assert sorted(queries) == [f"TIMER#{n:04d}" for n in range(16)]  # a warm sandbox reads no mark


def test_a_mark_the_sweeper_may_not_write_is_logged_and_the_sweep_still_covers_what_it_probed(aws, monkeypatch, caplog):
    expected = written_under_sixteen_shards(monkeypatch)
    monkeypatch.setenv("SHARD_COUNT", "4")

    def denied(real, **kwargs):
        if kwargs["Key"]["pk"]["S"] == shards.MARK_KEY.pk:
            raise service_error("UpdateItem", "AccessDeniedException")
        return real.update_item(**kwargs)

    with faulty("dynamodb", update_item=denied):
        result = sweeper.handler({})
    assert sorted(removed_id(r) for r in aws.new_stream_records("REMOVE")) == expected
    assert (result["claimed"], result["shards"], shards.ShardMark(aws.ddb, aws.table).read()) == (len(expected), 16, None)
    assert "shard_mark_not_written" in caplog.text
