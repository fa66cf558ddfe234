"""The table's provisioned capacity (``provisioned_capacity``, ``TableCapacity``): auto scaling of the
table and of each index, reads and writes, through Application Auto Scaling's service-linked role;
fixed capacity as before; on demand without any scaling resource; every validation error.

One app per module, synthesized once (with cdk-nag as a validation plugin): auto scaled with every
value given and listing on, auto scaled with the defaults, fixed through ``TableCapacity.fixed``, fixed
through ``read_capacity`` alone, and on demand.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks
from construct_helpers import cfn_lint, nag_clean_callback, nag_violations, only, resources_of

from cdk_delayed_scheduler import DelayedScheduler, TableCapacity, targets
from cdk_delayed_scheduler._contract import contract

PROVISIONED = dynamodb.BillingMode.PROVISIONED
GROUP_INDEX, LISTING_INDEX = contract.GROUPS["indexName"], contract.LISTING["indexName"]
TARGET, POLICY = "AWS::ApplicationAutoScaling::ScalableTarget", "AWS::ApplicationAutoScaling::ScalingPolicy"
#: The role Application Auto Scaling uses for DynamoDB: service-linked, never created by the stack.
SERVICE_LINKED_ROLE = ("arn:${AWS::Partition}:iam::${AWS::AccountId}:role/aws-service-role/"
                       "dynamodb.application-autoscaling.amazonaws.com/AWSServiceRoleForApplicationAutoScaling_DynamoDBTable")
SCALED = TableCapacity.autoscaled(min_read=2, max_read=40, min_write=3, max_write=60, target_utilization_percent=55)
STACKS = {
    "Scaled": dict(billing_mode=PROVISIONED, listing=True, provisioned_capacity=SCALED),
    "ScaledDefaults": dict(billing_mode=PROVISIONED, provisioned_capacity=TableCapacity.autoscaled(max_read=10,
                                                                                                    max_write=20)),
    "Fixed": dict(billing_mode=PROVISIONED, listing=True, provisioned_capacity=TableCapacity.fixed(read=7, write=9)),
    "ReadCapacity": dict(billing_mode=PROVISIONED, read_capacity=4),
    "OnDemand": dict(listing=True),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    outdir = tmp_path_factory.mktemp("capacity-cdk-out")
    app = cdk.App(outdir=str(outdir))
    for name, props in STACKS.items():
        stack = cdk.Stack(app, name)
        DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(nag_clean_callback(stack)), **props)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()
    templates = {name: assembly.get_stack_by_name(name).template for name in STACKS}
    return {"templates": templates, "violations": nag_violations(outdir),
            "paths": [outdir / f"{name}.template.json" for name in STACKS]}


def _joined(value) -> str:
    """A ``Fn::Join`` as text, each ``Ref`` as ``${...}`` and the table's as ``<Table>``."""
    parts = value["Fn::Join"][1]
    return "".join(p if isinstance(p, str) else
                   "<Table>" if p["Ref"].startswith("TimersTable") else f"${{{p['Ref']}}}" for p in parts)


def _scaling(template: dict) -> dict[tuple[str, str], dict]:
    """(resource, dimension) -> min, max, target and role of each scalable target, ``resource`` being
    ``table`` or the index's name, with its one target tracking policy."""
    policies = {p["Properties"]["ScalingTargetId"]["Ref"]: p for p in resources_of(template, POLICY).values()}
    found = {}
    for logical_id, target in resources_of(template, TARGET).items():
        props = target["Properties"]
        resource = _joined(props["ResourceId"]).removeprefix("table/<Table>").removeprefix("/index/") or "table"
        config = policies[logical_id]["Properties"]
        assert config["PolicyType"] == "TargetTrackingScaling"
        tracking = config["TargetTrackingScalingPolicyConfiguration"]
        dimension = props["ScalableDimension"].split(":")[-1]
        assert props["ScalableDimension"] == f"dynamodb:{'table' if resource == 'table' else 'index'}:{dimension}"
        assert props["ServiceNamespace"] == "dynamodb"
        assert tracking["PredefinedMetricSpecification"]["PredefinedMetricType"] == (
            f"DynamoDB{dimension.removesuffix('CapacityUnits')}CapacityUtilization")
        found[(resource, dimension)] = {"min": props["MinCapacity"], "max": props["MaxCapacity"],
                                        "target": tracking["TargetValue"], "role": _joined(props["RoleARN"])}
    assert len(policies) == len(found)
    return found


def _table(template: dict) -> dict:
    return only(template, "AWS::DynamoDB::Table")[1]["Properties"]


def _throughput(template: dict) -> dict[str, dict]:
    """The provisioned throughput of the table and of each index, by name."""
    table = _table(template)
    found = {"table": table.get("ProvisionedThroughput")}
    found.update({index["IndexName"]: index.get("ProvisionedThroughput") for index in table["GlobalSecondaryIndexes"]})
    return found


def test_the_table_and_each_index_scale_reads_and_writes(built):
    scaling = _scaling(built["templates"]["Scaled"])
    reads = {"min": 2, "max": 40, "target": 55, "role": SERVICE_LINKED_ROLE}
    writes = {"min": 3, "max": 60, "target": 55, "role": SERVICE_LINKED_ROLE}
    assert scaling == {(resource, dimension): reads if dimension == "ReadCapacityUnits" else writes
                       for resource in ("table", GROUP_INDEX, LISTING_INDEX)
                       for dimension in ("ReadCapacityUnits", "WriteCapacityUnits")}


def test_each_is_created_with_its_minimum(built):
    throughput = _throughput(built["templates"]["Scaled"])
    assert throughput == {name: {"ReadCapacityUnits": 2, "WriteCapacityUnits": 3}
                          for name in ("table", GROUP_INDEX, LISTING_INDEX)}
    assert _table(built["templates"]["Scaled"]).get("BillingMode", "PROVISIONED") == "PROVISIONED"  # CFN's default


def test_autoscaled_defaults_are_one_unit_and_seventy_percent_without_the_listing_index(built):
    template = built["templates"]["ScaledDefaults"]
    scaling = _scaling(template)
    assert scaling == {
        (resource, dimension): {"min": 1, "max": high, "target": 70, "role": SERVICE_LINKED_ROLE}
        for resource in ("table", GROUP_INDEX)
        for dimension, high in (("ReadCapacityUnits", 10), ("WriteCapacityUnits", 20))}
    assert _throughput(template) == {name: {"ReadCapacityUnits": 1, "WriteCapacityUnits": 1}
                                     for name in ("table", GROUP_INDEX)}


@pytest.mark.parametrize(("stack", "units"), [("Fixed", (7, 9)), ("ReadCapacity", (4, 5))])
def test_fixed_capacity_has_no_scaling(built, stack, units):
    template = built["templates"][stack]
    assert resources_of(template, TARGET) == {} and resources_of(template, POLICY) == {}
    read, write = units
    assert set(map(str, _throughput(template).values())) == {str({"ReadCapacityUnits": read, "WriteCapacityUnits": write})}


def test_on_demand_has_no_capacity_and_no_scaling(built):
    template = built["templates"]["OnDemand"]
    assert not [r for r in template["Resources"].values() if r["Type"].startswith("AWS::ApplicationAutoScaling::")]
    assert _table(template)["BillingMode"] == "PAY_PER_REQUEST"
    assert set(map(str, _throughput(template).values())) == {"None"}


def test_scaling_adds_no_iam_role_or_policy(built):
    """Application Auto Scaling acts through its service-linked role (created by the service when a
    DynamoDB scalable target is first registered): the stack's IAM resources are the fixed stack's."""
    def iam(name: str) -> list[str]:
        return sorted(k for k, v in built["templates"][name]["Resources"].items() if v["Type"].startswith("AWS::IAM::"))

    assert iam("Scaled") == iam("Fixed")
    assert {s["role"] for s in _scaling(built["templates"]["Scaled"]).values()} == {SERVICE_LINKED_ROLE}


@pytest.mark.slow
def test_cdk_nag_and_cfn_lint_pass_every_capacity(built):
    assert built["violations"] == []
    findings = [(m["Rule"]["Id"], m["Message"]) for m in cfn_lint(built["paths"]) if m["Rule"]["Id"] != "W3005"]
    assert findings == []


# --- validation ------------------------------------------------------------------------------
def _scheduler(stack: cdk.Stack, **props) -> DelayedScheduler:
    """A scheduler with ``props`` in ``stack``, delivering to a queue (built, not synthesized)."""
    return DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"provisioned_capacity": SCALED},
         r"^provisioned_capacity: only allowed with billing_mode=BillingMode.PROVISIONED"),
        ({"billing_mode": dynamodb.BillingMode.PAY_PER_REQUEST, "provisioned_capacity": TableCapacity.fixed()},
         r"^provisioned_capacity: only allowed with billing_mode=BillingMode.PROVISIONED"),
        ({"billing_mode": PROVISIONED, "provisioned_capacity": SCALED, "read_capacity": 5},
         r"^provisioned_capacity: not with read_capacity/write_capacity"),
        ({"billing_mode": PROVISIONED, "provisioned_capacity": TableCapacity.fixed(), "write_capacity": 5},
         r"^provisioned_capacity: not with read_capacity/write_capacity"),
        ({"billing_mode": PROVISIONED, "provisioned_capacity": 5},
         r"^provisioned_capacity: must be TableCapacity.fixed\(read=..., write=...\) or "
         r"TableCapacity.autoscaled\(max_read=..., max_write=...\), got 5$"),
        ({"billing_mode": PROVISIONED, "provisioned_capacity": {"max_read": 10}},
         r"^provisioned_capacity: must be TableCapacity.fixed.*, got a dict$"),
    ],
)
def test_the_prop_is_checked(props, message):
    with pytest.raises(ValueError, match=message):
        _scheduler(cdk.Stack(cdk.App(), "S"), **props)


@pytest.mark.parametrize(
    ("factory", "kwargs", "message"),
    [
        ("fixed", {"read": 0}, r"^read: must be >= 1, got 0$"),
        ("fixed", {"write": 0}, r"^write: must be >= 1, got 0$"),
        ("fixed", {"read": "5"}, r"^read: must be a number, got '5'$"),
        ("autoscaled", {"min_read": 0}, r"^min_read: must be >= 1, got 0$"),
        ("autoscaled", {"min_write": 0}, r"^min_write: must be >= 1, got 0$"),
        ("autoscaled", {"max_read": 0, "min_read": 1}, r"^max_read: must be >= 1, got 0$"),
        ("autoscaled", {"max_read": 4, "min_read": 5}, r"^max_read: must be >= min_read \(5\), got 4$"),
        ("autoscaled", {"max_write": 9, "min_write": 10}, r"^max_write: must be >= min_write \(10\), got 9$"),
        ("autoscaled", {"max_write": None}, r"^max_write: required: the most capacity units auto scaling"),
        ("autoscaled", {"target_utilization_percent": 19},
         r"^target_utilization_percent: must be between 20 and 90 percent, got 19$"),
        ("autoscaled", {"target_utilization_percent": 90.5},
         r"^target_utilization_percent: must be between 20 and 90 percent, got 90.5$"),
        ("autoscaled", {"target_utilization_percent": True}, r"^target_utilization_percent: must be a number"),
    ],
)
def test_the_factories_check_their_arguments(factory, kwargs, message):
    arguments = {"max_read": 10, "max_write": 10, **kwargs} if factory == "autoscaled" else kwargs
    with pytest.raises(ValueError, match=message):
        getattr(TableCapacity, factory)(**arguments)


def test_bounds_are_allowed_and_tokens_left_to_cloudformation():
    stack = cdk.Stack(cdk.App(), "S")
    assert TableCapacity.autoscaled(min_read=7, max_read=7, max_write=1, target_utilization_percent=20).max_read == 7
    assert TableCapacity.autoscaled(max_read=1, max_write=1, target_utilization_percent=90).min_write == 1
    low = cdk.CfnParameter(stack, "Low", type="Number").value_as_number
    high = cdk.CfnParameter(stack, "High", type="Number").value_as_number
    capacity = TableCapacity.autoscaled(min_read=low, max_read=high, min_write=9, max_write=high)
    _scheduler(stack, billing_mode=PROVISIONED, provisioned_capacity=capacity)
    with pytest.raises(ValueError, match=r"^target_utilization_percent: must be a number \(20-90\), not a token"):
        TableCapacity.autoscaled(max_read=5, max_write=5, target_utilization_percent=low)


def test_the_choice_is_built_only_by_its_factories():
    with pytest.raises(TypeError, match=r"TableCapacity is built with its factories"):
        TableCapacity(min_read=1, min_write=1)
    assert repr(TableCapacity.fixed()) == "TableCapacity.fixed()"
    assert repr(TableCapacity.fixed(write=3)) == "TableCapacity.fixed(write=3)"
    assert repr(SCALED) == ("TableCapacity.autoscaled(min_read=2, max_read=40, min_write=3, max_write=60, "
                            "target_utilization_percent=55)")
