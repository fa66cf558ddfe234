"""Feeding the dispatcher handler the delayer messages SQS would hand it, and ageing the table as TTL would."""

from __future__ import annotations

from scheduler_runtime.handlers import dispatcher


def receive(message: dict, receive_count: int, message_id: str | None = None) -> dict:
    """``message`` as SQS hands it to the dispatcher on receive ``receive_count`` (another ``message_id``:
    another message with the same body, as an ambiguous send makes)."""
    attributes = {**message["attributes"], "ApproximateReceiveCount": str(receive_count)}
    return {**message, "attributes": attributes, "messageId": message_id or message["messageId"]}


def dispatch(*messages: dict) -> dict:
    return dispatcher.handler({"Records": list(messages)})


def expire_as_ttl_would(aws, at_epoch_seconds: float) -> list[str]:
    """Delete what DynamoDB's TTL may have deleted by ``at_epoch_seconds``; the keys it deleted."""
    gone = []
    for item in aws.ddb.scan(TableName=aws.table)["Items"]:
        if "expiresAt" in item and int(item["expiresAt"]["N"]) < at_epoch_seconds:
            aws.ddb.delete_item(TableName=aws.table, Key={"pk": item["pk"], "sk": item["sk"]})
            gone.append(item["pk"]["S"])
    return gone
