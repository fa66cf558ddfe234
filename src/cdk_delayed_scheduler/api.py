"""The scheduler's API, chosen with ``SchedulerApi`` (the ``api`` prop): an HTTP API (the default), a REST API,
or none (direct invoke of the api function only); and who may call it, with ``ApiAuthorization``."""

from __future__ import annotations

from typing import Optional, Sequence

from aws_cdk import aws_cognito as cognito

from ._contract import contract
from ._validation import check_non_empty, check_range

__all__ = ["SchedulerApi", "SchedulerApiKind", "ApiAuthorization", "ApiAuthorizationKind", "ROUTES", "READ_ROUTES"]

#: The routes (``contract.ROUTES``: method, path, operation), each answered by the api function, in
#: every kind of API. ``GET /schedules`` (the listing) is declared whatever the ``listing`` prop:
#: without listing the api function answers it 404 with how to turn listing on, which says more than
#: API Gateway's bare "Not Found" would, and turning listing on later changes no route (so no
#: caller's grant).
ROUTES: tuple[contract.Route, ...] = contract.ROUTES
#: The routes that only read (``DelayedScheduler.grant_read``).
READ_ROUTES: tuple[contract.Route, ...] = tuple(route for route in ROUTES if route.reads_only)

#: Only the factories hold it: ``SchedulerApi`` and ``ApiAuthorization`` are never built directly.
_FACTORY = object()


def _from_factory(key: object, cls: str, factories: str) -> None:
    if key is not _FACTORY:
        raise TypeError(f"{cls} is built with its factories: {factories}")


class ApiAuthorizationKind:
    """The kinds of :class:`ApiAuthorization` (string constants)."""

    IAM = "IAM"
    API_KEY = "API_KEY"
    COGNITO = "COGNITO"
    NONE = "NONE"


class ApiAuthorization:
    """How callers authenticate to the scheduler's API, built with the factory methods:
    ``ApiAuthorization.iam()``, ``.api_key()``, ``.cognito(pool)`` or ``.none()``."""

    def __init__(self, key: object = None, /, *, kind: str = ApiAuthorizationKind.IAM,
                 user_pools: Sequence[cognito.IUserPool] = (), scopes: Sequence[str] = (),
                 user_pool_clients: Sequence[cognito.IUserPoolClient] = ()) -> None:
        _from_factory(key, "ApiAuthorization", _AUTHORIZATION_FACTORIES)
        self.kind = kind
        self.user_pools = tuple(user_pools)
        self.scopes = tuple(scopes)
        self.user_pool_clients = tuple(user_pool_clients)

    @staticmethod
    def iam() -> "ApiAuthorization":
        """SigV4-signed requests, allowed by IAM policy (see ``grant_schedule``). The default."""
        return ApiAuthorization(_FACTORY, kind=ApiAuthorizationKind.IAM)

    @staticmethod
    def api_key() -> "ApiAuthorization":
        """An API key in the ``x-api-key`` header; ``SchedulerApi.rest()`` only (HTTP APIs have no API
        keys). The construct creates the key and a usage plan (``DelayedScheduler.api_key``); the key
        value is read from API Gateway, never from the template."""
        return ApiAuthorization(_FACTORY, kind=ApiAuthorizationKind.API_KEY)

    @staticmethod
    def cognito(user_pool: cognito.IUserPool, *, scopes: Sequence[str] = (),
                user_pool_clients: Sequence[cognito.IUserPoolClient] = ()) -> "ApiAuthorization":
        """A Cognito user pool token in the ``Authorization`` header.

        With ``SchedulerApi.http()`` this is a JWT authorizer whose issuer is the pool's URL and whose
        audience is the app clients below; with ``SchedulerApi.rest()``, a Cognito user pools
        authorizer, which accepts a token of any app client of the pool.

        :param user_pool: the pool whose tokens are accepted.
        :param scopes: OAuth scopes an access token must carry. Default: none (an ID token is accepted).
        :param user_pool_clients: the app clients whose tokens are accepted (the JWT audience);
            required with ``SchedulerApi.http()``, refused with ``SchedulerApi.rest()``. Default: none.
        """
        return ApiAuthorization(_FACTORY, kind=ApiAuthorizationKind.COGNITO, user_pools=[user_pool], scopes=scopes,
                                user_pool_clients=user_pool_clients)

    @staticmethod
    def none() -> "ApiAuthorization":
        """No authorization at all: anyone who knows the URL can create and cancel schedules.

        Only for a private test; cdk-nag (APIG4, COG4) reports it, and that is intended."""
        return ApiAuthorization(_FACTORY, kind=ApiAuthorizationKind.NONE)


class SchedulerApiKind:
    """The kinds of :class:`SchedulerApi` (string constants)."""

    HTTP = "HTTP"
    REST = "REST"
    NONE = "NONE"


class SchedulerApi:
    """Which API the scheduler gets, built with the factory methods: ``SchedulerApi.http()`` (the
    default), ``SchedulerApi.rest()`` or ``SchedulerApi.none()``.

    Every kind also answers direct invokes of the api function (``DelayedScheduler.grant_invoke``).
    """

    def __init__(self, key: object = None, /, *, kind: str = SchedulerApiKind.NONE,
                 authorization: Optional[ApiAuthorization] = None,
                 throttling_rate_limit: Optional[float] = None, throttling_burst_limit: Optional[int] = None,
                 access_logging: bool = False, stage_name: Optional[str] = None,
                 cloud_watch_role: Optional[bool] = False) -> None:
        _from_factory(key, "SchedulerApi", _API_FACTORIES)
        self.kind = kind
        self.authorization: ApiAuthorization = authorization or ApiAuthorization.iam()
        self.throttling_rate_limit = throttling_rate_limit
        self.throttling_burst_limit = throttling_burst_limit
        self.access_logging = access_logging
        self.stage_name = stage_name
        self.cloud_watch_role = cloud_watch_role

    @staticmethod
    def http(*, authorization: Optional[ApiAuthorization] = None, throttling_rate_limit: float = 100,
             throttling_burst_limit: int = 200, access_logging: bool = True) -> "SchedulerApi":
        """An API Gateway HTTP API (the default): the routes (``ROUTES``) on the ``$default`` stage
        (auto-deployed, so the URL has no stage path), each integrated with the api function (payload
        format 2.0).
        The cheapest API Gateway door. API Gateway's own refusals (403 unauthorized, 404 unknown
        route, 429 throttled) answer ``{"message"}``; everything else is the api function's
        ``{"message", "field"}``. No account-wide logging role is created.

        :param authorization: who may call it: ``ApiAuthorization.iam()``, ``.cognito(pool,
            user_pool_clients=[...])`` (a JWT authorizer) or ``.none()``. Default: ``ApiAuthorization.iam()``.
        :param throttling_rate_limit: the stage's steady-state request rate, per second.
            Allowed: >= 1. Default: 100.
        :param throttling_burst_limit: the stage's burst capacity. Allowed: >= 1. Default: 200.
        :param access_logging: one JSON line per request (caller, route, status, latency, errors)
            in the ``ApiAccessLogs`` log group; costs one log line (a few hundred bytes) per API request.
            cdk-nag (APIG1) reports an API without it. Default: true.
        """
        authorization = authorization or ApiAuthorization.iam()
        _check_throttling(throttling_rate_limit, throttling_burst_limit)
        if authorization.kind == ApiAuthorizationKind.API_KEY:
            raise ValueError("authorization: HTTP APIs have no API keys; use "
                             "SchedulerApi.rest(authorization=ApiAuthorization.api_key())")
        if authorization.kind == ApiAuthorizationKind.COGNITO and not authorization.user_pool_clients:
            raise ValueError("authorization: ApiAuthorization.cognito(...) with SchedulerApi.http() needs "
                             "user_pool_clients (the JWT audience: the app clients whose tokens are accepted)")
        return SchedulerApi(_FACTORY, kind=SchedulerApiKind.HTTP, authorization=authorization,
                            throttling_rate_limit=throttling_rate_limit, throttling_burst_limit=throttling_burst_limit,
                            access_logging=access_logging)

    @staticmethod
    def rest(*, authorization: Optional[ApiAuthorization] = None, throttling_rate_limit: float = 100,
             throttling_burst_limit: int = 200, access_logging: bool = True, stage_name: str = "v1",
             cloud_watch_role: Optional[bool] = None) -> "SchedulerApi":
        """An API Gateway REST API (regional): request models and validators (JSON schemas of the
        create, batch and periodic bodies; the listing routes' query strings), gateway responses in
        the API's ``{"message", "field"}`` shape, execution logs at ERROR level, API keys and usage
        plans, and a stage a WAF web ACL can be associated with (``DelayedScheduler.api_stage``).

        :param authorization: who may call it: ``ApiAuthorization.iam()``, ``.api_key()``,
            ``.cognito(pool)`` or ``.none()``. Default: ``ApiAuthorization.iam()``.
        :param throttling_rate_limit: the stage's (and the usage plan's) steady-state request rate,
            per second. Allowed: >= 1. Default: 100.
        :param throttling_burst_limit: the stage's burst capacity. Allowed: >= 1. Default: 200.
        :param access_logging: one JSON line per request in the ``ApiAccessLogs`` log group; costs
            one log line, about 400 bytes, per API request. cdk-nag (APIG1) reports an API without
            it. Default: true.
        :param stage_name: the stage name in the API's URL. Default: ``"v1"``.
        :param cloud_watch_role: create the role that lets API Gateway write REST logs, and set it
            in the account (``AWS::ApiGateway::Account``, retained: an account-wide setting). It is
            created at most once per app and environment (account and region): a second REST
            scheduler, in this stack or another, uses the first one's (its stage depends on it).
            Set false when the account already has the role. Default: as CDK's ``RestApi``: not
            created when the app sets the ``@aws-cdk/aws-apigateway:disableCloudWatchRole`` feature
            flag (``cdk init`` sets it), created otherwise.
        """
        authorization = authorization or ApiAuthorization.iam()
        _check_throttling(throttling_rate_limit, throttling_burst_limit)
        check_non_empty("stage_name", stage_name)
        if authorization.user_pool_clients:
            raise ValueError("authorization: user_pool_clients apply to SchedulerApi.http() only; a REST "
                             "API's Cognito authorizer accepts a token of any app client of the pool")
        return SchedulerApi(_FACTORY, kind=SchedulerApiKind.REST, authorization=authorization,
                            throttling_rate_limit=throttling_rate_limit, throttling_burst_limit=throttling_burst_limit,
                            access_logging=access_logging, stage_name=stage_name, cloud_watch_role=cloud_watch_role)

    @staticmethod
    def none() -> "SchedulerApi":
        """No API Gateway at all: producers invoke the api function directly
        (``DelayedScheduler.grant_invoke``). The cheapest door: no per-request API Gateway charge."""
        return SchedulerApi(_FACTORY, kind=SchedulerApiKind.NONE)


_AUTHORIZATION_FACTORIES = ("ApiAuthorization.iam(), ApiAuthorization.api_key(), ApiAuthorization.cognito(pool) "
                            "or ApiAuthorization.none()")
_API_FACTORIES = "SchedulerApi.http(...), SchedulerApi.rest(...) or SchedulerApi.none()"


def _check_throttling(rate_limit: float, burst_limit: int) -> None:
    check_range("throttling_rate_limit", rate_limit, 1, None)
    check_range("throttling_burst_limit", burst_limit, 1, None)
