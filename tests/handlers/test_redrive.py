"""Redrive from the dead-letter queue, on in-process moto through the api and dispatcher handlers: a parked
schedule goes FAILED -> QUEUED with its dedupeKey and attempt count, its message leaves the dead-letter
queue only once it is re-armed, a run cut short and run again delivers it at most once more, and what is
not redriven stays in the queue with its reason."""

from __future__ import annotations

import json

import pytest

from scheduler_runtime.aws import context
from scheduler_runtime.aws.redrive import PERIODIC_REASON, Redrive
from scheduler_runtime.core.redrive import Selection

from .conftest import call_api
from .dispatching import dispatch, receive
from .redriving import cut_short_before_its_delete, park, run, run_dispatched_at_once
from .retrying import create, stored
from .virtual_time import step_to_next_message

pytestmark = pytest.mark.usefixtures("virtual_clock")


def mend_the_target(aws) -> str:
    """The broken target's queue, created: deliveries to it succeed from now on."""
    url: str = aws.sqs.create_queue(QueueName="missing")["QueueUrl"]
    return url


def deliveries(aws, url: str) -> list[dict]:
    return [json.loads(m["body"]) for m in aws.receive(url)]


def test_a_parked_delivery_is_queued_again_and_delivered_with_its_dedupe_key_and_the_next_attempt(aws):
    park(aws, "parked")
    report = run(aws)
    assert [entry["id"] for entry in report.moved] == ["parked"] and report.skipped == [] and report.left == 0
    assert aws.receive(aws.dlq_url) == []
    read = call_api("GET", "/schedules/parked")[1]
    assert read["status"] == "QUEUED" and read["attempts"] == 1
    assert "expiresAt" not in stored(aws, "parked")
    target = mend_the_target(aws)
    [message] = aws.receive(aws.delayer_url)
    assert json.loads(message["body"])["dueMs"] == int(stored(aws, "parked")["dueMs"]["N"])
    assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    [envelope] = deliveries(aws, target)
    assert envelope["dedupeKey"].startswith("parked@") and envelope["attempt"] == 2
    assert envelope["payload"] == {"keep": "parked"}
    assert call_api("GET", "/schedules/parked")[1]["status"] == "FIRED"


def test_a_run_cut_short_before_its_delete_and_run_again_delivers_the_schedule_once(aws):
    park(aws, "cut-short")
    cut_short_before_its_delete(aws)
    ctx = context.current()
    step_to_next_message(aws.dlq_url, within_seconds=1)  # the dead-letter message is visible again
    report = Redrive(ctx.dynamodb, ctx.sqs, aws.table, aws.delayer_url, aws.dlq_url).run()
    assert [entry["note"][:14] for entry in report.moved] == ["re-armed again"]
    target = mend_the_target(aws)
    first, second = aws.receive(aws.delayer_url)
    assert dispatch(receive(first, 1), receive(second, 1)) == {"batchItemFailures": []}
    [envelope] = deliveries(aws, target)  # the first run's message carries a token the record no longer holds
    assert envelope["id"] == "cut-short" and envelope["attempt"] == 2
    assert aws.receive(aws.dlq_url) == []


def test_a_redrive_of_a_delivery_parked_again_at_once_returns_with_it_tried_once_more(aws):
    park(aws, "still-failing")
    report, sqs = run_dispatched_at_once(aws)
    assert sqs.dispatched == 1  # the target was tried once more, and the run did not take the new message
    assert [entry["id"] for entry in report.moved] == ["still-failing"] and report.skipped == []
    assert [(entry["kind"], entry["id"]) for entry in report.parked_again] == [("parked delivery", "still-failing")]
    read = call_api("GET", "/schedules/still-failing")[1]
    assert read["status"] == "FAILED" and read["attempts"] == 2
    later = run(aws, dry_run=True)  # made visible again at the run's end: a later run would take it
    assert [entry["id"] for entry in later.moved] == ["still-failing"] and later.parked_again == []


def test_a_dry_run_reports_what_would_move_and_skip_and_changes_nothing(aws):
    park(aws, "would-move")
    park(aws, "would-skip")
    aws.ddb.update_item(TableName=aws.table, Key={k: stored(aws, "would-skip")[k] for k in ("pk", "sk")},
                        UpdateExpression="SET #s = :c", ExpressionAttributeNames={"#s": "status"},
                        ExpressionAttributeValues={":c": {"S": "CANCELLED"}})
    before = {schedule_id: stored(aws, schedule_id) for schedule_id in ("would-move", "would-skip")}
    report = run(aws, dry_run=True)
    assert report.dry_run and [entry["id"] for entry in report.moved] == ["would-move"]
    assert [(entry["id"], entry["reason"]) for entry in report.skipped] == [
        ("would-skip", "the record is CANCELLED, not FAILED")]
    assert report.lines()[:3] == [
        "dry run, nothing moved: would move 1, would skip 1, left 0",
        "  would move parked delivery would-move: to be QUEUED and sent for delivery after 1 attempts",
        "  would skip parked delivery would-skip: the record is CANCELLED, not FAILED"]
    assert {schedule_id: stored(aws, schedule_id) for schedule_id in before} == before
    assert aws.receive(aws.delayer_url) == [] and len(aws.receive(aws.dlq_url)) == 2


def test_a_message_whose_redriven_delivery_has_started_is_only_deleted_when_run_again(aws):
    park(aws, "started")
    cut_short_before_its_delete(aws)
    target = mend_the_target(aws)
    [message] = aws.receive(aws.delayer_url)
    dispatch(receive(message, 1))
    step_to_next_message(aws.dlq_url, within_seconds=1)
    report = run(aws)
    assert report.moved[0]["note"].endswith("the record is FIRED now")
    assert aws.receive(aws.delayer_url) == [] and aws.receive(aws.dlq_url) == []
    assert len(deliveries(aws, target)) == 1


def test_a_bare_message_that_sqs_parked_is_rearmed_from_its_record(aws):
    create("bare", None)
    [message] = aws.receive(aws.delayer_url)
    dispatch(receive(message, 1))
    dispatch(receive(message, 2))  # receive 3 ends without the dispatcher's verdict (it timed out, say):
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=message["body"])  # SQS's redrive parks it
    assert call_api("GET", "/schedules/bare")[1]["status"] == "FIRED"
    report = run(aws)
    assert [(entry["kind"], entry["id"]) for entry in report.moved] == [("bare delayer message", "bare")]
    target = mend_the_target(aws)
    [again] = aws.receive(aws.delayer_url)
    assert json.loads(again["body"])["token"] != json.loads(message["body"])["token"]
    dispatch(receive(again, 1))
    [envelope] = deliveries(aws, target)
    assert envelope["attempt"] == 3


def test_what_is_not_redriven_stays_in_the_queue_with_its_reason(aws):
    park(aws, "cancelled-since")
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody="not json")
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=json.dumps(
        {"id": "tick", "dueMs": 1, "token": "t", "createdMs": 1, "v": 1}))
    aws.sqs.send_message(QueueUrl=aws.dlq_url, MessageBody=json.dumps(
        {"id": "gone", "dueMs": 1, "token": "t", "createdMs": 1}))
    key = stored(aws, "cancelled-since")
    aws.ddb.update_item(TableName=aws.table, Key={"pk": key["pk"], "sk": key["sk"]},
                        UpdateExpression="SET #s = :c", ExpressionAttributeNames={"#s": "status"},
                        ExpressionAttributeValues={":c": {"S": "CANCELLED"}})
    report = run(aws)
    reasons = {entry["id"]: entry["reason"] for entry in report.skipped}
    assert report.moved == [] and reasons == {
        "cancelled-since": "the record is CANCELLED, not FAILED",
        None: "not a message of this scheduler (no envelope, token or DDBStreamBatchInfo)",
        "tick": PERIODIC_REASON,
        "gone": "no schedule record: it expired (past its history retention) or was never written",
    }
    assert len(aws.receive(aws.dlq_url)) == 4
    assert aws.receive(aws.delayer_url) == []


def test_a_redrive_takes_only_the_selected_ids_and_count_and_leaves_the_rest(aws):
    for schedule_id in ("pick-a", "pick-b", "pick-c"):
        park(aws, schedule_id)
    report = run(aws, ids=["pick-a", "pick-c"], limit=1)
    assert len(report.moved) == 1 and report.moved[0]["id"] in ("pick-a", "pick-c") and report.left == 2
    assert run(aws, older_than_seconds=3600).left == 2  # parked just now
    assert run(aws, ids=["pick-b"], newer_than_seconds=3600).moved[0]["id"] == "pick-b"
    assert len(aws.receive(aws.dlq_url)) == 1


def test_a_redrive_by_group_takes_only_that_groups_schedules_and_counts_the_limit_among_them(aws):
    for schedule_id, group in (("g-a", "team"), ("g-b", None), ("g-c", "team"), ("g-d", "other")):
        body = {"id": schedule_id, "delaySeconds": 0, "payload": 1, "target": "broken", "retry": {"maxAttempts": 1},
                **({"group": group} if group else {})}
        assert call_api("POST", "/schedules", body)[0] == 201
    for message in aws.receive(aws.delayer_url):
        assert dispatch(receive(message, 1)) == {"batchItemFailures": []}
    report = run(aws, group="team", limit=1)
    assert [entry["id"] for entry in report.moved] in (["g-a"], ["g-c"]) and report.left == 3
    report = run(aws, group="team")
    assert [entry["id"] for entry in report.moved] in (["g-a"], ["g-c"]) and report.left == 2
    assert {call_api("GET", f"/schedules/{i}")[1]["status"] for i in ("g-a", "g-c")} == {"QUEUED"}
    assert {call_api("GET", f"/schedules/{i}")[1]["status"] for i in ("g-b", "g-d")} == {"FAILED"}


def test_a_selection_refuses_a_count_below_one_naming_it():
    with pytest.raises(ValueError, match="limit must be >= 1, got 0"):
        Selection(limit=0)


def test_a_listed_schedule_moves_from_the_failed_listing_to_the_queued_one(aws, monkeypatch):
    monkeypatch.setenv("LISTING", "true")
    park(aws, "listed")
    status, _, shard = stored(aws, "listed")["listPk"]["S"].partition("#")
    assert status == "FAILED"
    run(aws)
    assert stored(aws, "listed")["listPk"]["S"] == f"QUEUED#{shard}"
