"""Security gates on the synthesized construct, over one app of seven schedulers (``security_assembly``
in conftest.py, synthesized once per session): each API kind, with and without a customer managed
key, with and without an explicit environment, one with X-Ray tracing, one with a periodic timer and
one with SNS, EventBridge, Step Functions, Lambda (event) and HTTPS targets.

- IAM: exactly what each principal is granted (a literal table: any added permission fails), no
  wildcard action, each resource wildcard acknowledged with its reason; the grantees of
  ``grant_schedule`` and ``grant_read``.
- Encryption at rest of the table and both queues, with the key when given; TLS-only queues.
- cdk-nag (AwsSolutions, as a validation plugin) and cfn-lint, which test_quality_gates.py runs on
  the configurations without a key and with Cognito; here IAM authorization with a key, with and
  without an explicit environment.
- Why no unsigned-request 403 is shown on moto.
"""

from __future__ import annotations

import json
import re

import pytest
from construct_helpers import (FANOUT_EVENT_FUNCTION, FANOUT_HOOK_SECRET, FANOUT_STATE_MACHINE, SECURITY_VARIANTS,
                               cfn_lint, grants, render)

pytestmark = pytest.mark.slow

P = "${AWS::Partition}"
TABLE, STREAM, DELAYER, DLQ, KEY = "<Table.Arn>", "<Table.StreamArn>", "<DelayerQueue.Arn>", "<DeadLetterQueue.Arn>", "<Key.Arn>"
#: Principals the tests' own resources bring: the target function's role, the test key's account root.
FIXTURES = {"CallbackRole", f"arn:{P}:iam::${{AWS::AccountId}}:root", f"arn:{P}:iam::123456789012:root"}


def on(resource: str, *actions: str) -> set[tuple[str, str]]:
    return {(action, resource) for action in actions}


def writes_logs(function: str) -> set[tuple[str, str]]:
    return on(f"log-group:<{function}Logs>:*", "logs:CreateLogStream", "logs:PutLogEvents")


# --- the literal table -----------------------------------------------------------------------
FUNCTION_ROLES = {
    "ApiFunctionRole": writes_logs("ApiFunction")
    | on(TABLE, "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:Query",
         "dynamodb:BatchGetItem")
    | on(f"{TABLE}/index/ByGroup", "dynamodb:Query")
    | on(DELAYER, "sqs:SendMessage"),
    "SweeperFunctionRole": writes_logs("SweeperFunction")
    | on(TABLE, "dynamodb:Query", "dynamodb:DeleteItem", "dynamodb:UpdateItem")
    | on(DLQ, "sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"),
    "EnqueuerFunctionRole": writes_logs("EnqueuerFunction")
    | on(TABLE, "dynamodb:BatchWriteItem")
    | on(DELAYER, "sqs:SendMessage")
    | on(DLQ, "sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl")
    | on("*", "dynamodb:ListStreams")
    | on(STREAM, "dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"),
    "DispatcherFunctionRole": writes_logs("DispatcherFunction")
    | on(TABLE, "dynamodb:UpdateItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem")
    | on(f"{TABLE}/index/ByGroup", "dynamodb:Query")
    | on(DELAYER, "sqs:SendMessage", "sqs:ReceiveMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl",
         "sqs:DeleteMessage", "sqs:GetQueueAttributes")
    | on(DLQ, "sqs:SendMessage")
    | on("<Callback.Arn>", "lambda:InvokeFunction"),
    "events.amazonaws.com": on(f"<SweeperFunction.Arn> if aws:SourceArn = <SweepSchedule.Arn>", "lambda:InvokeFunction")
    | on(f"{DLQ} if aws:SourceArn = <SweepSchedule.Arn>", "sqs:SendMessage")
    | on("<DispatcherFunction.Arn> if aws:SourceArn = <DispatcherKeepWarm.Arn>", "lambda:InvokeFunction"),
}
WITH_LISTING = {"ApiFunctionRole": on(f"{TABLE}/index/ByStatus", "dynamodb:Query")}
WITH_KEY = {
    "ApiFunctionRole": on(KEY, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"),
    "SweeperFunctionRole": on(KEY, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"),
    "EnqueuerFunctionRole": on(KEY, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:DescribeKey"),
    "DispatcherFunctionRole": on(KEY, "kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"),
    "events.amazonaws.com": on("* of <Key>", "kms:GenerateDataKey", "kms:Decrypt"),
}
WITH_TRACING = {f"{function}FunctionRole": on("*", "xray:PutTraceSegments", "xray:PutTelemetryRecords")
                for function in ("Api", "Sweeper", "Enqueuer", "Dispatcher")}
#: The provider of a stack's periodic timers: its own logs, and the api function (and its versions).
WITH_PERIODIC = {"PeriodicTimersProviderRole": writes_logs("PeriodicTimersProvider")
                 | on("<ApiFunction.Arn>", "lambda:InvokeFunction", "lambda:GetFunction")
                 | on("<ApiFunction.Arn>:*", "lambda:InvokeFunction")}
#: SNS, EventBridge, Step Functions, Lambda (event) and HTTPS targets: one action on that topic, bus, state
#: machine, function or signing secret, the producer's actions on the topic's key, and the decrypt of the
#: secret's key through Secrets Manager only.
WITH_FANOUT = {"DispatcherFunctionRole": on("<Alerts>", "sns:Publish")
               | on("<AlertsKey.Arn>", "kms:GenerateDataKey", "kms:Decrypt")
               | on("<Bus.Arn>", "events:PutEvents")
               | on(FANOUT_STATE_MACHINE, "states:StartExecution")
               | on(FANOUT_EVENT_FUNCTION, "lambda:InvokeFunction")
               | on(FANOUT_HOOK_SECRET, "secretsmanager:GetSecretValue")
               | on("<HookKey.Arn> if kms:ViaService = secretsmanager.eu-west-1.amazonaws.com", "kms:Decrypt"),
               # add_alarms(alarm_action=alerts): CloudWatch publishes to the topic this key encrypts
               "cloudwatch.amazonaws.com": on("* of <AlertsKey>", "kms:GenerateDataKey", "kms:Decrypt")}
#: Every route, as an ``execute-api`` resource names it (``{id}``, ``{group}`` and ``{name}`` as ``*``).
ROUTES = [("POST", "/schedules"), ("GET", "/schedules/*"), ("DELETE", "/schedules/*"), ("PATCH", "/schedules/*"),
          ("POST", "/schedule-batches"), ("GET", "/schedules"), ("PUT", "/periodic/*"), ("GET", "/periodic/*"),
          ("PATCH", "/periodic/*"), ("DELETE", "/periodic/*"), ("GET", "/periodic"), ("DELETE", "/groups/*"),
          ("GET", "/targets/*"), ("PATCH", "/targets/*")]
READ_ROUTES = [("GET", "/schedules/*"), ("GET", "/schedules"), ("GET", "/periodic/*"), ("GET", "/periodic"),
               ("GET", "/targets/*")]
HTTP_PERMITTED_PATHS = ["/schedules", "/schedules/{id}", "/schedule-batches", "/periodic", "/periodic/{id}",
                        "/groups/{group}", "/targets/{name}"]
LOGGING_ROLE = f"arn:{P}:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs"


def execute_api(variant: dict) -> str:
    region, account = ("eu-west-1", "123456789012") if variant["env"] else ("${AWS::Region}", "${AWS::AccountId}")
    return f"arn:{P}:execute-api:{region}:{account}:"


def route_arn(variant: dict, method: str, path: str) -> str:
    stage = "<HttpApi>/$default" if variant["api"] == "HTTP" else "<Api>/<Api/DeploymentStage.v1>"
    return f"{execute_api(variant)}{stage}/{method}{path}"


def creates_logging_role(name: str) -> bool:
    """Whether stack ``name`` creates API Gateway's account-wide logging role: the first REST stack of
    its environment does, the others use it."""
    rest = [n for n, v in SECURITY_VARIANTS.items() if v["api"] == "REST" and v["env"] == SECURITY_VARIANTS[name]["env"]]
    return rest[:1] == [name]


def expected_grants(name: str) -> dict[str, set[tuple[str, str]]]:
    variant = SECURITY_VARIANTS[name]
    expected = {principal: set(rows) for principal, rows in FUNCTION_ROLES.items()}
    extras = [table for table, on_ in ((WITH_LISTING, variant["listing"]), (WITH_KEY, variant["key"]),
                                      (WITH_TRACING, variant["tracing"]), (WITH_PERIODIC, variant["periodic"]),
                                      (WITH_FANOUT, variant["fanout"])) if on_]
    for extra in extras:
        for principal, rows in extra.items():
            expected[principal] = expected.get(principal, set()) | rows
    invoke = on("<ApiFunction.Arn>", "lambda:InvokeFunction")
    if variant["api"] == "NONE":
        expected["Client"] = invoke
        return expected
    expected["Client"] = invoke | {("execute-api:Invoke", route_arn(variant, m, p)) for m, p in ROUTES}
    expected["Reader"] = {("execute-api:Invoke", route_arn(variant, m, p)) for m, p in READ_ROUTES}
    if variant["api"] == "HTTP":  # CDK's HttpLambdaIntegration: one permission per route path
        sources = [f"{execute_api(variant)}<HttpApi>/*/*{path}" for path in HTTP_PERMITTED_PATHS]
    else:  # LambdaIntegration: one per method, on the stage and on the console's test-invoke-stage
        sources = [f"{execute_api(variant)}<Api>/{stage}/{m}{p}"
                   for stage in ("<Api/DeploymentStage.v1>", "test-invoke-stage") for m, p in ROUTES]
    if creates_logging_role(name):
        expected["Api/CloudWatchRole"] = {("managed policy", LOGGING_ROLE)}
    expected["apigateway.amazonaws.com"] = {("lambda:InvokeFunction", f"<ApiFunction.Arn> if aws:SourceArn = {s}")
                                            for s in sources}
    return expected


# --- resource wildcards, each acknowledged -----------------------------------------------------
ARN = r"arn:\$\{AWS::Partition\}:execute-api:(\$\{AWS::Region\}|eu-west-1):(\$\{AWS::AccountId\}|123456789012):"
#: (action, resource) patterns of the wildcards granted on purpose, each with its reason. A
#: managed policy counts as a wildcard: its statements are AWS's, with ``Resource: *``.
ACKNOWLEDGED = [
    (r"dynamodb:ListStreams", r"\*",
     "ListStreams has no resource-level permissions in IAM; the stream reads are on this table's stream"),
    (r"xray:(PutTraceSegments|PutTelemetryRecords)", r"\*",
     "X-Ray's write actions take no resource: Lambda's tracing grants them on * (the tracing prop)"),
    (r"logs:(CreateLogStream|PutLogEvents)", r"log-group:<((Api|Sweeper|Enqueuer|Dispatcher)Function|PeriodicTimersProvider)Logs>:\*",
     "a log group's ARN ends in :* (its streams): each function writes to its own group only"),
    (r"execute-api:Invoke", ARN + r"<(HttpApi>/\$default|Api>/<Api/DeploymentStage\.v1>)/(GET|DELETE|PUT|PATCH)/(schedules|periodic|groups|targets)/\*",
     "grant_schedule, grant_read and grant_operate: the * is the {id}, {group} or {name} path parameter of one route "
     "of this API and stage"),
    (r"lambda:InvokeFunction", r"<ApiFunction\.Arn> if aws:SourceArn = " + ARN + r"<HttpApi>/\*/\*/[a-z/{}-]+",
     "CDK's HttpLambdaIntegration lets this API invoke the api function on one route path, from any stage "
     "and method (the API has one stage, $default, and only the declared routes)"),
    (r"lambda:InvokeFunction", r"<ApiFunction\.Arn> if aws:SourceArn = " + ARN
     + r"<Api>/(<Api/DeploymentStage\.v1>|test-invoke-stage)/(GET|DELETE|PUT|PATCH)/(schedules|periodic|groups|targets)/\*",
     "the REST API's permission for a /{id}, /{group} or /{name} route: the * is the path parameter"),
    (r"lambda:InvokeFunction", r"<ApiFunction\.Arn>:\*",
     "CDK's provider framework, which hands the stack's periodic timers to the api function, may invoke its versions"),
    (r"kms:(GenerateDataKey|Decrypt)", r"\* of <Key>",
     "in a key policy, * is the key itself: EventBridge encrypts sweep events it parks in the dead-letter queue"),
    (r"kms:(GenerateDataKey|Decrypt)", r"\* of <AlertsKey>",
     "in a key policy, * is the key itself: CloudWatch publishes the scheduler's alarms to the topic it encrypts"),
    (r"managed policy", re.escape(LOGGING_ROLE),
     "API Gateway's account-wide logging role (REST only, at most once per app and environment; "
     "cloud_watch_role=False leaves it out): AWS's policy for writing REST execution and access logs"),
]


def unacknowledged(granted: dict[str, set[tuple[str, str]]]) -> list[tuple[str, str, str]]:
    """(principal, action, resource) of each wildcard resource that no ``ACKNOWLEDGED`` entry covers."""
    return sorted((principal, action, resource) for principal, rows in granted.items() for action, resource in rows
                  if ("*" in resource or action == "managed policy")
                  and not any(re.fullmatch(a, action) and re.fullmatch(r, resource) for a, r, _ in ACKNOWLEDGED))


@pytest.fixture(scope="module")
def granted(security_assembly) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """{stack: {principal: {(action, resource)}}}, without the tests' own principals."""
    return {name: {p: rows for p, rows in grants(built.template, built.names).items() if p not in FIXTURES}
            for name, built in security_assembly.stacks.items()}


def test_each_principal_is_granted_exactly_the_table(security_assembly, granted):
    for name, built in security_assembly.stacks.items():
        expected = expected_grants(name)
        assert sorted(granted[name]) == sorted(expected), name
        for principal, rows in expected.items():
            assert sorted(granted[name][principal]) == sorted(rows), (name, principal)


def test_the_four_functions_are_all_there_is_to_grant(security_assembly):
    """No custom resource, log-retention or other function the table would miss, besides the provider of
    periodic timers declared in the stack; each role trusts one service."""
    for name, built in security_assembly.stacks.items():
        periodic = built.variant["periodic"]
        types = {v["Type"] for v in built.template["Resources"].values()}
        assert [t for t in types if t.startswith("Custom::") or t == "AWS::CloudFormation::CustomResource"] == (
            ["Custom::DelayedSchedulerPeriodic"] if periodic else []), name
        functions = {built.names[k] for k, v in built.template["Resources"].items() if v["Type"] == "AWS::Lambda::Function"}
        assert functions == {"ApiFunction", "SweeperFunction", "EnqueuerFunction", "DispatcherFunction", "Callback",
                             *(["PeriodicTimersProvider/framework-onEvent"] if periodic else [])}
        trust = {built.names[k]: v["Properties"]["AssumeRolePolicyDocument"]["Statement"]
                 for k, v in built.template["Resources"].items() if v["Type"] == "AWS::IAM::Role"}
        services = {role: [s["Principal"].get("Service") for s in statements] for role, statements in trust.items()
                    if role not in ("Client", "Reader")}
        expected = {f"{f}Role": ["lambda.amazonaws.com"] for f in functions if "/" not in f}
        if periodic:
            expected["PeriodicTimersProviderRole"] = ["lambda.amazonaws.com"]
        if creates_logging_role(name):
            expected["Api/CloudWatchRole"] = ["apigateway.amazonaws.com"]
        assert services == expected, name


def test_no_action_is_a_wildcard(granted):
    actions = {action for stack in granted.values() for rows in stack.values() for action, _ in rows}
    assert [a for a in actions if a != "managed policy" and not re.fullmatch(r"[a-z0-9-]+:[A-Za-z]+", a)] == []
    assert {"kms:GenerateDataKey", "kms:Decrypt", "execute-api:Invoke"} <= actions  # (the check saw them)


def test_every_resource_wildcard_is_acknowledged_and_every_acknowledgement_is_used(granted):
    assert [unacknowledged(stack) for stack in granted.values()] == [[]] * len(granted)
    rows = [(a, r) for stack in granted.values() for principal_rows in stack.values() for a, r in principal_rows]
    for action, resource, reason in ACKNOWLEDGED:
        assert any(re.fullmatch(action, a) and re.fullmatch(resource, r) for a, r in rows), (action, resource)
        assert len(reason) >= 60, reason


def test_an_unacknowledged_wildcard_is_reported():
    granted = {"ApiFunctionRole": {("dynamodb:Query", f"{TABLE}/index/*"), ("dynamodb:Query", f"{TABLE}/index/ByStatus")},
               "Client": {("execute-api:Invoke", route_arn({"api": "HTTP", "env": False}, "*", "/schedules"))},
               "X": {("managed policy", f"arn:{P}:iam::aws:policy/AdministratorAccess")}}
    assert unacknowledged(granted) == [
        ("ApiFunctionRole", "dynamodb:Query", f"{TABLE}/index/*"),
        ("Client", "execute-api:Invoke", f"arn:{P}:execute-api:${{AWS::Region}}:${{AWS::AccountId}}:<HttpApi>/$default/*/schedules"),
        ("X", "managed policy", f"arn:{P}:iam::aws:policy/AdministratorAccess")]


@pytest.mark.parametrize("role, routes", [("Client", ROUTES), ("Reader", READ_ROUTES)], ids=["grant_schedule", "grant_read"])
def test_a_grantee_gets_exactly_its_routes_and_grant_schedule_the_invoke(security_assembly, role, routes):
    for name, built in security_assembly.stacks.items():
        policies = [v["Properties"]["PolicyDocument"] for k, v in built.template["Resources"].items()
                    if v["Type"] == "AWS::IAM::Policy" and built.names[k] == f"{role}/DefaultPolicy"]
        if built.variant["api"] == "NONE" and role == "Reader":  # grant_read raises: there is no read-only way in
            assert policies == [], name
            continue
        (policy,) = policies
        statements = {s["Action"]: s["Resource"] for s in policy["Statement"]}
        if built.variant["api"] == "NONE":  # grant_schedule is the invoke alone
            assert statements == {"lambda:InvokeFunction": {"Fn::GetAtt": [_logical_id(built, "ApiFunction"), "Arn"]}}
            continue
        if role == "Client":
            assert render(statements.pop("lambda:InvokeFunction"), built.names, built.types) == "<ApiFunction.Arn>", name
        assert list(statements) == ["execute-api:Invoke"], name
        assert sorted(render(r, built.names, built.types) for r in statements["execute-api:Invoke"]) == sorted(
            route_arn(built.variant, method, path) for method, path in routes), name


def _logical_id(built, name: str) -> str:
    (logical_id,) = [k for k, v in built.names.items() if v == name]
    return logical_id


# --- cdk-nag and cfn-lint ----------------------------------------------------------------------
def test_cdk_nag_reports_nothing_on_either_api_with_or_without_a_key_or_an_environment(security_assembly):
    kinds = {(b.variant["api"], b.variant["key"], b.variant["env"]) for b in security_assembly.stacks.values()}
    assert {(api, key, env) for api in ("HTTP", "REST") for key in (False, True) for env in (False, True)} - kinds == {
        ("HTTP", False, True), ("REST", False, True)}  # those two are test_quality_gates.py's DefaultsEnv and RestEnv
    assert security_assembly.violations == []


def test_cfn_lint_reports_no_error(security_assembly):
    matches = cfn_lint(security_assembly.template_paths)
    assert [m for m in matches if m["Level"] == "Error"] == []
    # W3005: the redundant DependsOn CDK's lambda.Function renders next to its role's GetAtt
    assert {m["Rule"]["Id"] for m in matches} <= {"W3005"}


# --- encryption at rest, TLS only ------------------------------------------------------------------
def test_the_table_and_every_queue_are_encrypted_at_rest_with_the_key_when_given(security_assembly):
    for name, built in security_assembly.stacks.items():
        props = {built.names[k]: v["Properties"] for k, v in built.template["Resources"].items()
                 if v["Type"] in ("AWS::SQS::Queue", "AWS::DynamoDB::Table")}
        assert sorted(props) == ["DeadLetterQueue", "DelayerQueue", "Table"], name
        table, queues = props.pop("Table"), props
        if built.variant["key"]:
            sse = table["SSESpecification"]
            assert {**sse, "KMSMasterKeyId": render(sse["KMSMasterKeyId"], built.names, built.types)} == {
                "SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": KEY}, name
            assert {q: (render(p["KmsMasterKeyId"], built.names, built.types), p.get("SqsManagedSseEnabled"))
                    for q, p in queues.items()} == {"DelayerQueue": (KEY, None), "DeadLetterQueue": (KEY, None)}, name
        else:  # DynamoDB always encrypts at rest: SSEEnabled false is its AWS owned key; SQS-managed SSE
            assert table["SSESpecification"] == {"SSEEnabled": False}, name
            assert {q: (p.get("KmsMasterKeyId"), p["SqsManagedSseEnabled"]) for q, p in queues.items()} == {
                "DelayerQueue": (None, True), "DeadLetterQueue": (None, True)}, name


def test_every_queue_refuses_requests_without_tls(security_assembly):
    for name, built in security_assembly.stacks.items():
        denied = {}
        for resource in built.template["Resources"].values():
            if resource["Type"] == "AWS::SQS::QueuePolicy":
                (queue,) = [built.names[q["Ref"]] for q in resource["Properties"]["Queues"]]
                denied[queue] = [{**s, "Resource": render(s["Resource"], built.names, built.types)}
                                 for s in resource["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
        assert denied == {queue: [{"Action": "sqs:*", "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                                   "Effect": "Deny", "Principal": {"AWS": "*"}, "Resource": f"<{queue}.Arn>"}]
                          for queue in ("DelayerQueue", "DeadLetterQueue")}, name


# --- unsigned requests ------------------------------------------------------------------------------
def test_moto_serves_an_unsigned_request_to_an_iam_method_so_the_403_cannot_be_shown_there(monkeypatch):
    """API Gateway refuses an unsigned request to a route with IAM authorization (403). moto 5.2 cannot
    show it: its REST API invoke (``mock_aws`` only; the server mode routes no execute-api request)
    goes to the integration without reading the method's ``authorizationType``, the Lambda proxy
    integration the construct uses (``AWS_PROXY``) is not implemented, and HTTP APIs (apigatewayv2)
    have no invoke at all. This pins the first point: when moto refuses the unsigned request below,
    this fails, and the 403 belongs in test_moto_deploy.py. Meanwhile the 403 is the local engine's
    ``--require-signature`` (tests/client/test_require_signature.py, every route), and each route's
    IAM authorization is asserted on the template (test_construct.py)."""
    import boto3
    import requests
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        gateway = boto3.client("apigateway", region_name="us-east-1")
        api = gateway.create_rest_api(name="iam")["id"]
        root = gateway.get_resources(restApiId=api)["items"][0]["id"]
        resource = gateway.create_resource(restApiId=api, parentId=root, pathPart="schedules")["id"]
        gateway.put_method(restApiId=api, resourceId=resource, httpMethod="POST", authorizationType="AWS_IAM")
        # the one AWS service integration moto invokes: a DynamoDB action, answered by moto itself
        gateway.put_integration(restApiId=api, resourceId=resource, httpMethod="POST", type="AWS",
                                integrationHttpMethod="POST", uri="arn:aws:apigateway:us-east-1:dynamodb:action/ListTables")
        gateway.create_deployment(restApiId=api, stageName="v1")
        # (a proxy that refuses: should moto let the request through, it goes nowhere)
        response = requests.post(f"https://{api}.execute-api.us-east-1.amazonaws.com/v1/schedules", data="{}",
                                 proxies={"https": "http://127.0.0.1:9"}, timeout=10)
    assert response.status_code == 200 and response.json() == {"TableNames": []}


def test_a_grantee_in_another_stack_has_each_route_wildcard_acknowledged_as_its_policy_names_it(security_assembly):
    """The route ARNs reach another stack's policy as imports, whose names CDK makes at synthesis: each
    ``/{id}`` wildcard is acknowledged by that name (cdk-nag then reports nothing: the test above)."""
    ((key, policy),) = [(k, v) for k, v in security_assembly.producer["Resources"].items()
                        if v["Type"] == "AWS::IAM::Policy"]
    assert key.startswith("AppDefaultPolicy")
    invoke = [json.dumps(r) for s in policy["Properties"]["PolicyDocument"]["Statement"]
              if s["Action"] == "execute-api:Invoke" for r in s["Resource"]]
    wildcards = {r for r in invoke if r.endswith('/*"]]}')}
    assert len(wildcards) == 10 and all("Fn::ImportValue" in w for w in wildcards)
    suppressed = {s["applies_to"][0]: s["reason"] for s in policy["Metadata"]["cdk_nag"]["rules_to_suppress"]}
    assert sorted(r.rsplit("/", 3)[-3:-1] for r in suppressed) == [
        ["DELETE", "groups"], ["DELETE", "periodic"], ["DELETE", "schedules"], ["GET", "periodic"],
        ["GET", "schedules"], ["GET", "targets"], ["PATCH", "periodic"], ["PATCH", "schedules"], ["PATCH", "targets"],
        ["PUT", "periodic"]]
    assert all(re.fullmatch(r"Resource::arn:<AWS::Partition>:execute-api:<AWS::Region>:<AWS::AccountId>:"
                            r"Http:ExportsOutputRefTimersHttpApi\w+/\$default/(GET|PUT|PATCH|DELETE)/\w+/\*", r)
               for r in suppressed), suppressed
    assert all(re.match(r"grant_(schedule|read): the \* is the \{(id|group|name)\} path parameter of "
                        r"(GET|PUT|PATCH|DELETE) /(schedules|periodic|groups|targets)/\{(id|group|name)\}", reason)
               for reason in suppressed.values()), suppressed
