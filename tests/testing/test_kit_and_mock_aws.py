"""moto's mock_aws beside the kit: code running under the kit calls the kit's moto (``aws_endpoint_url``), an account
apart from mock_aws's, and a target that finds no such resource while mock_aws is active is told so, in its
delivery's error and in a warning. docs/testing.md's pattern (the table made once the kit runs) is
test_example_with_mock_aws.py."""

import os
import warnings
from datetime import timedelta

import boto3
import pytest
from moto import mock_aws

from cdk_delayed_scheduler.testing import local_scheduler

NOT_FOUND = ("ResourceNotFoundException: An error occurred (ResourceNotFoundException) when calling the PutItem "
             "operation: Requested resource not found")


def create_orders_table() -> None:
    boto3.client("dynamodb").create_table(
        TableName="orders", KeySchema=[{"AttributeName": "order", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "order", "AttributeType": "S"}], BillingMode="PAY_PER_REQUEST")


def record_order(event, context):
    boto3.client("dynamodb").put_item(TableName="orders", Item={"order": {"S": event["payload"]["order"]}})


@pytest.fixture
def region(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


@pytest.mark.usefixtures("region")
def test_a_target_missing_a_table_made_under_mock_aws_before_the_kit_says_where_its_calls_went():
    with mock_aws():
        create_orders_table()  # before the kit: in mock_aws's account
        with local_scheduler(target=record_order) as timers:
            assert timers.aws_endpoint_url == timers.env["AWS_ENDPOINT_URL"] == os.environ["AWS_ENDPOINT_URL"]
            timers.client.schedule(timedelta(minutes=1), {"order": "o-1"})
            with pytest.warns(UserWarning, match=r"target 'default' got ResourceNotFoundException while moto's "
                                                 r"mock_aws is active") as caught:
                timers.advance(minutes=1)

            (delivery,) = timers.deliveries()
            (warning,) = caught
            assert delivery.error == f"{NOT_FOUND} ({warning.message})"
            for said in (f"AWS_ENDPOINT_URL={timers.aws_endpoint_url}", "in a fixture that takes local_scheduler",
                         "a client made while the kit runs calls the kit's moto"):
                assert said in delivery.error
            create_orders_table()  # made once the kit runs: where the target writes
            timers.advance(seconds=30)  # the retry
            assert timers.deliveries()[-1].error is None
            assert len(boto3.client("dynamodb", endpoint_url=timers.aws_endpoint_url).scan(TableName="orders")[
                "Items"]) == 1


def test_without_mock_aws_a_missing_table_is_the_error_aws_answered_and_nothing_more():
    with local_scheduler(target=record_order) as timers, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        timers.client.schedule(timedelta(minutes=1), {"order": "o-1"})
        timers.advance(minutes=1)
        assert [d.error for d in timers.deliveries()] == [NOT_FOUND]
    assert [w for w in caught if "mock_aws" in str(w.message)] == []
