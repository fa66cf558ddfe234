"""The shape the two event-source handlers share: typed records and partial batch responses.

Lambda retries only the records a handler names in ``batchItemFailures`` (the event source
mappings set ``ReportBatchItemFailures``): an SQS message by its ``messageId``, a stream
record by its sequence number. Both handlers answer through :func:`partial_batch_response`.
"""

from __future__ import annotations

from typing import Any, Iterable, TypedDict


class SqsRecord(TypedDict, total=False):
    """One message of an SQS event, as Lambda hands it over."""

    messageId: str
    receiptHandle: str
    body: str
    attributes: dict[str, str]


class StreamRecord(TypedDict, total=False):
    """One record of a DynamoDB stream event, as Lambda hands it over."""

    eventID: str
    eventName: str
    userIdentity: dict[str, str]
    dynamodb: dict[str, Any]


class BatchEvent(TypedDict, total=False):
    Records: list[Any]


def item_identifier(record: SqsRecord | StreamRecord) -> str:
    """What Lambda expects in ``batchItemFailures`` for this record."""
    if "messageId" in record:
        return record["messageId"]  # type: ignore[typeddict-item]
    sequence_number: str = record["dynamodb"]["SequenceNumber"]  # type: ignore[typeddict-item]
    return sequence_number


def partial_batch_response(failed: Iterable[SqsRecord | StreamRecord]) -> dict[str, Any]:
    """``{"batchItemFailures": [...]}`` naming each failed record, in order."""
    return {"batchItemFailures": [{"itemIdentifier": item_identifier(record)} for record in failed]}
