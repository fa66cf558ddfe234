"""The listing and periodic routes in the template: the ``listing`` prop (the keys-only index,
``LISTING``, the index grant), those routes on both kinds of API (with the REST API's request model
and query strings), and ``grant_schedule``/``grant_read`` over them.

One app per module: listing off and on with the HTTP API, listing on with the REST API and
provisioned capacity, and no API.
"""

from __future__ import annotations

import json
import re

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets
from cdk_delayed_scheduler._contract import contract

from construct_helpers import only, resources_of
from construct_stacks import ROUTES

FUNCTION_IDS = ("ApiFunction", "SweeperFunction", "EnqueuerFunction", "DispatcherFunction")
READS = {route for route in ROUTES if route[0] == "GET"}


def _build(app: cdk.App, name: str, **props) -> dict:
    stack = cdk.Stack(app, name)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Deliveries")),
                                 **props)
    roles = {}
    if scheduler.api is not None:
        roles = {"Writer": iam.Role(stack, "Writer", assumed_by=iam.AccountRootPrincipal()),
                 "Reader": iam.Role(stack, "Reader", assumed_by=iam.AccountRootPrincipal())}
        scheduler.grant_schedule(roles["Writer"])
        scheduler.grant_read(roles["Reader"])
    return {"stack": stack, "scheduler": scheduler, "roles": roles}


@pytest.fixture(scope="module")
def built() -> dict:
    app = cdk.App()
    stacks = {
        "off": _build(app, "ListingOff"),
        "on": _build(app, "ListingOn", listing=True),
        "rest": _build(app, "RestListing", listing=True, api=SchedulerApi.rest(),
                       billing_mode=dynamodb.BillingMode.PROVISIONED, read_capacity=7, write_capacity=9),
        "no_api": _build(app, "NoApi", api=SchedulerApi.none(), listing=True),
    }
    for b in stacks.values():
        b["json"] = Template.from_stack(b["stack"]).to_json()
    return stacks


def _table(b: dict) -> tuple[str, dict]:
    return only(b["json"], "AWS::DynamoDB::Table")


def _statements(b: dict, fid: str) -> list[dict]:
    return only(b["json"], "AWS::IAM::Policy", f"Timers{fid}Role")[1]["Properties"]["PolicyDocument"]["Statement"]


def _grants(b: dict, action: str) -> list:
    """(function id, resource) of each statement of the runtime roles that allows ``action``."""
    found = []
    for fid in FUNCTION_IDS:
        for statement in _statements(b, fid):
            actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
            if action in actions:
                found.append((fid, statement["Resource"]))
    return found


def _environment(b: dict, fid: str) -> dict:
    return only(b["json"], "AWS::Lambda::Function", f"Timers{fid}")[1]["Properties"]["Environment"]["Variables"]


# --- the listing prop ----------------------------------------------------------------------------
def _indexes(b: dict) -> dict:
    return {index["IndexName"]: index for index in _table(b)[1]["Properties"]["GlobalSecondaryIndexes"]}


def test_listing_off_adds_no_listing_index_and_says_false(built):
    b = built["off"]
    assert set(_indexes(b)) == {contract.GROUPS["indexName"]}  # the group index alone
    assert {_environment(b, fid)["LISTING"] for fid in FUNCTION_IDS} == {"false"}
    assert b["scheduler"].listing_index_name is None
    assert f"/index/{contract.LISTING['indexName']}" not in json.dumps(b["json"])  # no grant names it


def test_every_scheduler_has_the_sparse_keys_only_group_index(built):
    names = contract.GROUPS
    for b in built.values():
        index = _indexes(b)[names["indexName"]]
        assert index["KeySchema"] == [{"AttributeName": names["partitionKey"], "KeyType": "HASH"},
                                      {"AttributeName": names["sortKey"], "KeyType": "RANGE"}]
        assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
        assert b["scheduler"].group_index_name == names["indexName"]


def test_listing_on_adds_the_contracts_keys_only_index(built):
    names = contract.LISTING
    for b in (built["on"], built["rest"], built["no_api"]):
        props = _table(b)[1]["Properties"]
        index = _indexes(b)[names["indexName"]]
        assert index["KeySchema"] == [{"AttributeName": names["partitionKey"], "KeyType": "HASH"},
                                      {"AttributeName": names["sortKey"], "KeyType": "RANGE"}]
        assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
        assert {"AttributeName": names["partitionKey"], "AttributeType": "S"} in props["AttributeDefinitions"]
        assert {"AttributeName": names["sortKey"], "AttributeType": "S"} in props["AttributeDefinitions"]
        assert {_environment(b, fid)["LISTING"] for fid in FUNCTION_IDS} == {"true"}
        assert b["scheduler"].listing_index_name == names["indexName"]
    assert all("ProvisionedThroughput" not in index for index in _indexes(built["on"]).values())


def test_the_index_follows_the_tables_provisioned_capacity(built):
    props = _table(built["rest"])[1]["Properties"]
    assert props["ProvisionedThroughput"] == {"ReadCapacityUnits": 7, "WriteCapacityUnits": 9}
    assert [index["ProvisionedThroughput"] for index in props["GlobalSecondaryIndexes"]] == [
        props["ProvisionedThroughput"]] * 2


def _index_arn(table_arn: dict, key: str) -> dict:
    return {"Fn::Join": ["", [table_arn, f"/index/{getattr(contract, key)['indexName']}"]]}


def test_index_queries_are_the_api_functions_and_the_group_sweeps_alone(built):
    for b in (built["on"], built["rest"]):
        table_id = _table(b)[0]
        table_arn = {"Fn::GetAtt": [table_id, "Arn"]}
        groups, listing = _index_arn(table_arn, "GROUPS"), _index_arn(table_arn, "LISTING")
        assert _grants(b, "dynamodb:BatchGetItem") == [("ApiFunction", table_arn)]
        assert sorted(_grants(b, "dynamodb:Query"), key=json.dumps) == sorted(
            [("ApiFunction", table_arn), ("ApiFunction", [groups, listing]), ("SweeperFunction", table_arn),
             ("DispatcherFunction", groups)], key=json.dumps)
        # no other grant reaches an index, and none uses Table.grant's index/* wildcard
        assert json.dumps(b["json"]).count("/index/") == 3


def test_the_dispatcher_reads_and_arms_periodic_definitions(built):
    for b in (built["off"], built["on"]):
        table_arn = {"Fn::GetAtt": [_table(b)[0], "Arn"]}
        for action in ("dynamodb:GetItem", "dynamodb:PutItem"):
            assert {fid for fid, resource in _grants(b, action) if resource == table_arn} == {
                "ApiFunction", "DispatcherFunction"}, action
    # without listing, the api function's Query is on the table (GET /periodic's shard partitions) and the group index
    table_arn = {"Fn::GetAtt": [_table(built["off"])[0], "Arn"]}
    groups = _index_arn(table_arn, "GROUPS")
    assert _grants(built["off"], "dynamodb:Query") == [("ApiFunction", table_arn), ("ApiFunction", groups),
                                                      ("SweeperFunction", table_arn), ("DispatcherFunction", groups)]


def test_listing_must_be_a_bool():
    stack = cdk.Stack(cdk.App(), "Wrong")
    with pytest.raises(ValueError, match=r"^listing: must be True or False, got 'yes'$"):
        DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), listing="yes")


# --- the routes ------------------------------------------------------------------------------
def test_the_http_api_has_every_route_with_iam(built):
    routes = {r["Properties"]["RouteKey"]: r["Properties"]
              for r in resources_of(built["on"]["json"], "AWS::ApiGatewayV2::Route").values()}
    assert set(routes) == {f"{verb} {path}" for verb, path in ROUTES}
    assert {r["AuthorizationType"] for r in routes.values()} == {"AWS_IAM"}
    assert len({json.dumps(r["Target"]) for r in routes.values()}) == 1  # the one api function integration
    # the listing route is declared with listing off too (the function answers 404 with how to turn it on)
    off = {r["Properties"]["RouteKey"] for r in resources_of(built["off"]["json"], "AWS::ApiGatewayV2::Route").values()}
    assert "GET /schedules" in off and off == set(routes)


def _rest_methods(b: dict) -> dict:
    resources = {k: v["Properties"] for k, v in resources_of(b["json"], "AWS::ApiGateway::Resource").items()}

    def path(logical_id: str) -> str:
        parent = resources[logical_id]["ParentId"]
        return (path(parent["Ref"]) if "Ref" in parent else "") + "/" + resources[logical_id]["PathPart"]

    return {(m["Properties"]["HttpMethod"], path(m["Properties"]["ResourceId"]["Ref"])): m["Properties"]
            for m in resources_of(b["json"], "AWS::ApiGateway::Method").values()}


def test_the_rest_api_validates_the_periodic_body_and_the_list_queries(built):
    b = built["rest"]
    methods = _rest_methods(b)
    assert set(methods) == ROUTES
    assert {m["AuthorizationType"] for m in methods.values()} == {"AWS_IAM"}
    validators = {k: v["Properties"] for k, v in resources_of(b["json"], "AWS::ApiGateway::RequestValidator").items()}
    put = methods[("PUT", "/periodic/{id}")]
    assert put["RequestParameters"] == {"method.request.path.id": True}
    assert validators[put["RequestValidatorId"]["Ref"]] == {
        "RestApiId": put["RestApiId"], "ValidateRequestBody": True, "ValidateRequestParameters": True}
    model = b["json"]["Resources"][put["RequestModels"]["application/json"]["Ref"]]["Properties"]
    assert (model["Name"], model["ContentType"]) == ("PutPeriodic", "application/json")
    schema = model["Schema"]
    assert (schema["type"], schema["required"], schema["additionalProperties"]) == ("object", ["payload"], False)
    assert set(schema["properties"]) == {"payload", "every", "cron", "timeZone", "startAt", "endAt", "target",
                                         "retry", "maxLatenessSeconds", "group"}
    for verb, path, names in (("GET", "/schedules", {"status", "dueAfter", "dueBefore", "limit", "nextToken", "group"}),
                              ("GET", "/periodic", {"limit", "nextToken", "group"})):
        listing = methods[(verb, path)]
        assert listing["RequestParameters"] == {f"method.request.querystring.{n}": False for n in names}
        assert "RequestModels" not in listing
        assert validators[listing["RequestValidatorId"]["Ref"]].get("ValidateRequestBody") is None
    for route in (("GET", "/periodic/{id}"), ("DELETE", "/periodic/{id}")):
        assert methods[route]["RequestParameters"] == {"method.request.path.id": True}
    assert methods[("DELETE", "/groups/{group}")]["RequestParameters"] == {"method.request.path.group": True}
    for route in (("GET", "/targets/{name}"), ("PATCH", "/targets/{name}")):
        assert methods[route]["RequestParameters"] == {"method.request.path.name": True}


def test_the_periodic_model_takes_the_design_bodies(built):
    """The rendered PutPeriodic model, run through a draft-4 validator (API Gateway's draft)."""
    import jsonschema

    put = _rest_methods(built["rest"])[("PUT", "/periodic/{id}")]
    schema = built["rest"]["json"]["Resources"][put["RequestModels"]["application/json"]["Ref"]]["Properties"]["Schema"]
    jsonschema.Draft4Validator.check_schema(schema)
    validator = jsonschema.Draft4Validator(schema)
    ok = [{"every": 60, "payload": None}, {"cron": "0 9 ? * MON-FRI *", "timeZone": "Europe/Paris", "payload": [1]},
          {"every": 1, "payload": {}, "startAt": "2026-12-01T00:00:00Z", "endAt": 1800000000.5, "target": "billing"},
          {"every": 60, "payload": 1, "retry": {"maxAttempts": 2}}]
    bad = [{"every": 60}, {"every": 0, "payload": 1}, {"every": 1.5, "payload": 1}, {"every": "60", "payload": 1},
           {"cron": 5, "payload": 1}, {"every": 60, "payload": 1, "id": "x"}, {"every": 60, "payload": 1, "startAt": True},
           {"every": 60, "payload": 1, "target": "has space"}, {"every": 60, "payload": 1, "timeZone": 1}]
    assert [validator.is_valid(body) for body in ok] == [True] * len(ok)
    assert [validator.is_valid(body) for body in bad] == [False] * len(bad)



def test_the_periodic_state_model_lets_any_state_text_through_for_the_handler_to_name(built):
    """PATCH /periodic/{id}: API Gateway checks the shape ({"state": <text>}, nothing else); which states
    are allowed is the api handler's 400, which names them."""
    import jsonschema

    patch = _rest_methods(built["rest"])[("PATCH", "/periodic/{id}")]
    assert patch["RequestParameters"] == {"method.request.path.id": True}
    model = built["rest"]["json"]["Resources"][patch["RequestModels"]["application/json"]["Ref"]]["Properties"]
    assert model["Name"] == "PeriodicState"
    validator = jsonschema.Draft4Validator(model["Schema"])
    assert [validator.is_valid(b) for b in ({"state": "PAUSED"}, {"state": "ACTIVE"}, {"state": "paused"})] == [True] * 3
    assert [validator.is_valid(b) for b in ({}, {"state": 1}, {"state": "PAUSED", "every": 5})] == [False] * 3

# --- grant_schedule and grant_read -----------------------------------------------------------------
def _granted_routes(b: dict, role: str) -> tuple[set, set]:
    """(execute-api routes as (verb, path with * for {id}), other actions) of ``role``'s policy."""
    statements = only(b["json"], "AWS::IAM::Policy", f"{role}DefaultPolicy")[1]["Properties"]["PolicyDocument"]
    routes, others = set(), set()
    for statement in statements["Statement"]:
        if statement["Action"] != "execute-api:Invoke":
            others.add(statement["Action"])
            continue
        for arn in statement["Resource"]:
            tail = arn["Fn::Join"][1][-1]  # "/$default/<VERB>/<path>" (HTTP), "/<VERB>/<path>" after the stage's Ref (REST)
            verb, path = re.fullmatch(r"(?:/\$default)?/([A-Z]+)(/.*)", tail).groups()
            routes.add((verb, path))
    return routes, others


def _starred(routes: set) -> set:
    return {(verb, re.sub(r"{\w+}", "*", path)) for verb, path in routes}


def test_grant_schedule_covers_every_route_on_both_apis(built):
    for name in ("on", "rest"):
        routes, others = _granted_routes(built[name], "Writer")
        assert routes == _starred(ROUTES), name
        assert others == {"lambda:InvokeFunction"}


def test_grant_read_is_the_get_routes_alone(built):
    for name in ("off", "on", "rest"):
        routes, others = _granted_routes(built[name], "Reader")
        assert routes == _starred(READS) and len(routes) == 5, name
        assert others == set()  # no direct invoke: it would reach every route


def test_grant_read_refuses_a_scheduler_without_an_api(built):
    scheduler = built["no_api"]["scheduler"]
    role = iam.Role(built["no_api"]["stack"], "WouldRead", assumed_by=iam.AccountRootPrincipal())
    with pytest.raises(ValueError, match="grant_read: this scheduler has no API"):
        scheduler.grant_read(role)


def test_the_path_parameter_wildcards_are_acknowledged_for_each_grant(built):
    """Each ``{id}``, ``{group}`` or ``{name}`` route a grant covers has its own cdk-nag acknowledgement, naming the grant and
    the parameter."""
    from construct_helpers import acknowledged

    b = built["on"]
    for role, method, count in (("Writer", "grant_schedule", 10), ("Reader", "grant_read", 3)):
        (rules,) = [r for path, r in acknowledged(b["roles"][role]).items() if path.endswith(f"/{role}")]
        starred = {r for r in rules if r.endswith("/*]")}
        assert len(starred) == count, rules
        assert {r.rsplit("/", 2)[-2] for r in starred} <= {"schedules", "periodic", "groups", "targets"}
    writer = [entry.data for entry in b["roles"]["Writer"].node.metadata
              if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY]
    assert any("the * is the {group} path parameter of DELETE /groups/{group}" in text
               for data in writer for text in data.values())
    reasons = [entry.data for entry in b["roles"]["Reader"].node.metadata
               if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY]
    assert all(re.search(r"grant_read: the \* is the \{(id|name)\} path parameter", text)
               for data in reasons for text in data.values())
