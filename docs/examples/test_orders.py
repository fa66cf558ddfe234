"""The sample application's tests: the suite keeps moto's ``mock_aws`` on, and the expiry target writes to
the orders table, which is made once the scheduler runs, in the kit's moto."""

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from cdk_delayed_scheduler.testing import LocalScheduler
from moto import mock_aws

import orders

pytestmark = pytest.mark.local_scheduler(url_env="TIMERS_API", target=orders.expire_order)


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The suite's own mock_aws, as its tests without timers use it."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setenv("ORDERS_TABLE", "orders")
    with mock_aws():
        yield


@pytest.fixture
def orders_table(local_scheduler: LocalScheduler) -> Any:
    """Made once the kit runs (this fixture takes local_scheduler), so in the kit's moto, where the target writes."""
    return boto3.resource("dynamodb").create_table(
        TableName="orders", KeySchema=[{"AttributeName": "order", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


def test_an_unpaid_order_expires_after_a_day(local_scheduler: LocalScheduler, orders_table: Any) -> None:
    orders.place("o-1")
    local_scheduler.advance(days=1)
    assert orders_table.get_item(Key={"order": "o-1"})["Item"]["status"] == "EXPIRED"


def test_a_paid_order_stays_paid(local_scheduler: LocalScheduler, orders_table: Any) -> None:
    orders.place("o-2")
    orders.pay("o-2")
    local_scheduler.advance(days=1)
    assert orders_table.get_item(Key={"order": "o-2"})["Item"]["status"] == "PAID"
    assert [d.error for d in local_scheduler.deliveries()] == [None]  # delivered, and the order left alone
