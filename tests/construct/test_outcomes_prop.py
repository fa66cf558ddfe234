"""The construct's side of outcome events: the ``outcomes`` prop (a bare target or ``Outcomes(...)``), rendered as
``OUTCOMES`` on the functions only when given, in the form the runtime reads; its target bound to the dispatcher
alone, checked as a delivery target is; and each bad value refused naming the prop."""

from __future__ import annotations

import json
from typing import Any, Callable

import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, OutcomeKind, Outcomes, targets
from cdk_delayed_scheduler._contract import contract
from scheduler_runtime.core.outcomes import settings_problem

from construct_helpers import grants, render, resource_names
from prop_stacks import build, function_variables

VARIABLE = contract.ENV.outcomes
EVERY_KIND = [OutcomeKind.DELIVERED, OutcomeKind.FAILED, OutcomeKind.STALE, OutcomeKind.CANCELLED]

#: Each configuration the module synthesizes, as the ``outcomes`` prop made from the stack (``None``: none).
CONFIGURATIONS: dict[str, Callable[[cdk.Stack], Any]] = {
    "Bare": lambda stack: targets.SqsSendMessage(sqs.Queue(stack, "Outcomes")),
    "Chosen": lambda stack: Outcomes(targets.SqsSendMessage(sqs.Queue(stack, "Outcomes")),
                                     kinds=["CANCELLED", OutcomeKind.STALE, OutcomeKind.DELIVERED, OutcomeKind.FAILED],
                                     include_payload=True),
    "Bus": lambda stack: targets.EventBridgePutEvents(events.EventBus(stack, "Outcomes"), detail_type="Timer outcome",
                                                      source="com.example.timers"),
}


@pytest.fixture(scope="module")
def synthesized() -> dict[str, tuple[cdk.Stack, DelayedScheduler, dict]]:
    """One app, synthesized once: a scheduler without outcomes (``None``) and one per ``CONFIGURATIONS``."""
    app = cdk.App()
    built = {"None": build(app, "None")}
    for name, outcomes in CONFIGURATIONS.items():
        stack = cdk.Stack(app, name)
        built[name] = stack, DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")),
                                              outcomes=outcomes(stack))
    assembly = app.synth()
    return {name: (stack, scheduler, assembly.get_stack_by_name(name).template)
            for name, (stack, scheduler) in built.items()}


def _settings(stack: cdk.Stack, scheduler: DelayedScheduler, template: dict) -> dict:
    """``OUTCOMES`` as the functions get it (the same on all four), each reference as ``<construct path>``."""
    names, types = resource_names(stack, "Timers"), {k: v["Type"] for k, v in template["Resources"].items()}
    rendered = {render(env[VARIABLE], names, types) for env in function_variables(stack, scheduler, template)}
    assert len(rendered) == 1
    return json.loads(rendered.pop())


def test_without_outcomes_no_function_gets_the_variable(synthesized):
    assert [VARIABLE in env for env in function_variables(*synthesized["None"])] == [False] * 4
    assert synthesized["None"][1].outcomes is None


def test_a_bare_target_sends_the_default_kinds_without_the_payload(synthesized):
    assert _settings(*synthesized["Bare"]) == {
        "target": {"type": "sqs", "queueUrl": "<Outcomes>", "fifo": False},
        "kinds": ["DELIVERED", "FAILED", "STALE"], "includePayload": False}
    outcomes = synthesized["Bare"][1].outcomes
    assert isinstance(outcomes, Outcomes) and outcomes.kinds == tuple(EVERY_KIND[:3]) and not outcomes.include_payload


def test_outcomes_chooses_the_kinds_in_the_contracts_order_and_the_payload(synthesized):
    assert _settings(*synthesized["Chosen"]) == {
        "target": {"type": "sqs", "queueUrl": "<Outcomes>", "fifo": False},
        "kinds": ["DELIVERED", "FAILED", "STALE", "CANCELLED"], "includePayload": True}
    assert synthesized["Chosen"][1].outcomes.kinds == tuple(EVERY_KIND)


@pytest.mark.parametrize("name", list(CONFIGURATIONS))
def test_the_runtime_accepts_the_rendered_settings(synthesized, name):
    assert settings_problem(_settings(*synthesized[name])) is None


def test_the_construct_and_the_runtime_know_the_same_kinds():
    assert [kind.value for kind in OutcomeKind] == list(contract.OUTCOME_KINDS)


@pytest.mark.parametrize(("name", "action"), [("Bare", "sqs:SendMessage"), ("Bus", "events:PutEvents")])
def test_only_the_dispatcher_is_granted_the_outcomes_target(synthesized, name, action):
    stack, _, template = synthesized[name]
    allowed = grants(template, resource_names(stack, "Timers"))
    holders = {principal for principal, granted in allowed.items()
               for _, resource in granted if resource.startswith("<Outcomes")}
    assert holders == {"DispatcherFunctionRole"}
    assert (action, "<Outcomes.Arn>") in allowed["DispatcherFunctionRole"]



def _refused(stack: cdk.Stack, make_outcomes: Callable[[sqs.Queue], Any]) -> str:
    """The refusal of a scheduler whose ``outcomes`` is ``make_outcomes(queue)``."""
    queue = sqs.Queue(stack, "Outcomes")
    with pytest.raises(ValueError) as raised:
        DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(queue), outcomes=make_outcomes(queue))
    return str(raised.value)


@pytest.mark.parametrize(("make_outcomes", "message"), [
    (lambda queue: queue, "outcomes: must be a target from cdk_delayed_scheduler.targets or Outcomes(...), "
                          "got Queue; wrap the "),
    (lambda queue: "DELIVERED", "outcomes: must be a target from cdk_delayed_scheduler.targets or Outcomes(...), "
                                "got str; e.g. targets.LambdaInvoke(fn)"),
    (lambda queue: Outcomes(queue), "outcomes: must be a target from cdk_delayed_scheduler.targets, got Queue; "),
    (lambda queue: Outcomes(targets.SqsSendMessage(queue), kinds=[]), "outcomes.kinds: must name at least one kind"),
    (lambda queue: Outcomes(targets.SqsSendMessage(queue), kinds="FAILED"),
     "outcomes.kinds: must be a list of OutcomeKind, e.g. [OutcomeKind.DELIVERED, OutcomeKind.FAILED], got 'FAILED'"),
    (lambda queue: Outcomes(targets.SqsSendMessage(queue), kinds=["DONE"]),
     "outcomes.kinds: each must be one of OutcomeKind.DELIVERED, OutcomeKind.FAILED, OutcomeKind.STALE, "
     "OutcomeKind.CANCELLED, got 'DONE'"),
    (lambda queue: Outcomes(targets.SqsSendMessage(queue), kinds=[OutcomeKind.FAILED, "FAILED"]),
     "outcomes.kinds: FAILED is given more than once"),
    (lambda queue: Outcomes(targets.SqsSendMessage(queue), include_payload="yes"),
     "outcomes.include_payload: must be a bool, True or False, got 'yes'"),
    (lambda queue: Outcomes(targets.SqsSendMessage(queue), include_payload=None),
     "outcomes.include_payload: must be a bool, True or False, got a NoneType"),
])
def test_a_bad_outcomes_is_refused_naming_the_prop(stack, make_outcomes, message):
    assert _refused(stack, make_outcomes).startswith(message)


def _function(stack: cdk.Stack, timeout: cdk.Duration) -> lambda_.Function:
    return lambda_.Function(stack, "Fn", runtime=lambda_.Runtime.PYTHON_3_13, handler="index.handler", timeout=timeout,
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"))


def test_an_outcomes_function_is_checked_against_the_dispatcher_timeout_as_a_target_is(stack):
    longer = targets.LambdaInvoke(_function(stack, cdk.Duration.seconds(60)))
    with pytest.raises(ValueError, match=r"^dispatcher_timeout: must be at least 65 seconds to cover target "
                                         r"'outcomes', a Lambda function with a 60-second timeout"):
        DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), outcomes=longer,
                         dispatcher_timeout=cdk.Duration.seconds(30))


def test_an_imported_outcomes_function_gets_the_unknown_timeout_warning(stack):
    imported = lambda_.Function.from_function_arn(stack, "Imported",
                                                  "arn:aws:lambda:eu-west-1:123456789012:function:outcomes")
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")),
                                 outcomes=targets.LambdaInvoke(imported))
    (warning,) = [entry.data for entry in scheduler.node.metadata if entry.type == "aws:cdk:warning"]
    assert warning.startswith("target 'outcomes': the Lambda function's timeout is not known here")
