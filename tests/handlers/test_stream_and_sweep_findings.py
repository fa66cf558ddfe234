"""Issue 11's sweeper and stream findings, each through a handler event (F2, F7, F10, F11).

- F10: the same timer twice in one enqueuer batch is sent once and written back once;
- F2: a sweep that stopped early is resumed where it stopped, so the last shards never starve,
  and claim errors before the early stop still raise ``SweepIncomplete``;
- F7: timers in shards that a lower ``shard_count`` dropped are still swept;
- F11: a stream range the enqueuer's mapping gave up on is re-enqueued from its on-failure message.
"""

import pytest
from botocore.exceptions import ClientError

from scheduler_runtime.handlers import enqueuer, sweeper

from .conftest import faulty, status_of
from .test_enqueue_and_sweep_paths import (long_timers_claimed, recording_sends, refuse_every_send, removed_id,
                                           sent_ids)


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
