"""Feeding the dispatcher handler the delayer messages SQS would hand it (on virtual time, the clock moved to each
instant one comes due), keeping the ones it sends the delayer queue to hand back, and ageing the table as TTL would."""

from __future__ import annotations

import itertools
import json

from scheduler_runtime.handlers import dispatcher

from .virtual_time import now_ms, step_to_next_message

_record_ids = itertools.count(1)


def receive(message: dict, receive_count: int, message_id: str | None = None) -> dict:
    """``message`` as SQS hands it to the dispatcher on receive ``receive_count`` (another ``message_id``:
    another message with the same body, as an ambiguous send makes)."""
    attributes = {**message["attributes"], "ApproximateReceiveCount": str(receive_count)}
    return {**message, "attributes": attributes, "messageId": message_id or message["messageId"]}


def dispatch(*messages: dict) -> dict:
    return dispatcher.handler({"Records": list(messages)})


def dispatch_as_received(message: dict, receive_count: int = 1) -> dict:
    """Hand the dispatcher ``message`` alone, its receive count set to ``receive_count`` (on ``message`` itself)."""
    message["attributes"]["ApproximateReceiveCount"] = str(receive_count)
    return dispatcher.handler({"Records": [message]})


def expire_as_ttl_would(aws, at_epoch_seconds: float) -> list[str]:
    """Delete what DynamoDB's TTL may have deleted by ``at_epoch_seconds``; the keys it deleted."""
    gone = []
    for item in aws.ddb.scan(TableName=aws.table)["Items"]:
        if "expiresAt" in item and int(item["expiresAt"]["N"]) < at_epoch_seconds:
            aws.ddb.delete_item(TableName=aws.table, Key={"pk": item["pk"], "sk": item["sk"]})
            gone.append(item["pk"]["S"])
    return gone


def dispatch_received(aws, messages: list[dict]) -> dict:
    """Hand the dispatcher ``messages`` received from the delayer queue, then delete those it did not hand
    back, as Lambda's event source mapping does; its answer."""
    answer = dispatcher.handler({"Records": messages})
    failed = {failure["itemIdentifier"] for failure in answer["batchItemFailures"]}
    for message in messages:
        if message["messageId"] not in failed:
            aws.sqs.delete_message(QueueUrl=aws.delayer_url, ReceiptHandle=message["receiptHandle"])
    return answer


def dispatch_all(aws) -> list[dict]:
    """Dispatch whatever the delayer queue holds now (as the mapping would); return what reached the target."""
    messages = aws.receive(aws.delayer_url)
    if messages:
        assert dispatch_received(aws, messages) == {"batchItemFailures": []}
    return [json.loads(m["body"]) for m in aws.take(aws.target_url)]


def waiting_in_delayer(aws) -> int:
    """Messages in the delayer queue that are still delayed or visible (received ones are not counted).

    The delayed ones are counted first, then the visible ones, in two reads: one read computes each count
    at its own instant, and a message whose delay ended between the two was then in neither, so a queue
    with one message read as empty. Read in this order, such a message is counted twice, never missed.
    """
    counts = [aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=[name])["Attributes"][name]
              for name in ("ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessages")]
    return sum(int(count) for count in counts)


def _visible_in_delayer(aws) -> int:
    attributes = aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def dispatch_until_empty(aws, timeout: float = 5.0) -> list[dict]:
    """On virtual time: dispatch what can be received, moving the clock to each instant a message can be, until
    nothing waits in the delayer queue; fail if that takes longer than ``timeout`` seconds."""
    delivered: list[dict] = []
    until_ms = now_ms() + timeout * 1000
    while waiting_in_delayer(aws):
        if not _visible_in_delayer(aws):
            step_to_next_message(aws.delayer_url, (until_ms - now_ms()) / 1000)
        delivered += dispatch_all(aws)
    return delivered


def capture_delayer_sends(aws, sent: list):
    """A ``send_message`` override that keeps delayer messages (retries, next occurrences) instead of sending them."""

    def send(real, **kwargs):
        if kwargs["QueueUrl"] == aws.delayer_url:
            sent.append(kwargs)
            return {"MessageId": f"m{len(sent)}"}
        return real.send_message(**kwargs)

    return send


def as_record(sent: dict, receive_count: int = 1) -> dict:
    return {"messageId": f"r{next(_record_ids)}", "body": sent["MessageBody"],
            "attributes": {"ApproximateReceiveCount": str(receive_count)}}
