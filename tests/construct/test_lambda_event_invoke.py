"""``targets.LambdaInvoke(fn, invocation_type=...)``: an asynchronous (``EVENT``) invoke is described to
the runtime with Lambda's ``Event``, the synchronous default as before; an ``EVENT`` function's timeout
is neither checked against ``dispatcher_timeout`` nor warned about when unknown; bad input names the
prop."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_

from cdk_delayed_scheduler import DelayedScheduler, targets
from construct_stacks import Built, rendered_targets

EVENT = targets.LambdaInvocationType.EVENT
IMPORTED_ARN = "arn:aws:lambda:eu-west-1:123456789012:function:audit"


@pytest.fixture()
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S")


def _slow_function(stack: cdk.Stack) -> lambda_.Function:
    return lambda_.Function(stack, "Slow", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler",
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"),
                            timeout=cdk.Duration.minutes(15))


def _warnings(scheduler: DelayedScheduler) -> list[str]:
    return [entry.data for entry in scheduler.node.metadata if entry.type == "aws:cdk:warning"]


def test_an_event_invoke_is_described_with_lambdas_name_and_the_default_stays_synchronous(stack):
    imported = lambda_.Function.from_function_arn(stack, "Audit", IMPORTED_ARN)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(imported, invocation_type=EVENT),
                                 extra_targets={"sync": targets.LambdaInvoke(imported, timeout=cdk.Duration.seconds(9)),
                                                "named": targets.LambdaInvoke(imported, invocation_type="Event")})
    assert rendered_targets(Built(stack, scheduler)) == {
        "default": {"type": "lambda", "functionArn": IMPORTED_ARN, "invocationType": "Event"},
        "sync": {"type": "lambda", "functionArn": IMPORTED_ARN},
        "named": {"type": "lambda", "functionArn": IMPORTED_ARN, "invocationType": "Event"},
    }


def test_an_event_invoke_of_a_function_longer_than_the_dispatcher_timeout_is_accepted(stack):
    slow = _slow_function(stack)
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 905 seconds to cover target 'default'"):
        DelayedScheduler(stack, "Sync", target=targets.LambdaInvoke(slow))
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(slow, invocation_type=EVENT))
    assert scheduler.target_names == ["default"]
    assert targets.LambdaInvoke(slow, invocation_type=EVENT).timeout is None


def test_an_imported_function_invoked_as_an_event_gets_no_timeout_warning(stack):
    imported = lambda_.Function.from_function_arn(stack, "Audit", IMPORTED_ARN)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(imported, invocation_type=EVENT))
    assert _warnings(scheduler) == []
    scheduler.add_target("sync", targets.LambdaInvoke(imported))
    (warning,) = _warnings(scheduler)
    assert warning.startswith("target 'sync': the Lambda function's timeout is not known here")


def test_the_dispatcher_may_invoke_an_event_target_as_a_synchronous_one(stack):
    imported = lambda_.Function.from_function_arn(stack, "Audit", IMPORTED_ARN)
    DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(imported, invocation_type=EVENT))
    statements = [s for policy in Built(stack, None).template.find_resources("AWS::IAM::Policy").values()
                  for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Resource"] == IMPORTED_ARN]
    assert statements == [{"Action": "lambda:InvokeFunction", "Effect": "Allow", "Resource": IMPORTED_ARN}]


@pytest.mark.parametrize("value", ["event", "DryRun", 1, None])
def test_an_unknown_invocation_type_is_named_with_the_allowed_ones(stack, value):
    imported = lambda_.Function.from_function_arn(stack, "Audit", IMPORTED_ARN)
    with pytest.raises(ValueError, match=r"^invocation_type: must be one of LambdaInvocationType.REQUEST_RESPONSE "
                                         r"\('RequestResponse'\), LambdaInvocationType.EVENT \('Event'\), got "):
        targets.LambdaInvoke(imported, invocation_type=value)


def test_a_stated_timeout_is_refused_for_an_event_invoke(stack):
    imported = lambda_.Function.from_function_arn(stack, "Audit", IMPORTED_ARN)
    with pytest.raises(ValueError, match=r"^timeout: only for a function invoked synchronously \(invocation_type "
                                         r"REQUEST_RESPONSE\); the dispatcher does not wait for an EVENT invoke's run$"):
        targets.LambdaInvoke(imported, timeout=cdk.Duration.seconds(30), invocation_type=EVENT)
