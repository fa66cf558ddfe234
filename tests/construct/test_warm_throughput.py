"""The ``warm_throughput`` prop: the table's and each index's ``WarmThroughput`` when set (a token left to
CloudFormation), none by default, and the values it refuses, each named."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract

INDEXES = {contract.GROUPS["indexName"], contract.LISTING["indexName"]}


def build(**props) -> cdk.Stack:
    stack = cdk.Stack(cdk.App(), "S")
    DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)
    return stack


def table_of(stack: cdk.Stack) -> dict:
    (table,) = Template.from_stack(stack).find_resources("AWS::DynamoDB::Table").values()
    return table["Properties"]


@pytest.fixture(scope="module")
def warm() -> dict:
    return table_of(build(listing=True, warm_throughput=dynamodb.WarmThroughput(
        read_units_per_second=20000, write_units_per_second=40000)))


@pytest.fixture(scope="module")
def by_default() -> dict:
    return table_of(build(listing=True))


@pytest.fixture(scope="module")
def from_a_parameter() -> dict:
    stack = cdk.Stack(cdk.App(), "S")
    units = cdk.CfnParameter(stack, "WriteUnits", type="Number")
    DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")),
                     warm_throughput=dynamodb.WarmThroughput(write_units_per_second=units.value_as_number))
    return table_of(stack)


def test_the_table_and_each_index_are_pre_warmed_with_the_values_given(warm):
    expected = {"ReadUnitsPerSecond": 20000, "WriteUnitsPerSecond": 40000}
    assert warm["WarmThroughput"] == expected
    indexes = {index["IndexName"]: index for index in warm["GlobalSecondaryIndexes"]}
    assert set(indexes) == INDEXES
    assert {name: index.get("WarmThroughput") for name, index in indexes.items()} == dict.fromkeys(INDEXES, expected)


def test_without_the_prop_no_warm_throughput_is_rendered(by_default):
    assert "WarmThroughput" not in by_default
    assert len(by_default["GlobalSecondaryIndexes"]) == len(INDEXES)
    assert not [index for index in by_default["GlobalSecondaryIndexes"] if "WarmThroughput" in index]


def test_a_token_is_left_to_cloudformation_and_a_rate_not_given_is_left_out(from_a_parameter):
    assert from_a_parameter["WarmThroughput"] == {"WriteUnitsPerSecond": {"Ref": "WriteUnits"}}
    (group_index,) = from_a_parameter["GlobalSecondaryIndexes"]
    assert group_index["WarmThroughput"] == {"WriteUnitsPerSecond": {"Ref": "WriteUnits"}}


@pytest.mark.parametrize(("value", "message"), [
    (dynamodb.WarmThroughput(write_units_per_second=0),
     r"^warm_throughput\.write_units_per_second: must be a positive whole number of write units a second, got 0$"),
    (dynamodb.WarmThroughput(write_units_per_second=40000.5),
     r"^warm_throughput\.write_units_per_second: must be a positive whole number of write units a second, "
     r"got 40000\.5$"),
    (dynamodb.WarmThroughput(read_units_per_second=-12000, write_units_per_second=4000),
     r"^warm_throughput\.read_units_per_second: must be a positive whole number of read units a second, "
     r"got -12000$"),
    (dynamodb.WarmThroughput(read_units_per_second=0.5),
     r"^warm_throughput\.read_units_per_second: must be a positive whole number of read units a second, got 0\.5$"),
    (dynamodb.WarmThroughput(),
     r"^warm_throughput: give read_units_per_second, write_units_per_second or both, "
     r"e\.g\. WarmThroughput\(write_units_per_second=40000\)$"),
    ({"write_units_per_second": 40000},
     r"^warm_throughput: must be a WarmThroughput, e\.g\. WarmThroughput\(write_units_per_second=40000\), "
     r"got a dict$"),
    (40000, r"^warm_throughput: must be a WarmThroughput, e\.g\. WarmThroughput\(write_units_per_second=40000\), "
            r"got 40000$"),
])
def test_a_bad_warm_throughput_is_refused_naming_the_prop_and_the_rule(value, message):
    with pytest.raises(ValueError, match=message):
        build(warm_throughput=value)
