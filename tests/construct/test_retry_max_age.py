"""The construct's side of the retry policy: the ``retry_max_age`` prop (its default, its checks, the
``RETRY_MAX_AGE_SECONDS`` every function reads), the REST API's body models letting ``retry`` through
to the api handler, and a ``PeriodicTimer``'s ``retry_max_attempts`` and ``retry_max_age``."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk.assertions import Template

from cdk_delayed_scheduler import DelayedScheduler, targets
from cdk_delayed_scheduler._contract import contract

FUNCTIONS = ("api_function", "sweeper_function", "enqueuer_function", "dispatcher_function")


def build(**props) -> tuple[cdk.Stack, DelayedScheduler]:
    stack = cdk.Stack(cdk.App(), "S")
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)
    return stack, scheduler


def rendered(stack: cdk.Stack, scheduler: DelayedScheduler) -> set[str]:
    resources = Template.from_stack(stack).to_json()["Resources"]
    return {resources[stack.get_logical_id(getattr(scheduler, name).node.default_child)]["Properties"]["Environment"][
        "Variables"][contract.ENV.retry_max_age_seconds] for name in FUNCTIONS}


def test_retry_max_age_defaults_to_an_hour_on_every_function():
    assert contract.RETRY_MAX_AGE_SECONDS.default == 3600
    assert rendered(*build()) == {"3600"}


def test_retry_max_age_is_rendered_in_whole_seconds():
    assert rendered(*build(retry_max_age=cdk.Duration.minutes(10))) == {"600"}


@pytest.mark.parametrize(("value", "message"), [
    (cdk.Duration.seconds(59), r"^retry_max_age: must be between 60 seconds and 1 day, got 59 seconds$"),
    (cdk.Duration.seconds(86401), r"^retry_max_age: must be between 60 seconds and 1 day, got 86401 seconds$"),
    (cdk.Duration.millis(60500), r"^retry_max_age: "),
    (600, r"^retry_max_age: must be a Duration, e.g. Duration.seconds\(600\)"),
])
def test_a_bad_retry_max_age_is_refused_naming_the_prop(value, message):
    with pytest.raises(ValueError, match=message):
        build(retry_max_age=value)


def test_the_rest_apis_body_models_let_retry_through_for_the_handler_to_name_its_mistakes():
    """API Gateway's refusal says only "Invalid request body": the api handler's 400 names ``retry.maxAttempts``."""
    import jsonschema

    from cdk_delayed_scheduler import SchedulerApi

    stack, _ = build(api=SchedulerApi.rest())
    models = {props["Properties"]["Name"]: props["Properties"]["Schema"]
              for props in Template.from_stack(stack).find_resources("AWS::ApiGateway::Model").values()}
    for name, body in (("CreateSchedule", {"delaySeconds": 1, "payload": 1}), ("PutPeriodic", {"every": 60, "payload": 1})):
        validator = jsonschema.Draft4Validator(models[name])
        assert validator.is_valid({**body, "retry": {"maxAttempts": 2, "maxAgeSeconds": 600}})
        assert validator.is_valid({**body, "retry": 5})  # the handler answers 400 naming retry
        assert not validator.is_valid({**body, "retries": {}})


def test_a_periodic_timer_declared_in_the_stack_carries_its_retry_in_the_put_body():
    stack, scheduler = build()
    scheduler.add_periodic("with-retry", every=cdk.Duration.minutes(5), payload={},
                           retry_max_attempts=2, retry_max_age=cdk.Duration.minutes(10))
    scheduler.add_periodic("without", every=cdk.Duration.minutes(5), payload={})
    bodies = {props["Properties"]["Id"]: json.loads(props["Properties"]["Definition"])
              for props in Template.from_stack(stack).find_resources("Custom::DelayedSchedulerPeriodic").values()}
    assert bodies["with-retry"]["retry"] == {"maxAttempts": 2, "maxAgeSeconds": 600}
    assert "retry" not in bodies["without"]


@pytest.mark.parametrize(("props", "message"), [
    ({"retry_max_attempts": 0}, r"^retry_max_attempts: must be between 1 and 1000, got 0$"),
    ({"retry_max_attempts": "2"}, r"^retry_max_attempts: must be an int"),
    ({"retry_max_age": cdk.Duration.seconds(30)}, r"^retry_max_age: must be between 60 seconds and 1 day"),
    ({"retry_max_age": 600}, r"^retry_max_age: must be a Duration"),
])
def test_a_periodic_timers_bad_retry_is_refused_at_synth_naming_the_prop(props, message):
    _, scheduler = build()
    with pytest.raises(ValueError, match=message):
        scheduler.add_periodic("bad", every=cdk.Duration.minutes(5), payload={}, **props)
