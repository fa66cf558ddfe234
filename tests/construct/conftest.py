"""Fixtures shared by the construct tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
import pytest
from construct_helpers import (FANOUT_EVENT_FUNCTION, FANOUT_HOOK_SECRET, FANOUT_STATE_MACHINE, SECURITY_VARIANTS,
                               load_example_app, nag_clean_callback, nag_violations, resource_names)


@pytest.fixture(scope="session")
def stacks():
    """The shared stacks of ``construct_stacks.BUILDERS``, each synthesized once per session, on first use."""
    from construct_stacks import Stacks

    return Stacks()


@pytest.fixture(scope="session")
def example_assembly(tmp_path_factory):
    """The example app, synthesized once per session: (cloud assembly dir, stack name, template)."""
    app_module = load_example_app()
    outdir = tmp_path_factory.mktemp("example-cdk-out")
    app_module.build_app(str(outdir)).synth()
    template = json.loads((outdir / f"{app_module.STACK_NAME}.template.json").read_text())
    return outdir, app_module.STACK_NAME, template


@dataclass
class SecurityStack:
    variant: dict
    template: dict
    names: dict  # logical id -> construct path below the scheduler ("Table", "ApiFunctionRole", ...)
    types: dict  # logical id -> CloudFormation type
    path: Path


@dataclass
class SecurityAssembly:
    stacks: dict  # stack name -> SecurityStack
    violations: list  # cdk-nag's findings: (rule, severity, construct path)
    producer: dict  # the template of ``Producer``, whose role ``App`` the ``Http`` scheduler granted across stacks

    @property
    def template_paths(self) -> list[Path]:
        return [s.path for s in self.stacks.values()]


@pytest.fixture(scope="session")
def security_assembly(tmp_path_factory) -> SecurityAssembly:
    """One app with a scheduler per ``SECURITY_VARIANTS`` entry (a nag-clean Lambda target, a key with
    rotation where ``key``, X-Ray tracing where ``tracing``, a periodic timer where ``periodic``, an SNS
    topic with a key of its own, an EventBridge bus, an imported state machine, an imported function
    invoked as an event and an HTTPS endpoint signed with an imported secret and its key as extra targets
    where ``fanout``,
    ``grant_schedule`` to ``Client`` and, with an API, ``grant_read`` to ``Reader``, its alarms (publishing
    to the SNS topic where ``fanout``) and its dashboard; and a stack
    ``Producer`` whose role ``App`` the ``Http`` scheduler grants both), synthesized once with cdk-nag's
    AwsSolutions as a validation plugin."""
    import aws_cdk as cdk
    from aws_cdk import aws_events as events
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_secretsmanager as secretsmanager
    from aws_cdk import aws_sns as sns
    from aws_cdk import aws_stepfunctions as sfn
    from cdk_nag import AwsSolutionsChecks

    from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets

    outdir = tmp_path_factory.mktemp("security-cdk-out")
    app = cdk.App(outdir=str(outdir))
    stacks, schedulers = {}, {}
    for name, variant in SECURITY_VARIANTS.items():
        env = cdk.Environment(account="123456789012", region="eu-west-1") if variant["env"] else None
        stack = cdk.Stack(app, name, env=env)
        key = kms.Key(stack, "Key", enable_key_rotation=True) if variant["key"] else None
        api = {"HTTP": SchedulerApi.http, "REST": SchedulerApi.rest, "NONE": SchedulerApi.none}[variant["api"]]()
        scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(nag_clean_callback(stack)), api=api,
                                     encryption_key=key, listing=variant["listing"],
                                     tracing=lambda_.Tracing.ACTIVE if variant["tracing"] else lambda_.Tracing.DISABLED)
        scheduler.grant_schedule(iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal()))
        alarm_topic = None
        if variant["fanout"]:
            alerts = alarm_topic = sns.Topic(stack, "Alerts", enforce_ssl=True,
                               master_key=kms.Key(stack, "AlertsKey", enable_key_rotation=True))
            scheduler.add_target("alerts", targets.SnsPublish(alerts))
            scheduler.add_target("events", targets.EventBridgePutEvents(
                events.EventBus(stack, "Bus"), detail_type="Timer due", source="com.example.timers"))
            scheduler.add_target("workflow", targets.StepFunctionsStartExecution(
                sfn.StateMachine.from_state_machine_arn(stack, "Workflow", FANOUT_STATE_MACHINE)))
            scheduler.add_target("audit", targets.LambdaInvoke(
                lambda_.Function.from_function_arn(stack, "Audit", FANOUT_EVENT_FUNCTION),
                invocation_type=targets.LambdaInvocationType.EVENT))
            scheduler.add_target("hooks", targets.HttpsEndpoint("https://hooks.example.com/timers", signing_secret=
                secretsmanager.Secret.from_secret_attributes(stack, "HookSecret", secret_complete_arn=FANOUT_HOOK_SECRET,
                encryption_key=kms.Key(stack, "HookKey", enable_key_rotation=True))))
        if variant["periodic"]:
            scheduler.add_periodic("nightly", cron="0 2 * * ? *", time_zone="Europe/Paris", payload={"n": 1})
        if scheduler.api is not None:
            scheduler.grant_read(iam.Role(stack, "Reader", assumed_by=iam.AccountRootPrincipal()))
        scheduler.add_alarms(alarm_action=alarm_topic)
        scheduler.add_dashboard()
        stacks[name], schedulers[name] = stack, scheduler
    producer = cdk.Stack(app, "Producer")  # a grantee in another stack: the route ARNs arrive as imports
    app_role = iam.Role(producer, "App", assumed_by=iam.AccountRootPrincipal())
    schedulers["Http"].grant_schedule(app_role)
    schedulers["Http"].grant_read(app_role)
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except Exception:  # noqa: BLE001 - a validation failure: its findings are read from the report below
        pass
    built = {}
    for name, stack in stacks.items():
        path = outdir / f"{name}.template.json"
        template = json.loads(path.read_text())
        built[name] = SecurityStack(SECURITY_VARIANTS[name], template, resource_names(stack, "Timers"),
                                    {k: v["Type"] for k, v in template["Resources"].items()}, path)
    producer_template = json.loads((outdir / "Producer.template.json").read_text())
    return SecurityAssembly(built, nag_violations(outdir), producer_template)


@pytest.fixture(scope="module")
def app() -> cdk.App:
    """One app per test module for stacks that are never synthesized (a refusal at construction, a rendered prop)."""
    return cdk.App()


@pytest.fixture()
def stack(app) -> cdk.Stack:
    """A new stack in the module's :func:`app`."""
    return cdk.Stack(app, f"S{len(app.node.children)}")
