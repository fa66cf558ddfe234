"""Periodic timers declared in the stack (``add_periodic``, ``PeriodicTimer``): each a custom resource
whose properties are the ``PUT /periodic/{id}`` body, served by one provider that invokes the api
function and nothing else; what can be judged without tokens is refused at synth, naming the prop.

CloudFormation's events themselves are answered by the api function: tests/handlers/
test_periodic_resource_events.py (moto runs a Lambda-backed custom resource only in Docker)."""

from __future__ import annotations

import datetime as dt
import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import DelayedScheduler, PeriodicTimer, targets
from cdk_delayed_scheduler.periodic import RESOURCE_TYPE
from construct_helpers import only, resources_of
from construct_stacks import logical_id

UTC = dt.timezone.utc


def _timers(b) -> dict:
    """{timer id: (logical id, properties)} of the stack's periodic timers."""
    return {r["Properties"]["Id"]: (k, r["Properties"]) for k, r in resources_of(b.json, RESOURCE_TYPE).items()}


def _body(definition, resolve=lambda part: part) -> dict:
    """The Definition property as the api function reads it (``Fn::Join`` parts resolved by ``resolve``)."""
    if isinstance(definition, dict):
        definition = "".join(p if isinstance(p, str) else resolve(p) for p in definition["Fn::Join"][1])
    return json.loads(definition)


def test_each_timer_is_a_custom_resource_holding_its_put_body(stacks):
    b = stacks["periodic"]
    timers = _timers(b)
    assert sorted(timers) == ["heartbeat", "nightly-report"]
    queue = logical_id(b, b.scheduler.delayer_queue)
    nightly = _body(timers["nightly-report"][1]["Definition"], lambda ref: "<" + ref["Ref"] + ">")
    assert nightly == {"payload": {"report": "daily", "queue": f"<{queue}>"}, "cron": "0 2 * * ? *",
                       "timeZone": "Europe/Paris", "group": "reports"}  # the deploy's PUT makes it a group member
    assert _body(timers["heartbeat"][1]["Definition"]) == {
        "payload": [1, "two", None], "every": 300, "startAt": "2027-01-01T00:00:00.000Z",
        "endAt": "2128-01-01T00:00:00.000Z", "target": "billing"}
    assert timers["nightly-report"][0].startswith("TimersPeriodicnightlyreport")  # the construct id: Periodic-<id>


def test_one_provider_serves_every_timer_and_hands_events_to_the_api_function(stacks):
    b = stacks["periodic"]
    (framework_id, framework), = {k: v for k, v in resources_of(b.json, "AWS::Lambda::Function").items()
                                  if "PeriodicTimersProvider" in k}.items()
    api_fn = logical_id(b, b.scheduler.api_function)
    assert framework["Properties"]["Environment"]["Variables"] == {"USER_ON_EVENT_FUNCTION_ARN": {"Fn::GetAtt": [api_fn, "Arn"]}}
    assert {p["ServiceToken"]["Fn::GetAtt"][0] for _, p in _timers(b).values()} == {framework_id}
    # the timer in another stack reaches the same provider (an export)
    other = Template.from_stack(cdk.Stack.of(b.extra["own"])).to_json()
    ((_, weekly),) = resources_of(other, RESOURCE_TYPE).items()
    assert weekly["Properties"]["Id"] == "weekly" and "Fn::ImportValue" in weekly["Properties"]["ServiceToken"]
    assert _body(weekly["Properties"]["Definition"]) == {"payload": {"job": "weekly"}, "cron": "0 9 ? * MON *"}


def test_the_providers_role_may_write_its_logs_and_invoke_the_api_function_only(stacks):
    b = stacks["periodic"]
    api_fn, logs = logical_id(b, b.scheduler.api_function), "TimersPeriodicTimersProviderLogs"
    _, policy = only(b.json, "AWS::IAM::Policy", "TimersPeriodicTimersProviderRole")
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    arn = {"Fn::GetAtt": [api_fn, "Arn"]}
    assert statements == [
        {"Action": ["logs:CreateLogStream", "logs:PutLogEvents"], "Effect": "Allow",
         "Resource": {"Fn::GetAtt": [only(b.json, "AWS::Logs::LogGroup", logs)[0], "Arn"]}},
        {"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": [arn, {"Fn::Join": ["", [arn, ":*"]]}]},
        {"Action": "lambda:GetFunction", "Effect": "Allow", "Resource": arn},
    ]
    _, role = only(b.json, "AWS::IAM::Role", "TimersPeriodicTimersProviderRole")
    assert "ManagedPolicyArns" not in role["Properties"]  # no AWSLambdaBasicExecutionRole
    reasons = [s for s in policy["Metadata"]["cdk_nag"]["rules_to_suppress"]]
    assert reasons == [{"id": "AwsSolutions-IAM5", "applies_to": [f"Resource::<{api_fn}.Arn>:*"],
                        "reason": reasons[0]["reason"]}]


def test_a_stack_without_periodic_timers_has_no_provider(stacks):
    assert resources_of(stacks["defaults"].json, RESOURCE_TYPE) == {}
    assert not [k for k in stacks["defaults"].json["Resources"] if "PeriodicTimersProvider" in k]


# --- synth-time checks -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def app() -> cdk.App:
    """One app for the module's own schedulers, never synthesized: a scheduler in a new app stages the
    functions' asset again, one in a new stack of an app where it is staged costs a fraction of that."""
    return cdk.App()


def _scheduler(app: cdk.App, name: str) -> DelayedScheduler:
    stack = cdk.Stack(app, name)
    return DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")))


@pytest.fixture(scope="module")
def refusing(app) -> DelayedScheduler:
    """The scheduler the refused definitions are given to: a refusal adds nothing to it (checked each time)."""
    return _scheduler(app, "Refusing")


@pytest.fixture()
def scheduler(app, request) -> DelayedScheduler:
    """A scheduler of the test's own, in a stack named after the test."""
    return _scheduler(app, "".join(c for c in request.node.name if c.isalnum()))


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"timer_id": "bad id!", "every": cdk.Duration.minutes(1)},
         r"^timer_id: must be 1-128 characters of A-Za-z0-9._:-, got 'bad id!'$"),
        ({}, r"^cron/every: exactly one is required: cron \(six fields"),
        ({"cron": "0 2 * * ? *", "every": cdk.Duration.minutes(1)}, r"^cron/every: exactly one is required"),
        ({"cron": "0 2 * *"}, r"^cron: cron must have six fields, minutes hours day-of-month month day-of-week year "
                              r"\(got 4\)$"),
        ({"cron": "0 25 * * ? *"}, r"^cron: .*hours"),
        ({"cron": 5}, r"^cron: must be text, got 5$"),
        ({"cron": "0 2 * * ? *", "time_zone": "Mars/Olympus"}, r"^time_zone: .*Mars/Olympus"),
        ({"every": cdk.Duration.minutes(1), "time_zone": "UTC"}, r"^time_zone: applies to cron only"),
        ({"every": 60}, r"^every: must be a Duration, e.g. Duration.seconds\(60\), got 60$"),
        ({"every": cdk.Duration.millis(1500)}, r"^every: must be whole seconds, got 1.5 seconds$"),
        ({"every": cdk.Duration.seconds(0)}, r"^every: must be >= 1 seconds, got 0$"),
        ({"every": cdk.Duration.minutes(1), "start_at": dt.datetime(2027, 1, 1)},
         r"^start_at: must be a timezone-aware datetime, e.g. datetime\(2027, 1, 1, tzinfo=timezone.utc\), got a datetime$"),
        ({"every": cdk.Duration.minutes(1), "end_at": "2027-01-01T00:00:00Z"},
         r"^end_at: must be a timezone-aware datetime.*got '2027-01-01T00:00:00Z'$"),
        ({"every": cdk.Duration.minutes(1), "start_at": dt.datetime(2027, 1, 1, tzinfo=UTC),
          "end_at": dt.datetime(2027, 1, 1, tzinfo=UTC)}, r"^end_at: must be later than start_at$"),
        ({"every": cdk.Duration.minutes(1), "payload": {"when": dt.date(2027, 1, 1)}},
         r"^payload: must be a JSON value \(dicts, lists, text, numbers, booleans, None\), got a dict$"),
        ({"every": cdk.Duration.minutes(1), "target": 3}, r"^target: must be a target name, got 3$"),
        # a timer that would never fire
        ({"cron": "0 9 30 2 ? *"}, r"^cron: cron '0 9 30 2 \? \*' matches no date at all \(as with day 30 of "
                                   r"February\): a periodic timer on it would never fire$"),
        ({"cron": "0 9 31 4 ? *", "time_zone": "Europe/Paris"}, r"^cron: cron '0 9 31 4 \? \*' matches no date at all"),
        ({"cron": "0 9 * * ? 2020-2025"},
         r"^cron: cron '0 9 \* \* \? 2020-2025' has no occurrence to come: every minute it matches is past \(the "
         r"last year it allows is 2025\)"),
        ({"cron": "0 9 * * ? 2100", "start_at": dt.datetime(2101, 1, 1, tzinfo=UTC)},
         r"^start_at: must not be after the last occurrence of cron '0 9 \* \* \? 2100', got "
         r"2101-01-01T00:00:00.000Z: the timer would never fire$"),
        ({"every": cdk.Duration.minutes(1), "end_at": dt.datetime(2020, 1, 1, tzinfo=UTC)},
         r"^end_at: must be in the future, got 2020-01-01T00:00:00.000Z: the timer would never fire$"),
        ({"cron": "0 2 * * ? *", "start_at": dt.datetime(2019, 1, 1, tzinfo=UTC),
          "end_at": dt.datetime(2020, 1, 1, tzinfo=UTC)},
         r"^end_at: must be in the future, got 2020-01-01T00:00:00.000Z"),
        ({"cron": "0 9 1 1 ? *", "start_at": dt.datetime(2100, 1, 2, tzinfo=UTC),
          "end_at": dt.datetime(2100, 6, 1, tzinfo=UTC)},
         r"^end_at: must be later than the first occurrence of cron '0 9 1 1 \? \*', 2101-01-01T09:00:00.000Z, got "
         r"2100-06-01T00:00:00.000Z: the timer would never fire$"),
        # a retry limit SQS's redrive would cut short
        ({"every": cdk.Duration.minutes(1), "retry_max_attempts": 99},
         r"^retry_max_attempts: must be at most the scheduler's max_receive_count, 5, got 99: SQS parks a delayer "
         r"message after that many receives, whatever its retry policy$"),
        # the group, by the API's rule
        ({"every": cdk.Duration.minutes(1), "group": ""}, r"^group: must be 1-64 characters of A-Za-z0-9._:-, got ''$"),
        ({"every": cdk.Duration.minutes(1), "group": "g" * 65},
         r"^group: must be 1-64 characters of A-Za-z0-9._:-, got 'g{65}'$"),
        ({"every": cdk.Duration.minutes(1), "group": "tenant 7"}, r"^group: must be 1-64 characters .*, got 'tenant 7'$"),
        ({"every": cdk.Duration.minutes(1), "group": "tenant-7\n"}, r"^group: must be 1-64 characters"),
        ({"every": cdk.Duration.minutes(1), "group": 7}, r"^group: must be 1-64 characters of A-Za-z0-9._:-, got 7$"),
    ],
)
def test_a_definition_that_cannot_be_deployed_is_refused_at_synth_naming_the_prop(refusing, props, message):
    arguments = {"timer_id": "nightly", "payload": {}, **props}
    children = [child.node.id for child in refusing.node.children]
    with pytest.raises(ValueError, match=message):
        refusing.add_periodic(arguments.pop("timer_id"), **arguments)
    assert [child.node.id for child in refusing.node.children] == children


def test_a_timer_that_can_fire_is_kept_whatever_its_bounds(scheduler):
    """The synth's checks refuse only what could never fire: a cron of future years, an end far ahead, a leap day."""
    far = dt.datetime(2190, 1, 1, tzinfo=UTC)
    scheduler.add_periodic("leap-day", cron="0 9 29 2 ? *", payload={})
    scheduler.add_periodic("future-years", cron="0 9 1 1 ? 2100-2199", time_zone="Asia/Tokyo", payload={}, end_at=far)
    scheduler.add_periodic("started-long-ago", every=cdk.Duration.hours(1), payload={},
                           start_at=dt.datetime(2020, 1, 1, tzinfo=UTC), end_at=far)
    assert [c.node.id for c in scheduler.node.children if c.node.id.startswith("Periodic-")] == [
        "Periodic-leap-day", "Periodic-future-years", "Periodic-started-long-ago"]


def test_retry_max_attempts_may_reach_the_schedulers_own_max_receive_count(app):
    stack = cdk.Stack(app, "MaxReceiveTwenty")
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")),
                                 max_receive_count=20)
    timer = scheduler.add_periodic("twenty", every=cdk.Duration.minutes(1), payload={}, retry_max_attempts=20)
    assert scheduler.node.try_find_child("Periodic-twenty") is timer
    with pytest.raises(ValueError, match=r"^retry_max_attempts: must be at most the scheduler's max_receive_count, "
                                         r"20, got 21: "):
        scheduler.add_periodic("twenty-one", every=cdk.Duration.minutes(1), payload={}, retry_max_attempts=21)


def test_a_target_is_judged_at_synth_so_one_added_later_counts(scheduler):
    later = scheduler.add_periodic("later", every=cdk.Duration.minutes(1), payload={}, target="billing")
    missing = scheduler.add_periodic("missing", every=cdk.Duration.minutes(1), payload={}, target="nowhere")
    scheduler.add_target("billing", targets.SqsSendMessage(sqs.Queue(cdk.Stack.of(scheduler), "Billing")))
    assert later.node.validate() == []
    assert missing.node.validate() == ["target: 'nowhere' is not a target of this scheduler; registered: "
                                       "default, billing"]


def test_tokens_are_left_for_the_api_to_judge_at_deploy(scheduler):
    stack = cdk.Stack.of(scheduler)
    text = lambda name: cdk.CfnParameter(stack, name).value_as_string  # noqa: E731
    every = cdk.Duration.seconds(cdk.CfnParameter(stack, "Every", type="Number").value_as_number)
    PeriodicTimer(stack, "ByToken", scheduler=scheduler, timer_id=text("Id"), cron=text("Cron"),
                  time_zone=text("Zone"), target=text("Target"), payload={"p": text("P")}, group=text("Group"))
    PeriodicTimer(stack, "EveryToken", scheduler=scheduler, timer_id="every-token", every=every, payload={})
    with pytest.raises(ValueError, match=r"^timer_id: add_periodic names the construct after it"):
        scheduler.add_periodic(text("Id2"), every=cdk.Duration.minutes(1), payload={})
    # CDK's rendering of a token drops a JSON null beside it: refused rather than lost
    with pytest.raises(ValueError, match=r"^payload: None \(JSON null\) cannot be rendered beside a token"):
        scheduler.add_periodic("nulls", every=cdk.Duration.minutes(1), payload={"p": text("P2"), "q": None})
    assert scheduler.node.try_find_child("Periodic-nulls") is None


def test_a_periodic_timer_needs_a_delayed_scheduler():
    stack = cdk.Stack(cdk.App(), "S")
    with pytest.raises(ValueError, match=r"^scheduler: must be a DelayedScheduler, got a Stack$"):
        PeriodicTimer(stack, "T", scheduler=stack, timer_id="t", every=cdk.Duration.minutes(1), payload={})
