"""Stacks for the tests of one prop of the scheduler: a scheduler per configuration (``build``), its functions'
environment variables as synthesized, and the REST API's body models as validators."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from construct_helpers import resources_of

FUNCTIONS = ("api_function", "sweeper_function", "enqueuer_function", "dispatcher_function")
REST_BODIES = {"CreateSchedule": {"delaySeconds": 1, "payload": 1}, "PutPeriodic": {"every": 60, "payload": 1}}
"""A valid body of each REST API body model that takes the prop's field: a test adds the field to it."""


def build(app: cdk.App | None = None, name: str = "S", **props: Any) -> tuple[cdk.Stack, DelayedScheduler]:
    stack = cdk.Stack(app or cdk.App(), name)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SqsSendMessage(sqs.Queue(stack, "Q")), **props)
    return stack, scheduler


def function_variables(stack: cdk.Stack, scheduler: DelayedScheduler, template: dict) -> list[dict]:
    """Each of the scheduler's four functions' environment variables, as synthesized."""
    resources = template["Resources"]
    return [resources[stack.get_logical_id(getattr(scheduler, name).node.default_child)]["Properties"]["Environment"][
        "Variables"] for name in FUNCTIONS]


def rest_body_validators(template: dict) -> dict[str, Any]:
    """The REST API's body models of ``REST_BODIES``, as JSON Schema validators, by model name."""
    import jsonschema

    models = {props["Properties"]["Name"]: props["Properties"]["Schema"]
              for props in resources_of(template, "AWS::ApiGateway::Model").values()}
    return {name: jsonschema.Draft4Validator(models[name]) for name in REST_BODIES}
