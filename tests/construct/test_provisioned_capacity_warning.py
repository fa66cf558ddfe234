"""A provisioned table never throttles silently: ``BillingMode.PROVISIONED`` with a read or write
capacity left to its default (a fixed 5 units, as aws-cdk-lib's ``Table``) synthesizes that capacity
with a warning that names the units, what they carry and ``provisioned_capacity``; a stated capacity,
an on-demand table and an acknowledged warning synthesize without it.

One app for the module, synthesized once; the warnings are read from the synthesized stacks.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import assertions
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from construct_helpers import only, resources_of

from cdk_delayed_scheduler import DelayedScheduler, TableCapacity, targets

PROVISIONED = dynamodb.BillingMode.PROVISIONED
STATE_IT = ("State it with provisioned_capacity=TableCapacity.autoscaled(max_read=..., max_write=...), or "
            "TableCapacity.fixed(read=..., write=...) for a fixed capacity, to have this warning go. "
            f"[ack: {TableCapacity.DEFAULTED_WARNING}]")
BOTH_DEFAULTED = ("billing_mode=BillingMode.PROVISIONED with no read or write capacity stated: the table and each "
                  "index get a fixed 5 read and 5 write units and no auto scaling; 5 write units take about 2.5 short "
                  "timers a second (each writes the table 2 times), and creates and deliveries beyond that are "
                  f"throttled. {STATE_IT}")
STACKS = {
    "Alone": dict(billing_mode=PROVISIONED),
    "FixedWithoutUnits": dict(billing_mode=PROVISIONED, provisioned_capacity=TableCapacity.fixed()),
    "ReadsOnly": dict(billing_mode=PROVISIONED, read_capacity=50),
    "WritesOnly": dict(billing_mode=PROVISIONED, provisioned_capacity=TableCapacity.fixed(write=40)),
    "BothUnits": dict(billing_mode=PROVISIONED, read_capacity=5, write_capacity=5),
    "Autoscaled": dict(billing_mode=PROVISIONED, provisioned_capacity=TableCapacity.autoscaled(max_read=9,
                                                                                                max_write=9)),
    "OnDemand": dict(),
    "Acknowledged": dict(billing_mode=PROVISIONED),
}


@pytest.fixture(scope="module")
def stacks(tmp_path_factory) -> dict[str, cdk.Stack]:
    app = cdk.App(outdir=str(tmp_path_factory.mktemp("capacity-warning-cdk-out")))
    built = {}
    for name, props in STACKS.items():
        stack = cdk.Stack(app, name)
        scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)
        if name == "Acknowledged":
            cdk.Annotations.of(scheduler).acknowledge_warning(TableCapacity.DEFAULTED_WARNING, "5/5 is what we want")
        built[name] = stack
    app.synth()
    return built


def _warnings(stack: cdk.Stack) -> list[str]:
    """The text of every warning of ``stack``, each once (a synthesized stack lists it on its construct)."""
    found = assertions.Annotations.from_stack(stack).find_warning("*", assertions.Match.any_value())
    return [entry.entry.data for entry in found]


def _capacities(stack: cdk.Stack) -> set[tuple[int, int]]:
    """(read, write) units of the table and of each index."""
    table = only(assertions.Template.from_stack(stack).to_json(), "AWS::DynamoDB::Table")[1]["Properties"]
    throughputs = [table["ProvisionedThroughput"],
                   *(index["ProvisionedThroughput"] for index in table["GlobalSecondaryIndexes"])]
    return {(t["ReadCapacityUnits"], t["WriteCapacityUnits"]) for t in throughputs}


@pytest.mark.parametrize("name", ["Alone", "FixedWithoutUnits"])
def test_a_provisioned_table_without_stated_units_gets_5_and_5_and_a_warning_naming_provisioned_capacity(stacks, name):
    assert _warnings(stacks[name]) == [BOTH_DEFAULTED]
    assert _capacities(stacks[name]) == {(5, 5)}
    template = assertions.Template.from_stack(stacks[name]).to_json()
    assert resources_of(template, "AWS::ApplicationAutoScaling::ScalableTarget") == {}


def test_stated_reads_leave_the_warning_on_the_defaulted_writes(stacks):
    assert _warnings(stacks["ReadsOnly"]) == [
        "billing_mode=BillingMode.PROVISIONED with no write capacity stated: the table and each index get a fixed "
        "5 write units and no auto scaling; 5 write units take about 2.5 short timers a second (each writes the "
        f"table 2 times), and creates and deliveries beyond that are throttled. {STATE_IT}"]
    assert _capacities(stacks["ReadsOnly"]) == {(50, 5)}


def test_stated_writes_leave_the_warning_on_the_defaulted_reads(stacks):
    assert _warnings(stacks["WritesOnly"]) == [
        "billing_mode=BillingMode.PROVISIONED with no read capacity stated: the table and each index get a fixed "
        f"5 read units and no auto scaling; reads beyond them are throttled. {STATE_IT}"]
    assert _capacities(stacks["WritesOnly"]) == {(5, 40)}


@pytest.mark.parametrize("name", ["BothUnits", "Autoscaled", "OnDemand"])
def test_a_stated_capacity_or_an_on_demand_table_synthesizes_without_a_warning(stacks, name):
    assert _warnings(stacks[name]) == []


def test_an_acknowledged_warning_is_not_reported(stacks):
    assert _warnings(stacks["Acknowledged"]) == []
    assert _capacities(stacks["Acknowledged"]) == {(5, 5)}
    assert TableCapacity.DEFAULTED_WARNING == "cdk-delayed-scheduler:provisionedCapacityDefaulted"
