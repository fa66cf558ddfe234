"""The enqueuer's and the sweeper's less travelled paths, each made to happen.

- the enqueuer drops cancellations and TTL expiries even when the stream filter lets them through;
- ``SendMessageBatch`` entries reported neither sent nor failed count as unsent;
- ``UnprocessedItems`` in the write-back are retried, and reported when they never clear;
- the sweeper raises ``SweepIncomplete`` when claims fail, cleans up an interrupted cancel, and a
  sweep that stopped early is resumed by the next one (more on resuming, and on a lowered shard count,
  in ``test_sweep_resumes_and_shards``).
"""

from typing import Callable

import pytest

from cdk_delayed_scheduler._runtime_asset import event_filters
from cdk_delayed_scheduler.local.event_filter import matches
from scheduler_runtime.core.keys import shard_for
from scheduler_runtime.handlers import enqueuer, sweeper
from scheduler_runtime.handlers.sweeper import SweepIncomplete

from .conftest import call_api, faulty, schedule, service_error, status_of
from .sweeping import long_timers_claimed, recording_sends, refuse_every_send, removed_id, runs_out_after, sent_ids

pytestmark = pytest.mark.usefixtures("virtual_clock")

TTL_IDENTITY = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}


def test_the_enqueuer_itself_drops_cancellations_and_ttl_expiries_the_filter_let_through(aws):
    for schedule_id in ("claimed", "cancelled", "expired"):
        schedule(schedule_id, 20, long=True)
    assert call_api("DELETE", "/schedules/cancelled")[0] == 200
    assert sweeper.handler({})["claimed"] == 2
    removes = {removed_id(r): r for r in aws.new_stream_records("REMOVE")}
    removes["expired"]["userIdentity"] = TTL_IDENTITY  # as DynamoDB marks a TTL deletion
    assert sorted(removes) == ["cancelled", "claimed", "expired"]
    # The deployed filter passes only the claim...
    assert {i for i, r in removes.items() if matches(event_filters()["enqueuer"], r)} == {"claimed"}
    # ...and the enqueuer, handed all three, enqueues only the claim.
    calls: list = []
    with faulty("sqs", send_message_batch=recording_sends(calls)):
        assert enqueuer.handler({"Records": list(removes.values())}) == {"batchItemFailures": []}
    assert [sent_ids(entries) for entries in calls] == [["claimed"]]


def test_entries_reported_neither_sent_nor_failed_are_resent_then_written_back(aws):
    removes = long_timers_claimed(aws, "n-0", "n-1", "n-2")
    silent = removed_id(removes[1])

    def omit_the_silent_entry(real, call_number, **kwargs):
        # SQS's answer lists the entry in neither Successful nor Failed.
        kept = [e for e in kwargs["Entries"] if sent_ids([e]) != [silent]]
        return real.send_message_batch(QueueUrl=kwargs["QueueUrl"], Entries=kept) if kept else {"Successful": []}

    calls: list = []
    with faulty("sqs", send_message_batch=recording_sends(calls, omit_the_silent_entry)):
        assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    assert [sent_ids(entries) for entries in calls] == [[removed_id(r) for r in removes], [silent]]
    assert status_of(silent) == "SCHEDULED"  # written back for the next sweep
    assert {status_of(removed_id(r)) for r in removes if removed_id(r) != silent} == {"QUEUED"}
    assert sweeper.handler({})["claimed"] == 1


def leave_unprocessed(ids_left: Callable[[int], set]):
    """A ``batch_write_item`` that writes only what ``ids_left(call_number)`` does not name, and
    answers the rest as ``UnprocessedItems``, as DynamoDB does under throttling."""
    calls: list = []

    def write(real, **kwargs):
        (table, requests), = kwargs["RequestItems"].items()
        calls.append(sorted(r["PutRequest"]["Item"]["sk"]["S"].split("#", 1)[1] for r in requests))
        left = ids_left(len(calls))
        unprocessed = [r for r in requests if r["PutRequest"]["Item"]["sk"]["S"].split("#", 1)[1] in left]
        written = [r for r in requests if r not in unprocessed]
        if written:
            real.batch_write_item(RequestItems={table: written})
        return {"UnprocessedItems": {table: unprocessed} if unprocessed else {}}

    return write, calls


def test_unprocessed_items_of_the_write_back_are_written_again(aws):
    removes = long_timers_claimed(aws, "u-0", "u-1")
    write, calls = leave_unprocessed(lambda call_number: {"u-1"} if call_number == 1 else set())
    with faulty("sqs", send_message_batch=recording_sends([], refuse_every_send)), faulty("dynamodb", batch_write_item=write):
        assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    assert calls == [["u-0", "u-1"], ["u-1"]]
    assert status_of("u-0") == status_of("u-1") == "SCHEDULED"
    assert sweeper.handler({})["claimed"] == 2


def test_items_that_stay_unprocessed_are_reported_so_the_stream_retries_them(aws):
    removes = long_timers_claimed(aws, "stuck-0", "stuck-1")
    write, calls = leave_unprocessed(lambda call_number: {"stuck-1"})
    with faulty("sqs", send_message_batch=recording_sends([], refuse_every_send)), faulty("dynamodb", batch_write_item=write):
        result = enqueuer.handler({"Records": removes})
    stuck = next(r for r in removes if removed_id(r) == "stuck-1")
    assert result == {"batchItemFailures": [{"itemIdentifier": stuck["dynamodb"]["SequenceNumber"]}]}
    assert calls == [["stuck-0", "stuck-1"], ["stuck-1"], ["stuck-1"]]  # three attempts in all
    assert status_of("stuck-0") == "SCHEDULED"


def test_a_sweep_with_failed_claims_raises_after_claiming_the_rest_and_the_next_sweep_claims_them(aws):
    for schedule_id in ("s-0", "s-1", "s-bad"):
        schedule(schedule_id, 20, long=True)

    def claim_fails_for_bad(real, **kwargs):
        if kwargs["Key"]["sk"]["S"].endswith("#s-bad"):
            raise service_error("DeleteItem", "ProvisionedThroughputExceededException")
        return real.delete_item(**kwargs)

    with faulty("dynamodb", delete_item=claim_fails_for_bad), pytest.raises(SweepIncomplete, match="1 claims failed"):
        sweeper.handler({})
    assert (status_of("s-0"), status_of("s-1"), status_of("s-bad")) == ("QUEUED", "QUEUED", "SCHEDULED")
    again = sweeper.handler({})
    assert (again["claimed"], again["complete"]) == (1, True)
    assert status_of("s-bad") == "QUEUED"


def test_the_sweeper_finishes_a_cancel_whose_timer_delete_was_cut_short(aws):
    schedule("half", 20, long=True)

    def timer_delete_fails(real, **kwargs):
        if kwargs["Key"]["pk"]["S"].startswith("TIMER#"):
            raise service_error("DeleteItem")
        return real.delete_item(**kwargs)

    with faulty("dynamodb", delete_item=timer_delete_fails):
        assert call_api("DELETE", "/schedules/half")[0] == 500  # the record is cancelled; its timer stays, flagged
    assert call_api("DELETE", "/schedules/half") == (200, {"id": "half", "status": "CANCELLED"})
    assert aws.count_items("TIMER#") == 1
    result = sweeper.handler({})
    assert (result["cleaned"], result["claimed"]) == (1, 0)
    assert aws.count_items("TIMER#") == 0
    [remove] = aws.new_stream_records("REMOVE")
    assert remove["dynamodb"]["OldImage"]["cancelled"] == {"BOOL": True}  # the enqueuer's filter drops it
    assert status_of("half") == "CANCELLED"


def test_a_sweep_that_stopped_early_is_resumed_by_the_next_and_nothing_is_claimed_twice(aws):
    ids = [f"r-{n}" for n in range(12)]
    shards = {i: shard_for(i, 4) for i in ids}
    assert len(set(shards.values())) == 4  # the ids spread over every shard
    for schedule_id in ids:
        schedule(schedule_id, 20, long=True)
    first = sweeper.handler({}, runs_out_after(checks=1))  # one page per shard: stops after its second shard
    assert first["complete"] is False
    swept = {first["startShard"], (first["startShard"] + 1) % 4}
    assert first["claimed"] == sum(1 for s in shards.values() if s in swept)
    second = sweeper.handler({})
    assert second["complete"] is True and first["claimed"] + second["claimed"] == len(ids)
    claimed = [removed_id(r) for r in aws.new_stream_records("REMOVE")]
    assert sorted(claimed) == sorted(ids)  # each exactly once


def test_a_conflicting_creates_own_timer_is_removed_without_being_enqueued(aws, virtual_clock):
    status, first = call_api("POST", "/schedules", {"id": "far", "delaySeconds": 86_400, "payload": 1})
    assert (status, first["status"]) == (201, "SCHEDULED")
    virtual_clock.advance(0.001)  # a moment later: another dueAt, so the conflicting attempt writes a timer of its own
    assert call_api("POST", "/schedules", {"id": "far", "delaySeconds": 86_400, "payload": 2})[0] == 409
    [stray] = aws.new_stream_records("REMOVE")  # the conflicting attempt removed the timer it wrote
    calls: list = []
    with faulty("sqs", send_message_batch=recording_sends(calls)):
        assert enqueuer.handler({"Records": [stray]}) == {"batchItemFailures": []}
    assert not matches(event_filters()["enqueuer"], stray) and calls == []
