"""``targets.StepFunctionsStartExecution``: the description it renders (the contract's fields), the
dispatcher's exact grant (``states:StartExecution`` on that state machine only, a defined or an imported
one, STANDARD or EXPRESS), and bad input refused with the prop named and the target that takes it."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn

from cdk_delayed_scheduler import DelayedScheduler, targets
from construct_stacks import Built, logical_id, policy, rendered_targets

IMPORTED_ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:fulfil"


@pytest.fixture()
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S")


def _machine(stack: cdk.Stack, id: str, kind: sfn.StateMachineType) -> sfn.StateMachine:
    return sfn.StateMachine(stack, id, state_machine_type=kind,
                            definition_body=sfn.DefinitionBody.from_chainable(sfn.Succeed(stack, f"{id}Done")))


@pytest.fixture()
def built(stack) -> Built:
    standard = _machine(stack, "Fulfil", sfn.StateMachineType.STANDARD)
    express = _machine(stack, "Notify", sfn.StateMachineType.EXPRESS)
    imported = sfn.StateMachine.from_state_machine_arn(stack, "Imported", IMPORTED_ARN)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.StepFunctionsStartExecution(standard),
                                 extra_targets={"notify": targets.StepFunctionsStartExecution(express)})
    scheduler.add_target("imported", targets.StepFunctionsStartExecution(imported))
    return Built(stack, scheduler, standard=standard, express=express)


def test_each_state_machine_is_rendered_with_the_contracts_fields(built):
    standard, express = logical_id(built, built.extra["standard"]), logical_id(built, built.extra["express"])
    assert rendered_targets(built) == {
        "default": {"type": "stepfunctions", "stateMachineArn": f"<Ref {standard}>"},
        "notify": {"type": "stepfunctions", "stateMachineArn": f"<Ref {express}>"},
        "imported": {"type": "stepfunctions", "stateMachineArn": IMPORTED_ARN},
    }
    assert built.scheduler.target_names == ["default", "notify", "imported"]


def test_the_dispatcher_may_start_executions_of_each_state_machine_and_do_nothing_else_there(built):
    standard, express = logical_id(built, built.extra["standard"]), logical_id(built, built.extra["express"])
    statements = [s for s in policy(built, "DispatcherFunction") if "states:" in str(s["Action"])]
    assert statements == [
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": standard}},
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": {"Ref": express}},
        {"Action": "states:StartExecution", "Effect": "Allow", "Resource": IMPORTED_ARN},
    ]


def test_a_resource_of_another_kind_is_refused_with_the_target_that_takes_it(stack):
    queue = sqs.Queue(stack, "Q")
    machine = sfn.StateMachine.from_state_machine_arn(stack, "Imported", IMPORTED_ARN)
    with pytest.raises(ValueError, match=r"^state_machine: must be a Step Functions state machine "
                                         r"\(aws_stepfunctions.IStateMachine\), got Queue; for a queue use "
                                         r"targets.SqsSendMessage\(queue\)$"):
        targets.StepFunctionsStartExecution(queue)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^queue: .* for a state machine use "
                                         r"targets.StepFunctionsStartExecution\(state_machine\)$"):
        targets.SqsSendMessage(machine)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^target: .*; wrap the state machine: "
                                         r"targets.StepFunctionsStartExecution\(state_machine\)$"):
        DelayedScheduler(stack, "Timers", target=machine)  # type: ignore[arg-type]
