"""The events AWS hands a Lambda function (shaped as AWS's sample events for Lambda triggers) that carry what the
scheduler sends: an SQS record, an SNS notification and event, an EventBridge event."""

from __future__ import annotations

from typing import Any


def sqs_record(body: str, message_id: str) -> dict[str, Any]:
    """One record of an SQS event, as Lambda's sample event shows it."""
    return {
        "messageId": message_id, "receiptHandle": "MessageReceiptHandle", "body": body,
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1795000001625", "SenderId": "AROAEXAMPLE",
                       "ApproximateFirstReceiveTimestamp": "1795000001630"},
        "messageAttributes": {"dedupeKey": {"stringValue": "k", "dataType": "String", "stringListValues": [],
                                            "binaryListValues": []}},
        "md5OfBody": "7b270e59b47ff90a553787216d55d91d", "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:deliveries", "awsRegion": "us-east-1",
    }


def sns_notification(message: str) -> dict[str, Any]:
    """An SNS notification (``Type: Notification``), as Lambda's sample event carries it in ``Sns``."""
    return {
        "SignatureVersion": "1", "Timestamp": "2026-11-18T10:40:01.700Z", "Signature": "EXAMPLE",
        "SigningCertUrl": "https://sns.us-east-1.amazonaws.com/SimpleNotificationService-0000.pem",
        "MessageId": "95df01b4-ee98-5cb9-9903-4c221d41eb5e", "Message": message, "MessageAttributes": {},
        "Type": "Notification", "UnsubscribeUrl": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:deliveries", "Subject": None,
    }


def sns_event(message: str) -> dict[str, Any]:
    """An SNS event as a topic's Lambda subscription receives it: one record, ``message`` its ``Sns.Message``."""
    return {"Records": [{
        "EventVersion": "1.0", "EventSource": "aws:sns", "Sns": sns_notification(message),
        "EventSubscriptionArn": "arn:aws:sns:us-east-1:123456789012:deliveries:21be56ed-a058-49f5-8c98-aedd2564c486",
    }]}


def eventbridge_event(detail: Any) -> dict[str, Any]:
    """An EventBridge event as a rule's Lambda target receives it: what the scheduler sent is its ``detail``."""
    return {"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": "Schedule Due",
            "source": "cdk-delayed-scheduler", "account": "123456789012", "time": "2026-11-18T10:40:01Z",
            "region": "us-east-1", "resources": [], "detail": detail}
