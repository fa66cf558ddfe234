"""Deploy the example's synthesized template into moto's CloudFormation, then run the
deployed functions' handlers in-process with their *deployed* environment and their
*deployed* event source mappings and filters, and follow schedules to the target queues.

This proves the wiring (names, environment variables, filters, handler strings, asset
contents), not only the template's shape. moto would itself try to invoke the functions
behind the event source mappings (it needs Docker for that, and without it swallows SQS
messages), so the mappings are read, then deleted, and this module drives them.

The HTTP API (the construct's default): moto 5.2 has no CloudFormation model for any
``AWS::ApiGatewayV2::*`` type. Its CloudFormation skips them (a ``Ref`` to one resolves to
``None``), so the module replays the template's Api, Integration, Route and Stage through moto's
apigatewayv2 API, with their references resolved to what was deployed, reads them back, and
drives the api function with the payload format 2.0 events of those routes. moto does not serve
the HTTP API's endpoint (nothing reaches a Lambda integration) and enforces no IAM, so a route's
authorization and the callers' grants are checked here against the policies, not by a request.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import zipfile
from contextlib import contextmanager
from pathlib import Path

import pytest
from moto_listing_and_periodic import (test_a_periodic_timer_is_delivered_and_armed_again,  # noqa: F401 - collected
                                       test_the_listing_pages_through_the_index)
from moto_groups import test_a_group_cancel_stops_its_members_through_the_deployed_index  # noqa: F401 - collected
from moto_stack import deploy_assembly, moto_server_environment
from moto_wiring import (ACCOUNT, REGION, DeployedFunction, QueueMapping, StreamMapping, TemplateResolver, Workload,
                         allowed, forget_stream_triggers, http_api_event, iam_requests, replay_http_api,
                         role_statements, route_for, scenario)
from moto_wiring import drive_until as _drive_until
from moto_wiring import receive_one as _receive_one

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler._runtime_asset import runtime_asset_path

pytestmark = [
    pytest.mark.slow,
    # moto has no CloudFormation model for QueuePolicy, EventInvokeConfig or API Gateway v2; it skips them.
    pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning"),
]

DEPLOYED_STACK = "Wiring"
FUNCTION_KEYS = ("ApiFunction", "SweeperFunction", "EnqueuerFunction", "DispatcherFunction")
#: What moto's CloudFormation leaves out of the deployed stack (it warns "No Moto CloudFormation support").
SKIPPED_BY_MOTO = {"AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Integration", "AWS::ApiGatewayV2::Route",
                   "AWS::ApiGatewayV2::Stage", "AWS::SQS::QueuePolicy", "AWS::Lambda::EventInvokeConfig"}
SWEEP_EVENT = {"source": "aws.events", "detail-type": "Scheduled Event"}


@pytest.fixture(scope="module")
def moto_endpoint():
    with moto_server_environment() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def deployed(example_assembly, moto_endpoint):
    """The example stack deployed into moto CloudFormation, with its mappings read and removed."""
    import boto3

    outdir, stack_name, template = example_assembly
    session = boto3.session.Session()
    account = session.client("sts").get_caller_identity()["Account"]
    stack, resources = deploy_assembly(session, outdir, stack_name, DEPLOYED_STACK)

    lam = session.client("lambda")
    functions = {}
    for key in FUNCTION_KEYS:
        (logical_id,) = [lid for lid, r in resources.items() if r["ResourceType"] == "AWS::Lambda::Function" and f"Timers{key}" in lid]
        functions[key] = lam.get_function(FunctionName=resources[logical_id]["PhysicalResourceId"])
    mappings = lam.list_event_source_mappings()["EventSourceMappings"]
    for mapping in mappings:  # from here on, this module plays Lambda's pollers
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        lam.delete_event_source_mapping(UUID=mapping["UUID"])
    forget_stream_triggers(account)
    return {"session": session, "stack": stack, "resources": resources, "functions": functions, "template": template,
            "mappings": mappings, "outputs": {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}}


def test_the_stack_is_create_complete(deployed):
    assert deployed["stack"]["StackStatus"] == "CREATE_COMPLETE", deployed["stack"].get("StackStatusReason")
    types = {r["ResourceType"] for r in deployed["resources"].values()}
    assert {"AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::Lambda::Function", "AWS::Lambda::EventSourceMapping",
            "AWS::Events::Rule", "AWS::Lambda::Permission", "AWS::Logs::LogGroup"} <= types
    # exactly these types are what moto's CloudFormation cannot create; the HTTP API's are replayed below
    template_types = {r["Type"] for r in deployed["template"]["Resources"].values()} - {"AWS::CDK::Metadata"}
    assert template_types - types == SKIPPED_BY_MOTO


def _sources(root: Path, prefix: str = "") -> dict[str, str]:
    return {prefix + p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc" and "tests" not in p.parts}


def test_deployed_code_is_the_runtime_and_tzdata_without_tests_or_bytecode(deployed):
    """The zip every function runs holds exactly the runtime's sources and the installed tzdata package
    (the zone files cron schedules need), and nothing else (hash-stable asset)."""
    session = deployed["session"]
    s3 = session.client("s3")
    tzdata = Path(next(iter(importlib.util.find_spec("tzdata").submodule_search_locations)))
    expected = {**_sources(runtime_asset_path()), **_sources(tzdata, "tzdata/")}
    assert "tzdata/zoneinfo/Europe/Paris" in expected
    bucket = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("cdk-hnb659fds-assets-")][0]
    zips = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket)["Contents"] if o["Key"].endswith(".zip")]
    assert len(zips) == 1, zips
    with zipfile.ZipFile(io.BytesIO(s3.get_object(Bucket=bucket, Key=zips[0])["Body"].read())) as archive:
        shipped = {name: hashlib.sha256(archive.read(name)).hexdigest() for name in archive.namelist()}
    assert shipped == expected
    handlers = {f["Configuration"]["Handler"] for f in deployed["functions"].values()}
    assert handlers == {f"scheduler_runtime.handlers.{m}.handler" for m in
                        ("api", "sweeper", "enqueuer", "dispatcher")}


@pytest.fixture(scope="module")
def wired(deployed):
    session = deployed["session"]
    functions = {key: DeployedFunction(description) for key, description in deployed["functions"].items()}
    by_arn = {f.arn: f for f in functions.values()}
    streams, queues = {}, {}
    for mapping in deployed["mappings"]:
        function = by_arn[mapping["FunctionArn"]]
        if ":dynamodb:" in mapping["EventSourceArn"]:
            streams[function.name] = StreamMapping(session, mapping, function)
        else:
            queues[function.name] = QueueMapping(session, mapping, function)
    return functions, streams, queues


@pytest.fixture(scope="module")
def http_api(deployed):
    """The template's HTTP API, created through moto's apigatewayv2 API, and read back from it."""
    session = deployed["session"]
    resolve = TemplateResolver(deployed["template"], deployed["resources"], deployed["functions"])
    created = replay_http_api(session, deployed["template"], resolve)
    client = session.client("apigatewayv2")
    (api_id,) = [i for lid, i in created.items() if deployed["template"]["Resources"][lid]["Type"].endswith("::Api")]
    return {"api_id": api_id, "resolve": resolve, "api": client.get_api(ApiId=api_id),
            "routes": {r["RouteKey"]: r for r in client.get_routes(ApiId=api_id)["Items"]},
            "integrations": {i["IntegrationId"]: i for i in client.get_integrations(ApiId=api_id)["Items"]},
            "stages": {s["StageName"]: s for s in client.get_stages(ApiId=api_id)["Items"]}}


class _Caller:
    """A producer: calls through the HTTP API's routes (as the deployed API would hand them to the
    api function), or by direct invoke. Records each HTTP request for the grant audit."""

    def __init__(self, function: DeployedFunction, http_api: dict) -> None:
        self.function, self.http_api = function, http_api
        self.requests: list[tuple[str, str]] = []

    def __call__(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        route_key = route_for(self.http_api["routes"], method, path)
        self.requests.append((method, path))
        before = len(self.function.calls)
        response = self.function(http_api_event(route_key, path, body, self.http_api["api_id"]))
        self.requests[-1] = (method, path.partition("?")[0])  # API Gateway authorizes the path alone
        self.last_operations = [op for _, op, _ in self.function.calls[before:]]
        assert response["headers"]["Content-Type"] == "application/json"
        return response["statusCode"], json.loads(response["body"])

    def invoke(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
        """The documented direct-invoke event; the answer's body is a JSON value, not text."""
        response = self.function({"method": method, "path": path, **({"body": body} if body is not None else {})})
        return response["statusCode"], response["body"]



@pytest.fixture(scope="module")
def api(wired, http_api):
    return _Caller(wired[0]["ApiFunction"], http_api)


@pytest.fixture(scope="module")
def workload(deployed, wired, api) -> Workload:
    return Workload(deployed, wired, api)


def test_the_http_api_routes_reach_the_api_function_with_iam_auth(deployed, wired, http_api):
    functions, _, _ = wired
    assert http_api["api"]["ProtocolType"] == "HTTP"
    routes = http_api["routes"]
    assert set(routes) == {"POST /schedules", "GET /schedules/{id}", "DELETE /schedules/{id}",
                           "POST /schedule-batches", "GET /schedules", "PUT /periodic/{id}", "GET /periodic/{id}",
                           "DELETE /periodic/{id}", "GET /periodic", "PATCH /schedules/{id}", "PATCH /periodic/{id}",
                           "DELETE /groups/{group}", "GET /targets/{name}", "PATCH /targets/{name}"}
    (integration,) = http_api["integrations"].values()
    assert (integration["IntegrationType"], integration["PayloadFormatVersion"]) == ("AWS_PROXY", "2.0")
    assert integration["IntegrationUri"] == functions["ApiFunction"].arn
    for route in routes.values():
        assert route["AuthorizationType"] == "AWS_IAM"
        assert route["Target"] == f"integrations/{integration['IntegrationId']}"
    stage = http_api["stages"]["$default"]
    assert stage["AutoDeploy"] is True
    assert stage["DefaultRouteSettings"]["ThrottlingRateLimit"] == 100
    log_groups = {r["PhysicalResourceId"] for lid, r in deployed["resources"].items() if lid.startswith("TimersApiAccessLogs")}
    assert stage["AccessLogSettings"]["DestinationArn"] == f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{log_groups.pop()}:*"
    # API Gateway may invoke the api function through any route of this API, one permission per path
    # (None: moto's Ref to the skipped API)
    policy = json.loads(deployed["session"].client("lambda").get_policy(
        FunctionName=functions["ApiFunction"].name)["Policy"])
    sources = {s["Condition"]["ArnLike"]["AWS:SourceArn"] for s in policy["Statement"]
               if s["Principal"] == {"Service": "apigateway.amazonaws.com"}}
    assert sources == {f"arn:aws:execute-api:{REGION}:{ACCOUNT}:None/*/*{path}" for path in (
        "/schedules", "/schedules/{id}", "/schedule-batches", "/periodic", "/periodic/{id}", "/groups/{group}",
        "/targets/{name}")}


def test_mappings_connect_the_right_sources_to_the_right_functions(deployed, wired):
    functions, streams, queues = wired
    assert set(streams) == {functions["EnqueuerFunction"].name}  # no fast track any more
    assert set(queues) == {functions["DispatcherFunction"].name}
    table_name = functions["ApiFunction"].environment["TABLE_NAME"]
    for mapping in streams.values():
        assert f":table/{table_name}/stream/" in mapping.arn
        assert mapping.patterns, "a stream mapping without a filter would hand every record over"
    (queue,) = queues.values()
    assert queue.url.rsplit("/", 1)[1] == functions["DispatcherFunction"].environment["DELAYER_QUEUE_URL"].rsplit("/", 1)[1]
    for mapping in deployed["mappings"]:
        assert mapping.get("FunctionResponseTypes") == ["ReportBatchItemFailures"]


def _rule(deployed, logical_prefix: str) -> tuple[dict, dict]:
    """The deployed EventBridge rule whose logical id starts with ``logical_prefix``, and its one target."""
    events = deployed["session"].client("events")
    (rule_id,) = [lid for lid, r in deployed["resources"].items()
                  if r["ResourceType"] == "AWS::Events::Rule" and lid.startswith(logical_prefix)]
    rule_name = deployed["resources"][rule_id]["PhysicalResourceId"]
    (target,) = events.list_targets_by_rule(Rule=rule_name)["Targets"]
    return events.describe_rule(Name=rule_name), target


def test_the_sweep_rule_targets_the_sweeper(deployed, wired):
    functions, _, _ = wired
    rule, target = _rule(deployed, "TimersSweepSchedule")
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert target["Arn"] == functions["SweeperFunction"].arn


def test_the_keep_warm_rule_initialises_the_dispatcher_every_four_minutes_without_a_request(deployed, wired):
    functions, _, _ = wired
    rule, target = _rule(deployed, "TimersDispatcherKeepWarm")
    assert rule["ScheduleExpression"] == "rate(4 minutes)"
    dispatcher = functions["DispatcherFunction"]
    assert target["Arn"] == dispatcher.arn
    before = len(dispatcher.calls)  # the calls other tests made stay recorded, for the roles' test
    assert dispatcher(json.loads(target["Input"])) == {"batchItemFailures": []}
    assert dispatcher.calls[before:] == []  # initialised only: no receive, no write, no metric


@contextmanager
def _long(api: _Caller):
    """While open, the api function creates as if ``delay_window`` were 1 second: a schedule due in 2
    seconds waits as a timer in the table, and the deployed sweeper (870 s) claims it at once."""
    api.function.overrides = {"DELAY_WINDOW_SECONDS": "1"}
    try:
        yield
    finally:
        api.function.overrides = {}


def _sweep(functions):
    return lambda: functions["SweeperFunction"](SWEEP_EVENT)


@scenario
def test_a_short_timer_goes_straight_to_the_delayer_queue_then_to_the_default_target(deployed, wired, api):
    functions, _, queues = wired
    session = deployed["session"]
    status, body = api("POST", "/schedules", {"id": "wiring-short", "delaySeconds": 1, "payload": {"hello": "short"}})
    assert status == 201, body
    assert api.last_operations == ["SendMessage", "PutItem"]  # the delayed message first, then the record
    dispatch = queues[functions["DispatcherFunction"].name]
    message = _drive_until(lambda: _receive_one(session, deployed["outputs"]["DeliveriesQueueUrl"]), [dispatch.poll])
    envelope = json.loads(message["Body"])
    assert envelope["id"] == "wiring-short" and envelope["payload"] == {"hello": "short"}
    assert envelope["target"] == "default" and envelope["attempt"] == 1
    assert message["MessageAttributes"]["dedupeKey"]["StringValue"] == envelope["dedupeKey"]
    status, body = api("GET", "/schedules/wiring-short")
    assert (status, body["status"]) == (200, "FIRED")


@scenario
def test_a_long_timer_is_swept_and_enqueued_to_the_named_fifo_target(deployed, wired, api):
    functions, streams, queues = wired
    session = deployed["session"]
    enqueue, dispatch = streams[functions["EnqueuerFunction"].name], queues[functions["DispatcherFunction"].name]
    with _long(api):
        status, body = api("POST", "/schedules",
                           {"id": "wiring-swept", "delaySeconds": 2, "payload": [1, 2, 3], "target": "ordered"})
    assert status == 201, body
    assert api.last_operations == ["PutItem", "PutItem"]  # the timer first, then the record
    ordered_url = session.client("sqs").get_queue_url(QueueName="DelayedSchedulerExample-ordered.fifo")["QueueUrl"]
    message = _drive_until(lambda: _receive_one(session, ordered_url), [_sweep(functions), enqueue.poll, dispatch.poll])
    envelope = json.loads(message["Body"])
    assert (envelope["id"], envelope["payload"], envelope["target"]) == ("wiring-swept", [1, 2, 3], "ordered")
    assert message["Attributes"]["MessageGroupId"] == "orders"


def _delivery_started_for(function: DeployedFunction, schedule_id: str) -> bool:
    """Whether the dispatcher has made the conditional write that starts (or refuses) this delivery."""
    return any(op == "UpdateItem" and params["Key"]["pk"]["S"] == f"SCHEDULE#{schedule_id}"
               for _, op, params in function.calls)


@scenario
def test_cancel_wins_on_both_paths(deployed, wired, api):
    """A long timer cancelled before its sweep: the deployed enqueuer filter drops the cancellation's
    REMOVE record and the sweep finds nothing. A short one cancelled while its message waits in the
    delayer queue: the dispatcher receives it and refuses it. Nothing reaches the target."""
    functions, streams, queues = wired
    session = deployed["session"]
    enqueue, dispatch = streams[functions["EnqueuerFunction"].name], queues[functions["DispatcherFunction"].name]
    enqueue.poll()  # start from here
    with _long(api):
        assert api("POST", "/schedules", {"id": "wiring-cancel-long", "delaySeconds": 2, "payload": None})[0] == 201
    assert api("POST", "/schedules", {"id": "wiring-cancel-short", "delaySeconds": 1, "payload": None})[0] == 201
    for schedule_id in ("wiring-cancel-long", "wiring-cancel-short"):
        status, body = api("DELETE", f"/schedules/{schedule_id}")
        assert (status, body["status"]) == (200, "CANCELLED")
    assert enqueue.poll() == 0  # the cancellation's REMOVE is filtered out by the deployed pattern
    _sweep(functions)()  # within the deployed sweeper's window (870 s): it would claim the long timer, were it there
    assert enqueue.poll() == 0
    # Received and refused (the record says CANCELLED); other scenarios' messages may still wait in the queue.
    _drive_until(lambda: _delivery_started_for(functions["DispatcherFunction"], "wiring-cancel-short"), [dispatch.poll])
    assert _receive_one(session, deployed["outputs"]["DeliveriesQueueUrl"]) is None
    for schedule_id in ("wiring-cancel-long", "wiring-cancel-short"):
        status, body = api("GET", f"/schedules/{schedule_id}")
        assert (status, body["status"]) == (200, "CANCELLED")


@scenario
def test_a_batch_create_through_the_http_api(deployed, wired, api):
    """POST /schedule-batches: each item answered in order with its own status, valid ones stored
    (far in the future, so the other tests' pipelines leave them be)."""
    first = {"id": "wiring-batch-1", "delaySeconds": 3600, "payload": {"n": 1}}
    status, body = api("POST", "/schedule-batches", {"schedules": [
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
    status, body = api("POST", "/schedule-batches", {"schedules": [first, {**first, "payload": {"n": 2}}]})
    assert status == 200
    assert [r["status"] for r in body["results"]] == [200, 409], body
    assert body["results"][0]["body"] == results[0]["body"]
    assert body["results"][1]["body"]["field"] == "schedules[1].id"
    for schedule_id in ("wiring-batch-1", "wiring-batch-3"):
        status, read = api("GET", f"/schedules/{schedule_id}")
        assert (status, read["status"]) == (200, "SCHEDULED"), read
    assert api("GET", "/schedules/wiring-batch-2")[0] == 404
    # a bad envelope is refused as a whole, at most maxBatchSize items
    status, body = api("POST", "/schedule-batches", {"schedules": []})
    assert (status, body["field"]) == (400, "schedules")
    too_many = [{"delaySeconds": 3600, "payload": i} for i in range(contract.MAX_BATCH_SIZE + 1)]
    assert api("POST", "/schedule-batches", {"schedules": too_many})[0] == 400


@scenario
def test_direct_invoke_answers_the_same_bodies_as_the_http_api(deployed, wired, api):
    status, created = api.invoke("POST", "/schedules", {"id": "wiring-direct", "delaySeconds": 3600, "payload": 7})
    assert status == 201 and isinstance(created, dict), created
    assert api.invoke("POST", "/schedules", {"id": "wiring-direct", "delaySeconds": 3600, "payload": 7}) == (200, created)
    direct, through_api = api.invoke("GET", "/schedules/wiring-direct"), api("GET", "/schedules/wiring-direct")
    assert direct == through_api and direct[1]["id"] == "wiring-direct"
    status, error = api.invoke("POST", "/schedules", {"id": "has space", "delaySeconds": 1, "payload": 1})
    assert (status, set(error)) == (400, {"message", "field"}) and error["field"] == "id"
    assert api.invoke("DELETE", "/schedules/wiring-direct")[1]["status"] == "CANCELLED"


@scenario
def test_an_enqueue_failure_is_written_back_and_delivered_later(deployed, wired, api):
    """Invariant 3 on the deployed wiring: the delayer send fails after the claim, the enqueuer
    writes the timer back (its role must allow that), and the next sweep claims it again."""
    functions, streams, queues = wired
    session = deployed["session"]
    enqueue, dispatch = streams[functions["EnqueuerFunction"].name], queues[functions["DispatcherFunction"].name]
    with _long(api):
        assert api("POST", "/schedules", {"id": "wiring-written-back", "delaySeconds": 2, "payload": "again"})[0] == 201
    from scheduler_runtime.handlers.enqueuer import SEND_ATTEMPTS  # the enqueuer resends once at once

    failures = {"left": SEND_ATTEMPTS}

    def fail_the_sends(operation: str, params: dict) -> bool:
        if operation == "SendMessageBatch" and failures["left"]:
            failures["left"] -= 1
            return True
        return False

    functions["EnqueuerFunction"].fail_when = fail_the_sends
    try:
        message = _drive_until(lambda: _receive_one(session, deployed["outputs"]["DeliveriesQueueUrl"]),
                               [_sweep(functions), enqueue.poll, dispatch.poll])
    finally:
        functions["EnqueuerFunction"].fail_when = None
    assert json.loads(message["Body"])["id"] == "wiring-written-back"
    assert failures["left"] == 0, "the injected failures never happened"
    assert "BatchWriteItem" in [op for _, op, _ in functions["EnqueuerFunction"].calls]


@scenario
def test_a_delivery_that_keeps_failing_is_parked_in_the_dead_letter_queue_with_its_reason(deployed, wired, api):
    """The deployed MAX_RECEIVE_COUNT matches the delayer queue's redrive policy, so the dispatcher,
    not the redrive, parks the envelope, with the reason, and marks the schedule FAILED."""
    functions, _, queues = wired
    session = deployed["session"]
    sqs = session.client("sqs")
    dispatch = queues[functions["DispatcherFunction"].name]
    dispatcher = functions["DispatcherFunction"]
    redrive = json.loads(sqs.get_queue_attributes(QueueUrl=dispatch.url, AttributeNames=["RedrivePolicy"])
                         ["Attributes"]["RedrivePolicy"])
    assert int(dispatcher.environment["MAX_RECEIVE_COUNT"]) == redrive["maxReceiveCount"]
    deliveries_url = deployed["outputs"]["DeliveriesQueueUrl"]
    dispatcher.fail_when = lambda op, params: op == "SendMessage" and params.get("QueueUrl") == deliveries_url
    dispatch.visibility_timeout = 1  # retry within the test rather than after the queue's 6 minutes
    try:
        status, _ = api("POST", "/schedules", {"id": "wiring-parked", "delaySeconds": 0, "payload": {"n": 1}})
        assert status == 201
        dlq_url = dispatcher.environment["DEAD_LETTER_QUEUE_URL"]
        message = _drive_until(lambda: _receive_one(session, dlq_url), [dispatch.poll], timeout=45)
    finally:
        dispatcher.fail_when = None
        dispatch.visibility_timeout = None
    parked = json.loads(message["Body"])
    assert (parked["id"], parked["payload"], parked["attempt"]) == ("wiring-parked", {"n": 1}, redrive["maxReceiveCount"])
    assert "injected failure of SendMessage" in message["MessageAttributes"]["reason"]["StringValue"]
    status, body = api("GET", "/schedules/wiring-parked")
    assert (status, body["status"]) == (200, "FAILED")


def test_every_call_the_handlers_made_is_allowed_by_their_deployed_roles(deployed, wired, workload):
    """Least privilege is enough: each AWS call a handler made in the scenarios is allowed by its own
    role's deployed policy, on that resource (moto does not enforce IAM, so this test does)."""
    workload.run_all()
    functions, _, _ = wired
    session = deployed["session"]
    statements = {key: role_statements(session, f.role_arn) for key, f in functions.items()}
    denied, made = [], {}
    for key, function in functions.items():
        made[key] = {op for _, op, _ in function.calls}
        for service, operation, params in function.calls:
            for action, resource in iam_requests(service, operation, params):
                if not allowed(statements[key], action, resource):
                    denied.append((key, action, resource))
    assert denied == []
    # the lean data path: no transactions; each function made the calls of its part of the flow
    assert not any("Transact" in op for ops in made.values() for op in ops), made
    assert {"SendMessage", "PutItem", "GetItem", "Query", "BatchGetItem"} <= made["ApiFunction"], made
    assert made["SweeperFunction"] == {"Query", "DeleteItem", "UpdateItem"}, made  # UpdateItem: the shard mark
    assert {"SendMessageBatch", "BatchWriteItem"} <= made["EnqueuerFunction"], made
    assert {"UpdateItem", "SendMessage", "GetItem", "PutItem"} <= made["DispatcherFunction"], made
    # the check can fail: another function's call is not allowed by a role that does not need it
    write_back = next(params for _, op, params in functions["EnqueuerFunction"].calls if op == "BatchWriteItem")
    (action, resource), = iam_requests("dynamodb", "BatchWriteItem", write_back)
    assert not allowed(statements["ApiFunction"], action, resource)
    # the listing index is the api function's alone: the sweeper's Query covers the table, not the index
    listing = next(params for _, op, params in functions["ApiFunction"].calls if params.get("IndexName") == "ByStatus")
    (action, resource), = iam_requests("dynamodb", "Query", listing)
    assert resource.endswith("/index/ByStatus") and allowed(statements["ApiFunction"], action, resource)
    assert not allowed(statements["SweeperFunction"], action, resource)
    # the group index: the api function's count and listing, the dispatcher's sweep; not the sweeper's
    sweep = next(params for _, op, params in functions["DispatcherFunction"].calls if params.get("IndexName"))
    (action, resource), = iam_requests("dynamodb", "Query", sweep)
    assert resource.endswith("/index/ByGroup") and allowed(statements["DispatcherFunction"], action, resource)
    assert allowed(statements["ApiFunction"], action, resource)
    assert not allowed(statements["SweeperFunction"], action, resource)


def test_grant_schedule_allows_every_request_the_tests_made_and_nothing_else(deployed, wired, http_api, api, workload):
    """The example's client role (``grant_schedule``), its policy resolved against the deployed
    resources and the replayed API: each HTTP request above is allowed as API Gateway would
    authorize it (``execute-api:Invoke`` on ``<api>/$default/<METHOD><path>``), and so is a direct
    invoke of the api function; other routes, APIs and functions are not."""
    workload.run_all()
    functions, _, _ = wired
    template = deployed["template"]
    (policy,) = [r for lid, r in template["Resources"].items()
                 if r["Type"] == "AWS::IAM::Policy" and lid.startswith("ClientRoleDefaultPolicy")]
    statements = http_api["resolve"](policy["Properties"]["PolicyDocument"])["Statement"]
    route_arn = lambda method, path, api_id=http_api["api_id"]: (  # noqa: E731
        f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{api_id}/$default/{method}{path}")
    assert {m for m, _ in api.requests} == {"POST", "GET", "DELETE", "PUT"} and len(api.requests) > 10
    assert {"/schedules", "/periodic", "/periodic/wiring-periodic"} <= {p for _, p in api.requests}
    for method, path in api.requests:
        assert allowed(statements, "execute-api:Invoke", route_arn(method, path)), (method, path)
    assert allowed(statements, "lambda:InvokeFunction", functions["ApiFunction"].arn)
    for method, path, api_id in (("PUT", "/schedules/x", http_api["api_id"]), ("POST", "/periodic/x", http_api["api_id"]),
                                 ("PUT", "/periodic", http_api["api_id"]), ("POST", "/schedules", "otherapi")):
        assert not allowed(statements, "execute-api:Invoke", route_arn(method, path, api_id)), (method, path)
    assert not allowed(statements, "lambda:InvokeFunction", functions["DispatcherFunction"].arn)
