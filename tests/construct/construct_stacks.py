"""The stacks the construct tests read, each built and synthesized once per test session.

``conftest.stacks`` (session-scoped) builds a stack on its first use, by name, and every module
that asks for the same name gets the same synthesized template:

* ``defaults``: every default (the HTTP API, IAM), ``grant_schedule`` to ``Client``, ``grant_invoke``
  to ``Invoker``;
* ``custom``: every prop changed (``CUSTOM_PROPS``), the REST API with Cognito, SQS targets (one on a
  FIFO queue) and a Lambda target added with ``add_target``;
* ``http_cognito``: the HTTP API with a JWT authorizer, no access logs, ``LogLevel.INFO``;
* ``rest``, ``api_key``, ``none``, ``http_none``, ``no_api``: one per other API choice;
* ``fanout``: SNS targets (a topic with a customer managed key as the default, a FIFO topic with a
  message group), EventBridge targets (a custom bus, and the account's default bus imported) and a
  Step Functions target (an imported state machine);
* ``https``: HTTPS targets, signed with a secret of the stack, one encrypted with a customer managed
  key (with headers and the longest timeout), and one imported by name;
* ``periodic``: periodic timers declared in the stack (``add_periodic`` twice, one in a group, one naming a
  target added after it, and a ``PeriodicTimer`` in a construct of its own);
* ``alarms``: ``add_alarms`` with every default and a topic encrypted with a customer managed key, then
  ``add_dashboard``;
* ``alarms_custom``: the REST API's scheduler with ``add_dashboard`` first, then ``add_alarms`` with every
  parameter changed and an ``IAlarmAction``; and a scheduler with no API (``Quiet``) with both.
"""

from __future__ import annotations

import json
import tempfile
from typing import Any, Callable, Optional

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import ApiAuthorization, DelayedScheduler, LogLevel, SchedulerApi, targets
from cdk_delayed_scheduler._contract import contract

from construct_helpers import only, resources_of

ENV = cdk.Environment(account="123456789012", region="eu-west-1")
FUNCTION_IDS = ("ApiFunction", "SweeperFunction", "EnqueuerFunction", "DispatcherFunction")
#: Every route, as the API table of DESIGN.md lists them.
ROUTES = {("POST", "/schedules"), ("GET", "/schedules/{id}"), ("DELETE", "/schedules/{id}"), ("PATCH", "/schedules/{id}"),
          ("POST", "/schedule-batches"), ("GET", "/schedules"),
          ("PUT", "/periodic/{id}"), ("GET", "/periodic/{id}"), ("PATCH", "/periodic/{id}"), ("DELETE", "/periodic/{id}"),
          ("GET", "/periodic"), ("DELETE", "/groups/{group}"), ("GET", "/targets/{name}"), ("PATCH", "/targets/{name}")}


def callback(stack: cdk.Stack, id: str = "Callback") -> lambda_.Function:
    return lambda_.Function(stack, id, runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"))


class Built:
    """A synthesized stack with its scheduler and the test's own resources (``extra``)."""

    def __init__(self, stack: cdk.Stack, scheduler: DelayedScheduler, **extra: Any) -> None:
        self.stack, self.scheduler, self.extra = stack, scheduler, extra
        self.template = Template.from_stack(stack)
        self.json: dict = self.template.to_json()


#: The ``custom`` stack's props, besides its target, extra targets and API (every one changed).
CUSTOM_PROPS: dict[str, Any] = dict(
    shard_count=32, delay_window=cdk.Duration.seconds(600), history_retention=cdk.Duration.hours(2),
    billing_mode=dynamodb.BillingMode.PROVISIONED, read_capacity=7, write_capacity=9, point_in_time_recovery=False,
    removal_policy=cdk.RemovalPolicy.DESTROY, log_level=LogLevel.of("debug"), log_retention=logs.RetentionDays.ONE_WEEK,
    runtime=lambda_.Runtime.PYTHON_3_12, architecture=lambda_.Architecture.X86_64, api_memory_size=512,
    sweeper_memory_size=1024, enqueuer_memory_size=384, dispatcher_memory_size=192,
    dispatcher_timeout=cdk.Duration.seconds(120), dispatcher_batch_size=5,
    dispatcher_max_batching_window=cdk.Duration.seconds(2), dispatcher_max_concurrency=7, max_receive_count=3,
    stream_batch_size=50, stream_retry_attempts=4, metrics_namespace="Acme/Timers",
    api_name="acme-timers", tracing=lambda_.Tracing.ACTIVE, deletion_protection=True,
    dispatcher_reserved_concurrency=10,
)


def _defaults(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "Defaults", env=ENV)
    target_fn = callback(stack)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(target_fn))
    client = iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal())
    scheduler.grant_schedule(client)
    invoker = iam.Role(stack, "Invoker", assumed_by=iam.AccountRootPrincipal())
    scheduler.grant_invoke(invoker)
    return Built(stack, scheduler, callback=target_fn, client=client, invoker=invoker)


def _custom(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "Custom", env=ENV)
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    jobs_key = kms.Key(stack, "JobsKey", enable_key_rotation=True)
    jobs = sqs.Queue(stack, "Jobs", encryption=sqs.QueueEncryption.KMS, encryption_master_key=jobs_key,
                     enforce_ssl=True)
    ordered = sqs.Queue(stack, "Ordered", fifo=True, enforce_ssl=True)
    pool = cognito.UserPool(stack, "Pool")
    other = callback(stack, "Other")
    scheduler = DelayedScheduler(
        stack, "Timers",
        target=targets.SqsSendMessage(jobs),
        extra_targets={"ordered": targets.SqsSendMessage(ordered, message_group_id="g-1")},
        api=SchedulerApi.rest(authorization=ApiAuthorization.cognito(pool, scopes=["timers/write"]),
                              throttling_rate_limit=10, throttling_burst_limit=20, stage_name="live",
                              cloud_watch_role=False, access_logging=False),
        encryption_key=key,
        **CUSTOM_PROPS,
    )
    scheduler.add_target("callback", targets.LambdaInvoke(other))
    return Built(stack, scheduler, key=key, jobs=jobs, jobs_key=jobs_key, ordered=ordered, pool=pool, callback=other)


def _http_cognito(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "HttpCognito", env=ENV)
    pool = cognito.UserPool(stack, "Pool")
    app_client = pool.add_client("App")
    scheduler = DelayedScheduler(
        stack, "Timers", target=targets.LambdaInvoke(callback(stack)), log_level=LogLevel.INFO,
        api=SchedulerApi.http(authorization=ApiAuthorization.cognito(pool, scopes=["timers/write"],
                                                                     user_pool_clients=[app_client]),
                              throttling_rate_limit=10, throttling_burst_limit=20, access_logging=False))
    return Built(stack, scheduler, pool=pool, app_client=app_client)


def _simple(name: str, api: Callable[[], SchedulerApi], grant: bool = False) -> Callable[[cdk.App], Built]:
    def build(app: cdk.App) -> Built:
        stack = cdk.Stack(app, name, env=ENV)
        scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback(stack)), api=api())
        extra = {}
        if grant:
            extra["client"] = iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal())
            scheduler.grant_schedule(extra["client"])
            extra["invoker"] = iam.Role(stack, "Invoker", assumed_by=iam.AccountRootPrincipal())
            scheduler.grant_invoke(extra["invoker"])
        return Built(stack, scheduler, **extra)

    return build


def _fanout(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "Fanout", env=ENV)
    alerts_key = kms.Key(stack, "AlertsKey", enable_key_rotation=True)
    alerts = sns.Topic(stack, "Alerts", master_key=alerts_key, enforce_ssl=True)
    ordered = sns.Topic(stack, "Ordered", fifo=True, topic_name="ordered.fifo", enforce_ssl=True)
    bus = events.EventBus(stack, "Bus")
    default_bus = events.EventBus.from_event_bus_name(stack, "DefaultBus", "default")
    scheduler = DelayedScheduler(
        stack, "Timers", target=targets.SnsPublish(alerts),
        extra_targets={"ordered": targets.SnsPublish(ordered, message_group_id="orders")})
    scheduler.add_target("events", targets.EventBridgePutEvents(bus, detail_type="Timer due",
                                                                source="com.example.timers"))
    scheduler.add_target("audit", targets.EventBridgePutEvents(default_bus, detail_type="Audit timer",
                                                               source="com.example.audit"))
    scheduler.add_target("workflow", targets.StepFunctionsStartExecution(
        sfn.StateMachine.from_state_machine_arn(stack, "Workflow", FANOUT_STATE_MACHINE_ARN)))
    return Built(stack, scheduler, alerts=alerts, alerts_key=alerts_key, ordered=ordered, bus=bus)


#: The state machine the ``fanout`` stack imports as its Step Functions target.
FANOUT_STATE_MACHINE_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:fulfil"


def _https(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "Https", env=ENV)
    plain = secretsmanager.Secret(stack, "HookSecret")
    key = kms.Key(stack, "HookKey", enable_key_rotation=True)
    keyed = secretsmanager.Secret(stack, "KeyedSecret", encryption_key=key)
    partner = secretsmanager.Secret.from_secret_name_v2(stack, "PartnerSecret", "partner/hooks")
    scheduler = DelayedScheduler(stack, "Timers", target=targets.HttpsEndpoint(
        "https://hooks.example.com/timers", signing_secret=plain))
    scheduler.add_target("keyed", targets.HttpsEndpoint(
        "https://hooks.example.com:8443/due?tenant=acme", signing_secret=keyed,
        headers={"X-Tenant": "acme", "Authorization-Hint": "none"}, timeout=cdk.Duration.seconds(30)))
    scheduler.add_target("partner", targets.HttpsEndpoint("https://partner.example.org/", signing_secret=partner))
    return Built(stack, scheduler, plain=plain, key=key, keyed=keyed)


def _periodic(app: cdk.App) -> Built:
    import datetime as dt

    from cdk_delayed_scheduler import PeriodicTimer

    stack = cdk.Stack(app, "Periodic", env=ENV)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback(stack)))
    nightly = scheduler.add_periodic("nightly-report", cron="0 2 * * ? *", time_zone="Europe/Paris",
                                     payload={"report": "daily", "queue": scheduler.delayer_queue.queue_url},
                                     group="reports")
    heartbeat = scheduler.add_periodic(
        "heartbeat", every=cdk.Duration.minutes(5), payload=[1, "two", None], target="billing",
        start_at=dt.datetime(2027, 1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1))),
        end_at=dt.datetime(2128, 1, 1, tzinfo=dt.timezone.utc))  # far ahead: synth refuses an end already past
    scheduler.add_target("billing", targets.LambdaInvoke(callback(stack, "Billing")))
    own = PeriodicTimer(cdk.Stack(app, "Jobs", env=ENV), "Weekly", scheduler=scheduler, timer_id="weekly",
                        cron="0 9 ? * MON *", payload={"job": "weekly"})
    return Built(stack, scheduler, nightly=nightly, heartbeat=heartbeat, own=own)


def _alarms(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "Alarms", env=ENV)
    key = kms.Key(stack, "OpsKey", enable_key_rotation=True)
    ops = sns.Topic(stack, "Ops", master_key=key, enforce_ssl=True)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback(stack)))
    alarms = scheduler.add_alarms(alarm_action=ops)
    dashboard = scheduler.add_dashboard()
    return Built(stack, scheduler, key=key, ops=ops, alarms=alarms, dashboard=dashboard)


#: ``add_alarms``'s parameters in the ``alarms_custom`` stack (every one changed).
CUSTOM_ALARMS: dict[str, Any] = dict(
    lateness_threshold=cdk.Duration.millis(250), evaluation_periods=5, period=cdk.Duration.minutes(2),
    iterator_age_threshold=cdk.Duration.seconds(30), stalled_margin=cdk.Duration.minutes(5))


def _alarms_custom(app: cdk.App) -> Built:
    stack = cdk.Stack(app, "AlarmsCustom", env=ENV)
    pager = sns.Topic(stack, "Pager", enforce_ssl=True)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback(stack)), api=SchedulerApi.rest(),
                                 delay_window=cdk.Duration.seconds(600), dispatcher_timeout=cdk.Duration.seconds(30))
    dashboard = scheduler.add_dashboard(dashboard_name="timers", period=cdk.Duration.minutes(1))
    alarms = scheduler.add_alarms(alarm_action=cloudwatch_actions.SnsAction(pager), **CUSTOM_ALARMS)
    quiet = DelayedScheduler(stack, "Quiet", target=targets.LambdaInvoke(callback(stack, "QuietCallback")),
                             api=SchedulerApi.none())
    quiet_alarms = quiet.add_alarms()
    quiet_dashboard = quiet.add_dashboard()
    return Built(stack, scheduler, pager=pager, alarms=alarms, dashboard=dashboard, quiet=quiet,
                 quiet_alarms=quiet_alarms, quiet_dashboard=quiet_dashboard)


#: Each shared stack's builder, by name; each builds in an app of its own.
BUILDERS: dict[str, Callable[[cdk.App], Built]] = {
    "defaults": _defaults,
    "custom": _custom,
    "http_cognito": _http_cognito,
    "rest": _simple("Rest", SchedulerApi.rest, grant=True),
    "api_key": _simple("ApiKey", lambda: SchedulerApi.rest(authorization=ApiAuthorization.api_key())),
    "none": _simple("Open", lambda: SchedulerApi.rest(authorization=ApiAuthorization.none())),
    "http_none": _simple("HttpOpen", lambda: SchedulerApi.http(authorization=ApiAuthorization.none())),
    "no_api": _simple("NoApi", SchedulerApi.none, grant=True),
    "periodic": _periodic,
    "fanout": _fanout,
    "https": _https,
    "alarms": _alarms,
    "alarms_custom": _alarms_custom,
}


class Stacks:
    """The shared stacks by name, each built on first use (``stacks["defaults"]``).

    Each is built in an app of its own, and every app synthesizes into the same directory (the stacks'
    names differ): the functions' asset is copied there once, not once per app."""

    def __init__(self) -> None:
        self._built: dict[str, Built] = {}
        self._outdir = tempfile.mkdtemp(prefix="construct-stacks-")

    def __getitem__(self, name: str) -> Built:
        if name not in self._built:
            self._built[name] = BUILDERS[name](cdk.App(outdir=self._outdir))
        return self._built[name]


# --- reading a template ---------------------------------------------------------------------
def function_props(b: Built, fid: str) -> dict:
    return only(b.json, "AWS::Lambda::Function", f"Timers{fid}")[1]["Properties"]


def environment(b: Built, fid: str) -> dict:
    return function_props(b, fid)["Environment"]["Variables"]


def policy(b: Built, fid: str) -> list:
    return only(b.json, "AWS::IAM::Policy", f"Timers{fid}Role")[1]["Properties"]["PolicyDocument"]["Statement"]


def actions_of(statements: list) -> set:
    found: set = set()
    for s in statements:
        found.update([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    return found


def logical_id(b: Built, construct: Any) -> str:
    return b.stack.get_logical_id(construct.node.default_child)


def invoke_statement(b: Built) -> dict:
    """``grant_invoke``: lambda:InvokeFunction on exactly the api function (no version wildcard)."""
    api_fn = only(b.json, "AWS::Lambda::Function", "TimersApiFunction")[0]
    return {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": {"Fn::GetAtt": [api_fn, "Arn"]}}


def client_statements(b: Built, role: str = "Client") -> list:
    """The statements of the policy ``grant_schedule``/``grant_invoke`` gave the test's role."""
    return only(b.json, "AWS::IAM::Policy", f"{role}DefaultPolicy")[1]["Properties"]["PolicyDocument"]["Statement"]


def rest_paths(b: Built) -> dict:
    """Each AWS::ApiGateway::Resource's logical id -> its full path."""
    resources = {k: v["Properties"] for k, v in resources_of(b.json, "AWS::ApiGateway::Resource").items()}

    def path(resource_id: str) -> str:
        props = resources[resource_id]
        parent = props["ParentId"]
        prefix = path(parent["Ref"]) if "Ref" in parent else ""
        return f"{prefix}/{props['PathPart']}"

    return {k: path(k) for k in resources}


def rest_methods(b: Built) -> dict:
    """(method, path) -> the REST method's properties."""
    paths = rest_paths(b)
    out = {}
    for props in (m["Properties"] for m in resources_of(b.json, "AWS::ApiGateway::Method").values()):
        key = (props["HttpMethod"], paths[props["ResourceId"]["Ref"]])
        assert key not in out, key
        out[key] = props
    return out


def http_routes(b: Built) -> dict:
    return {r["Properties"]["RouteKey"]: r["Properties"]
            for r in resources_of(b.json, "AWS::ApiGatewayV2::Route").values()}


def rendered_targets(b: Built) -> dict:
    """TARGETS with each token replaced by the logical id it points at."""
    value = environment(b, "DispatcherFunction")[contract.ENV.targets]
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


def seconds_text(duration: Optional[cdk.Duration]) -> str:
    """A duration prop as the functions' environment carries it: its whole seconds, as text."""
    assert duration is not None
    return str(int(duration.to_seconds()))
