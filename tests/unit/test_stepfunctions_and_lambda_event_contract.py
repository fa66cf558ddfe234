"""The contract's check of a Step Functions target description and of a Lambda target's optional
``invocationType`` (``target_description_problem``), which the construct applies at synth and the runtime
when a function starts."""

from __future__ import annotations

import pytest

from scheduler_runtime.core import contract

MACHINE = "arn:aws:states:us-east-1:123456789012:stateMachine:orders"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:audit"


def test_the_stepfunctions_kind_and_the_lambda_kind_name_the_fields_the_runtime_reads():
    stepfunctions, lambda_ = contract.TARGET_TYPES["stepfunctions"], contract.TARGET_TYPES["lambda"]
    assert (dict(stepfunctions.required), dict(stepfunctions.optional)) == ({"stateMachineArn": "string"}, {})
    assert (dict(lambda_.required), dict(lambda_.optional)) == ({"functionArn": "string"}, {"invocationType": "string"})


@pytest.mark.parametrize(("description", "problem"), [
    ({"type": "stepfunctions", "stateMachineArn": MACHINE}, None),
    ({"type": "lambda", "functionArn": FUNCTION, "invocationType": "Event"}, None),
    ({"type": "stepfunctions"}, "the stepfunctions target needs stateMachineArn"),
    ({"type": "stepfunctions", "stateMachineArn": MACHINE, "name": "n"}, "the stepfunctions target takes no name"),
    ({"type": "lambda", "functionArn": FUNCTION, "invocationType": "DryRun"},
     "the lambda target's invocationType must be one of RequestResponse, Event, got 'DryRun'"),
])
def test_a_stepfunctions_or_lambda_event_description_is_judged_by_its_fields(description, problem):
    assert contract.target_description_problem(description) == problem


def test_the_lambda_invocation_types_are_the_contracts_list_everywhere():
    """The runtime, the construct's enum and the local engine read one list: the contract's."""
    from cdk_delayed_scheduler.local.deliveries import LAMBDA_INVOCATION_TYPES as engine_types
    from cdk_delayed_scheduler.targets import LambdaInvocationType
    from scheduler_runtime.aws.targets import LAMBDA_INVOCATION_TYPES as runtime_types

    listed = contract.TARGET_TYPES["lambda"].values["invocationType"]
    assert listed == ("RequestResponse", "Event")
    assert runtime_types == engine_types == listed
    assert tuple(kind.value for kind in LambdaInvocationType) == listed
