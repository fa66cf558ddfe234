"""``grant_operate``: ``execute-api:Invoke`` on ``GET`` and ``PATCH /targets/*`` of the scheduler's own stage (HTTP or
REST), nothing else (no schedule route, no direct invoke), its ``{name}`` wildcards acknowledged for cdk-nag, and a
``ValueError`` without an API."""

from __future__ import annotations

import json

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from construct_helpers import nag_clean_callback, nag_violations, only
from construct_stacks import ENV

OPERATED = [("GET", "/targets/*"), ("PATCH", "/targets/*")]


@pytest.fixture(scope="module")
def operated(tmp_path_factory) -> tuple[dict, list]:
    """One stack, synthesized once with cdk-nag: a scheduler on each kind of API (``Http``, ``Rest``), each granting
    ``grant_operate`` to a role of its own (``HttpOperator``, ``RestOperator``). Its template, and cdk-nag's findings."""
    from cdk_nag import AwsSolutionsChecks

    from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets

    outdir = tmp_path_factory.mktemp("operate-cdk-out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Operated", env=ENV)
    for name, api in (("Http", SchedulerApi.http()), ("Rest", SchedulerApi.rest())):
        scheduler = DelayedScheduler(stack, name, api=api,
                                     target=targets.LambdaInvoke(nag_clean_callback(stack, f"{name}Callback")))
        scheduler.grant_operate(iam.Role(stack, f"{name}Operator", assumed_by=iam.AccountRootPrincipal()))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except Exception:  # noqa: BLE001 - a validation failure: its findings are read from the report
        pass
    return json.loads((outdir / "Operated.template.json").read_text()), nag_violations(outdir)


def _statements(template: dict, role: str) -> list[dict]:
    return only(template, "AWS::IAM::Policy", f"{role}DefaultPolicy")[1]["Properties"]["PolicyDocument"]["Statement"]


def _route(arn: dict) -> tuple[str, str]:
    """``(verb, path)`` of an ``execute-api`` ARN as the template renders it (the join's last part is the route)."""
    verb, path = arn["Fn::Join"][1][-1].removeprefix("/$default").lstrip("/").split("/", 1)
    return verb, f"/{path}"


@pytest.mark.parametrize("name", ["Http", "Rest"])
def test_grant_operate_is_get_and_patch_on_the_targets_alone(operated, name):
    template, _ = operated
    (statement,) = _statements(template, f"{name}Operator")
    assert (statement["Effect"], statement["Action"]) == ("Allow", "execute-api:Invoke")
    assert sorted(_route(arn) for arn in statement["Resource"]) == OPERATED
    api = only(template, "AWS::ApiGatewayV2::Api" if name == "Http" else "AWS::ApiGateway::RestApi", name)[0]
    assert all(json.dumps({"Ref": api}) in json.dumps(arn) for arn in statement["Resource"])


def test_grant_operate_leaves_cdk_nag_nothing_to_report(operated):
    _, violations = operated
    assert [v for v in violations if "Operator" in v[2]] == []


def test_grant_operate_refuses_a_scheduler_without_an_api():
    from cdk_delayed_scheduler import DelayedScheduler, SchedulerApi, targets

    stack = cdk.Stack(cdk.App(), "NoApi", env=ENV)
    scheduler = DelayedScheduler(stack, "Timers", api=SchedulerApi.none(),
                                 target=targets.LambdaInvoke(nag_clean_callback(stack)))
    with pytest.raises(ValueError, match="grant_operate: this scheduler has no API"):
        scheduler.grant_operate(iam.Role(stack, "WouldOperate", assumed_by=iam.AccountRootPrincipal()))
