"""The construct's side of the lateness bound: the ``max_lateness`` prop (``MAX_LATENESS_SECONDS`` on every
function, set only when given; its checks, which skip tokens), the REST API's body models letting
``maxLatenessSeconds`` through to the api handler, and a periodic timer's ``max_lateness``."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, PeriodicTimer, SchedulerApi, targets
from cdk_delayed_scheduler._contract import contract

from construct_helpers import resources_of
from prop_stacks import REST_BODIES, build, function_variables, rest_body_validators

VARIABLE = contract.ENV.max_lateness_seconds


@pytest.fixture(scope="module")
def synthesized() -> dict[str, tuple[cdk.Stack, DelayedScheduler, dict]]:
    """One app, synthesized once, with a stack per configuration the module reads: no bound (``Unbounded``),
    a bound of five minutes (``FiveMinutes``), the longest bound (``Year``), a bound from a stack parameter
    (``Token``), the REST API (``Rest``), and periodic timers declared with and without a bound (``Periodic``)."""
    app = cdk.App()
    token_stack = cdk.Stack(app, "Token")
    parameter = cdk.CfnParameter(token_stack, "Lateness", type="Number")
    token = DelayedScheduler(token_stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(token_stack, "Q")),
                             max_lateness=cdk.Duration.seconds(parameter.value_as_number))
    built = {"Unbounded": build(app, "Unbounded"), "FiveMinutes": build(app, "FiveMinutes",
                                                                         max_lateness=cdk.Duration.minutes(5)),
             "Year": build(app, "Year", max_lateness=cdk.Duration.days(365)), "Token": (token_stack, token),
             "Rest": build(app, "Rest", api=SchedulerApi.rest()), "Periodic": build(app, "Periodic")}
    scheduler = built["Periodic"][1]
    scheduler.add_periodic("bounded", every=cdk.Duration.minutes(5), payload={}, max_lateness=cdk.Duration.seconds(90))
    PeriodicTimer(scheduler, "Declared", scheduler=scheduler, timer_id="declared", cron="0 2 * * ? *", payload={},
                  max_lateness=cdk.Duration.hours(1), retry_max_attempts=2)
    scheduler.add_periodic("unbounded", every=cdk.Duration.minutes(5), payload={})
    assembly = app.synth()
    return {name: (stack, scheduler, assembly.get_stack_by_name(name).template)
            for name, (stack, scheduler) in built.items()}


def test_max_lateness_is_set_on_every_function_in_whole_seconds_and_only_when_given(synthesized):
    assert {env[VARIABLE] for env in function_variables(*synthesized["FiveMinutes"])} == {"300"}
    assert [VARIABLE in env for env in function_variables(*synthesized["Unbounded"])] == [False] * 4  # no cost without it
    assert {env[VARIABLE] for env in function_variables(*synthesized["Year"])} == {str(contract.MAX_LATENESS_SECONDS.max)}


def test_a_max_lateness_token_is_left_for_cloudformation_to_resolve(synthesized):
    rendered = {json.dumps(env[VARIABLE]) for env in function_variables(*synthesized["Token"])}
    assert len(rendered) == 1 and "Lateness" in rendered.pop()


@pytest.mark.parametrize(("value", "message"), [
    (cdk.Duration.seconds(0), r"^max_lateness: must be between 1 second and 365 days, got 0 seconds$"),
    (cdk.Duration.seconds(31_536_001), r"^max_lateness: must be between 1 second and 365 days, got 31536001 seconds$"),
    (cdk.Duration.millis(1500), r"^max_lateness: must be whole seconds, got 1.5 seconds$"),
    (300, r"^max_lateness: must be a Duration, e.g. Duration.seconds\(300\)"),
])
def test_a_bad_max_lateness_is_refused_naming_the_prop(value, message):
    with pytest.raises(ValueError, match=message):
        build(max_lateness=value)


def test_the_rest_apis_body_models_let_max_lateness_through_for_the_handler_to_judge(synthesized):
    """API Gateway's refusal says only "Invalid request body": the api handler's 400 names the field and its range."""
    for name, validator in rest_body_validators(synthesized["Rest"][2]).items():
        body = REST_BODIES[name]
        assert validator.is_valid({**body, "maxLatenessSeconds": 300})
        assert validator.is_valid({**body, "maxLatenessSeconds": 0})  # the handler answers 400 naming the field
        assert not validator.is_valid({**body, "maxLateness": 300})


def test_a_periodic_timer_declared_in_the_stack_carries_its_bound_in_the_put_body(synthesized):
    bodies = {props["Properties"]["Id"]: json.loads(props["Properties"]["Definition"])
              for props in resources_of(synthesized["Periodic"][2], "Custom::DelayedSchedulerPeriodic").values()}
    assert bodies["bounded"]["maxLatenessSeconds"] == 90
    assert (bodies["declared"]["maxLatenessSeconds"], bodies["declared"]["retry"]) == (3600, {"maxAttempts": 2})
    assert "maxLatenessSeconds" not in bodies["unbounded"]


@pytest.fixture(scope="module")
def refusing() -> DelayedScheduler:
    """The scheduler the refused periodic timers are given to (never synthesized): a refusal adds nothing
    to it (checked each time)."""
    return build()[1]


@pytest.mark.parametrize(("value", "message"), [
    (cdk.Duration.seconds(0), r"^max_lateness: must be between 1 second and 365 days, got 0 seconds$"),
    (cdk.Duration.days(366), r"^max_lateness: must be between 1 second and 365 days, got 366 days$"),
    (cdk.Duration.millis(2500), r"^max_lateness: must be whole seconds"),
    (60, r"^max_lateness: must be a Duration"),
])
def test_a_periodic_timers_bad_max_lateness_is_refused_at_synth_naming_the_prop(refusing, value, message):
    children = [child.node.id for child in refusing.node.children]
    with pytest.raises(ValueError, match=message):
        refusing.add_periodic("bad", every=cdk.Duration.minutes(5), payload={}, max_lateness=value)
    with pytest.raises(ValueError, match=message):
        PeriodicTimer(refusing, "Bad", scheduler=refusing, timer_id="bad", every=cdk.Duration.minutes(5), payload={},
                      max_lateness=value)
    assert [child.node.id for child in refusing.node.children] == children
