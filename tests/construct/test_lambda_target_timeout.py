"""A Lambda target's timeout: read from a function defined in the app (or behind its alias or
version), stated with ``LambdaInvoke(timeout=)`` for an imported one, and otherwise assumed, with a
synth warning that says what is assumed and how to state it."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from cdk_delayed_scheduler import DelayedScheduler, targets

IMPORTED_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:billing"


@pytest.fixture(scope="module")
def app() -> cdk.App:
    """One app for the module's stacks, never synthesized: a scheduler in a new app stages the functions'
    asset again, one in a new stack of an app where it is staged costs a fraction of that."""
    return cdk.App()


@pytest.fixture()
def stack(app) -> cdk.Stack:
    """A stack of the test's own in the module's app."""
    return cdk.Stack(app, f"S{len(app.node.children)}")


def _imported(stack: cdk.Stack, id: str = "Imported") -> lambda_.IFunction:
    return lambda_.Function.from_function_arn(stack, id, IMPORTED_ARN)


def _function(stack: cdk.Stack, id: str = "Fn", **props) -> lambda_.Function:
    return lambda_.Function(stack, id, runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"), **props)


def _warnings(scheduler: DelayedScheduler) -> list[str]:
    return [entry.data for entry in scheduler.node.metadata if entry.type == "aws:cdk:warning"]


def test_an_imported_function_without_a_timeout_warns_what_is_assumed_and_how_to_state_it(stack):
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(_imported(stack)))
    (warning,) = _warnings(scheduler)
    assert warning == (
        "target 'default': the Lambda function's timeout is not known here (an imported function), so it is assumed "
        "to end within 55 seconds (dispatcher_timeout less 5 seconds); a longer run times out the dispatcher and the "
        "delivery is repeated. State it with targets.LambdaInvoke(fn, timeout=Duration.seconds(n)) to have it "
        f"checked and this warning go. [ack: {targets.LAMBDA_TIMEOUT_UNKNOWN_WARNING}]")
    assert targets.LAMBDA_TIMEOUT_UNKNOWN_WARNING == "cdk-delayed-scheduler:lambdaTargetTimeoutUnknown"


def test_each_target_of_unknown_timeout_is_named_in_its_own_warning(stack):
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(_function(stack)),
                                 dispatcher_timeout=cdk.Duration.seconds(20))
    assert _warnings(scheduler) == []
    scheduler.add_target("billing", targets.LambdaInvoke(_imported(stack)))
    (warning,) = _warnings(scheduler)
    assert warning.startswith("target 'billing': ") and "assumed to end within 15 seconds" in warning


def test_a_stated_timeout_silences_the_warning_and_is_checked_against_the_dispatcher_timeout(stack):
    scheduler = DelayedScheduler(stack, "Timers",
                                 target=targets.LambdaInvoke(_imported(stack), timeout=cdk.Duration.seconds(55)))
    assert _warnings(scheduler) == []
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 65 seconds to cover target 'slow', "
                                         r"a Lambda function with a 60-second timeout .* got 60 seconds$"):
        scheduler.add_target("slow", targets.LambdaInvoke(_imported(stack, "Slow"), timeout=cdk.Duration.minutes(1)))
    assert scheduler.target_names == ["default"]


def test_the_timeout_behind_an_alias_or_a_version_of_a_defined_function_is_read(stack):
    slow = _function(stack, timeout=cdk.Duration.seconds(60))
    alias = lambda_.Alias(stack, "Live", alias_name="live", version=slow.current_version)
    for handler in (alias, slow.current_version):
        assert targets.LambdaInvoke(handler).timeout.to_seconds() == 60
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 65 seconds to cover target 'default'"):
        DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(alias))


def test_a_defined_function_of_the_shared_stack_gets_no_warning(stacks):
    assert _warnings(stacks["defaults"].scheduler) == []


@pytest.mark.parametrize(
    ("timeout", "message"),
    [
        (30, r"^timeout: must be a Duration, e.g. Duration.seconds\(30\), got 30$"),
        (cdk.Duration.millis(1500), r"^timeout: must be whole seconds, got 1.5 seconds$"),
        (cdk.Duration.seconds(0), r"^timeout: must be between 1 and 900 seconds, got 0$"),
        (cdk.Duration.minutes(16), r"^timeout: must be between 1 and 900 seconds, got 960$"),
    ],
)
def test_a_wrong_stated_timeout_is_named(stack, timeout, message):
    with pytest.raises(ValueError, match=message):
        targets.LambdaInvoke(_imported(stack), timeout=timeout)


def test_a_timeout_is_refused_for_a_function_whose_own_is_read(stack):
    with pytest.raises(ValueError, match=r"^timeout: only for a function whose timeout the construct cannot read "
                                         r"\(an imported one\); this function is defined in this app, and its own "
                                         r"timeout is used$"):
        targets.LambdaInvoke(_function(stack), timeout=cdk.Duration.seconds(30))
