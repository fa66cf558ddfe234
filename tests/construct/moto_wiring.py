"""The deployed functions and their event source mappings, played in-process against moto
(imported by name from the construct tests: pytest puts this folder on sys.path)."""

from __future__ import annotations

import importlib
import json
import os
from contextlib import contextmanager
from fnmatch import fnmatchcase
from unittest import mock

import pytest

from cdk_delayed_scheduler.local.event_filter import matches
from cdk_delayed_scheduler.local.pollers import LambdaContext
from tests.waiting import wait_until

REGION = "us-east-1"
ACCOUNT = "123456789012"


def forget_stream_triggers(account: str) -> None:
    """moto (5.2) keeps a table's stream trigger after its mapping is deleted, and on each
    write tries to invoke the function (in Docker) and then discards the stream's records.
    The server runs in this process, so drop those registrations from its backend."""
    from moto.dynamodb.models import dynamodb_backends

    for table in dynamodb_backends[account][REGION].tables.values():
        table.lambda_event_source_mappings.clear()


class DeployedFunction:
    """A deployed function, run in-process with exactly its deployed environment.

    Every AWS call its handler makes is recorded (``calls``), so the test can check it against
    the function's deployed role; ``fail_once`` injects one failure of an operation; ``overrides``
    changes environment variables for the calls made while it is set.
    """

    def __init__(self, description: dict) -> None:
        config = description["Configuration"]
        self.name = config["FunctionName"]
        self.arn = config["FunctionArn"]
        self.role_arn = config["Role"]
        self.timeout = config["Timeout"]
        self.environment = config.get("Environment", {}).get("Variables", {})
        module_name, _, attribute = config["Handler"].rpartition(".")
        self.handler = getattr(importlib.import_module(module_name), attribute)
        self.calls: list[tuple[str, str, dict]] = []
        self.fail_once: set[str] = set()
        self.fail_when = None  # optional predicate (operation, params) -> bool
        self.overrides: dict[str, str] = {}

    @contextmanager
    def _environment(self):
        from scheduler_runtime.aws.config import ENV_KEYS

        saved = {k: os.environ.get(k) for k in (*ENV_KEYS, "LOG_LEVEL")}
        for key in saved:
            os.environ.pop(key, None)
        os.environ.update({**self.environment, **self.overrides})
        try:
            yield
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    @contextmanager
    def _recording(self):
        from botocore.client import BaseClient

        original = BaseClient._make_api_call
        function = self

        def recording(client, operation_name, params):
            function.calls.append((client.meta.service_model.signing_name, operation_name, params))
            if operation_name in function.fail_once:
                function.fail_once.discard(operation_name)
                raise ConnectionError(f"injected failure of {operation_name}")
            if function.fail_when is not None and function.fail_when(operation_name, params):
                raise ConnectionError(f"injected failure of {operation_name}")
            return original(client, operation_name, params)

        with mock.patch.object(BaseClient, "_make_api_call", recording):
            yield

    def __call__(self, event: dict) -> dict:
        with self._environment(), self._recording():
            return self.handler(event, LambdaContext(self.name, self.timeout))


class StreamMapping:
    """A DynamoDB stream event source mapping, as deployed: its stream, filter and function."""

    def __init__(self, session, mapping: dict, function: DeployedFunction) -> None:
        self.streams = session.client("dynamodbstreams")
        self.arn = mapping["EventSourceArn"]
        self.patterns = [json.loads(f["Pattern"]) for f in mapping.get("FilterCriteria", {}).get("Filters", [])]
        self.batch_size = mapping.get("BatchSize", 100)
        self.function = function
        self.positions: dict[str, str] = {}

    def poll(self) -> int:
        """Hand every new matching record to the function; returns how many were handed over."""
        handed = 0
        for shard in self.streams.describe_stream(StreamArn=self.arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            params = {"StreamArn": self.arn, "ShardId": shard_id, "ShardIteratorType": "TRIM_HORIZON"}
            if shard_id in self.positions:
                params.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=self.positions[shard_id])
            iterator = self.streams.get_shard_iterator(**params)["ShardIterator"]
            records = self.streams.get_records(ShardIterator=iterator, Limit=self.batch_size)["Records"]
            if not records:
                continue
            lambda_records = []
            for record in records:
                dynamodb = dict(record["dynamodb"])
                created = dynamodb.get("ApproximateCreationDateTime")
                if hasattr(created, "timestamp"):
                    dynamodb["ApproximateCreationDateTime"] = created.timestamp()
                lambda_records.append({**record, "dynamodb": dynamodb, "eventSourceARN": self.arn, "awsRegion": REGION})
            matching = [r for r in lambda_records if any(matches(p, r) for p in self.patterns)]
            if matching:
                response = self.function({"Records": matching}) or {}
                assert response.get("batchItemFailures", []) == [], response
                handed += len(matching)
            self.positions[shard_id] = records[-1]["dynamodb"]["SequenceNumber"]
        return handed


class QueueMapping:
    """An SQS event source mapping, as deployed: its queue, batch size and function."""

    def __init__(self, session, mapping: dict, function: DeployedFunction) -> None:
        self.sqs = session.client("sqs")
        self.arn = mapping["EventSourceArn"]
        self.url = self.sqs.get_queue_url(QueueName=self.arn.rsplit(":", 1)[1])["QueueUrl"]
        self.batch_size = mapping.get("BatchSize", 10)
        self.function = function
        self.visibility_timeout: int | None = None  # the queue's own, unless a test shortens it

    def poll(self) -> int:
        extra = {} if self.visibility_timeout is None else {"VisibilityTimeout": self.visibility_timeout}
        messages = self.sqs.receive_message(QueueUrl=self.url, MaxNumberOfMessages=self.batch_size,
                                            AttributeNames=["All"], MessageAttributeNames=["All"],
                                            **extra).get("Messages", [])
        if not messages:
            return 0
        records = [{"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
                    "attributes": m.get("Attributes", {}), "messageAttributes": {}, "eventSource": "aws:sqs",
                    "eventSourceARN": self.arn, "awsRegion": REGION} for m in messages]
        response = self.function({"Records": records}) or {}
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] not in failed:
                self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=message["ReceiptHandle"])
        return len(messages)


def iam_requests(service: str, operation: str, params: dict) -> list[tuple[str, str]]:
    """The (IAM action, resource ARN) pairs one API call is authorized as."""
    account = ACCOUNT
    table = lambda name: f"arn:aws:dynamodb:{REGION}:{account}:table/{name}"  # noqa: E731
    queue = lambda url: f"arn:aws:sqs:{REGION}:{account}:{url.rsplit('/', 1)[1]}"  # noqa: E731
    if service == "dynamodb":
        if operation == "TransactWriteItems":
            kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
            return [(f"dynamodb:{kinds[kind]}", table(body["TableName"]))
                    for item in params["TransactItems"] for kind, body in item.items()]
        if operation in ("BatchWriteItem", "BatchGetItem"):
            return [(f"dynamodb:{operation}", table(name)) for name in params["RequestItems"]]
        if params.get("IndexName"):  # a Query of an index is authorized on the index's ARN
            return [(f"dynamodb:{operation}", f"{table(params['TableName'])}/index/{params['IndexName']}")]
        return [(f"dynamodb:{operation}", table(params["TableName"]))]
    if service == "sqs":
        action = "sqs:SendMessage" if operation == "SendMessageBatch" else f"sqs:{operation}"
        return [(action, queue(params["QueueUrl"]))]
    if service == "lambda" and operation == "Invoke":
        return [("lambda:InvokeFunction", params["FunctionName"])]
    # the targets' calls: each names its resource by ARN (a bus per entry)
    if (service, operation) == ("events", "PutEvents"):
        return [("events:PutEvents", entry["EventBusName"]) for entry in params["Entries"]]
    resource_param = {("sns", "Publish"): "TopicArn", ("states", "StartExecution"): "stateMachineArn",
                      ("secretsmanager", "GetSecretValue"): "SecretId"}.get((service, operation))
    if resource_param is not None:
        return [(f"{service}:{operation}", params[resource_param])]
    return [(f"{service}:{operation}", "*")]


def allowed(statements: list[dict], action: str, resource: str) -> bool:
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if (statement["Effect"] == "Allow" and any(fnmatchcase(action.lower(), a.lower()) for a in actions)
                and any(fnmatchcase(resource, r) for r in resources)):
            return True
    return False


def role_statements(session, role_arn: str) -> list[dict]:
    iam = session.client("iam")
    role_name = role_arn.rsplit("/", 1)[1]
    statements = []
    for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        statements.extend(document["Statement"])
    assert not iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    return statements


# --- driving the pipeline ------------------------------------------------------------------------
def drive_until(predicate, steps, timeout: float = 30.0):
    """Run each of ``steps`` (pollers) until ``predicate()`` holds; return what it returned."""
    handed = [0] * len(steps)

    def driven():
        for i, step in enumerate(steps):
            outcome = step()
            handed[i] += outcome if isinstance(outcome, int) else 1
        return predicate()

    try:
        return wait_until(driven, timeout, "the pipeline got there", interval=0.2)
    except AssertionError as late:
        raise AssertionError(f"{late}; records/messages handed over per step: {handed}") from None


def receive_one(session, queue_url: str) -> dict | None:
    messages = session.client("sqs").receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1,
                                                     MessageAttributeNames=["All"], AttributeNames=["All"]).get("Messages")
    return messages[0] if messages else None


# --- the HTTP API, which moto's CloudFormation skips ---------------------------------------------
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::URLSuffix": "amazonaws.com"}
#: The template's API Gateway v2 resources, in dependency order, and the id each create returns.
HTTP_API_TYPES = {"Api": "ApiId", "Authorizer": "AuthorizerId", "Integration": "IntegrationId", "Route": "RouteId",
                  "Stage": "StageName"}


class TemplateResolver:
    """Template values with ``Ref``/``Fn::GetAtt``/``Fn::Join`` resolved against what is deployed:
    moto's physical ids, plus ids registered for resources created outside CloudFormation."""

    def __init__(self, template: dict, resources: dict, functions: dict) -> None:
        self.template = template
        self.physical = {k: r.get("PhysicalResourceId") for k, r in resources.items()}
        self.function_arns = {f["Configuration"]["FunctionName"]: f["Configuration"]["FunctionArn"]
                              for f in functions.values()}

    def __call__(self, value):
        if isinstance(value, list):
            return [self(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "Ref" in value:
            return PSEUDO.get(value["Ref"]) or self.physical[value["Ref"]]
        if "Fn::Join" in value:
            delimiter, parts = value["Fn::Join"]
            return delimiter.join(str(self(p)) for p in parts)
        if "Fn::GetAtt" in value:
            return self._get_att(*value["Fn::GetAtt"])
        return {k: self(v) for k, v in value.items()}

    def _get_att(self, logical_id: str, attribute: str) -> str:
        kind = self.template["Resources"][logical_id]["Type"]
        name = self.physical[logical_id]
        if (kind, attribute) == ("AWS::Lambda::Function", "Arn"):
            return self.function_arns[name]
        if (kind, attribute) == ("AWS::Logs::LogGroup", "Arn"):
            return f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:*"
        raise KeyError(f"no GetAtt {logical_id}.{attribute} ({kind}) in this replay")


def replay_http_api(session, template: dict, resolve: TemplateResolver) -> dict:
    """Create the template's ``AWS::ApiGatewayV2::*`` resources through moto's apigatewayv2 API
    (their CloudFormation properties are that API's parameters); returns logical id -> created id."""
    client = session.client("apigatewayv2")
    created = {}
    for kind, id_key in HTTP_API_TYPES.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == f"AWS::ApiGatewayV2::{kind}":
                answer = getattr(client, f"create_{kind.lower()}")(**resolve(resource["Properties"]))
                created[logical_id] = resolve.physical[logical_id] = answer[id_key]
    return created


def http_api_event(route_key: str, path: str, body: dict | None, api_id: str) -> dict:
    """What API Gateway's HTTP API (payload format 2.0) hands the api function for one request
    (``path`` may carry a query string)."""
    from urllib.parse import parse_qsl

    path, _, query = path.partition("?")
    method, template_path = route_key.split(" ", 1)
    names = [s[1:-1] for s in template_path.split("/") if s.startswith("{")]
    values = [v for t, v in zip(template_path.split("/"), path.split("/")) if t.startswith("{")]
    return {
        "version": "2.0", "routeKey": route_key, "rawPath": path, "rawQueryString": query,
        **({"queryStringParameters": dict(parse_qsl(query))} if query else {}),
        "headers": {"content-type": "application/json"},
        "requestContext": {"accountId": ACCOUNT, "apiId": api_id, "stage": "$default", "routeKey": route_key,
                           "http": {"method": method, "path": path, "protocol": "HTTP/1.1"}},
        **({"pathParameters": dict(zip(names, values))} if names else {}),
        **({"body": json.dumps(body)} if body is not None else {}),
        "isBase64Encoded": False,
    }


def route_for(route_keys, method: str, path: str) -> str:
    """The route key API Gateway would match ``method path`` to; AssertionError when none does."""
    parts = path.partition("?")[0].split("/")
    for key in route_keys:
        verb, template_path = key.split(" ", 1)
        template_parts = template_path.split("/")
        if verb == method and len(template_parts) == len(parts) and all(
                t == p or (t.startswith("{") and p) for t, p in zip(template_parts, parts)):
            return key
    raise AssertionError(f"no route of the deployed HTTP API matches {method} {path}: {sorted(route_keys)}")


# --- scenarios, each run once per module whichever asks first ---------------------------------------
#: The scenarios that drive the deployed functions, by name. Each runs once per module, whichever
#: asks first: its own test, or an audit of every call the scenarios made (so the audits do not
#: depend on the order the tests run in).
SCENARIOS: dict = {}


def scenario(function):
    """Register ``function(deployed, wired, api)`` as a scenario; the test pytest collects runs it once."""
    SCENARIOS[function.__name__] = function

    def test(workload):
        workload.run(function.__name__)

    test.__name__, test.__doc__ = function.__name__, function.__doc__
    return test


class Workload:
    def __init__(self, deployed, wired, api) -> None:
        self.args = (deployed, wired, api)
        self.outcomes: dict = {}

    def run(self, name: str) -> None:
        """Run a scenario unless it ran already; raise what it raised (then or now)."""
        if name not in self.outcomes:
            try:
                SCENARIOS[name](*self.args)
                self.outcomes[name] = None
            except (Exception, pytest.fail.Exception) as exc:  # noqa: BLE001 - reported by the scenario's own test
                self.outcomes[name] = exc
        if self.outcomes[name] is not None:
            raise self.outcomes[name]

    def run_all(self) -> None:
        """Every scenario, for the audits; a failing one is reported by its own test."""
        for name in SCENARIOS:
            try:
                self.run(name)
            except (Exception, pytest.fail.Exception):  # noqa: BLE001
                pass
