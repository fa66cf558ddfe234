"""In-process moto (``mock_aws``) with the resources the construct creates, the runtime's environment, and virtual
time (``virtual_clock``)."""

from __future__ import annotations

import functools
import json
import os
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

import boto3
import botocore.session
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from cdk_delayed_scheduler.local.pollers import lambda_sqs_record, lambda_stream_record
from cdk_delayed_scheduler.local.resources import table_definition
from scheduler_runtime import clock
from scheduler_runtime.aws import context
from scheduler_runtime.aws import flow as flow_store
from scheduler_runtime.aws.store import ScheduleStore
from scheduler_runtime.clock import VirtualClock
from scheduler_runtime.core import contract

from .virtual_time import START_MS, now_ms, now_s, sqs_following, step_to_next_message

REGION = "us-east-1"
DELAYER_VISIBILITY_SECONDS = contract.VISIBILITY_TIMEOUT_FACTOR * contract.DEFAULT_DISPATCHER_TIMEOUT_SECONDS
"""The delayer queue's visibility timeout as the construct sets it by default (6 minutes): a failed delivery's
message comes back after it."""


@dataclass
class Aws:
    """The mocked account, plus helpers that feed handlers real stream records and queue messages."""

    ddb: Any
    sqs: Any
    streams: Any
    table: str
    stream_arn: str
    delayer_url: str
    dlq_url: str
    target_url: str
    fifo_target_url: str
    _stream_position: str | None = field(default=None)

    def new_stream_records(self, event_name: str | None = None) -> list[dict]:
        """Stream records written since the last call, as Lambda would pass them."""
        shard = self.streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"][0]["ShardId"]
        params: dict = {"StreamArn": self.stream_arn, "ShardId": shard}
        if self._stream_position:
            params.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=self._stream_position)
        else:
            params.update(ShardIteratorType="TRIM_HORIZON")
        iterator = self.streams.get_shard_iterator(**params)["ShardIterator"]
        records = self.streams.get_records(ShardIterator=iterator)["Records"]
        if records:
            self._stream_position = records[-1]["dynamodb"]["SequenceNumber"]
        out = [lambda_stream_record(r, self.stream_arn, REGION) for r in records]
        return [r for r in out if event_name is None or r["eventName"] == event_name]

    def receive(self, queue_url: str, wait: int = 0, max_messages: int = 10) -> list[dict]:
        messages = self.sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=max_messages, WaitTimeSeconds=wait,
            AttributeNames=["All"], MessageAttributeNames=["All"],
        ).get("Messages", [])
        return [lambda_sqs_record(m, "arn:aws:sqs:us-east-1:123456789012:q", REGION) for m in messages]

    def take(self, queue_url: str) -> list[dict]:
        """Receive what ``queue_url`` holds now and delete it, as a consumer that handled it would."""
        messages = self.receive(queue_url)
        for message in messages:
            self.sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=message["receiptHandle"])
        return messages

    def wait_for_messages(self, queue_url: str, timeout: float = 5.0) -> list[dict]:
        """On virtual time: receive what ``queue_url`` holds now, else move the clock to the instant the next message
        can be received (which must come within ``timeout`` seconds) and receive then."""
        messages = self.receive(queue_url)
        if not messages:
            step_to_next_message(queue_url, timeout)
            messages = self.receive(queue_url)
        assert messages, f"moto did not hand out the message that came due in {queue_url}"
        return messages

    def item(self, pk: str, sk: str) -> dict | None:
        return self.ddb.get_item(TableName=self.table, Key={"pk": {"S": pk}, "sk": {"S": sk}}, ConsistentRead=True).get("Item")

    def count_items(self, prefix: str) -> int:
        # Tests may scan; the runtime never does.
        return sum(1 for i in self.ddb.scan(TableName=self.table)["Items"] if i["pk"]["S"].startswith(prefix))


def _serialize_dynamodb_requests(monkeypatch) -> None:
    """One lock around moto's item writes and around each DynamoDB request, as DynamoDB serializes the
    writes of one item and applies each whole: the dispatcher runs a batch's messages in threads, and moto,
    unlocked, can fail a conditional update of an item that another thread is writing (``dictionary changed
    size during iteration``), and answers a read from an item that an ``UpdateItem`` has applied only some
    actions to (a resume's new token with its status still PAUSED). The local engine's moto has the same
    lock (``local/moto_patches.py``)."""
    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    lock = threading.RLock()
    operations = [(DynamoDBBackend, name)
                  for name in ("put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items")]
    for owner, name in [*operations, (DynamoHandler, "call_action")]:
        operation = getattr(owner, name)

        def locked(*args, _operation=operation, **kwargs):
            with lock:
                return _operation(*args, **kwargs)

        monkeypatch.setattr(owner, name, functools.wraps(operation)(locked))


_MODELS = botocore.session.get_session()
"""The tests' clients come from one botocore session per worker, which parses each service model once:
a session per test would parse them again for each (about 0.1 s a client)."""


def aws_client(service: str) -> Any:
    """A client of in-process moto for ``service``, on the worker's one session (inside the ``aws`` fixture)."""
    return boto3.session.Session(botocore_session=_MODELS, region_name=REGION).client(service)


@pytest.fixture
def aws(monkeypatch) -> Aws:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    _serialize_dynamodb_requests(monkeypatch)
    monkeypatch.delenv("AWS_ENDPOINT_URL_LAMBDA", raising=False)
    with mock_aws():
        ddb, sqs, streams = aws_client("dynamodb"), aws_client("sqs"), aws_client("dynamodbstreams")
        table = ddb.create_table(
            TableName="schedules", **table_definition(listing=False),
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]
        dlq = sqs.create_queue(QueueName="dlq")["QueueUrl"]
        delayer = sqs.create_queue(QueueName="delayer",
                                   Attributes={"VisibilityTimeout": str(DELAYER_VISIBILITY_SECONDS)})["QueueUrl"]
        target = sqs.create_queue(QueueName="target")["QueueUrl"]
        fifo = sqs.create_queue(QueueName="target.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
        targets = {
            "default": {"type": "sqs", "queueUrl": target, "fifo": False},
            "ordered": {"type": "sqs", "queueUrl": fifo, "fifo": True, "messageGroupId": "orders"},
            "broken": {"type": "sqs", "queueUrl": target.replace("target", "missing"), "fifo": False},
        }
        for name, value in {
            "TABLE_NAME": "schedules", "DELAYER_QUEUE_URL": delayer, "DEAD_LETTER_QUEUE_URL": dlq,
            "TARGETS": json.dumps(targets), "SHARD_COUNT": "4", "DELAY_WINDOW_SECONDS": "60",
            "MAX_RECEIVE_COUNT": "3", "AWS_DEFAULT_REGION": REGION,
        }.items():
            monkeypatch.setenv(name, value)
        context._contexts.clear()
        yield Aws(ddb, sqs, streams, "schedules", table["LatestStreamArn"], delayer, dlq, target, fifo)
        context._contexts.clear()


@pytest.fixture
def virtual_clock(monkeypatch) -> Any:
    """Virtual time (:mod:`.virtual_time`) for one test: the runtime's clock and in-process moto's SQS read one
    :class:`~scheduler_runtime.clock.VirtualClock`, which starts at ``START_MS`` and moves only when the test
    moves it or something sleeps on it."""
    virtual = VirtualClock(START_MS)
    flow_store.forget()  # each test's deliveries start in a new sandbox
    with sqs_following(virtual, monkeypatch):
        clock.use(virtual)
        try:
            yield virtual
        finally:
            clock.use(None)


def api_event(method: str, path: str, body: Any = None) -> dict:
    segments = [s for s in path.split("/") if s]
    return {
        "httpMethod": method,
        "path": path,
        "resource": "/schedules/{id}" if len(segments) == 2 else path,
        "pathParameters": {"id": segments[1]} if len(segments) == 2 else None,
        "body": body if isinstance(body, str) or body is None else json.dumps(body),
        "isBase64Encoded": False,
    }


def call_api(method: str, path: str, body: Any = None) -> tuple[int, dict]:
    from scheduler_runtime.handlers import api

    response = api.handler(api_event(method, path, body))
    assert response["headers"]["Content-Type"] == "application/json"
    return response["statusCode"], json.loads(response["body"])


FIRST_OCCURRENCE_LEAD_SECONDS = 3
"""How far ahead :func:`put_starting_soon` puts a periodic timer's first occurrence."""


def put_starting_soon(periodic_id: str, body: dict, end_after: int | None = None) -> tuple[int, dict]:
    """PUT ``body`` as a periodic timer whose first occurrence is due a few whole seconds from now (its ``startAt``):
    ``(startAt, answer)``. ``end_after`` sets ``endAt`` that many seconds after ``startAt``."""
    start = now_ms() // 1000 + FIRST_OCCURRENCE_LEAD_SECONDS
    bounds = {"startAt": start} if end_after is None else {"startAt": start, "endAt": start + end_after}
    status, answer = call_api("PUT", f"/periodic/{periodic_id}", {**body, **bounds})
    assert status == 201, answer
    assert answer["nextDueAt"] == answer["startAt"], answer
    return start, answer


def call_direct(method: str, path: str, body: Any = None) -> tuple[int, dict]:
    """A direct invoke of the api function (the form that takes a query string in the path)."""
    from scheduler_runtime.handlers import api

    answer = api.handler({"method": method, "path": path, **({"body": body} if body is not None else {})})
    return answer["statusCode"], answer["body"]


class _Wrapped:
    """A client whose named operations are replaced; every other call goes to the real one."""

    def __init__(self, real: Any, overrides: dict) -> None:
        self._real, self._overrides = real, overrides

    def __getattr__(self, name: str) -> Any:
        if name in self._overrides:
            return lambda **kwargs: self._overrides[name](self._real, **kwargs)
        return getattr(self._real, name)


@contextmanager
def faulty(service: str, **overrides: Callable[..., Any]):
    """Replace operations of the runtime's ``service`` client: ``override(real_client, **kwargs)``."""
    ctx = context.current()
    real = ctx.client(service)
    ctx._clients[service] = _Wrapped(real, overrides)
    try:
        yield
    finally:
        ctx._clients[service] = real


def service_error(operation: str, code: str = "InternalServerError") -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "injected"}}, operation)


@contextmanager
def window(seconds: int):
    saved = os.environ["DELAY_WINDOW_SECONDS"]
    os.environ["DELAY_WINDOW_SECONDS"] = str(seconds)
    try:
        yield
    finally:
        os.environ["DELAY_WINDOW_SECONDS"] = saved


def schedule(schedule_id: str, in_seconds: float, target: str = "default", payload=None, long: bool = False) -> None:
    body = {"id": schedule_id, "dueAt": round(now_s() + in_seconds, 3), "payload": payload or {"id": schedule_id}}
    if target != "default":
        body["target"] = target
    with window(1 if long else 60):
        status, answer = call_api("POST", "/schedules", body)
    assert status == 201 and answer["status"] == ("SCHEDULED" if long and in_seconds > 1 else "QUEUED")


def status_of(schedule_id: str) -> str:
    return call_api("GET", f"/schedules/{schedule_id}")[1]["status"]


def promote(aws) -> list[dict]:
    """Run the enqueuer over every new REMOVE and return the delayer messages it produced.

    The REMOVEs go in unfiltered, cancellations included: dropping those is the enqueuer's own
    check too (behind the stream filter), and this keeps it exercised.
    """
    from scheduler_runtime.handlers import enqueuer

    removes = aws.new_stream_records("REMOVE")
    assert enqueuer.handler({"Records": removes}) == {"batchItemFailures": []}
    return aws.receive(aws.delayer_url, max_messages=10)


def store() -> ScheduleStore:
    ctx = context.current()
    return ScheduleStore(ctx.dynamodb, ctx.config.table_name)
