"""The API each ``SchedulerApi`` builds: the REST API (routes, models, validators, gateway responses,
stage, authorizers), the HTTP API (routes, stage, JWT authorizer), none at all, and the attributes
that expose them."""

from __future__ import annotations

import json

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Match
import pytest

from construct_helpers import only, resources_of
from construct_stacks import (FUNCTION_IDS, ROUTES, client_statements, http_routes, invoke_statement, logical_id,
                              rest_methods, rest_paths)


def test_rest_api_routes_iam_auth_and_validation(stacks):
    b = stacks["rest"]
    methods = rest_methods(b)
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
    assert set(schema["properties"]) == {"id", "dueAt", "delaySeconds", "payload", "target", "retry",
                                         "maxLatenessSeconds", "group"}
    assert schema["additionalProperties"] is False
    validator = b.json["Resources"][post["RequestValidatorId"]["Ref"]]["Properties"]
    assert validator["ValidateRequestBody"] is True
    for verb in ("GET", "DELETE"):
        assert methods[(verb, "/schedules/{id}")]["RequestParameters"] == {"method.request.path.id": True}


def test_rest_batch_route_takes_1_to_10_objects(stacks):
    """POST /schedule-batches: the same function, auth and body validation as POST /schedules; its
    model is {"schedules": [...]} with 1-10 objects, as many as the api handler takes."""
    from scheduler_runtime.core.validation import MAX_BATCH_SIZE as RUNTIME_LIMIT

    b = stacks["rest"]
    methods = rest_methods(b)
    batch, single = methods[("POST", "/schedule-batches")], methods[("POST", "/schedules")]
    for key in ("AuthorizationType", "Integration", "RequestValidatorId"):
        assert batch[key] == single[key], key
    (resource_id,) = [k for k, path in rest_paths(b).items() if path == "/schedule-batches"]
    parent = b.json["Resources"][resource_id]["Properties"]["ParentId"]
    assert parent == {"Fn::GetAtt": [logical_id(b, b.scheduler.api), "RootResourceId"]}
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


def test_rest_batch_model_holds_the_envelope_and_leaves_items_to_the_handler(stacks):
    """The rendered batch model, run through a draft-4 validator (API Gateway's draft): 1-10 objects
    and nothing but "schedules" (the api handler's envelope rules); an item's own mistakes pass the
    gateway so that the handler answers them per item."""
    import jsonschema  # cfn-lint's dependency, so always installed with the test tools

    b = stacks["rest"]
    batch = rest_methods(b)[("POST", "/schedule-batches")]
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


def test_rest_gateway_errors_keep_the_api_error_shape(stacks):
    b = stacks["rest"]
    responses = {r["Properties"]["ResponseType"]: r["Properties"]
                 for r in resources_of(b.json, "AWS::ApiGateway::GatewayResponse").values()}
    assert set(responses) == {"BAD_REQUEST_BODY", "BAD_REQUEST_PARAMETERS", "DEFAULT_4XX", "DEFAULT_5XX"}
    for kind, field in (("BAD_REQUEST_BODY", '"body"'), ("BAD_REQUEST_PARAMETERS", '"id"'), ("DEFAULT_4XX", "null")):
        template = responses[kind]["ResponseTemplates"]["application/json"]
        assert template == f'{{"message": $context.error.messageString, "field": {field}}}'
        # once API Gateway substitutes the quoted message, the body is JSON of the API's error shape
        rendered = json.loads(template.replace("$context.error.messageString", '"Invalid request body"'))
        assert set(rendered) == {"message", "field"}


def test_rest_stage_throttling_and_logging(stacks):
    b = stacks["rest"]
    b.template.has_resource_properties("AWS::ApiGateway::RestApi", {"EndpointConfiguration": {"Types": ["REGIONAL"]}})
    stage = only(b.json, "AWS::ApiGateway::Stage")[1]["Properties"]
    assert stage["StageName"] == "v1"
    assert stage["AccessLogSetting"]["DestinationArn"]["Fn::GetAtt"][0].startswith("TimersApiAccessLogs")
    assert "$context.requestId" in stage["AccessLogSetting"]["Format"]
    assert stage["MethodSettings"] == [{"DataTraceEnabled": False, "HttpMethod": "*", "LoggingLevel": "ERROR",
                                        "MetricsEnabled": True, "ResourcePath": "/*",
                                        "ThrottlingBurstLimit": 200, "ThrottlingRateLimit": 100}]
    b.template.resource_count_is("AWS::ApiGateway::Account", 1)
    custom = stacks["custom"]
    stage = only(custom.json, "AWS::ApiGateway::Stage")[1]["Properties"]
    assert stage["StageName"] == "live"
    assert (stage["MethodSettings"][0]["ThrottlingRateLimit"], stage["MethodSettings"][0]["ThrottlingBurstLimit"]) == (10, 20)
    custom.template.resource_count_is("AWS::ApiGateway::Account", 0)
    assert "AccessLogSetting" not in stage  # access_logging=False


def test_rest_cognito_auth(stacks):
    b = stacks["custom"]
    pool = logical_id(b, b.extra["pool"])
    authorizer = only(b.json, "AWS::ApiGateway::Authorizer")
    assert authorizer[1]["Properties"]["Type"] == "COGNITO_USER_POOLS"
    assert authorizer[1]["Properties"]["ProviderARNs"] == [{"Fn::GetAtt": [pool, "Arn"]}]
    assert set(rest_methods(b)) == ROUTES
    for props in rest_methods(b).values():
        assert props["AuthorizationType"] == "COGNITO_USER_POOLS"
        assert props["AuthorizerId"] == {"Ref": authorizer[0]}
        assert props["AuthorizationScopes"] == ["timers/write"]


def test_rest_api_key_auth(stacks):
    b = stacks["api_key"]
    assert set(rest_methods(b)) == ROUTES
    for props in rest_methods(b).values():
        assert props["AuthorizationType"] == "NONE" and props["ApiKeyRequired"] is True
    b.template.resource_count_is("AWS::ApiGateway::ApiKey", 1)
    b.template.resource_count_is("AWS::ApiGateway::UsagePlanKey", 1)
    b.template.has_resource_properties("AWS::ApiGateway::UsagePlan", {
        "Throttle": {"RateLimit": 100, "BurstLimit": 200},
        "ApiStages": [Match.object_like({"Stage": Match.any_value()})],
    })
    assert b.scheduler.api_key is not None and stacks["rest"].scheduler.api_key is None


def test_rest_no_auth(stacks):
    assert set(rest_methods(stacks["none"])) == ROUTES
    for props in rest_methods(stacks["none"]).values():
        assert props["AuthorizationType"] == "NONE" and "ApiKeyRequired" not in props


HTTP_ROUTE_KEYS = {f"{verb} {path}" for verb, path in ROUTES}


def test_http_api_is_the_default_with_iam_on_every_route(stacks):
    b = stacks["defaults"]
    assert not [r for r in b.json["Resources"].values() if r["Type"].startswith("AWS::ApiGateway::")]
    (api_id, api), = resources_of(b.json, "AWS::ApiGatewayV2::Api").items()
    assert api_id.startswith("TimersHttpApi") and api["Properties"]["ProtocolType"] == "HTTP"
    routes = http_routes(b)
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


def test_http_stage_is_default_auto_deployed_throttled_and_logged(stacks):
    b = stacks["defaults"]
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


def test_http_cognito_is_a_jwt_authorizer_for_the_app_clients(stacks):
    b = stacks["http_cognito"]
    pool, client = logical_id(b, b.extra["pool"]), logical_id(b, b.extra["app_client"])
    (authorizer_id, authorizer), = resources_of(b.json, "AWS::ApiGatewayV2::Authorizer").items()
    props = authorizer["Properties"]
    assert props["AuthorizerType"] == "JWT"
    assert props["IdentitySource"] == ["$request.header.Authorization"]
    assert props["JwtConfiguration"]["Audience"] == [{"Ref": client}]
    issuer = props["JwtConfiguration"]["Issuer"]
    assert issuer == {"Fn::Join": ["", ["https://cognito-idp.eu-west-1.amazonaws.com/", {"Ref": pool}]]}
    routes = http_routes(b)
    assert set(routes) == HTTP_ROUTE_KEYS
    for route in routes.values():
        assert (route["AuthorizationType"], route["AuthorizerId"]) == ("JWT", {"Ref": authorizer_id})
        assert route["AuthorizationScopes"] == ["timers/write"]
    stage = only(b.json, "AWS::ApiGatewayV2::Stage")[1]["Properties"]
    assert stage["DefaultRouteSettings"] == {"ThrottlingBurstLimit": 20, "ThrottlingRateLimit": 10}
    assert "AccessLogSettings" not in stage
    assert not [k for k in b.json["Resources"] if k.startswith("TimersApiAccessLogs")]


def test_http_no_auth(stacks):
    routes = http_routes(stacks["http_none"])
    assert set(routes) == HTTP_ROUTE_KEYS
    assert {r["AuthorizationType"] for r in routes.values()} == {"NONE"}


def test_no_api_means_direct_invoke_only(stacks):
    b = stacks["no_api"]
    assert not [r for r in b.json["Resources"].values() if r["Type"].startswith("AWS::ApiGateway")]
    assert not [k for k in b.json["Resources"] if k.startswith("TimersApiAccessLogs")]
    assert not [p for p in resources_of(b.json, "AWS::Lambda::Permission").values()
                if p["Properties"]["Principal"] == "apigateway.amazonaws.com"]
    s = b.scheduler
    assert (s.api, s.api_stage, s.api_key) == (None, None, None)
    with pytest.raises(ValueError, match=r"^url: this scheduler has no API \(api=SchedulerApi.none\(\)\)"):
        s.url  # noqa: B018 - a typed str everywhere else: reading it is the mistake
    # grant_schedule is the invoke alone
    assert client_statements(b) == [invoke_statement(b)]


def test_attributes(stacks):
    s = stacks["defaults"].scheduler
    assert isinstance(s.table, dynamodb.Table)
    assert isinstance(s.delayer_queue, sqs.Queue) and isinstance(s.dead_letter_queue, sqs.Queue)
    assert isinstance(s.api, apigwv2.HttpApi) and isinstance(s.api_stage, apigwv2.HttpStage)
    assert (s.api.node.id, s.api_stage.node.path) == ("HttpApi", "Defaults/Timers/HttpApi/DefaultStage")
    assert s.scheduler_api.kind == "HTTP" and s.api_key is None
    rest = stacks["rest"].scheduler
    assert isinstance(rest.api, apigw.RestApi) and rest.api.node.id == "Api"
    assert rest.api_stage.node.path == rest.api.deployment_stage.node.path == "Rest/Timers/Api/DeploymentStage.v1"
    assert s.table.node.id == "Table"
    assert [f.node.id for f in s.functions] == list(FUNCTION_IDS)
    assert s.dispatcher_function.node.id == "DispatcherFunction"
    assert s.sweep_rule.node.id == "SweepSchedule"
    assert cdk.Token.is_unresolved(s.url) and cdk.Token.is_unresolved(rest.url)
