"""Feeding the dispatcher handler the delayer messages SQS would hand it, keeping the ones it sends the delayer
queue to hand back, and ageing the table as TTL would."""

from __future__ import annotations

import json
import time

from scheduler_runtime.handlers import dispatcher


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


def dispatch_all(aws) -> list[dict]:
    """Dispatch whatever the delayer queue holds now; return what reached the target."""
    messages = aws.receive(aws.delayer_url)
    if messages:
        assert dispatcher.handler({"Records": messages}) == {"batchItemFailures": []}
    return [json.loads(m["body"]) for m in aws.receive(aws.target_url)]


def waiting_in_delayer(aws) -> int:
    """Messages in the delayer queue that are still delayed or visible (received ones are not counted).

    The delayed ones are counted first, then the visible ones, in two reads: one read computes each count
    at its own instant, and a message whose delay ended between the two was then in neither, so a queue
    with one message read as empty. Read in this order, such a message is counted twice, never missed.
    """
    counts = [aws.sqs.get_queue_attributes(QueueUrl=aws.delayer_url, AttributeNames=[name])["Attributes"][name]
              for name in ("ApproximateNumberOfMessagesDelayed", "ApproximateNumberOfMessages")]
    return sum(int(count) for count in counts)


def dispatch_until_empty(aws, timeout: float = 5.0) -> list[dict]:
    """Dispatch whatever surfaces until nothing waits in the delayer queue; fail after ``timeout`` seconds."""
    delivered: list[dict] = []
    deadline = time.monotonic() + timeout
    while waiting_in_delayer(aws):
        assert time.monotonic() < deadline, f"the delayer queue did not empty within {timeout} s"
        delivered += dispatch_all(aws)
        time.sleep(0.02)
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
    return {"messageId": f"r{time.monotonic_ns()}", "body": sent["MessageBody"],
            "attributes": {"ApproximateReceiveCount": str(receive_count)}}
