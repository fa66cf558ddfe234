"""Eager prop validation: a wrong value raises ValueError naming the prop and the allowed range;
unresolved tokens are left for CloudFormation."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import ApiAuthorization, DelayedScheduler, LogLevel, SchedulerApi, targets
from cdk_delayed_scheduler._contract import contract


@pytest.fixture(scope="module")
def app() -> cdk.App:
    """One app for the module's stacks that are never synthesized: a scheduler in a new app stages the
    functions' asset again, one in a new stack of an app where it is staged costs a fraction of that."""
    return cdk.App()


@pytest.fixture()
def stack(app):
    """A stack of the test's own (named after it) in the module's app."""
    return cdk.Stack(app, f"S{len(app.node.children)}")


@pytest.fixture(scope="module")
def synthesized():
    """One stack, synthesized once, with a scheduler of unresolved tokens (``Tokens``) and one of every
    default (``Defaults``), each delivering to a queue."""
    stack = cdk.Stack(cdk.App(), "S")
    target = targets.SqsSendMessage(sqs.Queue(stack, "Q"))
    shards = cdk.CfnParameter(stack, "Shards", type="Number").value_as_number
    memory = cdk.CfnParameter(stack, "Memory", type="Number").value_as_number
    level = LogLevel.of(cdk.CfnParameter(stack, "Level").value_as_string)
    window = cdk.Duration.seconds(cdk.CfnParameter(stack, "Window", type="Number").value_as_number)
    tokens = DelayedScheduler(stack, "Tokens", target=target, shard_count=shards, api_memory_size=memory,
                              log_level=level, delay_window=window)
    defaults = DelayedScheduler(stack, "Defaults", target=target)
    return stack, tokens, defaults, Template.from_stack(stack).to_json()["Resources"]


@pytest.fixture()
def target(stack):
    return targets.SqsSendMessage(sqs.Queue(stack, "Q"))


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"shard_count": 0}, r"shard_count: must be between 1 and 256, got 0"),
        ({"shard_count": 257}, r"shard_count: must be between 1 and 256"),
        ({"delay_window": cdk.Duration.seconds(901)}, r"delay_window: must be between 90 and 900 seconds, got 901"),
        ({"delay_window": cdk.Duration.seconds(60)}, r"delay_window: must be between 90 and 900 seconds"),
        ({"history_retention": cdk.Duration.seconds(59)},
         r"^history_retention: must be between 60 seconds and 3650 days, got 59 seconds$"),
        ({"history_retention": cdk.Duration.days(3651)},
         r"^history_retention: must be between 60 seconds and 3650 days, got 3651 days$"),
        ({"read_capacity": 5}, r"read_capacity/write_capacity: only allowed with billing_mode=BillingMode.PROVISIONED"),
        ({"billing_mode": dynamodb.BillingMode.PROVISIONED, "write_capacity": 0}, r"write_capacity: must be >= 1"),
        ({"log_level": "INFO"}, r"log_level: must be a LogLevel, e.g. LogLevel.INFO, or LogLevel.of\(text\)"),
        ({"api_memory_size": 64}, r"api_memory_size: must be between 128 and 10240"),
        ({"sweeper_memory_size": 10241}, r"sweeper_memory_size: must be between 128 and 10240"),
        ({"enqueuer_memory_size": 127}, r"enqueuer_memory_size: must be between 128 and 10240"),
        ({"dispatcher_memory_size": 0}, r"dispatcher_memory_size: must be between 128 and 10240"),
        ({"api": "http"}, r"api: must be SchedulerApi.http\(...\), SchedulerApi.rest\(...\) or SchedulerApi.none\(\)"),
        ({"dispatcher_timeout": cdk.Duration.seconds(5)}, r"dispatcher_timeout: must be between 10 and 900 seconds"),
        ({"dispatcher_timeout": cdk.Duration.minutes(16)}, r"dispatcher_timeout: must be between 10 and 900 seconds"),
        ({"dispatcher_batch_size": 11}, r"dispatcher_batch_size: more than 10 \(11\) needs dispatcher_max_batching_window"),
        ({"dispatcher_batch_size": 10001, "dispatcher_max_batching_window": cdk.Duration.seconds(1)},
         r"dispatcher_batch_size: must be between 1 and 10000"),
        ({"dispatcher_max_batching_window": cdk.Duration.seconds(5), "dispatcher_timeout": cdk.Duration.seconds(14)},
         r"dispatcher_timeout: must be at least dispatcher_max_batching_window \+ 10 seconds \(15 seconds\)"),
        ({"precision": "SECOND"}, r"^precision: must be DeliveryPrecision.SUB_SECOND or DeliveryPrecision.SECOND"),
        ({"dispatcher_max_batching_window": cdk.Duration.seconds(301)},
         r"dispatcher_max_batching_window: must be between 0 and 300 seconds"),
        ({"dispatcher_max_concurrency": 1}, r"dispatcher_max_concurrency: must be between 2 and 1000"),
        ({"max_receive_count": 0}, r"max_receive_count: must be between 1 and 1000"),
        ({"stream_batch_size": 1001}, r"stream_batch_size: must be between 1 and 1000"),
        ({"stream_retry_attempts": -1}, r"stream_retry_attempts: must be between 0 and 10000"),
        ({"metrics_namespace": ""}, r"metrics_namespace: must be a non-empty string"),
        ({"shard_count": "16"}, r"shard_count: must be a number, got '16'"),
        ({"shard_count": cdk.Duration.seconds(16)}, r"^shard_count: must be a number, got a Duration$"),
        ({"api": SchedulerApi}, r"^api: must be SchedulerApi.http\(...\), .* got a type$"),
        ({"delay_window": cdk.Duration.millis(90500)}, r"delay_window: must be whole seconds, got 90.5 seconds"),
        ({"history_retention": cdk.Duration.millis(60001)}, r"history_retention: must be whole seconds"),
        ({"extra_targets": {"bad name": None}}, r"target name: must be 1-64 characters"),
    ],
)
def test_invalid_props_raise_value_error_naming_the_prop(stack, target, props, message):
    with pytest.raises(ValueError, match=message):
        DelayedScheduler(stack, "Timers", target=target, **props)


def test_unresolved_tokens_are_not_validated(synthesized):
    stack, scheduler, _, resources = synthesized
    api_function = resources[stack.get_logical_id(scheduler.api_function.node.default_child)]
    env = api_function["Properties"]["Environment"]["Variables"]
    assert api_function["Properties"]["MemorySize"] == {"Ref": "Memory"}
    assert env["SHARD_COUNT"] == {"Ref": "Shards"}
    assert env["LOG_LEVEL"] == {"Ref": "Level"}
    assert env["DELAY_WINDOW_SECONDS"] == {"Ref": "Window"}
    assert set(api_function["Properties"]["LoggingConfig"]) == {"LogGroup"}  # a token level keeps the text format


def test_a_token_dispatcher_timeout_is_refused(stack, target):
    seconds = cdk.CfnParameter(stack, "Timeout", type="Number").value_as_number
    with pytest.raises(ValueError, match=r"dispatcher_timeout: must be a concrete duration"):
        DelayedScheduler(stack, "Timers", target=target, dispatcher_timeout=cdk.Duration.seconds(seconds))


def test_boundaries_are_allowed(stack, target):
    # Each at its limit; 1000 receives and a 900 s dispatcher cannot go together (the delayer queue's
    # retention would end before the last receive), so each bound is taken on its own.
    DelayedScheduler(stack, "Timers", target=target, shard_count=256, delay_window=cdk.Duration.seconds(900),
                     dispatcher_timeout=cdk.Duration.seconds(900), dispatcher_batch_size=1, max_receive_count=5,
                     dispatcher_max_concurrency=2, stream_retry_attempts=0, api_memory_size=128,
                     dispatcher_memory_size=10240)
    DelayedScheduler(stack, "Many", target=target, max_receive_count=1000, dispatcher_timeout=cdk.Duration.seconds(57))


def test_target_names_must_be_unique_and_valid(stack, target):
    scheduler = DelayedScheduler(stack, "Timers", target=target)
    with pytest.raises(ValueError, match=r"target name: 'default' is already registered"):
        scheduler.add_target("default", target)
    with pytest.raises(ValueError, match=r"target name: must be 1-64 characters of A-Za-z0-9._:-, got 'x/y'"):
        scheduler.add_target("x/y", target)
    with pytest.raises(ValueError, match=r"target name: must be 1-64 characters of A-Za-z0-9._:-, got 'ok\\n'"):
        scheduler.add_target("ok\n", target)  # re.match's "$" would let a trailing newline through
    with pytest.raises(ValueError, match=r"target 'q': must be a target from cdk_delayed_scheduler.targets"):
        scheduler.add_target("q", sqs.Queue(stack, "Raw"))
    scheduler.add_target("other.queue:1", target)
    assert scheduler.target_names == ["default", "other.queue:1"]


def test_a_target_is_required(stack):
    with pytest.raises(ValueError, match=r"target: a target is required"):
        DelayedScheduler(stack, "Timers", target=None)


def test_message_group_id_needs_a_fifo_queue(stack):
    with pytest.raises(ValueError, match=r"message_group_id: only a FIFO queue takes a message group id"):
        targets.SqsSendMessage(sqs.Queue(stack, "Standard"), message_group_id="g")
    fifo = sqs.Queue(stack, "Fifo", fifo=True)
    with pytest.raises(ValueError, match=r"message_group_id: must be 1-128 characters"):
        targets.SqsSendMessage(fifo, message_group_id="x" * 129)
    assert targets.SqsSendMessage(fifo, message_group_id="g").message_group_id == "g"


@pytest.mark.parametrize("cls", [SchedulerApi, ApiAuthorization])
def test_api_choices_are_built_only_by_their_factories(cls):
    with pytest.raises(TypeError, match=rf"^{cls.__name__} is built with its factories: {cls.__name__}\.\w+\("):
        cls()
    with pytest.raises(TypeError, match=r"built with its factories"):
        cls(object(), kind="HTTP")


def test_api_authorization_factories():
    assert ApiAuthorization.iam().kind == "IAM"
    assert ApiAuthorization.api_key().kind == "API_KEY"
    assert ApiAuthorization.none().kind == "NONE"
    stack = cdk.Stack(cdk.App(), "S")
    from aws_cdk import aws_cognito as cognito

    pool = cognito.UserPool(stack, "Pool")
    client = pool.add_client("App")
    auth = ApiAuthorization.cognito(pool, scopes=["a/b"], user_pool_clients=[client])
    assert (auth.kind, auth.user_pools, auth.scopes, auth.user_pool_clients) == ("COGNITO", (pool,), ("a/b",), (client,))


def test_scheduler_api_factories_and_their_defaults():
    http, rest, none = SchedulerApi.http(), SchedulerApi.rest(), SchedulerApi.none()
    assert (http.kind, rest.kind, none.kind) == ("HTTP", "REST", "NONE")
    for api in (http, rest):
        assert (api.authorization.kind, api.throttling_rate_limit, api.throttling_burst_limit, api.access_logging) == (
            "IAM", 100, 200, True)
    # None: follow CDK's @aws-cdk/aws-apigateway:disableCloudWatchRole flag, as RestApi does
    assert (rest.stage_name, rest.cloud_watch_role, http.cloud_watch_role) == ("v1", None, False)


@pytest.mark.parametrize(
    ("factory", "props", "message"),
    [
        (SchedulerApi.http, {"throttling_rate_limit": 0}, r"throttling_rate_limit: must be >= 1, got 0"),
        (SchedulerApi.http, {"throttling_burst_limit": 0}, r"throttling_burst_limit: must be >= 1"),
        (SchedulerApi.rest, {"throttling_rate_limit": 0.5}, r"throttling_rate_limit: must be >= 1"),
        (SchedulerApi.rest, {"throttling_burst_limit": "200"}, r"throttling_burst_limit: must be a number"),
        (SchedulerApi.rest, {"stage_name": ""}, r"stage_name: must be a non-empty string"),
        (SchedulerApi.http, {"authorization": ApiAuthorization.api_key()},
         r"authorization: HTTP APIs have no API keys; use SchedulerApi.rest"),
        (SchedulerApi.http, {"authorization": ApiAuthorization.cognito(None)},
         r"authorization: ApiAuthorization.cognito\(...\) with SchedulerApi.http\(\) needs user_pool_clients"),
        (SchedulerApi.rest, {"authorization": ApiAuthorization.cognito(None, user_pool_clients=[object()])},
         r"authorization: user_pool_clients apply to SchedulerApi.http\(\) only"),
    ],
)
def test_invalid_api_props_raise_value_error_naming_the_prop(factory, props, message):
    with pytest.raises(ValueError, match=message):
        factory(**props)


def test_api_throttling_tokens_are_not_validated(stack):
    rate = cdk.CfnParameter(stack, "Rate", type="Number").value_as_number
    assert SchedulerApi.http(throttling_rate_limit=rate).throttling_rate_limit is rate


#: Each prop with a range in contract.json, its bounds, and how a test writes a value of it.
_BOUNDED = (
    ("shard_count", contract.SHARD_COUNT, int),
    ("delay_window", contract.DELAY_WINDOW_SECONDS, cdk.Duration.seconds),
    ("history_retention", contract.HISTORY_RETENTION_SECONDS, cdk.Duration.seconds),
    ("max_receive_count", contract.MAX_RECEIVE_COUNT, int),
    ("dispatcher_timeout", contract.DISPATCHER_TIMEOUT_SECONDS, cdk.Duration.seconds),
    ("dispatcher_batch_size", contract.DISPATCHER_BATCH_SIZE, int),
    ("dispatcher_max_batching_window", contract.DISPATCHER_MAX_BATCHING_WINDOW_SECONDS, cdk.Duration.seconds),
    ("dispatcher_max_concurrency", contract.DISPATCHER_MAX_CONCURRENCY, int),
    ("stream_batch_size", contract.STREAM_BATCH_SIZE, int),
    ("stream_retry_attempts", contract.STREAM_RETRY_ATTEMPTS, int),
    ("api_memory_size", contract.MEMORY_SIZE_MIB, int),
)


@pytest.mark.parametrize(("prop", "bounds", "to_value"), _BOUNDED, ids=[row[0] for row in _BOUNDED])
def test_each_range_is_the_contracts(prop, bounds, to_value):
    """One past either bound is refused with the prop's name and the contract's numbers (the bounds
    themselves pass: test_boundaries_are_allowed)."""
    def build(value):
        stack = cdk.Stack(cdk.App(), "S")
        # the fewest receives, so that a long dispatcher_timeout or delay_window fits the queue's retention
        receives = {} if prop == "max_receive_count" else {"max_receive_count": 1}
        return DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")),
                                **receives, **{prop: to_value(value)})

    low, high = (bounds.min, bounds.max) if prop != "history_retention" else ("60 seconds", "3650 days")
    for bad in (bounds.min - 1, bounds.max + 1):
        if bad < 0 and to_value == cdk.Duration.seconds:
            continue  # no Duration is negative
        with pytest.raises(ValueError, match=rf"^{prop}: must be between {low} and {high}\b"):
            build(bad)


def test_defaults_are_the_contracts(synthesized):
    """Every default the runtime shares with the construct comes from contract.json."""
    stack, _, scheduler, resources = synthesized
    env = resources[stack.get_logical_id(scheduler.api_function.node.default_child)]["Properties"]["Environment"][
        "Variables"]
    names = contract.ENV
    assert (env[names.shard_count], env[names.delay_window_seconds], env[names.history_retention_seconds],
            env[names.max_receive_count], env[names.log_level], env[names.metrics_namespace]) == (
        str(contract.SHARD_COUNT.default), str(contract.DELAY_WINDOW_SECONDS.default),
        str(contract.HISTORY_RETENTION_SECONDS.default), str(contract.MAX_RECEIVE_COUNT.default),
        contract.DEFAULT_LOG_LEVEL, contract.DEFAULT_METRICS_NAMESPACE)
    assert stack.resolve(scheduler.api_function.timeout.to_seconds()) == contract.API_FUNCTION_TIMEOUT_SECONDS
    assert scheduler.target_names == [contract.DEFAULT_TARGET_NAME]


def test_the_signature_and_the_props_are_the_same_props():
    """The construct's keyword arguments are exactly the props value's fields, in the same order, and
    each default the signature states is the one the construct applies."""
    import dataclasses
    import inspect

    from cdk_delayed_scheduler._props import SchedulerProps

    parameters = {name: p for name, p in inspect.signature(DelayedScheduler.__init__).parameters.items()
                  if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert list(parameters) == [f.name for f in dataclasses.fields(SchedulerProps)]
    stack = cdk.Stack(cdk.App(), "S")
    target = targets.SqsSendMessage(sqs.Queue(stack, "Q"))
    arguments = {name: p.default for name, p in parameters.items() if p.default is not inspect.Parameter.empty}
    props = SchedulerProps.of({**arguments, "target": target})
    for name, default in arguments.items():
        if default is not None:
            assert getattr(props, name) is default, name
    assert (props.api.kind, props.delay_window.to_seconds(), props.log_level) == (
        "HTTP", contract.DELAY_WINDOW_SECONDS.default, LogLevel.of(contract.DEFAULT_LOG_LEVEL))


def test_lambda_target_accepts_an_imported_function(stack):
    fn = lambda_.Function.from_function_arn(stack, "Imported", "arn:aws:lambda:eu-west-1:123456789012:function:cb")
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(fn))
    assert scheduler.target_names == ["default"]


# --- the mistakes a first-time user makes: each named, with what to write instead --------------
def _function(stack, id="Fn", **props):
    return lambda_.Function(stack, id, runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"), **props)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"delay_window": 900}, r"^delay_window: must be a Duration, e.g. Duration.seconds\(900\), got 900$"),
        ({"history_retention": 3600}, r"^history_retention: must be a Duration, e.g. Duration.seconds\(3600\)"),
        ({"dispatcher_timeout": 120}, r"^dispatcher_timeout: must be a Duration, e.g. Duration.seconds\(120\)"),
        ({"dispatcher_max_batching_window": "1s"}, r"^dispatcher_max_batching_window: must be a Duration.*got '1s'"),
        ({"removal_policy": "destroy"}, r"^removal_policy: must be a RemovalPolicy, e.g. RemovalPolicy.DESTROY"),
        ({"billing_mode": "PROVISIONED"}, r"^billing_mode: must be a BillingMode"),
        ({"log_retention": 7}, r"^log_retention: must be a RetentionDays, e.g. RetentionDays.ONE_WEEK, got 7"),
        ({"architecture": "arm64"}, r"^architecture: must be an Architecture, e.g. Architecture.X86_64"),
        ({"runtime": "python3.13"}, r"^runtime: must be a Lambda runtime, e.g. Runtime.PYTHON_3_11, got 'python3.13'"),
        ({"runtime": lambda_.Runtime.NODEJS_22_X}, r"^runtime: must be a Python 3.11 or later Lambda runtime .*got nodejs22.x"),
        ({"runtime": lambda_.Runtime.PYTHON_3_10}, r"^runtime: must be a Python 3.11 or later Lambda runtime .*got python3.10"),
        ({"extra_targets": ["billing"]}, r"^extra_targets: must be a mapping of name to target"),
    ],
)
def test_a_wrong_kind_of_value_is_named_with_an_example(stack, target, props, message):
    with pytest.raises(ValueError, match=message):
        DelayedScheduler(stack, "Timers", target=target, **props)


def test_a_function_or_queue_given_as_a_target_is_told_which_wrapper_to_use(stack):
    fn, queue = _function(stack), sqs.Queue(stack, "Deliveries")
    with pytest.raises(ValueError, match=r"^target: must be a target from cdk_delayed_scheduler.targets, got Function; "
                                         r"wrap the function: targets.LambdaInvoke\(fn\)$"):
        DelayedScheduler(stack, "Timers", target=fn)
    with pytest.raises(ValueError, match=r"^target: .*got Queue; wrap the queue: targets.SqsSendMessage\(queue\)$"):
        DelayedScheduler(stack, "Timers2", target=queue)
    with pytest.raises(ValueError, match=r"^handler: must be a Lambda function \(aws_lambda.IFunction\), got Queue; "
                                         r"for a queue use targets.SqsSendMessage\(queue\)$"):
        targets.LambdaInvoke(queue)
    with pytest.raises(ValueError, match=r"^queue: must be an SQS queue \(aws_sqs.IQueue\), got Function; "
                                         r"for a function use targets.LambdaInvoke\(fn\)$"):
        targets.SqsSendMessage(fn)


def test_the_dispatcher_timeout_must_cover_each_lambda_targets_timeout(stack):
    slow = _function(stack, "Slow", timeout=cdk.Duration.seconds(60))
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 65 seconds to cover target 'default', "
                                         r"a Lambda function with a 60-second timeout .* got 60 seconds$"):
        DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(slow))
    scheduler = DelayedScheduler(stack, "Fits", target=targets.LambdaInvoke(slow),
                                 dispatcher_timeout=cdk.Duration.seconds(65))
    longer = _function(stack, "Longer", timeout=cdk.Duration.minutes(2))
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 125 seconds to cover target 'batch'"):
        scheduler.add_target("batch", targets.LambdaInvoke(longer))
    assert scheduler.target_names == ["default"]
    # Lambda's own default (3 s) when a function sets none; an imported function's is not known
    quick = DelayedScheduler(stack, "Quick", target=targets.LambdaInvoke(_function(stack, "Default")),
                             dispatcher_timeout=cdk.Duration.seconds(10))
    imported = lambda_.Function.from_function_arn(stack, "Imported", "arn:aws:lambda:eu-west-1:123456789012:function:x")
    quick.add_target("imported", targets.LambdaInvoke(imported))
    assert quick.target_names == ["default", "imported"]


def test_log_level_is_a_log_level():
    assert LogLevel.of("info") == LogLevel.INFO and repr(LogLevel.of("Debug")) == "LogLevel.DEBUG"
    with pytest.raises(ValueError, match=r"^log_level: must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL, got 'VERBOSE'$"):
        LogLevel.of("VERBOSE")
    token = LogLevel.of(cdk.CfnParameter(cdk.Stack(cdk.App(), "P"), "Level").value_as_string)
    assert token.is_token and not LogLevel.WARNING.is_token
