"""``grant_schedule`` and ``grant_invoke`` on each kind of API: exactly the routes, and the api function;
``grant_redrive``: exactly the calls of the operator's redrive."""

from __future__ import annotations

import json
import re

import aws_cdk as cdk
import pytest
from construct_helpers import nag_clean_callback, nag_violations, only
from construct_stacks import ENV, ROUTES, client_statements, invoke_statement, logical_id


def test_rest_grant_schedule_is_execute_api_on_every_route_and_the_invoke(stacks):
    b = stacks["rest"]
    invoke, statement = client_statements(b)
    assert invoke == invoke_statement(b)
    assert statement["Action"] == "execute-api:Invoke"
    rendered = [json.dumps(r) for r in statement["Resource"]]
    assert len(rendered) == len(ROUTES)
    for suffix in ('/POST/schedules"', '/GET/schedules/*"', '/DELETE/schedules/*"', '/PATCH/schedules/*"',
                   '/POST/schedule-batches"',
                   '/GET/schedules"', '/PUT/periodic/*"', '/GET/periodic/*"', '/DELETE/periodic/*"', '/GET/periodic"',
                   '/DELETE/groups/*"', '/GET/targets/*"', '/PATCH/targets/*"'):
        assert sum(r.endswith(suffix + "]]}") for r in rendered) == 1, (suffix, rendered)
    stage_id = only(b.json, "AWS::ApiGateway::Stage")[0]
    api_id = logical_id(b, b.scheduler.api)
    assert all(f'{{"Ref": "{api_id}"}}, "/", {{"Ref": "{stage_id}"}}' in r for r in rendered), rendered


def test_http_grant_schedule_is_execute_api_on_every_route_and_the_invoke(stacks):
    b = stacks["defaults"]
    invoke, statement = client_statements(b)
    assert invoke == invoke_statement(b)
    assert statement["Action"] == "execute-api:Invoke"
    api_id = only(b.json, "AWS::ApiGatewayV2::Api")[0]
    assert sorted(map(json.dumps, statement["Resource"])) == sorted(
        json.dumps({"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":execute-api:eu-west-1:123456789012:",
                                      {"Ref": api_id}, f"/$default/{verb}{re.sub('{[a-z]+}', '*', path)}"]]})
        for verb, path in ROUTES)


def test_grant_invoke_is_exactly_the_api_function(stacks):
    for name in ("defaults", "rest", "no_api"):
        b = stacks[name]
        assert client_statements(b, "Invoker") == [invoke_statement(b)], name


@pytest.fixture(scope="module")
def operators(tmp_path_factory) -> tuple[dict, list]:
    """One stack, synthesized once with cdk-nag: a scheduler with every default (``Plain``) and one with a customer
    managed key (``Keyed``), each granting ``grant_redrive`` to a role of its own (``PlainOperator``,
    ``KeyedOperator``). Its template, and cdk-nag's findings."""
    from aws_cdk import aws_iam as iam
    from aws_cdk import aws_kms as kms
    from cdk_nag import AwsSolutionsChecks

    from cdk_delayed_scheduler import DelayedScheduler, targets

    outdir = tmp_path_factory.mktemp("operators-cdk-out")
    app = cdk.App(outdir=str(outdir))
    stack = cdk.Stack(app, "Operators", env=ENV)
    for name, key in (("Plain", None), ("Keyed", kms.Key(stack, "Key", enable_key_rotation=True))):
        scheduler = DelayedScheduler(stack, name, target=targets.LambdaInvoke(nag_clean_callback(stack, f"{name}Callback")),
                                     encryption_key=key)
        scheduler.grant_redrive(iam.Role(stack, f"{name}Operator", assumed_by=iam.AccountRootPrincipal()))
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    try:
        app.synth()
    except Exception:  # noqa: BLE001 - a validation failure: its findings are read from the report
        pass
    return json.loads((outdir / "Operators.template.json").read_text()), nag_violations(outdir)


def _redrive_grant(template: dict, scheduler: str) -> dict[str, set[str]]:
    """{resource (rendered): actions} of the policy ``grant_redrive`` gave ``<scheduler>Operator``."""
    statements = only(template, "AWS::IAM::Policy", f"{scheduler}OperatorDefaultPolicy")[1]["Properties"][
        "PolicyDocument"]["Statement"]
    granted: dict[str, set[str]] = {}
    for statement in statements:
        assert statement["Effect"] == "Allow" and "Condition" not in statement, statement
        actions = [statement["Action"]] if isinstance(statement["Action"], str) else statement["Action"]
        resources = statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        for resource in resources:
            granted.setdefault(json.dumps(resource), set()).update(actions)
    return granted


def _arn_of(template: dict, scheduler: str, cfn_type: str, construct: str) -> str:
    logical = only(template, cfn_type, f"{scheduler}{construct}")[0]
    return json.dumps({"Fn::GetAtt": [logical, "Arn"]})


def _redrive_rights(template: dict, scheduler: str) -> dict[str, set[str]]:
    """What the operator's redrive calls (``operator.redrive``, ``aws/redrive.py``), on ``scheduler``'s resources."""
    return {
        _arn_of(template, scheduler, "AWS::SQS::Queue", "DeadLetterQueue"): {
            "sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl"},
        _arn_of(template, scheduler, "AWS::SQS::Queue", "DelayerQueue"): {"sqs:SendMessage", "sqs:GetQueueUrl"},
        _arn_of(template, scheduler, "AWS::DynamoDB::Table", "Table"): {"dynamodb:GetItem", "dynamodb:UpdateItem"},
        _arn_of(template, scheduler, "AWS::Lambda::Function", "EnqueuerFunction"): {"lambda:InvokeFunction"},
    }


def test_grant_redrive_is_exactly_the_calls_of_the_redrive(operators):
    template, _ = operators
    assert _redrive_grant(template, "Plain") == _redrive_rights(template, "Plain")


def test_grant_redrive_adds_the_customer_managed_key_that_encrypts_the_table_and_queues(operators):
    template, _ = operators
    key = json.dumps({"Fn::GetAtt": [only(template, "AWS::KMS::Key", "Key")[0], "Arn"]})
    assert _redrive_grant(template, "Keyed") == {
        **_redrive_rights(template, "Keyed"), key: {"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"}}


def test_grant_redrive_leaves_cdk_nag_nothing_to_report_or_acknowledge(operators):
    _, violations = operators
    assert [v for v in violations if "Operator" in v[2]] == []
