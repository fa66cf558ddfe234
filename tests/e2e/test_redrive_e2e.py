"""End to end on the local engine: schedules parked in the dead-letter queue are redriven through
``Engine.redrive()`` and ``cdk-delayed-scheduler redrive``, each delivered exactly once more, and a
stream range the enqueuer gave up on is recovered by the same command; ``--dry-run`` lists what would move and
moves nothing."""

from __future__ import annotations

import json

import pytest

from bench.redrive import MendableTarget, dead_letter_depth, park, park_and_redrive
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.cli import main
from cdk_delayed_scheduler.local.resources import stream_failure_message

from .conftest import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def engine_and_target():
    target = MendableTarget()
    with Engine(EngineOptions(target=target, port=0, delay_window=2, sweep_interval=0.5, shard_count=2)) as engine:
        yield engine, target


def test_parked_schedules_redriven_by_the_engine_arrive_once_more_each(engine_and_target):
    engine, target = engine_and_target
    left_before = dead_letter_depth(engine)  # the module's other test leaves its skipped message behind
    figures = park_and_redrive(engine, target, 30, prefix="engine")
    assert figures["messages"] == 30 and dead_letter_depth(engine) == left_before
    assert raw_client(engine.api_url).raw("getSchedule", id="engine-0")[1]["status"] == "FIRED"


def test_the_redrive_command_moves_parked_schedules_and_stream_ranges_and_reports_what_it_skipped(
        engine_and_target, capsys):
    engine, target = engine_and_target
    target.broken = True
    [parked] = park(engine, 1, "command")
    api = raw_client(engine.api_url)
    assert api.raw("createSchedule", {"id": "through-a-timer", "delaySeconds": 3, "payload": 1})[0] == 201
    target.broken = False
    assert target.recorder.wait_for({"through-a-timer"}, timeout_seconds=20)
    streams = engine.client("dynamodbstreams")
    removes = _claims(streams, engine.stream_arn)
    sqs = engine.client("sqs")
    sqs.send_message(QueueUrl=engine.dead_letter_queue_url, MessageBody=json.dumps(
        stream_failure_message(streams, engine.stream_arn, "enqueuer", removes)))
    sqs.send_message(QueueUrl=engine.dead_letter_queue_url, MessageBody="not ours")

    code = main(["redrive", "--endpoint-url", engine.endpoint_url, "--lambda-endpoint-url",
                 engine.lambda_endpoint_url, "--region", "us-east-1", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1  # a selected message was skipped
    assert sorted(entry["kind"] for entry in report["moved"]) == ["parked delivery", "stream range"]
    assert [entry["reason"][:24] for entry in report["skipped"]] == ["not a message of this sc"]
    assert target.recorder.wait_for({parked}, timeout_seconds=20)
    engine.wait_until_quiet()
    by_id = target.recorder.by_id()
    assert len(by_id[parked]) == 1 and len(by_id["through-a-timer"]) == 1  # the recovered claim is a stray now
    wait_until(lambda: dead_letter_depth(engine) == 1, 5, "the skipped message is not back in the queue")


def test_the_redrive_commands_dry_run_lists_what_would_move_and_moves_nothing(engine_and_target, capsys):
    engine, target = engine_and_target
    target.broken = True
    [parked] = park(engine, 1, "dry")
    depth = dead_letter_depth(engine)
    api = raw_client(engine.api_url)
    argv = ["redrive", "--endpoint-url", engine.endpoint_url, "--lambda-endpoint-url", engine.lambda_endpoint_url,
            "--region", "us-east-1", "--id", parked]

    assert main([*argv, "--dry-run"]) == 0
    summary, *entries = capsys.readouterr().out.splitlines()
    assert summary.startswith("dry run, nothing moved: would move 1, would skip 0, left ")
    assert entries == [f"  would move parked delivery {parked}: to be QUEUED and sent for delivery after 1 attempts"]
    engine.wait_until_quiet()
    read = api.raw("getSchedule", id=parked)[1]
    assert (read["status"], read["attempts"]) == ("FAILED", 1) and dead_letter_depth(engine) == depth

    target.broken = False
    assert main(argv) == 0  # the run the dry run listed
    assert capsys.readouterr().out.startswith("moved 1, skipped 0, left ")
    assert target.recorder.wait_for({parked}, timeout_seconds=20)
    engine.wait_until_quiet()
    assert len(target.recorder.by_id()[parked]) == 1 and dead_letter_depth(engine) == depth - 1


def _claims(streams, stream_arn: str) -> list[str]:
    """The sequence numbers of the stream's REMOVE records (the sweeper's claims among them)."""
    shards = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
    numbers = []
    for shard in shards:
        iterator = streams.get_shard_iterator(StreamArn=stream_arn, ShardId=shard["ShardId"],
                                              ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        records = streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
        numbers += [r["dynamodb"]["SequenceNumber"] for r in records if r["eventName"] == "REMOVE"]
    assert numbers, "no claim in the stream"
    return numbers
