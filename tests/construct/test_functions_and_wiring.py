"""The four functions (runtime, memory, environment, logging, roles), their least-privilege grants,
the triggers that wire them (stream, queue, every-minute rule), and the full resource inventory."""

from __future__ import annotations

import collections
import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk.assertions import Match, Template

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler._runtime_asset import event_filters
from construct_helpers import only, resources_of
from construct_stacks import (CUSTOM_PROPS, FUNCTION_IDS, Built, actions_of, callback, environment, function_props,
                              logical_id, policy, seconds_text)
from prop_stacks import build


NAMES = contract.ENV
#: Each function's id -> its memory prop's function name (``api`` -> ``api_memory_size``).
MODULES = {"ApiFunction": "api", "SweeperFunction": "sweeper", "EnqueuerFunction": "enqueuer",
           "DispatcherFunction": "dispatcher"}
#: Lambda's log settings for each runtime log level: (format, system level, application level).
LOGGING = {"DEBUG": ("JSON", "INFO", "DEBUG"), "INFO": ("JSON", "INFO", "INFO"), "WARNING": ("JSON", "WARN", "INFO")}


def _logging(props: dict) -> tuple:
    logging = props["LoggingConfig"]
    return logging["LogFormat"], logging["SystemLogLevel"], logging["ApplicationLogLevel"]


def test_functions_defaults(stacks):
    b = stacks["defaults"]
    handlers = {}
    for fid in FUNCTION_IDS:
        props = function_props(b, fid)
        assert props["Runtime"] == "python3.13"  # the pinned default
        assert props["Architectures"] == ["arm64"]
        assert props["MemorySize"] == contract.DEFAULT_MEMORY_SIZES_MIB[MODULES[fid]]
        handlers[fid] = props["Handler"]
        env = props["Environment"]["Variables"]
        # one name per concept, the same set on every function; MAX_LATENESS_SECONDS, OUTCOMES and FLOW_QUEUE_URL
        # only when max_lateness and outcomes are given and a target has flow_control
        assert set(env) == set(NAMES.names()) - {NAMES.max_lateness_seconds, NAMES.outcomes, NAMES.flow_queue_url}
        assert (env[NAMES.shard_count], env[NAMES.delay_window_seconds], env[NAMES.history_retention_seconds],
                env[NAMES.max_receive_count], env[NAMES.dispatcher_timeout_seconds]) == tuple(
            str(bounds.default) for bounds in (contract.SHARD_COUNT, contract.DELAY_WINDOW_SECONDS,
                                               contract.HISTORY_RETENTION_SECONDS, contract.MAX_RECEIVE_COUNT,
                                               contract.DISPATCHER_TIMEOUT_SECONDS))
        assert (env[NAMES.metrics_namespace], env[NAMES.log_level], env[NAMES.listing]) == (
            contract.DEFAULT_METRICS_NAMESPACE, contract.DEFAULT_LOG_LEVEL, "false")
        assert env[NAMES.table_name] == {"Ref": logical_id(b, b.scheduler.table)}
        assert env[NAMES.delayer_queue_url] == {"Ref": logical_id(b, b.scheduler.delayer_queue)}
        assert env[NAMES.dead_letter_queue_url] == {"Ref": logical_id(b, b.scheduler.dead_letter_queue)}
        # quiet: JSON logs, so Lambda drops its START/END/REPORT lines (system level WARN); the
        # application level lets the EMF metric lines (no level: INFO to Lambda) through
        logging = props["LoggingConfig"]
        assert _logging(props) == LOGGING[contract.DEFAULT_LOG_LEVEL] == ("JSON", "WARN", "INFO")
        # its own role and its own log group, with retention
        role_id = props["Role"]["Fn::GetAtt"][0]
        assert role_id.startswith(f"Timers{fid}Role")
        log_group_id = logging["LogGroup"]["Ref"]
        assert log_group_id.startswith(f"Timers{fid}Logs")
        assert b.json["Resources"][log_group_id]["Properties"]["RetentionInDays"] == 30
        role = b.json["Resources"][role_id]["Properties"]
        assert "ManagedPolicyArns" not in role
        assert role["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {"Service": "lambda.amazonaws.com"}
    assert handlers == {fid: f"scheduler_runtime.handlers.{module}.handler" for fid, module in (
        ("ApiFunction", "api"), ("SweeperFunction", "sweeper"), ("EnqueuerFunction", "enqueuer"),
        ("DispatcherFunction", "dispatcher"))}
    assert not [k for k in b.json["Resources"] if "FastTrack" in k]
    roles = {only(b.json, "AWS::Lambda::Function", f"Timers{fid}")[1]["Properties"]["Role"]["Fn::GetAtt"][0]
             for fid in FUNCTION_IDS}
    assert len(roles) == 4
    assert {fid: function_props(b, fid)["Timeout"] for fid in FUNCTION_IDS} == {
        "ApiFunction": contract.API_FUNCTION_TIMEOUT_SECONDS, "SweeperFunction": 60, "EnqueuerFunction": 60,
        "DispatcherFunction": contract.DISPATCHER_TIMEOUT_SECONDS.default}
    assert len(set(json.dumps(function_props(b, fid)["Code"]) for fid in FUNCTION_IDS)) == 1  # one asset


def test_the_environment_carries_the_props_in_seconds_and_the_log_level_sets_lambdas_logging(stacks):
    """Durations reach the runtime as whole seconds (``hours(2)`` as ``"7200"``), the rest as text;
    ``log_level`` sets both the runtime's level and Lambda's own log filtering."""
    b, p = stacks["custom"], CUSTOM_PROPS
    for fid in FUNCTION_IDS:
        props = function_props(b, fid)
        assert props["Architectures"] == [p["architecture"].name]
        assert props["MemorySize"] == p[f"{MODULES[fid]}_memory_size"]
        assert {name: environment(b, fid)[name] for name in (
            NAMES.shard_count, NAMES.delay_window_seconds, NAMES.history_retention_seconds,
            NAMES.dispatcher_timeout_seconds, NAMES.max_receive_count, NAMES.metrics_namespace, NAMES.log_level)} == {
            NAMES.shard_count: str(p["shard_count"]), NAMES.delay_window_seconds: seconds_text(p["delay_window"]),
            NAMES.history_retention_seconds: seconds_text(p["history_retention"]),
            NAMES.dispatcher_timeout_seconds: seconds_text(p["dispatcher_timeout"]),
            NAMES.max_receive_count: str(p["max_receive_count"]), NAMES.metrics_namespace: p["metrics_namespace"],
            NAMES.log_level: "DEBUG"}
        assert _logging(props) == LOGGING["DEBUG"]
    assert function_props(b, "DispatcherFunction")["Timeout"] == p["dispatcher_timeout"].to_seconds()
    # INFO: the full trail, Lambda's platform lines included
    assert _logging(function_props(stacks["http_cognito"], "ApiFunction")) == LOGGING["INFO"]


def test_the_runtime_is_pinned_and_a_prop(stacks, monkeypatch):
    """An aws-cdk-lib that offers a newer Python does not move the functions; the ``runtime`` prop
    does. (The newer release is simulated by a ``PYTHON_3_99`` attribute on ``lambda.Runtime`` that
    names an existing runtime object: a new ``Runtime`` would join aws-cdk-lib's list for the whole
    test session, and cdk-nag's L1 rule reads that list.)"""
    from cdk_delayed_scheduler import _functions

    monkeypatch.setattr(lambda_.Runtime, "PYTHON_3_99", lambda_.Runtime.PYTHON_3_12, raising=False)
    assert _functions.newest_python_runtime().name == "python3.12"  # what "the newest" would now pick
    stack = cdk.Stack(cdk.App(), "Upgraded")
    upgraded = Built(stack, DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback(stack))))
    assert {function_props(upgraded, fid)["Runtime"] for fid in FUNCTION_IDS} == {"python3.13"}
    assert upgraded.scheduler.runtime.name == "python3.13"
    assert {function_props(stacks["custom"], fid)["Runtime"] for fid in FUNCTION_IDS} == {"python3.12"}


def test_each_role_has_exactly_what_its_handler_calls(stacks):
    b = stacks["defaults"]
    table = {"Fn::GetAtt": [logical_id(b, b.scheduler.table), "Arn"]}
    delayer = {"Fn::GetAtt": [logical_id(b, b.scheduler.delayer_queue), "Arn"]}
    dlq = {"Fn::GetAtt": [logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}
    stream_read = {"dynamodb:ListStreams", "dynamodb:DescribeStream", "dynamodb:GetRecords",
                   "dynamodb:GetShardIterator"}
    logs_write = {"logs:CreateLogStream", "logs:PutLogEvents"}
    group_index = {"Fn::Join": ["", [table, f"/index/{b.scheduler.group_index_name}"]]}
    expected = {
        "ApiFunction": {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                        "dynamodb:Query", "dynamodb:BatchGetItem", "sqs:SendMessage"},
        "SweeperFunction": {"dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:UpdateItem", "sqs:SendMessage",
                            "sqs:GetQueueAttributes",
                            "sqs:GetQueueUrl"},
        "EnqueuerFunction": {"dynamodb:BatchWriteItem", "sqs:SendMessage", "sqs:GetQueueAttributes",
                             "sqs:GetQueueUrl"} | stream_read,
        "DispatcherFunction": {"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem",
                               "dynamodb:Query", "sqs:SendMessage", "sqs:ReceiveMessage",
                               "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage",
                               "sqs:GetQueueAttributes", "lambda:InvokeFunction"},
    }
    for fid, actions in expected.items():
        statements = policy(b, fid)
        assert actions_of(statements) == actions | logs_write, fid
        for statement in statements:
            assert statement["Effect"] == "Allow"
            if statement["Resource"] == "*":
                # the one place AWS requires it: ListStreams has no resource-level permissions
                assert statement["Action"] == "dynamodb:ListStreams", (fid, statement)
            if any(a.startswith("dynamodb:") and a != "dynamodb:ListStreams" and "Stream" not in a
                   and a not in ("dynamodb:GetRecords", "dynamodb:GetShardIterator")
                   for a in actions_of([statement])):
                # the table alone; the group index by name, for Query alone (no index/* wildcard)
                assert statement["Resource"] in (table, group_index), (fid, statement)
                if statement["Resource"] == group_index:
                    assert statement["Action"] == "dynamodb:Query" and fid in ("ApiFunction", "DispatcherFunction")
    # the delayer and DLQ sends are scoped to exactly those queues
    assert [s for s in policy(b, "ApiFunction") if s["Action"] == "sqs:SendMessage"] == [
        {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": delayer}]  # short timers, straight in
    enq = policy(b, "EnqueuerFunction")
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": delayer} in enq
    disp = policy(b, "DispatcherFunction")
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": delayer} in disp
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": dlq} in disp


def test_customer_managed_key_is_granted_to_table_and_queue_users(stacks):
    b = stacks["custom"]
    key = {"Fn::GetAtt": [logical_id(b, b.extra["key"]), "Arn"]}
    for fid in FUNCTION_IDS:
        kms_actions = actions_of([s for s in policy(b, fid) if s.get("Resource") == key])
        assert {"kms:Decrypt"} <= kms_actions, fid
    # the api function sends to the encrypted delayer queue: the key's producer actions
    api_kms = actions_of([s for s in policy(b, "ApiFunction") if s.get("Resource") == key])
    assert api_kms == {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"}


def test_stream_mappings(stacks):
    filters = event_filters()
    for b, batch, retries in ((stacks["defaults"], 100, 10), (stacks["custom"], 50, 4)):
        dlq = {"Fn::GetAtt": [logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}
        stream = {"Fn::GetAtt": [logical_id(b, b.scheduler.table), "StreamArn"]}
        (props,) = [m["Properties"] for m in resources_of(b.json, "AWS::Lambda::EventSourceMapping").values()
                    if m["Properties"]["EventSourceArn"] == stream]  # one stream mapping: the enqueuer's
        assert props["FunctionName"]["Ref"].startswith("TimersEnqueuerFunction")
        assert props["StartingPosition"] == "TRIM_HORIZON"
        assert props["BatchSize"] == batch
        assert props["MaximumRetryAttempts"] == retries
        assert props["BisectBatchOnFunctionError"] is True
        assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
        assert props["DestinationConfig"] == {"OnFailure": {"Destination": dlq}}
        (pattern,) = props["FilterCriteria"]["Filters"]
        assert json.loads(pattern["Pattern"]) == filters["enqueuer"]  # verbatim, the shared source of truth


def test_queue_mapping(stacks):
    for b, expected in (
        (stacks["defaults"], {"BatchSize": 10, "FunctionResponseTypes": ["ReportBatchItemFailures"]}),
        (stacks["custom"], {"BatchSize": 5, "FunctionResponseTypes": ["ReportBatchItemFailures"],
                           "MaximumBatchingWindowInSeconds": 2, "ScalingConfig": {"MaximumConcurrency": 7}}),
    ):
        (props,) = [m["Properties"] for m in resources_of(b.json, "AWS::Lambda::EventSourceMapping").values()
                    if "Timers" + "DispatcherFunction" in m["Properties"]["FunctionName"]["Ref"]]
        assert props["EventSourceArn"] == {"Fn::GetAtt": [logical_id(b, b.scheduler.delayer_queue), "Arn"]}
        assert {k: props[k] for k in expected} == expected
        if b is stacks["defaults"]:
            assert "ScalingConfig" not in props and "MaximumBatchingWindowInSeconds" not in props


def test_sweep_rule(stacks):
    b = stacks["defaults"]
    sweeper = only(b.json, "AWS::Lambda::Function", "TimersSweeperFunction")[0]
    b.template.has_resource_properties("AWS::Events::Rule", {
        "ScheduleExpression": "rate(1 minute)",
        "State": "ENABLED",
        "Targets": [Match.object_like({
            "Arn": {"Fn::GetAtt": [sweeper, "Arn"]},
            "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}},
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 120},
        })],
    })


def test_a_failed_sweep_is_not_retried_and_lands_in_the_dead_letter_queue(stacks):
    b = stacks["defaults"]
    sweeper = only(b.json, "AWS::Lambda::Function", "TimersSweeperFunction")[0]
    dlq = {"Fn::GetAtt": [logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}
    b.template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "FunctionName": {"Ref": sweeper},
        "MaximumRetryAttempts": 0,
        "MaximumEventAgeInSeconds": 120,
        "DestinationConfig": {"OnFailure": {"Destination": dlq}},
    })
    assert len(resources_of(b.json, "AWS::Lambda::EventInvokeConfig")) == 2  # the sweeper's, the dispatcher's
    sends = [s for s in policy(b, "SweeperFunction") if "sqs:SendMessage" in s["Action"]]
    assert [s["Resource"] for s in sends] == [dlq]


def test_the_dispatcher_is_kept_warm_every_four_minutes_unless_turned_off(stacks):
    b = stacks["defaults"]
    dispatcher = only(b.json, "AWS::Lambda::Function", "TimersDispatcherFunction")[0]
    b.template.has_resource_properties("AWS::Events::Rule", {
        "ScheduleExpression": "rate(4 minutes)",
        "Targets": [{"Arn": {"Fn::GetAtt": [dispatcher, "Arn"]}, "Input": '{"keepWarm":true}',
                     "RetryPolicy": {"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60}, "Id": "Target0"}]})
    b.template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "FunctionName": {"Ref": dispatcher}, "MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60})
    assert b.scheduler.keep_warm_rule is not None
    stack, off = build(dispatcher_keep_warm=False)
    template = Template.from_stack(stack).to_json()
    assert [k for k in resources_of(template, "AWS::Events::Rule") if "KeepWarm" in k] == []
    assert len(resources_of(template, "AWS::Lambda::EventInvokeConfig")) == 1 and off.keep_warm_rule is None
    with pytest.raises(ValueError, match=r"^dispatcher_keep_warm: must be True or False, got 'yes'$"):
        build(dispatcher_keep_warm="yes")


def _inventory(b: Built) -> collections.Counter:
    """Resource types under the scheduler (the test's own callback, ``Callback...``, is not)."""
    return collections.Counter(r["Type"] for k, r in b.json["Resources"].items() if k.startswith("Timers"))


CORE = collections.Counter({
    "AWS::DynamoDB::Table": 1,
    "AWS::SQS::Queue": 2, "AWS::SQS::QueuePolicy": 2,
    "AWS::IAM::Role": 4, "AWS::IAM::Policy": 4,  # one role per function
    "AWS::Logs::LogGroup": 4,
    "AWS::Lambda::Function": 4,
    "AWS::Lambda::EventSourceMapping": 2,  # stream -> enqueuer, delayer queue -> dispatcher
    "AWS::Lambda::EventInvokeConfig": 2,  # the sweeper's, the dispatcher's (its keep-warm pings)
    "AWS::Events::Rule": 2,  # the sweep, the dispatcher's keep-warm
    "AWS::Lambda::Permission": 2,  # each rule may invoke its function
})


def test_every_resource_the_construct_creates_is_accounted_for(stacks):
    """The full inventory of each API choice."""
    assert _inventory(stacks["no_api"]) == CORE
    assert _inventory(stacks["defaults"]) - CORE == {
        "AWS::Logs::LogGroup": 1,  # the API's access logs
        "AWS::Lambda::Permission": 14,  # one per route
        "AWS::ApiGatewayV2::Api": 1, "AWS::ApiGatewayV2::Stage": 1, "AWS::ApiGatewayV2::Integration": 1,
        "AWS::ApiGatewayV2::Route": 14,
    }
    rest = stacks["rest"]
    assert _inventory(rest) - CORE == {
        "AWS::IAM::Role": 1,  # API Gateway's logging role
        "AWS::Logs::LogGroup": 1,
        "AWS::Lambda::Permission": 28,  # each method, for its stage and for test-invoke
        "AWS::ApiGateway::RestApi": 1, "AWS::ApiGateway::Account": 1, "AWS::ApiGateway::Deployment": 1,
        "AWS::ApiGateway::Stage": 1, "AWS::ApiGateway::Resource": 9, "AWS::ApiGateway::Method": 14,
        "AWS::ApiGateway::Model": 6, "AWS::ApiGateway::RequestValidator": 2,
        "AWS::ApiGateway::GatewayResponse": 4,
    }
    permissions = [r["Properties"] for r in resources_of(rest.json, "AWS::Lambda::Permission").values()]
    api_fn = only(rest.json, "AWS::Lambda::Function", "TimersApiFunction")[0]
    sweeper = only(rest.json, "AWS::Lambda::Function", "TimersSweeperFunction")[0]
    assert sum(p["Principal"] == "apigateway.amazonaws.com" and p["FunctionName"] == {"Fn::GetAtt": [api_fn, "Arn"]}
               for p in permissions) == 28
    assert sum(p["Principal"] == "events.amazonaws.com" and p["FunctionName"] == {"Fn::GetAtt": [sweeper, "Arn"]}
               for p in permissions) == 1
