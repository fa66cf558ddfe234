"""The engine's AWS resources, made as the construct makes them: the table (with its stream, and the
listing index when asked), the delayer queue and its dead-letter queue, and the flow queue when a target has limits."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from .._contract import contract

REGION = "us-east-1"
ACCOUNT = "123456789012"


@dataclass(frozen=True)
class Resources:
    """What :func:`provision` made or found."""

    table_name: str
    stream_arn: str
    queue_url: str
    queue_arn: str
    dead_letter_queue_url: str
    table_created: bool
    """Whether the table is new (a new table holds no timer of an earlier, larger shard count)."""


def provision(session: Any, name_prefix: str, *, listing: bool, visibility_timeout: int,
              max_receive_count: int) -> Resources:
    """Create the table and queues, as the construct would, unless they exist (a queue that exists is
    brought to these attributes)."""
    ddb = session.client("dynamodb")
    table_name = f"{name_prefix}-schedules"
    created = False
    try:
        table = ddb.describe_table(TableName=table_name)["Table"]
    except ddb.exceptions.ResourceNotFoundException:
        created = True
        table = ddb.create_table(
            TableName=table_name,
            **table_definition(listing),
            BillingMode="PAY_PER_REQUEST",
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]
    sqs = session.client("sqs")
    dead_letter_queue_url = _ensure_queue(sqs, f"{name_prefix}-dlq", {})
    queue_url = _ensure_queue(sqs, f"{name_prefix}-delayer",
                              _delayer_attributes(sqs, dead_letter_queue_url, visibility_timeout, max_receive_count))
    return Resources(table_name, table["LatestStreamArn"], queue_url, _queue_arn(sqs, queue_url),
                     dead_letter_queue_url, created)


def provision_flow_queue(session: Any, name_prefix: str, resources: Resources, *, visibility_timeout: int,
                         max_receive_count: int) -> tuple[str, str]:
    """The flow queue (its URL and ARN), as the construct makes it once a target has limits: the delayer queue's
    attributes and dead-letter queue."""
    sqs = session.client("sqs")
    url = _ensure_queue(sqs, f"{name_prefix}-flow", _delayer_attributes(
        sqs, resources.dead_letter_queue_url, visibility_timeout, max_receive_count))
    return url, _queue_arn(sqs, url)


def _delayer_attributes(sqs: Any, dead_letter_queue_url: str, visibility_timeout: int,
                        max_receive_count: int) -> dict[str, str]:
    """The delayer queue's attributes, which the flow queue shares: its visibility timeout, and its dead-letter
    queue after ``max_receive_count`` receives."""
    redrive = json.dumps({"deadLetterTargetArn": _queue_arn(sqs, dead_letter_queue_url),
                          "maxReceiveCount": max_receive_count})
    return {"VisibilityTimeout": str(visibility_timeout), "RedrivePolicy": redrive}


def provision_target_queue(session: Any, name: str, fifo: bool) -> str:
    """A target queue (FIFO when asked, its name then ending in ``.fifo``); made again, the same queue."""
    attributes = {"FifoQueue": "true"} if fifo else {}
    url: str = session.client("sqs").create_queue(QueueName=f"{name}.fifo" if fifo else name,
                                                  Attributes=attributes)["QueueUrl"]
    return url


def provision_target_topic(session: Any, name: str, fifo: bool) -> tuple[str, str]:
    """An SNS topic and an SQS queue subscribed to it with raw message delivery (both FIFO when asked): the
    topic's ARN and the queue's URL; made again, the same ones."""
    sqs, sns = session.client("sqs"), session.client("sns")
    queue_url = provision_target_queue(session, name, fifo)
    topic_arn: str = sns.create_topic(Name=f"{name}.fifo" if fifo else name,
                                      Attributes={"FifoTopic": "true"} if fifo else {})["TopicArn"]
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=_queue_arn(sqs, queue_url),
                  Attributes={"RawMessageDelivery": "true"})
    return topic_arn, queue_url


def provision_target_bus(session: Any, name: str, *, source: str, detail_type: str) -> tuple[str, str]:
    """An EventBridge bus and a rule that sends its events of ``source`` and ``detail_type`` to an SQS queue:
    the bus's ARN and the queue's URL; made again, the same ones."""
    sqs, events = session.client("sqs"), session.client("events")
    queue_url = provision_target_queue(session, name, False)
    try:
        bus_arn: str = events.create_event_bus(Name=name)["EventBusArn"]
    except events.exceptions.ResourceAlreadyExistsException:
        bus_arn = events.describe_event_bus(Name=name)["Arn"]
    rule = f"{name}-to-queue"
    events.put_rule(Name=rule, EventBusName=name,
                    EventPattern=json.dumps({"source": [source], "detail-type": [detail_type]}))
    events.put_targets(Rule=rule, EventBusName=name, Targets=[{"Id": "queue", "Arn": _queue_arn(sqs, queue_url)}])
    return bus_arn, queue_url


_STATE_MACHINE_DEFINITION = json.dumps({"Comment": "A named target of the local engine",
                                        "StartAt": "Delivered", "States": {"Delivered": {"Type": "Succeed"}}})


def provision_target_state_machine(session: Any, name: str, express: bool) -> str:
    """A state machine (STANDARD, or EXPRESS when asked) whose executions are a target's deliveries: its
    ARN; made again, the same one. moto runs no workflow: an execution stays RUNNING with its input."""
    stepfunctions = session.client("stepfunctions")
    arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"
    try:
        stepfunctions.describe_state_machine(stateMachineArn=arn)
    except stepfunctions.exceptions.StateMachineDoesNotExist:
        created: str = stepfunctions.create_state_machine(
            name=name, definition=_STATE_MACHINE_DEFINITION, type="EXPRESS" if express else "STANDARD",
            roleArn=f"arn:aws:iam::{ACCOUNT}:role/{name}")["stateMachineArn"]
        return created
    return arn


def provision_target_secret(session: Any, name: str, secret: str) -> str:
    """A secret holding ``secret`` (its ``SecretString``), an HTTPS target's signing key: its ARN; made again,
    the same secret, holding ``secret`` now."""
    secrets = session.client("secretsmanager")
    try:
        created: str = secrets.create_secret(Name=name, SecretString=secret)["ARN"]
        return created
    except secrets.exceptions.ResourceExistsException:
        updated: str = secrets.put_secret_value(SecretId=name, SecretString=secret)["ARN"]
        return updated


def table_definition(listing: bool) -> dict[str, Any]:
    """Keys and attributes as the construct defines them: the sparse keys-only group index, and with ``listing``
    the listing index too."""
    keys = [("pk", "HASH"), ("sk", "RANGE")]
    attributes = [name for name, _ in keys]
    definition: dict[str, Any] = {"KeySchema": [{"AttributeName": n, "KeyType": k} for n, k in keys]}
    indexes = [contract.GROUPS] + ([contract.LISTING] if listing else [])
    for index in indexes:
        attributes += [index["partitionKey"], index["sortKey"]]
    definition["GlobalSecondaryIndexes"] = [{
        "IndexName": index["indexName"],
        "KeySchema": [{"AttributeName": index["partitionKey"], "KeyType": "HASH"},
                      {"AttributeName": index["sortKey"], "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"},
    } for index in indexes]
    definition["AttributeDefinitions"] = [{"AttributeName": n, "AttributeType": "S"} for n in attributes]
    return definition


def _ensure_queue(sqs: Any, name: str, attributes: dict[str, str]) -> str:
    """The queue's URL; created with ``attributes`` if missing, else brought to them."""
    try:
        url: str = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    except sqs.exceptions.QueueDoesNotExist:
        created: str = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
        return created
    if attributes:
        sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    return url


def _queue_arn(sqs: Any, url: str) -> str:
    arn: str = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return arn


def function_arn(name: str) -> str:
    return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"


def stream_failure_message(streams: Any, stream_arn: str, function: str, sequence_numbers: list[str]) -> dict[str, Any]:
    """What the enqueuer's mapping sends its on-failure destination for a batch it gave up on: the
    batch's stream range, no record (see ``recover-stream``)."""
    first, last = min(sequence_numbers, key=int), max(sequence_numbers, key=int)
    shards = streams.describe_stream(StreamArn=stream_arn)["StreamDescription"]["Shards"]
    shard = next(s["ShardId"] for s in shards if int(s["SequenceNumberRange"]["StartingSequenceNumber"]) <= int(first)
                 and int(s["SequenceNumberRange"].get("EndingSequenceNumber", last)) >= int(last))
    return {"version": "1.0", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "requestContext": {"functionArn": function_arn(function), "condition": "RetryAttemptsExhausted"},
            "DDBStreamBatchInfo": {"shardId": shard, "startSequenceNumber": first, "endSequenceNumber": last,
                                   "batchSize": len(sequence_numbers), "streamArn": stream_arn}}
