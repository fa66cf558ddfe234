"""Builds the API a ``SchedulerApi`` (the ``api`` prop) chose, in front of the api function, and
acknowledges the cdk-nag findings of the REST API where it is made."""

from __future__ import annotations

import json
import re
import weakref
from dataclasses import dataclass
from typing import Any, Optional, Union

import jsii
from aws_cdk import FeatureFlags, Stack, Stage
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from . import _nag
from ._rest_models import method_requests
from .api import ROUTES, ApiAuthorization, ApiAuthorizationKind, SchedulerApi, SchedulerApiKind

#: A route as ``(method, path)``, the key of ``BuiltApi.route_arns``.
RouteKey = tuple[str, str]

DESCRIPTION = "Delayed scheduler: create, read, list and cancel one-shot and periodic timers."

#: CDK's feature flag: when set, a REST API creates no account-level logging role by default.
DISABLE_CLOUD_WATCH_ROLE_FLAG = "@aws-cdk/aws-apigateway:disableCloudWatchRole"
# The AWS::ApiGateway::Account an earlier REST scheduler created, per stage (the app, or a Stage
# inside it) and environment: an account-wide setting is created once, and later schedulers wait for it.
_ACCOUNT_OWNERS: "weakref.WeakKeyDictionary[Stage, dict[str, IConstruct]]" = weakref.WeakKeyDictionary()

#: The HTTP API's access log line: who called which route, and how it went.
HTTP_ACCESS_LOG_FORMAT = json.dumps({
    "requestId": "$context.requestId", "ip": "$context.identity.sourceIp", "caller": "$context.identity.caller",
    "user": "$context.identity.user", "requestTime": "$context.requestTime", "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey", "status": "$context.status", "protocol": "$context.protocol",
    "responseLength": "$context.responseLength", "latency": "$context.responseLatency",
    "integrationError": "$context.integrationErrorMessage", "authorizerError": "$context.authorizer.error",
}, separators=(",", ":"))


@dataclass(frozen=True)
class BuiltApi:
    """The API a ``SchedulerApi`` built: the API, its stage, its URL, and each route's ARN."""

    api: Union[apigwv2.HttpApi, apigw.RestApi]
    stage: Union[apigwv2.HttpStage, apigw.Stage]
    url: str
    route_arns: dict[RouteKey, str]
    """``(method, path)`` -> the ``execute-api`` ARN of that route on this stage (each path parameter as ``*``), for
    each of ``ROUTES``, in its order."""
    api_key: Optional[apigw.IApiKey] = None


def build(scope: Construct, function: lambda_.IFunction, scheduler_api: SchedulerApi,
          access_logs: Optional[logs.ILogGroup], *, api_name: Optional[str] = None,
          tracing: lambda_.Tracing = lambda_.Tracing.DISABLED) -> Optional[BuiltApi]:
    """The API ``scheduler_api`` chose, named ``api_name`` (``None``: CDK's default, the construct id);
    ``None`` for ``SchedulerApi.none()`` (its factories make the only kinds). ``Tracing.ACTIVE`` traces
    the REST stage; an HTTP API has no X-Ray tracing."""
    if scheduler_api.kind == SchedulerApiKind.HTTP:
        return _http_api(scope, function, scheduler_api, access_logs, api_name)
    if scheduler_api.kind == SchedulerApiKind.REST:
        return _rest_api(scope, function, scheduler_api, access_logs, api_name,
                         traced=tracing == lambda_.Tracing.ACTIVE)
    return None


def _route_arns(api: Union[apigwv2.HttpApi, apigw.RestApi], stage_name: str) -> dict[RouteKey, str]:
    return {(route.method, route.path): api.arn_for_execute_api(route.method, re.sub(r"{\w+}", "*", route.path),
                                                                stage_name)
            for route in ROUTES}


# --- HTTP API --------------------------------------------------------------------------------
@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogSettings:
    def __init__(self, destination: apigwv2.IAccessLogDestination, format: apigw.AccessLogFormat) -> None:
        self._destination, self._format = destination, format

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigw.AccessLogFormat:
        return self._format


def _http_authorizer(authorization: ApiAuthorization) -> Optional[apigwv2.IHttpRouteAuthorizer]:
    kind = authorization.kind
    if kind == ApiAuthorizationKind.IAM:
        return authorizers.HttpIamAuthorizer()
    if kind == ApiAuthorizationKind.COGNITO:
        # A JWT authorizer: issuer = the pool's URL, audience = the app clients.
        return authorizers.HttpUserPoolAuthorizer("CognitoAuthorizer", authorization.user_pools[0],
                                                  user_pool_clients=list(authorization.user_pool_clients))
    return None  # ApiAuthorization.none() (SchedulerApi.http() refuses an API key)


def _http_api(scope: Construct, function: lambda_.IFunction, scheduler_api: SchedulerApi,
              access_logs: Optional[logs.ILogGroup], api_name: Optional[str]) -> BuiltApi:
    authorization = scheduler_api.authorization
    api = apigwv2.HttpApi(
        scope,
        "HttpApi",
        api_name=api_name,
        description=DESCRIPTION,
        create_default_stage=False,
        default_authorizer=_http_authorizer(authorization),
        default_authorization_scopes=list(authorization.scopes) or None,
    )
    stage = api.add_stage(
        "DefaultStage",
        stage_name="$default",
        auto_deploy=True,
        throttle=apigwv2.ThrottleSettings(rate_limit=scheduler_api.throttling_rate_limit,
                                          burst_limit=scheduler_api.throttling_burst_limit),
        access_log_settings=_AccessLogSettings(
            apigwv2.LogGroupLogDestination(access_logs), apigw.AccessLogFormat.custom(HTTP_ACCESS_LOG_FORMAT),
        ) if access_logs is not None else None,
    )
    # One integration for every route: the api function routes by the event's routeKey.
    integration = integrations.HttpLambdaIntegration(
        "ApiIntegration", function, payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0)
    for route in ROUTES:
        api.add_routes(path=route.path, methods=[apigwv2.HttpMethod(route.method)], integration=integration)
    return BuiltApi(api=api, stage=stage, url=stage.url, route_arns=_route_arns(api, stage.stage_name))


# --- REST API --------------------------------------------------------------------------------
def _rest_method_options(scope: Construct, authorization: ApiAuthorization) -> dict[str, Any]:
    kind = authorization.kind
    if kind == ApiAuthorizationKind.IAM:
        return dict(authorization_type=apigw.AuthorizationType.IAM)
    if kind == ApiAuthorizationKind.API_KEY:
        return dict(authorization_type=apigw.AuthorizationType.NONE, api_key_required=True)
    if kind == ApiAuthorizationKind.COGNITO:
        authorizer = apigw.CognitoUserPoolsAuthorizer(scope, "ApiAuthorizer",
                                                      cognito_user_pools=list(authorization.user_pools))
        return dict(authorization_type=apigw.AuthorizationType.COGNITO, authorizer=authorizer,
                    authorization_scopes=list(authorization.scopes) or None)
    return dict(authorization_type=apigw.AuthorizationType.NONE)  # ApiAuthorization.none()


def _owners(scope: Construct) -> dict[str, IConstruct]:
    stage = Stage.of(scope)
    assert stage is not None, "a DelayedScheduler is always inside a Stack, so inside an App or Stage"
    return _ACCOUNT_OWNERS.setdefault(stage, {})


def _account_setting(scope: Construct, scheduler_api: SchedulerApi) -> tuple[bool, Optional[IConstruct]]:
    """Whether this REST API creates API Gateway's account-level logging role (``AWS::ApiGateway::Account``),
    and the one an earlier scheduler created for the same environment in this app, if any.

    ``cloud_watch_role=None`` follows CDK's ``@aws-cdk/aws-apigateway:disableCloudWatchRole`` flag,
    as ``RestApi`` does. Either way the role is created at most once per app (or Stage) and
    environment: one Account resource per account and region, which later REST APIs depend on.
    """
    wanted = scheduler_api.cloud_watch_role
    if wanted is None:
        wanted = not FeatureFlags.of(scope).is_enabled(DISABLE_CLOUD_WATCH_ROLE_FLAG)
    if not wanted:
        return False, None
    existing = _owners(scope).get(Stack.of(scope).environment)
    return existing is None, existing


def _rest_api(scope: Construct, function: lambda_.IFunction, scheduler_api: SchedulerApi,
              access_logs: Optional[logs.ILogGroup], api_name: Optional[str], *, traced: bool) -> BuiltApi:
    method_options = _rest_method_options(scope, scheduler_api.authorization)
    destination = apigw.LogGroupLogDestination(access_logs) if access_logs is not None else None
    log_format = apigw.AccessLogFormat.json_with_standard_fields(
        caller=True, http_method=True, ip=True, protocol=True, request_time=True,
        resource_path=True, response_length=True, status=True, user=True,
    ) if access_logs is not None else None
    create_account, existing_account = _account_setting(scope, scheduler_api)
    api = apigw.RestApi(
        scope,
        "Api",
        rest_api_name=api_name,
        description=DESCRIPTION,
        endpoint_types=[apigw.EndpointType.REGIONAL],
        cloud_watch_role=create_account,
        deploy_options=apigw.StageOptions(
            stage_name=scheduler_api.stage_name,
            throttling_rate_limit=scheduler_api.throttling_rate_limit,
            throttling_burst_limit=scheduler_api.throttling_burst_limit,
            logging_level=apigw.MethodLoggingLevel.ERROR,
            data_trace_enabled=False,
            metrics_enabled=True,
            access_log_destination=destination,
            access_log_format=log_format,
            tracing_enabled=True if traced else None,
        ),
    )

    if create_account:
        _owners(scope)[Stack.of(scope).environment] = api.node.find_child("Account")
    elif existing_account is not None:
        api.deployment_stage.node.add_dependency(existing_account)  # a stack dependency across stacks

    integration = apigw.LambdaIntegration(function, proxy=True)
    for (verb, path), request in method_requests(api).items():
        api.root.resource_for_path(path).add_method(verb, integration, **request, **method_options)

    # Errors API Gateway answers itself (request validation, auth, throttling) keep the API's
    # error shape, {"message": ..., "field": ...}, like the errors of the api function.
    for response_id, response_type, field in (
        ("BadRequestBody", apigw.ResponseType.BAD_REQUEST_BODY, '"body"'),
        ("BadRequestParameters", apigw.ResponseType.BAD_REQUEST_PARAMETERS, '"id"'),
        ("Default4xx", apigw.ResponseType.DEFAULT_4_XX, "null"),
        ("Default5xx", apigw.ResponseType.DEFAULT_5_XX, "null"),
    ):
        api.add_gateway_response(
            response_id,
            type=response_type,
            templates={"application/json": f'{{"message": $context.error.messageString, "field": {field}}}'},
        )

    api_key = None
    if scheduler_api.authorization.kind == ApiAuthorizationKind.API_KEY:
        api_key = api.add_api_key("ApiKey")
        plan = api.add_usage_plan(
            "UsagePlan",
            throttle=apigw.ThrottleSettings(rate_limit=scheduler_api.throttling_rate_limit,
                                            burst_limit=scheduler_api.throttling_burst_limit),
        )
        plan.add_api_key(api_key)
        plan.add_api_stage(stage=api.deployment_stage)
    _acknowledge_rest_findings(api, scheduler_api.authorization.kind)
    stage = api.deployment_stage
    return BuiltApi(api=api, stage=stage, url=api.url, route_arns=_route_arns(api, stage.stage_name),
                    api_key=api_key)


def _acknowledge_rest_findings(api: apigw.RestApi, kind: str) -> None:
    """On the stage (APIG3), on each method (COG4, APIG4) and on API Gateway's logging role (IAM4):
    the resources those rules judge."""
    _nag.acknowledge(api.deployment_stage,
        rule="AwsSolutions-APIG3",
        reason="A WAFv2 web ACL is an account-level choice with its own cost; the API is protected by "
               "IAM/Cognito/API-key auth, request validation and stage throttling, and a user can "
               "associate a web ACL with the stage (DelayedScheduler.api_stage).",
    )
    for method in api.methods:
        if kind in (ApiAuthorizationKind.IAM, ApiAuthorizationKind.API_KEY):
            _nag.acknowledge(method,
                rule="AwsSolutions-COG4",
                reason="The API is authorized with "
                       + ("IAM (SigV4)" if kind == ApiAuthorizationKind.IAM
                          else "an API key, as the user chose with ApiAuthorization.api_key()")
                       + "; a Cognito authorizer is one of the options, not a requirement.",
            )
        if kind == ApiAuthorizationKind.API_KEY:
            _nag.acknowledge(method,
                rule="AwsSolutions-APIG4",
                reason="The user chose API key authorization (ApiAuthorization.api_key()); every method "
                       "requires the key.",
            )
    cloud_watch_role = api.node.try_find_child("CloudWatchRole")
    if cloud_watch_role is not None:
        _nag.acknowledge(cloud_watch_role,
            rule="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                 "AmazonAPIGatewayPushToCloudWatchLogs]",
            reason="API Gateway's account-level logging role needs this AWS managed policy for REST access "
                   "and execution logs; set cloud_watch_role=False when the account already has one.",
        )
