"""Template assertions for every resource and prop of DelayedScheduler.

One app per module: a stack with every default (the HTTP API), a stack with every prop changed
(the REST API), and one stack per other API choice.
"""

from __future__ import annotations

import collections
import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match, Template

from cdk_delayed_scheduler import ApiAuthorization, DelayedScheduler, LogLevel, SchedulerApi, targets
from cdk_delayed_scheduler._runtime_asset import event_filters

from construct_helpers import only, resources_of

ENV = cdk.Environment(account="123456789012", region="eu-west-1")
FUNCTION_IDS = ("ApiFunction", "SweeperFunction", "EnqueuerFunction", "DispatcherFunction")
MEMORY = {"ApiFunction": 256, "SweeperFunction": 256, "EnqueuerFunction": 128, "DispatcherFunction": 128}


def _callback(stack: cdk.Stack, id: str = "Callback") -> lambda_.Function:
    return lambda_.Function(stack, id, runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"))


class Built:
    def __init__(self, stack: cdk.Stack, scheduler: DelayedScheduler, **extra) -> None:
        self.stack, self.scheduler = stack, scheduler
        self.extra = extra
        self.template: Template | None = None
        self.json: dict = {}


def _simple(app: cdk.App, name: str, api: SchedulerApi | None, grant: bool = False) -> Built:
    stack = cdk.Stack(app, name, env=ENV)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(_callback(stack)), api=api)
    extra = {}
    if grant:
        extra["client"] = iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal())
        scheduler.grant_schedule(extra["client"])
        extra["invoker"] = iam.Role(stack, "Invoker", assumed_by=iam.AccountRootPrincipal())
        scheduler.grant_invoke(extra["invoker"])
    return Built(stack, scheduler, **extra)


@pytest.fixture(scope="module")
def built():
    app = cdk.App()
    # --- every default: the HTTP API, IAM authorization ----------------------------------
    stack = cdk.Stack(app, "Defaults", env=ENV)
    callback = _callback(stack)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback))
    client = iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal())
    scheduler.grant_schedule(client)
    invoker = iam.Role(stack, "Invoker", assumed_by=iam.AccountRootPrincipal())
    scheduler.grant_invoke(invoker)
    defaults = Built(stack, scheduler, callback=callback, client=client, invoker=invoker)

    # --- every prop changed, with the REST API and Cognito ----------------------------------
    stack2 = cdk.Stack(app, "Custom", env=ENV)
    key = kms.Key(stack2, "Key", enable_key_rotation=True)
    jobs_key = kms.Key(stack2, "JobsKey", enable_key_rotation=True)
    jobs = sqs.Queue(stack2, "Jobs", encryption=sqs.QueueEncryption.KMS, encryption_master_key=jobs_key,
                     enforce_ssl=True)
    ordered = sqs.Queue(stack2, "Ordered", fifo=True, enforce_ssl=True)
    pool = cognito.UserPool(stack2, "Pool")
    callback2 = _callback(stack2, "Other")
    custom = DelayedScheduler(
        stack2, "Timers",
        target=targets.SqsSendMessage(jobs),
        extra_targets={"ordered": targets.SqsSendMessage(ordered, message_group_id="g-1")},
        api=SchedulerApi.rest(authorization=ApiAuthorization.cognito(pool, scopes=["timers/write"]),
                              throttling_rate_limit=10, throttling_burst_limit=20, stage_name="live",
                              cloud_watch_role=False, access_logging=False),
        shard_count=32,
        delay_window=cdk.Duration.seconds(600),
        history_retention=cdk.Duration.hours(2),
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        read_capacity=7,
        write_capacity=9,
        encryption_key=key,
        point_in_time_recovery=False,
        removal_policy=cdk.RemovalPolicy.DESTROY,
        log_level=LogLevel.of("debug"),
        log_retention=logs.RetentionDays.ONE_WEEK,
        runtime=lambda_.Runtime.PYTHON_3_12,
        architecture=lambda_.Architecture.X86_64,
        api_memory_size=512,
        sweeper_memory_size=1024,
        enqueuer_memory_size=384,
        dispatcher_memory_size=192,
        dispatcher_timeout=cdk.Duration.seconds(120),
        dispatcher_batch_size=5,
        dispatcher_max_batching_window=cdk.Duration.seconds(2),
        dispatcher_max_concurrency=7,
        max_receive_count=3,
        stream_batch_size=50,
        stream_retry_attempts=4,
        metrics_namespace="Acme/Timers",
    )
    custom.add_target("callback", targets.LambdaInvoke(callback2))
    changed = Built(stack2, custom, key=key, jobs=jobs, jobs_key=jobs_key, ordered=ordered, pool=pool,
                    callback=callback2)

    # --- the HTTP API with Cognito (JWT), no access logs ----------------------------------------
    stack3 = cdk.Stack(app, "HttpCognito", env=ENV)
    pool3 = cognito.UserPool(stack3, "Pool")
    app_client = pool3.add_client("App")
    http_cognito = Built(stack3, DelayedScheduler(
        stack3, "Timers", target=targets.LambdaInvoke(_callback(stack3)), log_level=LogLevel.INFO,
        api=SchedulerApi.http(authorization=ApiAuthorization.cognito(pool3, scopes=["timers/write"],
                                                                     user_pool_clients=[app_client]),
                              throttling_rate_limit=10, throttling_burst_limit=20, access_logging=False)),
        pool=pool3, app_client=app_client)

    variants = {
        "rest": _simple(app, "Rest", SchedulerApi.rest(), grant=True),
        "api_key": _simple(app, "ApiKey", SchedulerApi.rest(authorization=ApiAuthorization.api_key())),
        "none": _simple(app, "Open", SchedulerApi.rest(authorization=ApiAuthorization.none())),
        "http_none": _simple(app, "HttpOpen", SchedulerApi.http(authorization=ApiAuthorization.none())),
        "no_api": _simple(app, "NoApi", SchedulerApi.none(), grant=True),
    }
    everything = {"defaults": defaults, "custom": changed, "http_cognito": http_cognito, **variants}
    for b in everything.values():
        b.template = Template.from_stack(b.stack)
        b.json = b.template.to_json()
    return everything


def _function(b: Built, fid: str) -> dict:
    return only(b.json, "AWS::Lambda::Function", f"Timers{fid}")[1]["Properties"]


def _policy(b: Built, fid: str) -> list:
    return only(b.json, "AWS::IAM::Policy", f"Timers{fid}Role")[1]["Properties"]["PolicyDocument"]["Statement"]


def _actions(statements: list) -> set:
    found = set()
    for s in statements:
        found.update([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    return found


def _logical_id(b: Built, construct) -> str:
    return b.stack.get_logical_id(construct.node.default_child)


# --- table -----------------------------------------------------------------------------
def test_table_defaults(built):
    b = built["defaults"]
    b.template.resource_count_is("AWS::DynamoDB::Table", 1)
    b.template.has_resource("AWS::DynamoDB::Table", {
        "DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain",
        "Properties": {
            "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                     {"AttributeName": "sk", "AttributeType": "S"}],
            "BillingMode": "PAY_PER_REQUEST",
            "StreamSpecification": {"StreamViewType": "NEW_AND_OLD_IMAGES"},
            "TimeToLiveSpecification": {"AttributeName": "expiresAt", "Enabled": True},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
            "SSESpecification": {"SSEEnabled": False},  # AWS owned key
        },
    })


def test_table_custom(built):
    b = built["custom"]
    key_id = _logical_id(b, b.extra["key"])
    b.template.has_resource("AWS::DynamoDB::Table", {
        "DeletionPolicy": "Delete",
        "Properties": {
            "ProvisionedThroughput": {"ReadCapacityUnits": 7, "WriteCapacityUnits": 9},
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": False},
            "SSESpecification": {"SSEEnabled": True, "SSEType": "KMS",
                                 "KMSMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]}},
        },
    })
    assert "BillingMode" not in only(b.json, "AWS::DynamoDB::Table")[1]["Properties"]


# --- queues ------------------------------------------------------------------------------
def test_queues_defaults(built):
    b = built["defaults"]
    s = b.scheduler
    dlq_id, delayer_id = _logical_id(b, s.dead_letter_queue), _logical_id(b, s.delayer_queue)
    dlq = b.json["Resources"][dlq_id]["Properties"]
    delayer = b.json["Resources"][delayer_id]["Properties"]
    assert dlq == {"MessageRetentionPeriod": 14 * 86400, "SqsManagedSseEnabled": True}
    assert delayer["SqsManagedSseEnabled"] is True
    assert delayer["VisibilityTimeout"] == 6 * _function(b, "DispatcherFunction")["Timeout"] == 360
    assert delayer["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}, "maxReceiveCount": 5}
    assert "FifoQueue" not in delayer  # standard: per-message delays
    # TLS enforced on both queues
    for queue_id in (dlq_id, delayer_id):
        b.template.has_resource_properties("AWS::SQS::QueuePolicy", {
            "Queues": [{"Ref": queue_id}],
            "PolicyDocument": {"Statement": Match.array_with([Match.object_like({
                "Effect": "Deny", "Action": "sqs:*",
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            })])},
        })


def test_queues_custom(built):
    b = built["custom"]
    key_arn = {"Fn::GetAtt": [_logical_id(b, b.extra["key"]), "Arn"]}
    delayer = b.json["Resources"][_logical_id(b, b.scheduler.delayer_queue)]["Properties"]
    dlq = b.json["Resources"][_logical_id(b, b.scheduler.dead_letter_queue)]["Properties"]
    assert delayer["VisibilityTimeout"] == 720
    assert delayer["RedrivePolicy"]["maxReceiveCount"] == 3
    assert delayer["KmsMasterKeyId"] == dlq["KmsMasterKeyId"] == key_arn
    # EventBridge may encrypt failed sweep events into the dead-letter queue
    b.template.has_resource_properties("AWS::KMS::Key", {"KeyPolicy": {"Statement": Match.array_with([
        Match.object_like({"Principal": {"Service": "events.amazonaws.com"},
                           "Action": ["kms:GenerateDataKey", "kms:Decrypt"]})])}})


# --- functions ---------------------------------------------------------------------------
ENV_NAMES = {"TABLE_NAME", "DELAYER_QUEUE_URL", "DEAD_LETTER_QUEUE_URL", "TARGETS", "SHARD_COUNT",
             "DELAY_WINDOW_SECONDS", "HISTORY_RETENTION_SECONDS", "MAX_RECEIVE_COUNT", "DISPATCHER_TIMEOUT_SECONDS",
             "LISTING", "METRICS_NAMESPACE", "LOG_LEVEL"}


def test_functions_defaults(built):
    b = built["defaults"]
    handlers = {}
    for fid in FUNCTION_IDS:
        props = _function(b, fid)
        assert props["Runtime"] == "python3.14"  # the pinned default
        assert props["Architectures"] == ["arm64"]
        assert props["MemorySize"] == MEMORY[fid]
        handlers[fid] = props["Handler"]
        env = props["Environment"]["Variables"]
        assert set(env) == ENV_NAMES  # one name per concept, the same set on every function
        assert env["SHARD_COUNT"] == "16"
        assert env["DELAY_WINDOW_SECONDS"] == "870"
        assert env["HISTORY_RETENTION_SECONDS"] == "86400"
        assert env["MAX_RECEIVE_COUNT"] == "5"
        assert env["METRICS_NAMESPACE"] == "DelayedScheduler"
        assert env["LOG_LEVEL"] == "WARNING"
        assert env["LISTING"] == "false"
        assert env["TABLE_NAME"] == {"Ref": _logical_id(b, b.scheduler.table)}
        assert env["DELAYER_QUEUE_URL"] == {"Ref": _logical_id(b, b.scheduler.delayer_queue)}
        assert env["DEAD_LETTER_QUEUE_URL"] == {"Ref": _logical_id(b, b.scheduler.dead_letter_queue)}
        # quiet: JSON logs, so Lambda drops its START/END/REPORT lines (system level WARN); the
        # application level lets the EMF metric lines (no level: INFO to Lambda) through
        logging = props["LoggingConfig"]
        assert (logging["LogFormat"], logging["SystemLogLevel"], logging["ApplicationLogLevel"]) == ("JSON", "WARN", "INFO")
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
    assert {fid: _function(b, fid)["Timeout"] for fid in FUNCTION_IDS} == {
        "ApiFunction": 15, "SweeperFunction": 60, "EnqueuerFunction": 60, "DispatcherFunction": 60}
    assert len(set(json.dumps(_function(b, fid)["Code"]) for fid in FUNCTION_IDS)) == 1  # one asset


def test_functions_custom(built):
    b = built["custom"]
    memory = {"ApiFunction": 512, "SweeperFunction": 1024, "EnqueuerFunction": 384, "DispatcherFunction": 192}
    for fid in FUNCTION_IDS:
        props = _function(b, fid)
        assert props["Architectures"] == ["x86_64"]
        assert props["MemorySize"] == memory[fid]
        env = props["Environment"]["Variables"]
        assert (env["SHARD_COUNT"], env["DELAY_WINDOW_SECONDS"], env["HISTORY_RETENTION_SECONDS"]) == ("32", "600", "7200")
        assert (env["MAX_RECEIVE_COUNT"], env["METRICS_NAMESPACE"], env["LOG_LEVEL"]) == ("3", "Acme/Timers", "DEBUG")
        logging = props["LoggingConfig"]
        assert (logging["LogFormat"], logging["SystemLogLevel"], logging["ApplicationLogLevel"]) == ("JSON", "INFO", "DEBUG")
        assert b.json["Resources"][logging["LogGroup"]["Ref"]]["Properties"]["RetentionInDays"] == 7
    assert _function(b, "DispatcherFunction")["Timeout"] == 120
    # INFO: the full trail, Lambda's platform lines included
    logging = _function(built["http_cognito"], "ApiFunction")["LoggingConfig"]
    assert (logging["SystemLogLevel"], logging["ApplicationLogLevel"]) == ("INFO", "INFO")


def test_the_runtime_is_pinned_and_a_prop(built, monkeypatch):
    """An aws-cdk-lib that offers a newer Python does not move the functions; the ``runtime`` prop
    does. (The newer release is simulated by a ``PYTHON_3_99`` attribute on ``lambda.Runtime`` that
    names an existing runtime object: a new ``Runtime`` would join aws-cdk-lib's list for the whole
    test session, and cdk-nag's L1 rule reads that list.)"""
    from cdk_delayed_scheduler import _functions

    monkeypatch.setattr(lambda_.Runtime, "PYTHON_3_99", lambda_.Runtime.PYTHON_3_12, raising=False)
    assert _functions.newest_python_runtime().name == "python3.12"  # what "the newest" would now pick
    stack = cdk.Stack(cdk.App(), "Upgraded")
    upgraded = Built(stack, DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(_callback(stack))))
    upgraded.json = Template.from_stack(stack).to_json()
    assert {_function(upgraded, fid)["Runtime"] for fid in FUNCTION_IDS} == {"python3.14"}
    assert upgraded.scheduler.runtime.name == "python3.14"
    assert {_function(built["custom"], fid)["Runtime"] for fid in FUNCTION_IDS} == {"python3.12"}


def _rendered_targets(b: Built) -> dict:
    """TARGETS with each token replaced by the logical id it points at."""
    value = _function(b, "DispatcherFunction")["Environment"]["Variables"]["TARGETS"]
    if isinstance(value, str):
        return json.loads(value)
    parts = []
    for part in value["Fn::Join"][1]:
        if isinstance(part, str):
            parts.append(part)
        elif "Ref" in part:
            parts.append(f"<Ref {part['Ref']}>")
        else:
            parts.append(f"<GetAtt {part['Fn::GetAtt'][0]}.{part['Fn::GetAtt'][1]}>")
    return json.loads("".join(parts))


def test_targets_json_is_the_same_in_every_function(built):
    for b in (built["defaults"], built["custom"]):
        values = {json.dumps(_function(b, fid)["Environment"]["Variables"]["TARGETS"]) for fid in FUNCTION_IDS}
        assert len(values) == 1


def test_lambda_target(built):
    b = built["defaults"]
    callback_id = _logical_id(b, b.extra["callback"])
    assert _rendered_targets(b) == {"default": {"type": "lambda", "functionArn": f"<GetAtt {callback_id}.Arn>"}}
    invoke = [s for s in _policy(b, "DispatcherFunction") if s["Action"] == "lambda:InvokeFunction"]
    assert invoke == [{"Action": "lambda:InvokeFunction", "Effect": "Allow",
                       "Resource": {"Fn::GetAtt": [callback_id, "Arn"]}}]
    assert b.scheduler.target_names == ["default"]


def test_sqs_targets_extra_targets_and_add_target(built):
    b = built["custom"]
    jobs, ordered = _logical_id(b, b.extra["jobs"]), _logical_id(b, b.extra["ordered"])
    other = _logical_id(b, b.extra["callback"])
    assert _rendered_targets(b) == {
        "default": {"type": "sqs", "queueUrl": f"<Ref {jobs}>", "fifo": False},
        "ordered": {"type": "sqs", "queueUrl": f"<Ref {ordered}>", "fifo": True, "messageGroupId": "g-1"},
        "callback": {"type": "lambda", "functionArn": f"<GetAtt {other}.Arn>"},
    }
    statements = _policy(b, "DispatcherFunction")
    sends = [s["Resource"] for s in statements if s["Action"] == "sqs:SendMessage"]
    assert {"Fn::GetAtt": [jobs, "Arn"]} in sends and {"Fn::GetAtt": [ordered, "Arn"]} in sends
    # the encrypted target queue's key: only what a producer needs
    jobs_key = _logical_id(b, b.extra["jobs_key"])
    assert {"Action": ["kms:GenerateDataKey", "kms:Decrypt"], "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [jobs_key, "Arn"]}} in statements
    assert b.scheduler.target_names == ["default", "ordered", "callback"]


# --- least privilege ---------------------------------------------------------------------
def test_each_role_has_exactly_what_its_handler_calls(built):
    b = built["defaults"]
    table = {"Fn::GetAtt": [_logical_id(b, b.scheduler.table), "Arn"]}
    delayer = {"Fn::GetAtt": [_logical_id(b, b.scheduler.delayer_queue), "Arn"]}
    dlq = {"Fn::GetAtt": [_logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}
    stream_read = {"dynamodb:ListStreams", "dynamodb:DescribeStream", "dynamodb:GetRecords",
                   "dynamodb:GetShardIterator"}
    logs_write = {"logs:CreateLogStream", "logs:PutLogEvents"}
    expected = {
        "ApiFunction": {"dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
                        "dynamodb:Query", "sqs:SendMessage"},
        "SweeperFunction": {"dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:UpdateItem", "sqs:SendMessage",
                            "sqs:GetQueueAttributes",
                            "sqs:GetQueueUrl"},
        "EnqueuerFunction": {"dynamodb:BatchWriteItem", "sqs:SendMessage", "sqs:GetQueueAttributes",
                             "sqs:GetQueueUrl"} | stream_read,
        "DispatcherFunction": {"dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem", "sqs:SendMessage", "sqs:ReceiveMessage",
                               "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl", "sqs:DeleteMessage",
                               "sqs:GetQueueAttributes", "lambda:InvokeFunction"},
    }
    for fid, actions in expected.items():
        statements = _policy(b, fid)
        assert _actions(statements) == actions | logs_write, fid
        for statement in statements:
            assert statement["Effect"] == "Allow"
            if statement["Resource"] == "*":
                # the one place AWS requires it: ListStreams has no resource-level permissions
                assert statement["Action"] == "dynamodb:ListStreams", (fid, statement)
            if any(a.startswith("dynamodb:") and a != "dynamodb:ListStreams" and "Stream" not in a
                   and a not in ("dynamodb:GetRecords", "dynamodb:GetShardIterator")
                   for a in _actions([statement])):
                assert statement["Resource"] == table, (fid, statement)  # the table alone, no index
    # the delayer and DLQ sends are scoped to exactly those queues
    assert [s for s in _policy(b, "ApiFunction") if s["Action"] == "sqs:SendMessage"] == [
        {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": delayer}]  # short timers, straight in
    enq = _policy(b, "EnqueuerFunction")
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": delayer} in enq
    disp = _policy(b, "DispatcherFunction")
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": delayer} in disp
    assert {"Action": "sqs:SendMessage", "Effect": "Allow", "Resource": dlq} in disp


def test_customer_managed_key_is_granted_to_table_and_queue_users(built):
    b = built["custom"]
    key = {"Fn::GetAtt": [_logical_id(b, b.extra["key"]), "Arn"]}
    for fid in FUNCTION_IDS:
        kms_actions = _actions([s for s in _policy(b, fid) if s.get("Resource") == key])
        assert {"kms:Decrypt"} <= kms_actions, fid
    # the api function sends to the encrypted delayer queue: the key's producer actions
    api_kms = _actions([s for s in _policy(b, "ApiFunction") if s.get("Resource") == key])
    assert api_kms == {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"}


# --- event sources -------------------------------------------------------------------------
def test_stream_mappings(built):
    filters = event_filters()
    for b, batch, retries in ((built["defaults"], 100, 10), (built["custom"], 50, 4)):
        dlq = {"Fn::GetAtt": [_logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}
        stream = {"Fn::GetAtt": [_logical_id(b, b.scheduler.table), "StreamArn"]}
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


def test_queue_mapping(built):
    for b, expected in (
        (built["defaults"], {"BatchSize": 10, "FunctionResponseTypes": ["ReportBatchItemFailures"]}),
        (built["custom"], {"BatchSize": 5, "FunctionResponseTypes": ["ReportBatchItemFailures"],
                           "MaximumBatchingWindowInSeconds": 2, "ScalingConfig": {"MaximumConcurrency": 7}}),
    ):
        (props,) = [m["Properties"] for m in resources_of(b.json, "AWS::Lambda::EventSourceMapping").values()
                    if "Timers" + "DispatcherFunction" in m["Properties"]["FunctionName"]["Ref"]]
        assert props["EventSourceArn"] == {"Fn::GetAtt": [_logical_id(b, b.scheduler.delayer_queue), "Arn"]}
        assert {k: props[k] for k in expected} == expected
        if b is built["defaults"]:
            assert "ScalingConfig" not in props and "MaximumBatchingWindowInSeconds" not in props


def test_sweep_rule(built):
    b = built["defaults"]
    sweeper = only(b.json, "AWS::Lambda::Function", "TimersSweeperFunction")[0]
    b.template.has_resource_properties("AWS::Events::Rule", {
        "ScheduleExpression": "rate(1 minute)",
        "State": "ENABLED",
        "Targets": [Match.object_like({
            "Arn": {"Fn::GetAtt": [sweeper, "Arn"]},
            "DeadLetterConfig": {"Arn": {"Fn::GetAtt": [_logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}},
            "RetryPolicy": {"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 120},
        })],
    })


def test_a_failed_sweep_is_not_retried_and_lands_in_the_dead_letter_queue(built):
    b = built["defaults"]
    sweeper = only(b.json, "AWS::Lambda::Function", "TimersSweeperFunction")[0]
    dlq = {"Fn::GetAtt": [_logical_id(b, b.scheduler.dead_letter_queue), "Arn"]}
    b.template.has_resource_properties("AWS::Lambda::EventInvokeConfig", {
        "FunctionName": {"Ref": sweeper},
        "MaximumRetryAttempts": 0,
        "MaximumEventAgeInSeconds": 120,
        "DestinationConfig": {"OnFailure": {"Destination": dlq}},
    })
    b.template.resource_count_is("AWS::Lambda::EventInvokeConfig", 1)
    sends = [s for s in _policy(b, "SweeperFunction") if "sqs:SendMessage" in s["Action"]]
    assert [s["Resource"] for s in sends] == [dlq]


def test_log_groups_follow_the_removal_policy(built):
    for b, policy, count in ((built["defaults"], "Retain", 5), (built["custom"], "Delete", 4)):
        groups = resources_of(b.json, "AWS::Logs::LogGroup")
        ours = {k: v for k, v in groups.items() if k.startswith("Timers")}
        assert len(ours) == count  # four functions, and the API's access logs unless turned off
        assert {v["DeletionPolicy"] for v in ours.values()} == {policy}


# --- API -------------------------------------------------------------------------------------
ROUTES = {("POST", "/schedules"), ("GET", "/schedules/{id}"), ("DELETE", "/schedules/{id}"),
          ("POST", "/schedule-batches"), ("GET", "/schedules"),
          ("PUT", "/periodic/{id}"), ("GET", "/periodic/{id}"), ("DELETE", "/periodic/{id}"), ("GET", "/periodic")}


def _invoke_statement(b: Built) -> dict:
    """``grant_invoke``: lambda:InvokeFunction on exactly the api function (no version wildcard)."""
    api_fn = only(b.json, "AWS::Lambda::Function", "TimersApiFunction")[0]
    return {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": {"Fn::GetAtt": [api_fn, "Arn"]}}


def _client_statements(b: Built, role: str = "Client") -> list:
    """The statements of the policy ``grant_schedule``/``grant_invoke`` gave the test's role."""
    return only(b.json, "AWS::IAM::Policy", f"{role}DefaultPolicy")[1]["Properties"]["PolicyDocument"]["Statement"]


def _paths(b: Built) -> dict:
    """Each AWS::ApiGateway::Resource's logical id -> its full path."""
    resources = {k: v["Properties"] for k, v in resources_of(b.json, "AWS::ApiGateway::Resource").items()}

    def path(logical_id: str) -> str:
        props = resources[logical_id]
        parent = props["ParentId"]
        prefix = path(parent["Ref"]) if "Ref" in parent else ""
        return f"{prefix}/{props['PathPart']}"

    return {k: path(k) for k in resources}


def _methods(b: Built) -> dict:
    paths = _paths(b)
    out = {}
    for props in (m["Properties"] for m in resources_of(b.json, "AWS::ApiGateway::Method").values()):
        key = (props["HttpMethod"], paths[props["ResourceId"]["Ref"]])
        assert key not in out, key
        out[key] = props
    return out


def test_rest_api_routes_iam_auth_and_validation(built):
    b = built["rest"]
    methods = _methods(b)
    assert set(methods) == ROUTES
    api_fn = only(b.json, "AWS::Lambda::Function", "TimersApiFunction")[0]
    for props in methods.values():
        assert props["AuthorizationType"] == "AWS_IAM"
        assert props["Integration"]["Type"] == "AWS_PROXY"
        assert api_fn in json.dumps(props["Integration"]["Uri"])
        assert "RequestValidatorId" in props
    post = methods[("POST", "/schedules")]
    model_id = post["RequestModels"]["application/json"]["Ref"]
    model = b.json["Resources"][model_id]["Properties"]
    assert model["ContentType"] == "application/json"
    schema = model["Schema"]
    assert schema["type"] == "object" and schema["required"] == ["payload"]
    assert set(schema["properties"]) == {"id", "dueAt", "delaySeconds", "payload", "target"}
    assert schema["additionalProperties"] is False
    validator = b.json["Resources"][post["RequestValidatorId"]["Ref"]]["Properties"]
    assert validator["ValidateRequestBody"] is True
    for verb in ("GET", "DELETE"):
        assert methods[(verb, "/schedules/{id}")]["RequestParameters"] == {"method.request.path.id": True}


def test_rest_batch_route_takes_1_to_10_objects(built):
    """POST /schedule-batches: the same function, auth and body validation as POST /schedules; its
    model is {"schedules": [...]} with 1-10 objects, as many as the api handler takes."""
    from scheduler_runtime.core.validation import MAX_BATCH_SIZE as RUNTIME_LIMIT

    b = built["rest"]
    methods = _methods(b)
    batch, single = methods[("POST", "/schedule-batches")], methods[("POST", "/schedules")]
    for key in ("AuthorizationType", "Integration", "RequestValidatorId"):
        assert batch[key] == single[key], key
    (resource_id,) = [k for k, path in _paths(b).items() if path == "/schedule-batches"]
    parent = b.json["Resources"][resource_id]["Properties"]["ParentId"]
    assert parent == {"Fn::GetAtt": [_logical_id(b, b.scheduler.api), "RootResourceId"]}
    validator = b.json["Resources"][batch["RequestValidatorId"]["Ref"]]["Properties"]
    assert validator["ValidateRequestBody"] is True
    model = b.json["Resources"][batch["RequestModels"]["application/json"]["Ref"]]["Properties"]
    assert (model["ContentType"], model["Name"]) == ("application/json", "CreateScheduleBatch")
    schema = model["Schema"]
    assert schema["$schema"] == "http://json-schema.org/draft-04/schema#"
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert schema["required"] == ["schedules"] and set(schema["properties"]) == {"schedules"}
    schedules = schema["properties"]["schedules"]
    assert (schedules["type"], schedules["minItems"], schedules["maxItems"]) == ("array", 1, RUNTIME_LIMIT)
    assert schedules["items"] == {"type": "object"}  # each item is the api handler's to judge, per item


def test_rest_batch_model_holds_the_envelope_and_leaves_items_to_the_handler(built):
    """The rendered batch model, run through a draft-4 validator (API Gateway's draft): 1-10 objects
    and nothing but "schedules" (the api handler's envelope rules); an item's own mistakes pass the
    gateway so that the handler answers them per item."""
    import jsonschema  # cfn-lint's dependency, so always installed with the test tools

    b = built["rest"]
    batch = _methods(b)[("POST", "/schedule-batches")]
    schema = b.json["Resources"][batch["RequestModels"]["application/json"]["Ref"]]["Properties"]["Schema"]
    jsonschema.Draft4Validator.check_schema(schema)
    validator = jsonschema.Draft4Validator(schema)
    item = {"delaySeconds": 5, "payload": {"n": 1}}
    ok = [{"schedules": [item]}, {"schedules": [item] * 10},
          {"schedules": [{"delaySeconds": 5}, {**item, "extra": True}, {**item, "id": "has space"}]}]
    bad = [{}, {"schedules": []}, {"schedules": [item] * 11}, {"schedules": item}, {"schedules": [item], "x": 1},
           {"schedules": [item, "not an object"]}, {"schedules": [[item]]}]
    assert [validator.is_valid(body) for body in ok] == [True] * len(ok)
    assert [validator.is_valid(body) for body in bad] == [False] * len(bad)


def test_rest_gateway_errors_keep_the_api_error_shape(built):
    b = built["rest"]
    responses = {r["Properties"]["ResponseType"]: r["Properties"]
                 for r in resources_of(b.json, "AWS::ApiGateway::GatewayResponse").values()}
    assert set(responses) == {"BAD_REQUEST_BODY", "BAD_REQUEST_PARAMETERS", "DEFAULT_4XX", "DEFAULT_5XX"}
    for kind, field in (("BAD_REQUEST_BODY", '"body"'), ("BAD_REQUEST_PARAMETERS", '"id"'), ("DEFAULT_4XX", "null")):
        template = responses[kind]["ResponseTemplates"]["application/json"]
        assert template == f'{{"message": $context.error.messageString, "field": {field}}}'
        # once API Gateway substitutes the quoted message, the body is JSON of the API's error shape
        rendered = json.loads(template.replace("$context.error.messageString", '"Invalid request body"'))
        assert set(rendered) == {"message", "field"}


def test_rest_stage_throttling_and_logging(built):
    b = built["rest"]
    b.template.has_resource_properties("AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}})
    stage = only(b.json, "AWS::ApiGateway::Stage")[1]["Properties"]
    assert stage["StageName"] == "v1"
    assert stage["AccessLogSetting"]["DestinationArn"]["Fn::GetAtt"][0].startswith("TimersApiAccessLogs")
    assert "$context.requestId" in stage["AccessLogSetting"]["Format"]
    assert stage["MethodSettings"] == [{"DataTraceEnabled": False, "HttpMethod": "*", "LoggingLevel": "ERROR",
                                        "MetricsEnabled": True, "ResourcePath": "/*",
                                        "ThrottlingBurstLimit": 200, "ThrottlingRateLimit": 100}]
    b.template.resource_count_is("AWS::ApiGateway::Account", 1)
    custom = built["custom"]
    stage = only(custom.json, "AWS::ApiGateway::Stage")[1]["Properties"]
    assert stage["StageName"] == "live"
    assert (stage["MethodSettings"][0]["ThrottlingRateLimit"], stage["MethodSettings"][0]["ThrottlingBurstLimit"]) == (10, 20)
    custom.template.resource_count_is("AWS::ApiGateway::Account", 0)
    assert "AccessLogSetting" not in stage  # access_logging=False


def test_rest_cognito_auth(built):
    b = built["custom"]
    pool = _logical_id(b, b.extra["pool"])
    authorizer = only(b.json, "AWS::ApiGateway::Authorizer")
    assert authorizer[1]["Properties"]["Type"] == "COGNITO_USER_POOLS"
    assert authorizer[1]["Properties"]["ProviderARNs"] == [{"Fn::GetAtt": [pool, "Arn"]}]
    assert set(_methods(b)) == ROUTES
    for props in _methods(b).values():
        assert props["AuthorizationType"] == "COGNITO_USER_POOLS"
        assert props["AuthorizerId"] == {"Ref": authorizer[0]}
        assert props["AuthorizationScopes"] == ["timers/write"]


def test_rest_api_key_auth(built):
    b = built["api_key"]
    assert set(_methods(b)) == ROUTES
    for props in _methods(b).values():
        assert props["AuthorizationType"] == "NONE" and props["ApiKeyRequired"] is True
    b.template.resource_count_is("AWS::ApiGateway::ApiKey", 1)
    b.template.resource_count_is("AWS::ApiGateway::UsagePlanKey", 1)
    b.template.has_resource_properties("AWS::ApiGateway::UsagePlan", {
        "Throttle": {"RateLimit": 100, "BurstLimit": 200},
        "ApiStages": [Match.object_like({"Stage": Match.any_value()})],
    })
    assert b.scheduler.api_key is not None and built["rest"].scheduler.api_key is None


def test_rest_no_auth(built):
    assert set(_methods(built["none"])) == ROUTES
    for props in _methods(built["none"]).values():
        assert props["AuthorizationType"] == "NONE" and "ApiKeyRequired" not in props


def test_rest_grant_schedule_is_execute_api_on_every_route_and_the_invoke(built):
    b = built["rest"]
    invoke, statement = _client_statements(b)
    assert invoke == _invoke_statement(b)
    assert statement["Action"] == "execute-api:Invoke"
    rendered = [json.dumps(r) for r in statement["Resource"]]
    assert len(rendered) == len(ROUTES)
    for suffix in ('/POST/schedules"', '/GET/schedules/*"', '/DELETE/schedules/*"', '/POST/schedule-batches"',
                   '/GET/schedules"', '/PUT/periodic/*"', '/GET/periodic/*"', '/DELETE/periodic/*"', '/GET/periodic"'):
        assert sum(r.endswith(suffix + "]]}") for r in rendered) == 1, (suffix, rendered)
    stage_id = only(b.json, "AWS::ApiGateway::Stage")[0]
    api_id = _logical_id(b, b.scheduler.api)
    assert all(f'{{"Ref": "{api_id}"}}, "/", {{"Ref": "{stage_id}"}}' in r for r in rendered), rendered


# --- the HTTP API (the default) ----------------------------------------------------------------
HTTP_ROUTE_KEYS = {f"{verb} {path}" for verb, path in ROUTES}


def _routes(b: Built) -> dict:
    return {r["Properties"]["RouteKey"]: r["Properties"] for r in resources_of(b.json, "AWS::ApiGatewayV2::Route").values()}


def test_http_api_is_the_default_with_iam_on_every_route(built):
    b = built["defaults"]
    assert not [r for r in b.json["Resources"].values() if r["Type"].startswith("AWS::ApiGateway::")]
    (api_id, api), = resources_of(b.json, "AWS::ApiGatewayV2::Api").items()
    assert api_id.startswith("TimersHttpApi") and api["Properties"]["ProtocolType"] == "HTTP"
    routes = _routes(b)
    assert set(routes) == HTTP_ROUTE_KEYS
    (integration_id, integration), = resources_of(b.json, "AWS::ApiGatewayV2::Integration").items()
    api_fn = only(b.json, "AWS::Lambda::Function", "TimersApiFunction")[0]
    assert integration["Properties"] == {"ApiId": {"Ref": api_id}, "IntegrationType": "AWS_PROXY",
                                         "IntegrationUri": {"Fn::GetAtt": [api_fn, "Arn"]},
                                         "PayloadFormatVersion": "2.0"}
    for route in routes.values():
        assert route["AuthorizationType"] == "AWS_IAM" and "AuthorizerId" not in route
        assert route["Target"] == {"Fn::Join": ["", ["integrations/", {"Ref": integration_id}]]}
    # API Gateway may invoke the function for each route, and nothing else may
    sources = sorted(json.dumps(p["Properties"]["SourceArn"]) for p in resources_of(b.json, "AWS::Lambda::Permission").values()
                     if p["Properties"]["Principal"] == "apigateway.amazonaws.com")
    assert len(sources) == len(ROUTES) and all(f'{{"Ref": "{api_id}"}}' in s for s in sources)


def test_http_stage_is_default_auto_deployed_throttled_and_logged(built):
    b = built["defaults"]
    (stage_id, stage), = resources_of(b.json, "AWS::ApiGatewayV2::Stage").items()
    props = stage["Properties"]
    assert stage_id.startswith("TimersHttpApiDefaultStage")
    assert (props["StageName"], props["AutoDeploy"]) == ("$default", True)
    assert props["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 200, "ThrottlingRateLimit": 100}
    assert props["AccessLogSettings"]["DestinationArn"]["Fn::GetAtt"][0].startswith("TimersApiAccessLogs")
    fields = json.loads(props["AccessLogSettings"]["Format"])
    assert {"requestId", "caller", "routeKey", "status", "integrationError", "authorizerError"} <= set(fields)
    assert all(v.startswith("$context.") for v in fields.values())
    # no account-wide logging role for an HTTP API
    b.template.resource_count_is("AWS::ApiGateway::Account", 0)
    # the $default stage has no path in the URL
    url = b.stack.resolve(b.scheduler.url)
    assert url["Fn::Join"][1][-1] == "/" and "$default" not in json.dumps(url)


def test_http_cognito_is_a_jwt_authorizer_for_the_app_clients(built):
    b = built["http_cognito"]
    pool, client = _logical_id(b, b.extra["pool"]), _logical_id(b, b.extra["app_client"])
    (authorizer_id, authorizer), = resources_of(b.json, "AWS::ApiGatewayV2::Authorizer").items()
    props = authorizer["Properties"]
    assert props["AuthorizerType"] == "JWT"
    assert props["IdentitySource"] == ["$request.header.Authorization"]
    assert props["JwtConfiguration"]["Audience"] == [{"Ref": client}]
    issuer = props["JwtConfiguration"]["Issuer"]
    assert issuer == {"Fn::Join": ["", ["https://cognito-idp.eu-west-1.amazonaws.com/", {"Ref": pool}]]}
    routes = _routes(b)
    assert set(routes) == HTTP_ROUTE_KEYS
    for route in routes.values():
        assert (route["AuthorizationType"], route["AuthorizerId"]) == ("JWT", {"Ref": authorizer_id})
        assert route["AuthorizationScopes"] == ["timers/write"]
    stage = only(b.json, "AWS::ApiGatewayV2::Stage")[1]["Properties"]
    assert stage["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 20, "ThrottlingRateLimit": 10}
    assert "AccessLogSettings" not in stage
    assert not [k for k in b.json["Resources"] if k.startswith("TimersApiAccessLogs")]


def test_http_no_auth(built):
    routes = _routes(built["http_none"])
    assert set(routes) == HTTP_ROUTE_KEYS
    assert {r["AuthorizationType"] for r in routes.values()} == {"NONE"}


def test_http_grant_schedule_is_execute_api_on_every_route_and_the_invoke(built):
    b = built["defaults"]
    invoke, statement = _client_statements(b)
    assert invoke == _invoke_statement(b)
    assert statement["Action"] == "execute-api:Invoke"
    api_id = only(b.json, "AWS::ApiGatewayV2::Api")[0]
    assert sorted(map(json.dumps, statement["Resource"])) == sorted(
        json.dumps({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":execute-api:eu-west-1:123456789012:",
                                      {"Ref": api_id}, f"/$default/{verb}{path.replace('{id}', '*')}"]]})
        for verb, path in ROUTES)


def test_grant_invoke_is_exactly_the_api_function(built):
    for name in ("defaults", "rest", "no_api"):
        b = built[name]
        assert _client_statements(b, "Invoker") == [_invoke_statement(b)], name


def test_no_api_means_direct_invoke_only(built):
    b = built["no_api"]
    assert not [r for r in b.json["Resources"].values() if r["Type"].startswith("AWS::ApiGateway")]
    assert not [k for k in b.json["Resources"] if k.startswith("TimersApiAccessLogs")]
    assert not [p for p in resources_of(b.json, "AWS::Lambda::Permission").values()
                if p["Properties"]["Principal"] == "apigateway.amazonaws.com"]
    s = b.scheduler
    assert (s.api, s.api_stage, s.api_key, s.url) == (None, None, None, None)
    # grant_schedule is the invoke alone
    assert _client_statements(b) == [_invoke_statement(b)]


# --- attributes and metrics ---------------------------------------------------------------
def test_attributes(built):
    s = built["defaults"].scheduler
    assert isinstance(s.table, dynamodb.Table)
    assert isinstance(s.delayer_queue, sqs.Queue) and isinstance(s.dead_letter_queue, sqs.Queue)
    assert isinstance(s.api, apigwv2.HttpApi) and isinstance(s.api_stage, apigwv2.HttpStage)
    assert (s.api.node.id, s.api_stage.node.path) == ("HttpApi", "Defaults/Timers/HttpApi/DefaultStage")
    assert s.api_choice.kind == "HTTP" and s.api_key is None
    rest = built["rest"].scheduler
    assert isinstance(rest.api, apigw.RestApi) and rest.api.node.id == "Api"
    assert rest.api_stage.node.path == rest.api.deployment_stage.node.path == "Rest/Timers/Api/DeploymentStage.v1"
    assert s.table.node.id == "Table"
    assert [f.node.id for f in s.functions] == list(FUNCTION_IDS)
    assert s.dispatcher_function.node.id == "DispatcherFunction"
    assert s.sweep_rule.node.id == "SweepSchedule"
    assert cdk.Token.is_unresolved(s.url) and cdk.Token.is_unresolved(rest.url)


def test_metrics(built):
    stack, s = built["defaults"].stack, built["defaults"].scheduler
    lateness = s.metric_lateness()
    assert (lateness.namespace, lateness.metric_name, lateness.statistic) == ("DelayedScheduler", "LatenessMs", "p99")
    assert lateness.unit == cloudwatch.Unit.MILLISECONDS
    dimensions = stack.resolve(lateness.dimensions)
    dispatcher = stack.get_logical_id(s.dispatcher_function.node.default_child)
    assert dimensions == {"Service": "DelayedScheduler", "FunctionName": {"Ref": dispatcher}}  # this instance's
    assert built["custom"].scheduler.metric_lateness(statistic="Maximum").namespace == "Acme/Timers"
    assert s.metric_lateness(period=cdk.Duration.minutes(1), label="late").period.to_seconds() == 60
    depth = s.metric_dead_letter_queue_depth(period=cdk.Duration.minutes(1))
    assert depth.metric_name == "ApproximateNumberOfMessagesVisible" and depth.statistic == "Maximum"
    assert stack.resolve(depth.dimensions["QueueName"]) == {
        "Fn::GetAtt": [stack.get_logical_id(s.dead_letter_queue.node.default_child), "QueueName"]}
    assert depth.period.to_seconds() == 60
    assert s.metric_dispatcher_errors().metric_name == "Errors"


def test_delayer_depth_is_visible_plus_delayed(built):
    """Most of the delayer queue is delayed messages: the depth adds them to the visible ones."""
    stack, s = built["defaults"].stack, built["defaults"].scheduler
    depth = s.metric_delayer_queue_depth(period=cdk.Duration.minutes(1))
    assert isinstance(depth, cloudwatch.MathExpression)
    assert depth.expression == "visible + delayed" and depth.period.to_seconds() == 60
    queue_name = {"Fn::GetAtt": [stack.get_logical_id(s.delayer_queue.node.default_child), "QueueName"]}
    used = {key: (m.metric_name, m.statistic, m.period.to_seconds(), stack.resolve(m.dimensions["QueueName"]))
            for key, m in depth.using_metrics.items()}
    assert used == {"visible": ("ApproximateNumberOfMessagesVisible", "Maximum", 60, queue_name),
                    "delayed": ("ApproximateNumberOfMessagesDelayed", "Maximum", 60, queue_name)}
    alarm = cloudwatch.Alarm(cdk.Stack(cdk.App(), "A"), "Deep", metric=s.metric_delayer_queue_depth(statistic="Average"),
                             threshold=1000, evaluation_periods=1)
    assert alarm.metric.using_metrics["delayed"].statistic == "Average"


def test_one_metric_method_per_runtime_emf_figure(built):
    """Every figure ``contract.json`` names for the runtime's EMF records has a ``metric_*`` method that
    reads it, in the scheduler's namespace."""
    from cdk_delayed_scheduler._runtime_asset import contract

    figures = {name for key, name in contract()["metrics"].items() if key != "dimensions"}
    s = built["defaults"].scheduler
    readers = {m.metric_name: name for name in dir(s) if name.startswith("metric_")
               for m in [getattr(s, name)()] if isinstance(m, cloudwatch.Metric) and m.namespace == s.metrics_namespace}
    assert figures and set(readers) == figures


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
    "AWS::Lambda::EventInvokeConfig": 1,
    "AWS::Events::Rule": 1,
    "AWS::Lambda::Permission": 1,  # the sweep rule may invoke the sweeper
})


def test_every_resource_the_construct_creates_is_accounted_for(built):
    """The full inventory of each API choice."""
    assert _inventory(built["no_api"]) == CORE
    assert _inventory(built["defaults"]) - CORE == {
        "AWS::Logs::LogGroup": 1,  # the API's access logs
        "AWS::Lambda::Permission": 9,  # one per route
        "AWS::ApiGatewayV2::Api": 1, "AWS::ApiGatewayV2::Stage": 1, "AWS::ApiGatewayV2::Integration": 1,
        "AWS::ApiGatewayV2::Route": 9,
    }
    rest = built["rest"]
    assert _inventory(rest) - CORE == {
        "AWS::IAM::Role": 1,  # API Gateway's logging role
        "AWS::Logs::LogGroup": 1,
        "AWS::Lambda::Permission": 18,  # each method, for its stage and for test-invoke
        "AWS::ApiGateway::RestApi": 1, "AWS::ApiGateway::Account": 1, "AWS::ApiGateway::Deployment": 1,
        "AWS::ApiGateway::Stage": 1, "AWS::ApiGateway::Resource": 5, "AWS::ApiGateway::Method": 9,
        "AWS::ApiGateway::Model": 3, "AWS::ApiGateway::RequestValidator": 2,
        "AWS::ApiGateway::GatewayResponse": 4,
    }
    permissions = [r["Properties"] for r in resources_of(rest.json, "AWS::Lambda::Permission").values()]
    api_fn = only(rest.json, "AWS::Lambda::Function", "TimersApiFunction")[0]
    sweeper = only(rest.json, "AWS::Lambda::Function", "TimersSweeperFunction")[0]
    assert sum(p["Principal"] == "apigateway.amazonaws.com" and p["FunctionName"] == {"Fn::GetAtt": [api_fn, "Arn"]}
               for p in permissions) == 18
    assert sum(p["Principal"] == "events.amazonaws.com" and p["FunctionName"] == {"Fn::GetAtt": [sweeper, "Arn"]}
               for p in permissions) == 1
