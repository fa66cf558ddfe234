"""The construct's side of the retry policy: the ``retry_max_age`` prop (its default, its checks, the
``RETRY_MAX_AGE_SECONDS`` every function reads), the REST API's body models letting ``retry`` through
to the api handler, and a ``PeriodicTimer``'s ``retry_max_attempts`` and ``retry_max_age``."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest

from cdk_delayed_scheduler import DelayedScheduler
from cdk_delayed_scheduler._contract import contract

from construct_helpers import resources_of
from prop_stacks import REST_BODIES, build, function_variables, rest_body_validators


@pytest.fixture(scope="module")
def synthesized() -> dict[str, tuple[cdk.Stack, DelayedScheduler, dict]]:
    """One app, synthesized once, with a stack per configuration the module reads: every default
    (``Defaults``), ``retry_max_age`` of ten minutes (``TenMinutes``), the REST API (``Rest``) and two
    periodic timers declared in the stack, one with a retry policy and one without (``Periodic``)."""
    from cdk_delayed_scheduler import SchedulerApi

    app = cdk.App()
    built = {"Defaults": build(app, "Defaults"), "TenMinutes": build(app, "TenMinutes", retry_max_age=cdk.Duration.minutes(10)),
             "Rest": build(app, "Rest", api=SchedulerApi.rest()), "Periodic": build(app, "Periodic")}
    scheduler = built["Periodic"][1]
    scheduler.add_periodic("with-retry", every=cdk.Duration.minutes(5), payload={},
                           retry_max_attempts=2, retry_max_age=cdk.Duration.minutes(10))
    scheduler.add_periodic("without", every=cdk.Duration.minutes(5), payload={})
    assembly = app.synth()
    return {name: (stack, scheduler, assembly.get_stack_by_name(name).template)
            for name, (stack, scheduler) in built.items()}


def rendered(stack: cdk.Stack, scheduler: DelayedScheduler, template: dict) -> set[str]:
    return {env[contract.ENV.retry_max_age_seconds] for env in function_variables(stack, scheduler, template)}


def test_retry_max_age_defaults_to_an_hour_on_every_function(synthesized):
    assert contract.RETRY_MAX_AGE_SECONDS.default == 3600
    assert rendered(*synthesized["Defaults"]) == {"3600"}


def test_retry_max_age_is_rendered_in_whole_seconds(synthesized):
    assert rendered(*synthesized["TenMinutes"]) == {"600"}


@pytest.mark.parametrize(("value", "message"), [
    (cdk.Duration.seconds(59), r"^retry_max_age: must be between 60 seconds and 1 day, got 59 seconds$"),
    (cdk.Duration.seconds(86401), r"^retry_max_age: must be between 60 seconds and 1 day, got 86401 seconds$"),
    (cdk.Duration.millis(60500), r"^retry_max_age: "),
    (600, r"^retry_max_age: must be a Duration, e.g. Duration.seconds\(600\)"),
])
def test_a_bad_retry_max_age_is_refused_naming_the_prop(value, message):
    with pytest.raises(ValueError, match=message):
        build(retry_max_age=value)


def test_the_rest_apis_body_models_let_retry_through_for_the_handler_to_name_its_mistakes(synthesized):
    """API Gateway's refusal says only "Invalid request body": the api handler's 400 names ``retry.maxAttempts``."""
    for name, validator in rest_body_validators(synthesized["Rest"][2]).items():
        body = REST_BODIES[name]
        assert validator.is_valid({**body, "retry": {"maxAttempts": 2, "maxAgeSeconds": 600}})
        assert validator.is_valid({**body, "retry": 5})  # the handler answers 400 naming retry
        assert not validator.is_valid({**body, "retries": {}})


def test_a_periodic_timer_declared_in_the_stack_carries_its_retry_in_the_put_body(synthesized):
    bodies = {props["Properties"]["Id"]: json.loads(props["Properties"]["Definition"])
              for props in resources_of(synthesized["Periodic"][2], "Custom::DelayedSchedulerPeriodic").values()}
    assert bodies["with-retry"]["retry"] == {"maxAttempts": 2, "maxAgeSeconds": 600}
    assert "retry" not in bodies["without"]


@pytest.fixture(scope="module")
def refusing() -> DelayedScheduler:
    """The scheduler the refused periodic timers are given to (never synthesized): a refusal adds nothing
    to it (checked each time)."""
    return build()[1]


@pytest.mark.parametrize(("props", "message"), [
    ({"retry_max_attempts": 0}, r"^retry_max_attempts: must be between 1 and 1000, got 0$"),
    ({"retry_max_attempts": "2"}, r"^retry_max_attempts: must be an int"),
    ({"retry_max_age": cdk.Duration.seconds(30)}, r"^retry_max_age: must be between 60 seconds and 1 day"),
    ({"retry_max_age": 600}, r"^retry_max_age: must be a Duration"),
])
def test_a_periodic_timers_bad_retry_is_refused_at_synth_naming_the_prop(refusing, props, message):
    children = [child.node.id for child in refusing.node.children]
    with pytest.raises(ValueError, match=message):
        refusing.add_periodic("bad", every=cdk.Duration.minutes(5), payload={}, **props)
    assert [child.node.id for child in refusing.node.children] == children
