"""A sample application: an order left unpaid for a day expires.

Orders live in a DynamoDB table (``ORDERS_TABLE``); placing one schedules its expiry through the
scheduler (``TIMERS_API``), and ``expire_order`` is the Lambda function the scheduler delivers to.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

import boto3
from cdk_delayed_scheduler.client import SchedulerClient
from cdk_delayed_scheduler.envelope import Envelope


def _orders() -> Any:
    return boto3.resource("dynamodb").Table(os.environ["ORDERS_TABLE"])


def place(order: str) -> None:
    _orders().put_item(Item={"order": order, "status": "UNPAID"})
    SchedulerClient(os.environ["TIMERS_API"]).schedule(timedelta(days=1), {"order": order}, id=f"expire-{order}")


def pay(order: str) -> None:
    _orders().update_item(Key={"order": order}, UpdateExpression="SET #s = :paid",
                          ExpressionAttributeNames={"#s": "status"}, ExpressionAttributeValues={":paid": "PAID"})


def expire_order(event: dict[str, Any], context: object) -> None:
    """The scheduler's target: the order expires, unless it was paid meanwhile."""
    orders = _orders()
    try:
        orders.update_item(Key={"order": Envelope.from_event(event).payload["order"]},
                           UpdateExpression="SET #s = :expired", ConditionExpression="#s = :unpaid",
                           ExpressionAttributeNames={"#s": "status"},
                           ExpressionAttributeValues={":expired": "EXPIRED", ":unpaid": "UNPAID"})
    except orders.meta.client.exceptions.ConditionalCheckFailedException:
        pass  # paid
