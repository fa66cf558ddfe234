"""Deploy the example's synthesized template into moto's CloudFormation, then run the
deployed functions' handlers in-process with their *deployed* environment and their
*deployed* event source mappings and filters, and follow schedules to the target queues.

This proves the wiring (names, environment variables, filters, handler strings, asset
contents), not only the template's shape. moto would itself try to invoke the functions
behind the event source mappings (it needs Docker for that, and without it swallows SQS
messages), so the mappings are read, then deleted, and this module drives them.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import time
import zipfile
from contextlib import contextmanager
from fnmatch import fnmatchcase
from unittest import mock
from pathlib import Path

import pytest

from cdk_delayed_scheduler._runtime_asset import runtime_asset_path
from cdk_delayed_scheduler.local.event_filter import matches

pytestmark = [
    pytest.mark.slow,
    # moto has no CloudFormation model for QueuePolicy and some API Gateway types; it skips them.
    pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning"),
]

REGION = "us-east-1"
DEPLOYED_STACK = "Wiring"
FUNCTION_KEYS = ("ApiFunction", "FastTrackFunction", "SweeperFunction", "EnqueuerFunction", "DispatcherFunction")


@pytest.fixture(scope="module")
def moto_endpoint():
    from moto.server import ThreadedMotoServer

    saved = dict(os.environ)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    os.environ.update(
        AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION=REGION,
        AWS_REGION=REGION, AWS_ACCOUNT_ID_ENDPOINT_MODE="disabled", AWS_ENDPOINT_URL=f"http://{host}:{port}",
    )
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        os.environ.pop(key, None)
    try:
        yield os.environ["AWS_ENDPOINT_URL"]
    finally:
        server.stop()
        os.environ.clear()
        os.environ.update(saved)


def _zip_dir(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory).as_posix())
    return buffer.getvalue()


@pytest.fixture(scope="module")
def deployed(example_assembly, moto_endpoint):
    """The example stack deployed into moto CloudFormation, with its mappings read and removed."""
    import boto3

    outdir, stack_name, _template = example_assembly
    session = boto3.session.Session()
    account = session.client("sts").get_caller_identity()["Account"]
    # What `cdk bootstrap` leaves behind and the template's BootstrapVersion rule reads.
    session.client("ssm").put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="30", Type="String")
    s3 = session.client("s3")
    manifest = json.loads((outdir / f"{stack_name}.assets.json").read_text())
    for asset in manifest["files"].values():
        source = outdir / asset["source"]["path"]
        body = _zip_dir(source) if source.is_dir() else source.read_bytes()
        for destination in asset["destinations"].values():
            bucket = destination["bucketName"].replace("${AWS::AccountId}", account).replace("${AWS::Region}", REGION)
            if bucket not in [b["Name"] for b in s3.list_buckets()["Buckets"]]:
                s3.create_bucket(Bucket=bucket)
            s3.put_object(Bucket=bucket, Key=destination["objectKey"], Body=body)

    cfn = session.client("cloudformation")
    cfn.create_stack(
        StackName=DEPLOYED_STACK,
        TemplateBody=(outdir / f"{stack_name}.template.json").read_text(),
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
    )
    deadline = time.monotonic() + 120
    while True:
        stack = cfn.describe_stacks(StackName=DEPLOYED_STACK)["Stacks"][0]
        if not stack["StackStatus"].endswith("_IN_PROGRESS") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    resources = {r["LogicalResourceId"]: r for r in cfn.list_stack_resources(StackName=DEPLOYED_STACK)["StackResourceSummaries"]}

    lam = session.client("lambda")
    functions = {}
    for key in FUNCTION_KEYS:
        (logical_id,) = [lid for lid, r in resources.items() if r["ResourceType"] == "AWS::Lambda::Function" and f"Timers{key}" in lid]
        functions[key] = lam.get_function(FunctionName=resources[logical_id]["PhysicalResourceId"])
    mappings = lam.list_event_source_mappings()["EventSourceMappings"]
    for mapping in mappings:  # from here on, this module plays Lambda's pollers
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        lam.delete_event_source_mapping(UUID=mapping["UUID"])
    _forget_stream_triggers(account)
    return {"session": session, "stack": stack, "resources": resources, "functions": functions,
            "mappings": mappings, "outputs": {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}}


def test_the_stack_is_create_complete(deployed):
    assert deployed["stack"]["StackStatus"] == "CREATE_COMPLETE", deployed["stack"].get("StackStatusReason")
    types = {r["ResourceType"] for r in deployed["resources"].values()}
    assert {"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Lambda::Function", "AWS::Lambda::EventSourceMapping",
            "AWS::Events::Rule", "AWS::ApiGateway::RestApi"} <= types


def test_deployed_code_is_the_runtime_without_tests_or_bytecode(deployed):
    """The zip every function runs holds exactly the runtime's sources (hash-stable asset)."""
    session = deployed["session"]
    s3 = session.client("s3")
    expected = {
        p.relative_to(runtime_asset_path()).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in runtime_asset_path().rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and "tests" not in p.parts
    }
    bucket = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("cdk-hnb659fds-assets-")][0]
    zips = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"] if o["Key"].endswith(".zip")]
    assert len(zips) == 1, zips
    with zipfile.ZipFile(io.BytesIO(s3.get_object(Bucket=bucket, Key=zips[0])["Body"].read())) as archive:
        shipped = {name: hashlib.sha256(archive.read(name)).hexdigest() for name in archive.namelist()}
    assert shipped == expected
    handlers = {f["Configuration"]["Handler"] for f in deployed["functions"].values()}
    assert handlers == {f"scheduler_runtime.handlers.{m}.handler" for m in
                        ("api", "fast_track", "sweeper", "enqueuer", "dispatcher")}


def _forget_stream_triggers(account: str) -> None:
    """moto (5.2) keeps a table's stream trigger after its mapping is deleted, and on each
    write tries to invoke the function (in Docker) and then discards the stream's records.
    The server runs in this process, so drop those registrations from its backend."""
    from moto.dynamodb.models import dynamodb_backends

    for table in dynamodb_backends[account][REGION].tables.values():
        table.lambda_event_source_mappings.clear()


class _Context:
    """The parts of Lambda's context object the runtime reads."""

    def __init__(self, function_name: str, timeout_seconds: float) -> None:
        self.function_name = function_name
        self.aws_request_id = f"wiring-{time.monotonic_ns()}"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class _Lambda:
    """A deployed function, run in-process with exactly its deployed environment.

    Every AWS call its handler makes is recorded (``calls``), so the test can check it against
    the function's deployed role; ``fail_once`` injects one failure of an operation.
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

    @contextmanager
    def _environment(self):
        from scheduler_runtime.aws.config import ENV_KEYS

        saved = {k: os.environ.get(k) for k in (*ENV_KEYS, "LOG_LEVEL")}
        for key in saved:
            os.environ.pop(key, None)
        os.environ.update(self.environment)
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
            return self.handler(event, _Context(self.name, self.timeout))


class _StreamMapping:
    """A DynamoDB stream event source mapping, as deployed: its stream, filter and function."""

    def __init__(self, session, mapping: dict, function: _Lambda) -> None:
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


class _QueueMapping:
    """An SQS event source mapping, as deployed: its queue, batch size and function."""

    def __init__(self, session, mapping: dict, function: _Lambda) -> None:
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


@pytest.fixture(scope="module")
def wired(deployed):
    session = deployed["session"]
    functions = {key: _Lambda(description) for key, description in deployed["functions"].items()}
    by_arn = {f.arn: f for f in functions.values()}
    streams, queues = {}, {}
    for mapping in deployed["mappings"]:
        function = by_arn[mapping["FunctionArn"]]
        if ":dynamodb:" in mapping["EventSourceArn"]:
            streams[function.name] = _StreamMapping(session, mapping, function)
        else:
            queues[function.name] = _QueueMapping(session, mapping, function)
    return functions, streams, queues


def test_mappings_connect_the_right_sources_to_the_right_functions(deployed, wired):
    functions, streams, queues = wired
    assert set(streams) == {functions["FastTrackFunction"].name, functions["EnqueuerFunction"].name}
    assert set(queues) == {functions["DispatcherFunction"].name}
    table_name = functions["ApiFunction"].environment["TABLE_NAME"]
    for mapping in streams.values():
        assert f":table/{table_name}/stream/" in mapping.arn
        assert mapping.patterns, "a stream mapping without a filter would hand every record over"
    (queue,) = queues.values()
    assert queue.url.rsplit("/", 1)[1] == functions["DispatcherFunction"].environment["DELAYER_QUEUE_URL"].rsplit("/", 1)[1]
    for mapping in deployed["mappings"]:
        assert mapping.get("FunctionResponseTypes") == ["ReportBatchItemFailures"]


def test_the_sweep_rule_targets_the_sweeper(deployed, wired):
    functions, _, _ = wired
    events = deployed["session"].client("events")
    (rule_id,) = [lid for lid, r in deployed["resources"].items() if r["ResourceType"] == "AWS::Events::Rule"]
    rule_name = deployed["resources"][rule_id]["PhysicalResourceId"]
    rule = events.describe_rule(Name=rule_name)
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    (target,) = events.list_targets_by_rule(Rule=rule_name)["Targets"]
    assert target["Arn"] == functions["SweeperFunction"].arn


def _api(function: _Lambda, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    segments = [s for s in path.split("/") if s]
    event = {"httpMethod": method, "path": path,
             "resource": f"/{segments[0]}" if len(segments) == 1 else f"/{segments[0]}/{{id}}",
             "pathParameters": {"id": segments[1]} if len(segments) > 1 else None,
             "headers": {"content-type": "application/json"}, "isBase64Encoded": False,
             "body": json.dumps(body) if body is not None else None}
    response = function(event)
    return response["statusCode"], json.loads(response["body"])


def _drive_until(predicate, steps, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    handed = [0] * len(steps)
    while time.monotonic() < deadline:
        for i, step in enumerate(steps):
            outcome = step()
            handed[i] += outcome if isinstance(outcome, int) else 1
        result = predicate()
        if result:
            return result
        time.sleep(0.2)
    raise AssertionError(f"the pipeline did not get there in time; records/messages handed over per step: {handed}")


def _receive_one(session, queue_url: str) -> dict | None:
    messages = session.client("sqs").receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1,
                                                     MessageAttributeNames=["All"], AttributeNames=["All"]).get("Messages")
    return messages[0] if messages else None


def test_a_schedule_travels_fast_track_path_to_the_default_queue(deployed, wired):
    functions, streams, queues = wired
    session = deployed["session"]
    status, body = _api(functions["ApiFunction"], "POST", "/schedules",
                        {"id": "wiring-fast", "delaySeconds": 1, "payload": {"hello": "fast"}})
    assert status == 201, body
    fast, enqueue = streams[functions["FastTrackFunction"].name], streams[functions["EnqueuerFunction"].name]
    dispatch = queues[functions["DispatcherFunction"].name]
    deliveries_url = deployed["outputs"]["DeliveriesQueueUrl"]
    message = _drive_until(lambda: _receive_one(session, deliveries_url), [fast.poll, enqueue.poll, dispatch.poll])
    envelope = json.loads(message["Body"])
    assert envelope["id"] == "wiring-fast" and envelope["payload"] == {"hello": "fast"}
    assert envelope["target"] == "default" and envelope["attempt"] == 1
    assert message["MessageAttributes"]["dedupeKey"]["StringValue"] == envelope["dedupeKey"]
    status, body = _api(functions["ApiFunction"], "GET", "/schedules/wiring-fast")
    assert (status, body["status"]) == (200, "FIRED")


def test_a_schedule_the_fast_track_missed_is_swept_to_the_named_fifo_target(deployed, wired):
    functions, streams, queues = wired
    session = deployed["session"]
    fast, enqueue = streams[functions["FastTrackFunction"].name], streams[functions["EnqueuerFunction"].name]
    dispatch = queues[functions["DispatcherFunction"].name]
    status, body = _api(functions["ApiFunction"], "POST", "/schedules",
                        {"id": "wiring-swept", "delaySeconds": 0, "payload": [1, 2, 3], "target": "ordered"})
    assert status == 201, body
    # The fast track sees the INSERT too late (say it was throttled): skip its records ...
    fast.positions = {}
    for shard in fast.streams.describe_stream(StreamArn=fast.arn)["StreamDescription"]["Shards"]:
        iterator = fast.streams.get_shard_iterator(StreamArn=fast.arn, ShardId=shard["ShardId"],
                                                   ShardIteratorType="TRIM_HORIZON")["ShardIterator"]
        records = fast.streams.get_records(ShardIterator=iterator, Limit=1000)["Records"]
        if records:
            fast.positions[shard["ShardId"]] = records[-1]["dynamodb"]["SequenceNumber"]
    # ... so the every-minute sweep is what claims it.
    sweep = lambda: functions["SweeperFunction"]({"source": "aws.events", "detail-type": "Scheduled Event"})  # noqa: E731
    ordered_url = session.client("sqs").get_queue_url(QueueName="DelayedSchedulerExample-ordered.fifo")["QueueUrl"]
    message = _drive_until(lambda: _receive_one(session, ordered_url), [sweep, enqueue.poll, dispatch.poll])
    envelope = json.loads(message["Body"])
    assert (envelope["id"], envelope["payload"], envelope["target"]) == ("wiring-swept", [1, 2, 3], "ordered")
    assert message["Attributes"]["MessageGroupId"] == "orders"


def test_a_cancelled_schedule_is_never_enqueued(deployed, wired):
    """Cancelled inside the window, before the fast track saw it: the claim fails, and the deployed
    enqueuer filter drops the cancellation's REMOVE record (its old image is marked cancelled)."""
    functions, streams, queues = wired
    session = deployed["session"]
    fast, enqueue = streams[functions["FastTrackFunction"].name], streams[functions["EnqueuerFunction"].name]
    for mapping in (fast, enqueue):
        mapping.poll()  # start from here
    status, _ = _api(functions["ApiFunction"], "POST", "/schedules",
                     {"id": "wiring-cancelled", "delaySeconds": 2, "payload": None})
    assert status == 201
    status, body = _api(functions["ApiFunction"], "DELETE", "/schedules/wiring-cancelled")
    assert (status, body["status"]) == (200, "CANCELLED")
    assert fast.poll() == 1  # the INSERT
    assert enqueue.poll() == 0  # the cancellation's REMOVE is filtered out by the deployed pattern
    time.sleep(2.5)
    functions["SweeperFunction"]({"source": "aws.events", "detail-type": "Scheduled Event"})
    assert enqueue.poll() == 0
    for mapping in queues.values():
        assert mapping.poll() == 0
    delayer_url = functions["DispatcherFunction"].environment["DELAYER_QUEUE_URL"]
    attributes = session.client("sqs").get_queue_attributes(
        QueueUrl=delayer_url, AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
                                              "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    assert all(value == "0" for value in attributes.values()), attributes
    assert _receive_one(session, deployed["outputs"]["DeliveriesQueueUrl"]) is None
    status, body = _api(functions["ApiFunction"], "GET", "/schedules/wiring-cancelled")
    assert (status, body["status"]) == (200, "CANCELLED")


def test_the_api_routes_reach_the_api_function_with_iam_auth(deployed, wired):
    functions, _, _ = wired
    apigw = deployed["session"].client("apigateway")
    (api_id,) = [r["PhysicalResourceId"] for r in deployed["resources"].values()
                 if r["ResourceType"] == "AWS::ApiGateway::RestApi"]
    routes = {}
    for resource in apigw.get_resources(restApiId=api_id)["items"]:
        for verb in resource.get("resourceMethods", {}):
            method = apigw.get_method(restApiId=api_id, resourceId=resource["id"], httpMethod=verb)
            routes[(verb, resource["path"])] = method
    assert set(routes) == {("POST", "/schedules"), ("GET", "/schedules/{id}"), ("DELETE", "/schedules/{id}"),
                           ("POST", "/schedule-batches")}
    for method in routes.values():
        assert method["authorizationType"] == "AWS_IAM"
        assert method["methodIntegration"]["type"] == "AWS_PROXY"
        assert functions["ApiFunction"].arn in method["methodIntegration"]["uri"]


def test_a_batch_create_through_the_deployed_api_function(deployed, wired):
    """POST /schedule-batches on the deployed function: each item answered in order with its own
    status, valid ones stored (far in the future, so the other tests' pipelines leave them be)."""
    functions, _, _ = wired
    api = functions["ApiFunction"]
    first = {"id": "wiring-batch-1", "delaySeconds": 3600, "payload": {"n": 1}}
    status, body = _api(api, "POST", "/schedule-batches", {"schedules": [
        first,
        {"id": "wiring-batch-2", "dueAt": "not a time", "payload": None},
        {"id": "wiring-batch-3", "delaySeconds": 7200, "payload": [3], "target": "ordered"},
    ]})
    assert status == 200, body
    results = body["results"]
    assert [r["status"] for r in results] == [201, 400, 201], results
    assert (results[0]["body"]["id"], results[0]["body"]["target"]) == ("wiring-batch-1", "default")
    assert results[1]["body"]["field"] == "schedules[1].dueAt"
    assert (results[2]["body"]["id"], results[2]["body"]["target"]) == ("wiring-batch-3", "ordered")
    # a replay of the first item answers 200 with the same body; the same id with another body, 409
    status, body = _api(api, "POST", "/schedule-batches", {"schedules": [
        first, {**first, "payload": {"n": 2}}]})
    assert status == 200
    assert [r["status"] for r in body["results"]] == [200, 409], body
    assert body["results"][0]["body"] == results[0]["body"]
    assert body["results"][1]["body"]["field"] == "schedules[1].id"
    for schedule_id in ("wiring-batch-1", "wiring-batch-3"):
        status, read = _api(api, "GET", f"/schedules/{schedule_id}")
        assert (status, read["status"]) == (200, "SCHEDULED"), read
    status, _ = _api(api, "GET", "/schedules/wiring-batch-2")
    assert status == 404
    # a bad envelope is refused as a whole
    status, body = _api(api, "POST", "/schedule-batches", {"schedules": []})
    assert (status, body["field"]) == (400, "schedules")


def test_an_enqueue_failure_is_written_back_and_delivered_later(deployed, wired):
    """Invariant 3 on the deployed wiring: the delayer send fails after the claim, the enqueuer
    writes the timer back (its role must allow that), and the timer is claimed again."""
    functions, streams, queues = wired
    session = deployed["session"]
    fast, enqueue = streams[functions["FastTrackFunction"].name], streams[functions["EnqueuerFunction"].name]
    dispatch = queues[functions["DispatcherFunction"].name]
    status, _ = _api(functions["ApiFunction"], "POST", "/schedules",
                     {"id": "wiring-written-back", "delaySeconds": 1, "payload": "again"})
    assert status == 201
    functions["EnqueuerFunction"].fail_once.add("SendMessageBatch")
    message = _drive_until(lambda: _receive_one(session, deployed["outputs"]["DeliveriesQueueUrl"]),
                           [fast.poll, enqueue.poll, dispatch.poll])
    assert json.loads(message["Body"])["id"] == "wiring-written-back"
    assert not functions["EnqueuerFunction"].fail_once, "the injected failure never happened"
    operations = [op for _, op, _ in functions["EnqueuerFunction"].calls]
    assert "BatchWriteItem" in operations


def test_a_delivery_that_keeps_failing_is_parked_in_the_dead_letter_queue_with_its_reason(deployed, wired):
    """The deployed MAX_RECEIVE_COUNT matches the delayer queue's redrive policy, so the dispatcher,
    not the redrive, parks the envelope, with the reason, and marks the schedule FAILED."""
    functions, streams, queues = wired
    session = deployed["session"]
    sqs = session.client("sqs")
    fast, enqueue = streams[functions["FastTrackFunction"].name], streams[functions["EnqueuerFunction"].name]
    dispatch = queues[functions["DispatcherFunction"].name]
    dispatcher = functions["DispatcherFunction"]
    redrive = json.loads(sqs.get_queue_attributes(QueueUrl=dispatch.url, AttributeNames=["RedrivePolicy"])
                         ["Attributes"]["RedrivePolicy"])
    assert int(dispatcher.environment["MAX_RECEIVE_COUNT"]) == redrive["maxReceiveCount"]
    deliveries_url = deployed["outputs"]["DeliveriesQueueUrl"]
    dispatcher.fail_when = lambda op, params: op == "SendMessage" and params.get("QueueUrl") == deliveries_url
    dispatch.visibility_timeout = 1  # retry within the test rather than after the queue's 6 minutes
    try:
        status, _ = _api(functions["ApiFunction"], "POST", "/schedules",
                         {"id": "wiring-parked", "delaySeconds": 0, "payload": {"n": 1}})
        assert status == 201
        dlq_url = dispatcher.environment["DEAD_LETTER_QUEUE_URL"]
        message = _drive_until(lambda: _receive_one(session, dlq_url), [fast.poll, enqueue.poll, dispatch.poll],
                               timeout=45)
    finally:
        dispatcher.fail_when = None
        dispatch.visibility_timeout = None
    parked = json.loads(message["Body"])
    assert (parked["id"], parked["payload"], parked["attempt"]) == ("wiring-parked", {"n": 1}, redrive["maxReceiveCount"])
    assert "injected failure of SendMessage" in message["MessageAttributes"]["reason"]["StringValue"]
    status, body = _api(functions["ApiFunction"], "GET", "/schedules/wiring-parked")
    assert (status, body["status"]) == (200, "FAILED")


def _iam_requests(service: str, operation: str, params: dict) -> list[tuple[str, str]]:
    """The (IAM action, resource ARN) pairs one API call is authorized as."""
    account = "123456789012"
    table = lambda name: f"arn:aws:dynamodb:{REGION}:{account}:table/{name}"  # noqa: E731
    queue = lambda url: f"arn:aws:sqs:{REGION}:{account}:{url.rsplit('/', 1)[1]}"  # noqa: E731
    if service == "dynamodb":
        if operation == "TransactWriteItems":
            kinds = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}
            return [(f"dynamodb:{kinds[kind]}", table(body["TableName"]))
                    for item in params["TransactItems"] for kind, body in item.items()]
        if operation in ("BatchWriteItem", "BatchGetItem"):
            return [(f"dynamodb:{operation}", table(name)) for name in params["RequestItems"]]
        return [(f"dynamodb:{operation}", table(params["TableName"]))]
    if service == "sqs":
        action = "sqs:SendMessage" if operation == "SendMessageBatch" else f"sqs:{operation}"
        return [(action, queue(params["QueueUrl"]))]
    if service == "lambda" and operation == "Invoke":
        return [("lambda:InvokeFunction", params["FunctionName"])]
    return [(f"{service}:{operation}", "*")]


def _allowed(statements: list[dict], action: str, resource: str) -> bool:
    for statement in statements:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        if (statement["Effect"] == "Allow" and any(fnmatchcase(action.lower(), a.lower()) for a in actions)
                and any(fnmatchcase(resource, r) for r in resources)):
            return True
    return False


def _role_statements(session, role_arn: str) -> list[dict]:
    iam = session.client("iam")
    role_name = role_arn.rsplit("/", 1)[1]
    statements = []
    for name in iam.list_role_policies(RoleName=role_name)["PolicyNames"]:
        document = iam.get_role_policy(RoleName=role_name, PolicyName=name)["PolicyDocument"]
        statements.extend(document["Statement"])
    assert not iam.list_attached_role_policies(RoleName=role_name)["AttachedPolicies"]
    return statements


def test_every_call_the_handlers_made_is_allowed_by_their_deployed_roles(deployed, wired):
    """Least privilege is enough: each AWS call a handler made above is allowed by its own role's
    deployed policy, on that resource (moto does not enforce IAM, so this test does)."""
    functions, _, _ = wired
    session = deployed["session"]
    statements = {key: _role_statements(session, f.role_arn) for key, f in functions.items()}
    denied, made = [], {}
    for key, function in functions.items():
        made[key] = sorted({op for _, op, _ in function.calls})
        for service, operation, params in function.calls:
            for action, resource in _iam_requests(service, operation, params):
                if not _allowed(statements[key], action, resource):
                    denied.append((key, action, resource))
    assert denied == []
    assert all(made.values()), made  # every function ran and called AWS
    # the check can fail: another function's call is not allowed by a role that does not need it
    write_back = next(params for _, op, params in functions["EnqueuerFunction"].calls if op == "BatchWriteItem")
    (action, resource), = _iam_requests("dynamodb", "BatchWriteItem", write_back)
    assert not _allowed(statements["ApiFunction"], action, resource)
