"""The props a production stack sets beside the defaults: the API's name, X-Ray tracing, the table's
deletion protection and the dispatcher's reserved concurrency; each with its default (the shared
``defaults`` stack), changed (the shared ``custom`` stack), and refused when wrong."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets
from construct_helpers import only, resources_of
from construct_stacks import CUSTOM_PROPS, FUNCTION_IDS, function_props, policy

XRAY = ["xray:PutTraceSegments", "xray:PutTelemetryRecords"]


def _xray_statements(b, fid: str) -> list:
    return [s for s in policy(b, fid) if s["Action"] == XRAY]


def test_by_default_the_table_is_protected_and_nothing_is_traced_reserved_or_named(stacks):
    b = stacks["defaults"]
    (table,) = resources_of(b.json, "AWS::DynamoDB::Table").values()
    assert table["Properties"]["DeletionProtectionEnabled"] is True
    for fid in FUNCTION_IDS:
        props = function_props(b, fid)
        assert "TracingConfig" not in props and "ReservedConcurrentExecutions" not in props, fid
        assert _xray_statements(b, fid) == [], fid
    (api,) = resources_of(b.json, "AWS::ApiGatewayV2::Api").values()
    assert api["Properties"]["Name"] == "HttpApi"  # CDK's default: the construct id


def test_the_changed_props_name_the_api_trace_every_function_and_the_stage_and_reserve_the_dispatcher(stacks):
    b = stacks["custom"]
    (api,) = resources_of(b.json, "AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["Name"] == CUSTOM_PROPS["api_name"]
    (stage,) = resources_of(b.json, "AWS::ApiGateway::Stage").values()
    assert stage["Properties"]["TracingEnabled"] is True
    for fid in FUNCTION_IDS:
        assert function_props(b, fid)["TracingConfig"] == {"Mode": "Active"}, fid
        assert _xray_statements(b, fid) == [{"Action": XRAY, "Effect": "Allow", "Resource": "*"}], fid
    assert function_props(b, "DispatcherFunction")["ReservedConcurrentExecutions"] == 10
    assert [fid for fid in FUNCTION_IDS if "ReservedConcurrentExecutions" in function_props(b, fid)] == [
        "DispatcherFunction"]
    # deletion protection as given, though the table goes with the stack (RemovalPolicy.DESTROY)
    (table,) = resources_of(b.json, "AWS::DynamoDB::Table").values()
    assert (table["DeletionPolicy"], table["Properties"]["DeletionProtectionEnabled"]) == ("Delete", True)


def test_the_x_ray_wildcard_is_acknowledged_on_each_traced_role_with_its_reason(stacks):
    b = stacks["custom"]
    for fid in FUNCTION_IDS:
        _, resource = only(b.json, "AWS::IAM::Policy", f"Timers{fid}Role")
        reasons = [s["reason"] for s in resource["Metadata"]["cdk_nag"]["rules_to_suppress"]
                   if s.get("applies_to") == ["Resource::*"]]
        assert any(r.startswith("X-Ray tracing (the tracing prop)") for r in reasons), fid


def _scheduler(**props) -> DelayedScheduler:
    stack = cdk.Stack(cdk.App(), "S")
    return DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)


def _protection(scheduler: DelayedScheduler):
    return scheduler.table.node.default_child.deletion_protection_enabled


def test_deletion_protection_follows_the_removal_policy_unless_given():
    assert _protection(_scheduler()) is True
    assert _protection(_scheduler(removal_policy=cdk.RemovalPolicy.DESTROY)) is None  # left out: off
    assert _protection(_scheduler(deletion_protection=False)) is False


def test_pass_through_tracing_leaves_the_rest_stage_untraced():
    scheduler = _scheduler(api=SchedulerApi.rest(), tracing=lambda_.Tracing.PASS_THROUGH)
    assert scheduler.api_stage.node.default_child.tracing_enabled is None
    assert scheduler.dispatcher_function.node.default_child.tracing_config.mode == "PassThrough"


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"api_name": ""}, r"^api_name: must be 1-128 characters, got '' \(0 characters\)$"),
        ({"api_name": "x" * 129}, r"^api_name: must be 1-128 characters, got 'x+' \(129 characters\)$"),
        ({"api_name": 7}, r"^api_name: must be 1-128 characters, got 7$"),
        ({"api_name": "timers", "api": SchedulerApi.none()},
         r"^api_name: there is no API to name with api=SchedulerApi.none\(\)$"),
        ({"tracing": "Active"}, r"^tracing: must be a Tracing, e.g. Tracing.ACTIVE, got 'Active'$"),
        ({"tracing": True}, r"^tracing: must be a Tracing, e.g. Tracing.ACTIVE, got True$"),
        ({"deletion_protection": "yes"}, r"^deletion_protection: must be True or False, got 'yes'$"),
        ({"dispatcher_reserved_concurrency": 1, "dispatcher_max_concurrency": 2},
         r"^dispatcher_reserved_concurrency: must be >= 2, got 1$"),
        ({"dispatcher_reserved_concurrency": 10},
         r"^dispatcher_reserved_concurrency: needs dispatcher_max_concurrency \(at most 10\): without it the delayer "
         r"queue's pollers start more dispatcher invocations than are reserved"),
        ({"dispatcher_reserved_concurrency": 5, "dispatcher_max_concurrency": 6},
         r"^dispatcher_reserved_concurrency: must be >= dispatcher_max_concurrency \(6\), got 5: "),
    ],
)
def test_a_wrong_production_prop_is_named_with_its_rule(props, message):
    with pytest.raises(ValueError, match=message):
        _scheduler(**props)


def test_tokens_are_left_for_cloudformation():
    stack = cdk.Stack(cdk.App(), "S")
    name = cdk.CfnParameter(stack, "Name").value_as_string
    reserved = cdk.CfnParameter(stack, "Reserved", type="Number").value_as_number
    DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), api_name=name,
                     dispatcher_reserved_concurrency=reserved)
