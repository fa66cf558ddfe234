"""A target's ``flow_control`` (``targets.FlowControl``): rendered as the ``flowControl`` object of its description
in ``TARGETS``, with only the limits given (each group's, ``per_group``, as its ``perGroup``), in the form the runtime
accepts; taken by every kind of target; each bad value refused naming the prop; and no new permission for the
dispatcher but the flow queue's (test_flow_queue.py)."""

from __future__ import annotations

import json
from typing import Any, Callable

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

from cdk_delayed_scheduler import DelayedScheduler, Outcomes, targets
from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler._flow_control import judged_limits

from construct_helpers import grants, render, resource_names

FIELD = contract.FLOW_CONTROL_FIELD
GROUP = contract.PER_GROUP_FIELD
EVERY_LIMIT = {"rate": 100, "period": cdk.Duration.seconds(2), "max_in_flight": 20}
#: Each named target of the ``Limited`` stack, as its ``flow_control`` (``None``: none).
LIMITS: dict[str, Any] = {
    "default": targets.FlowControl(**EVERY_LIMIT),
    "places": targets.FlowControl(max_in_flight=5),
    "rate": targets.FlowControl(rate=50),
    "tenants": targets.FlowControl(rate=100, max_in_flight=20, per_group=targets.FlowControl(
        rate=1, period=cdk.Duration.minutes(1), max_in_flight=2)),
    "groups": targets.FlowControl(per_group=targets.FlowControl(max_in_flight=3)),
    "plain": None,
}


def _scheduler(stack: cdk.Stack, limited: bool) -> DelayedScheduler:
    """A scheduler whose targets are SQS queues named as ``LIMITS``, each with its limits when ``limited``."""
    def target(name: str) -> targets.SqsSendMessage:
        return targets.SqsSendMessage(sqs.Queue(stack, f"Queue-{name}"), flow_control=LIMITS[name] if limited else None)

    scheduler = DelayedScheduler(stack, "Timers", target=target("default"))
    for name in list(LIMITS)[1:]:
        scheduler.add_target(name, target(name))
    return scheduler


@pytest.fixture(scope="module")
def synthesized() -> dict[str, tuple[cdk.Stack, DelayedScheduler, dict]]:
    """One app, synthesized once: the same targets with their ``LIMITS`` (``Limited``) and without (``Unlimited``)."""
    app = cdk.App()
    built = {}
    for name in ("Limited", "Unlimited"):
        stack = cdk.Stack(app, name)
        built[name] = stack, _scheduler(stack, limited=name == "Limited")
    assembly = app.synth()
    return {name: (stack, scheduler, assembly.get_stack_by_name(name).template)
            for name, (stack, scheduler) in built.items()}


def _targets_variable(stack: cdk.Stack, scheduler: DelayedScheduler, template: dict) -> Any:
    """``TARGETS`` as the dispatcher's environment holds it (text, or a ``Fn::Join`` of its references)."""
    dispatcher = template["Resources"][stack.get_logical_id(scheduler.dispatcher_function.node.default_child)]
    return dispatcher["Properties"]["Environment"]["Variables"][contract.ENV.targets]


def _targets(stack: cdk.Stack, scheduler: DelayedScheduler, template: dict) -> dict[str, dict]:
    """``TARGETS`` as the dispatcher gets it, each reference as ``<construct path>``."""
    names, types = resource_names(stack, "Timers"), {k: v["Type"] for k, v in template["Resources"].items()}
    return json.loads(render(_targets_variable(stack, scheduler, template), names, types))


def test_a_target_with_every_limit_carries_rate_period_seconds_and_max_in_flight(synthesized):
    assert _targets(*synthesized["Limited"])["default"] == {
        "type": "sqs", "queueUrl": "<Queue-default>", "fifo": False,
        FIELD: {"rate": 100, "periodSeconds": 2, "maxInFlight": 20}}


def test_only_the_limits_given_are_rendered(synthesized):
    rendered = _targets(*synthesized["Limited"])
    assert rendered["places"][FIELD] == {"maxInFlight": 5}
    assert rendered["rate"][FIELD] == {"rate": 50}  # the runtime's default period, 1 second


def test_a_target_without_limits_has_no_flow_control_field(synthesized):
    assert FIELD not in _targets(*synthesized["Limited"])["plain"]
    assert not any(FIELD in description for description in _targets(*synthesized["Unlimited"]).values())


def test_each_groups_limits_are_rendered_as_per_group_within_flow_control(synthesized):
    rendered = _targets(*synthesized["Limited"])
    assert rendered["tenants"][FIELD] == {"rate": 100, "maxInFlight": 20,
                                          GROUP: {"rate": 1, "periodSeconds": 60, "maxInFlight": 2}}
    assert rendered["groups"][FIELD] == {GROUP: {"maxInFlight": 3}}  # a target may limit only its groups


def test_limits_add_only_their_field_to_the_description(synthesized):
    limited, unlimited = _targets(*synthesized["Limited"]), _targets(*synthesized["Unlimited"])
    assert {name: {k: v for k, v in d.items() if k != FIELD} for name, d in limited.items()} == unlimited


@pytest.mark.parametrize("name", list(LIMITS))
def test_the_runtime_accepts_the_rendered_description(synthesized, name):
    assert contract.target_description_problem(_targets(*synthesized["Limited"])[name]) is None


def test_the_dispatcher_needs_no_new_permission_but_on_the_flow_queue(synthesized):
    """The limits live in the Schedules table, which the dispatcher writes already (conditional ``UpdateItem``); the
    flow queue, where a limited target's messages wait, it may use as it may the delayer queue."""
    dispatcher = {name: grants(template, resource_names(stack, "Timers"))["DispatcherFunctionRole"]
                  for name, (stack, _, template) in synthesized.items()}
    on_delayer = {action for action, resource in dispatcher["Unlimited"] if resource == "<DelayerQueue.Arn>"}
    assert dispatcher["Limited"] == dispatcher["Unlimited"] | {(action, "<FlowQueue.Arn>") for action in on_delayer}
    assert ("dynamodb:UpdateItem", "<Table.Arn>") in dispatcher["Limited"]


#: A target of each kind from a stack, with ``flow_control``.
KINDS: dict[str, Callable[[cdk.Stack, Any], targets.IScheduleTarget]] = {
    "LambdaInvoke": lambda stack, limits: targets.LambdaInvoke(lambda_.Function(
        stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
        code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n")), flow_control=limits),
    "SqsSendMessage": lambda stack, limits: targets.SqsSendMessage(sqs.Queue(stack, "Queue"), flow_control=limits),
    "SnsPublish": lambda stack, limits: targets.SnsPublish(sns.Topic(stack, "Topic"), flow_control=limits),
    "EventBridgePutEvents": lambda stack, limits: targets.EventBridgePutEvents(
        events.EventBus(stack, "Bus"), detail_type="Timer due", source="com.example.timers", flow_control=limits),
    "StepFunctionsStartExecution": lambda stack, limits: targets.StepFunctionsStartExecution(
        sfn.StateMachine.from_state_machine_arn(stack, "Workflow",
                                                "arn:aws:states:eu-west-1:123456789012:stateMachine:fulfil"),
        flow_control=limits),
    "HttpsEndpoint": lambda stack, limits: targets.HttpsEndpoint(
        "https://hooks.example.com/timers", signing_secret=secretsmanager.Secret(stack, "Secret"), flow_control=limits),
}



def _bound(target: targets.IScheduleTarget, stack: cdk.Stack) -> dict[str, Any]:
    return dict(target.bind(iam.Role(stack, "Dispatcher", assumed_by=iam.AccountRootPrincipal())).target_json)


def test_flow_control_is_a_target_class_documented_with_the_others():
    assert "FlowControl" in targets.__all__ and targets.FlowControl.__module__ == "cdk_delayed_scheduler._flow_control"


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_of_target_takes_flow_control(stack, kind):
    target = KINDS[kind](stack, targets.FlowControl(**EVERY_LIMIT))
    assert isinstance(target, getattr(targets, kind))
    described = _bound(target, stack)
    assert described[FIELD] == {"rate": 100, "periodSeconds": 2, "maxInFlight": 20}
    assert contract.target_description_problem(described) is None
    assert target.flow_control is not None and target.flow_control.max_in_flight == 20


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_kind_of_target_is_unlimited_by_default(stack, kind):
    target = KINDS[kind](stack, None)
    assert target.flow_control is None and FIELD not in _bound(target, stack)


def test_a_parameters_value_is_rendered_as_its_reference_and_judged_at_deploy():
    app = cdk.App()
    stack = cdk.Stack(app, "Tokens")
    rate = cdk.CfnParameter(stack, "Rate", type="Number").value_as_number
    places = cdk.CfnParameter(stack, "Places", type="Number").value_as_number
    limits = targets.FlowControl(rate=rate, period=cdk.Duration.seconds(rate), max_in_flight=places)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Queue"),
                                                                                flow_control=limits))
    parts = _targets_variable(stack, scheduler, app.synth().get_stack_by_name("Tokens").template)["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else f"<{part['Ref']}>" for part in parts)
    assert f'"{FIELD}":{{"rate":<Rate>,"periodSeconds":<Rate>,"maxInFlight":<Places>}}' in text


@pytest.mark.parametrize(("limits", "message"), [
    ({"rate": 0}, "flow_control.rate: must be between 1 and 100000, got 0"),
    ({"rate": 100001}, "flow_control.rate: must be between 1 and 100000, got 100001"),
    ({"rate": 2.5}, "flow_control.rate: must be a whole number between 1 and 100000, got 2.5"),
    ({"rate": True}, "flow_control.rate: must be a whole number between 1 and 100000, got True"),
    ({"rate": "100"}, "flow_control.rate: must be a whole number between 1 and 100000, got '100'"),
    ({"rate": 10, "period": cdk.Duration.millis(1500)},
     "flow_control.period: must be whole seconds, got 1.5 seconds"),
    ({"rate": 10, "period": cdk.Duration.days(2)},
     "flow_control.period: must be between 1 second and 1 day, got 2 days"),
    ({"rate": 10, "period": 60}, "flow_control.period: must be a Duration, e.g. Duration.seconds(60), got 60"),
    ({"max_in_flight": 5, "period": cdk.Duration.seconds(1)},
     "flow_control.period: only with a rate (it is the window the rate counts starts in); max_in_flight alone"),
    ({"max_in_flight": 0}, "flow_control.max_in_flight: must be between 1 and 1000, got 0"),
    ({"max_in_flight": 1001}, "flow_control.max_in_flight: must be between 1 and 1000, got 1001"),
    ({}, "flow_control: must set rate, max_in_flight or per_group (one or more), got none"),
    ({"rate": 10, "per_group": targets.FlowControl(rate=11)},
     "flow_control.per_group.rate: must be at most the target's rate per second: 11 per 1 second is more than 10 "
     "per 1 second"),
    ({"rate": 10, "period": cdk.Duration.minutes(1), "per_group": targets.FlowControl(rate=1)},
     "flow_control.per_group.rate: must be at most the target's rate per second: 1 per 1 second is more than 10 "
     "per 60 seconds"),
    ({"max_in_flight": 2, "per_group": targets.FlowControl(max_in_flight=3)},
     "flow_control.per_group.max_in_flight: must be at most the target's max_in_flight, 2, got 3"),
    ({"rate": 10, "per_group": {"rate": 5}},
     "flow_control.per_group: must be a targets.FlowControl, e.g. targets.FlowControl(rate=5, max_in_flight=2), "
     "got a dict"),
    ({"rate": 10, "per_group": targets.FlowControl(rate=5, per_group=targets.FlowControl(rate=1))},
     "flow_control.per_group: takes no per_group of its own (a group's limits are not divided further)"),
])
def test_a_bad_limit_is_refused_naming_the_prop(limits, message):
    with pytest.raises(ValueError) as raised:
        targets.FlowControl(**limits)
    assert str(raised.value).startswith(message)


def test_a_group_may_have_all_of_its_targets_limits_and_a_slower_rate_over_a_longer_period():
    targets.FlowControl(rate=10, max_in_flight=2, per_group=targets.FlowControl(rate=10, max_in_flight=2))
    targets.FlowControl(rate=1, period=cdk.Duration.seconds(2), per_group=targets.FlowControl(
        rate=30, period=cdk.Duration.minutes(1)))
    targets.FlowControl(max_in_flight=2, per_group=targets.FlowControl(rate=500))  # no target rate to be within


def test_its_repr_shows_each_groups_limits():
    limits = targets.FlowControl(rate=100, max_in_flight=20, per_group=targets.FlowControl(
        rate=5, period=cdk.Duration.seconds(10), max_in_flight=2))
    assert repr(limits) == ("FlowControl(rate=100, max_in_flight=20, per_group=FlowControl(rate=5, period=10 s, "
                            "max_in_flight=2))")


def test_a_token_on_either_side_of_a_group_limit_is_left_for_the_functions_to_judge():
    stack = cdk.Stack(cdk.App(), "GroupTokens")
    rate = cdk.CfnParameter(stack, "Rate", type="Number").value_as_number
    for limits in (targets.FlowControl(rate=rate, max_in_flight=rate, per_group=targets.FlowControl(
                       rate=5, period=cdk.Duration.seconds(rate), max_in_flight=1000)),
                   targets.FlowControl(rate=1, max_in_flight=1, per_group=targets.FlowControl(
                       rate=rate, max_in_flight=rate))):
        assert contract.flow_control_problem(judged_limits(limits.settings())) is None
    assert judged_limits({"rate": rate, "periodSeconds": rate, GROUP: {"rate": rate, "periodSeconds": rate}}) == {
        "rate": 100000, "periodSeconds": 1, GROUP: {"rate": 1, "periodSeconds": 86400}}


def test_the_contracts_bounds_are_taken(stack):
    rate, places = contract.FLOW_CONTROL["rate"], contract.FLOW_CONTROL["maxInFlight"]
    period = contract.FLOW_CONTROL["periodSeconds"]
    highest = targets.FlowControl(rate=rate["max"], period=cdk.Duration.seconds(period["max"]),
                                  max_in_flight=places["max"])
    lowest = targets.FlowControl(rate=rate["min"], period=cdk.Duration.seconds(period["min"]),
                                 max_in_flight=places["min"])
    for limits in (highest, lowest):
        assert contract.flow_control_problem(limits.settings()) is None


@pytest.mark.parametrize("value", [{"rate": 100}, 100, "rate=100"])
@pytest.mark.parametrize("kind", ["SqsSendMessage", "HttpsEndpoint"])
def test_a_flow_control_that_is_not_a_flow_control_is_refused_naming_the_prop(stack, kind, value):
    with pytest.raises(ValueError, match=r"^flow_control: must be a targets.FlowControl, e.g. "
                                         r"targets.FlowControl\(rate=100, max_in_flight=20\), got "):
        KINDS[kind](stack, value)


def test_the_outcomes_target_takes_no_flow_control():
    stack = cdk.Stack(cdk.App(), "OutcomesLimited")
    limited = targets.SqsSendMessage(sqs.Queue(stack, "Q"), flow_control=targets.FlowControl(rate=5))
    with pytest.raises(ValueError, match=r"^outcomes: the outcomes target takes no flow_control"):
        Outcomes(limited)
