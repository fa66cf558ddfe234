"""cdk-nag 3 (AwsSolutions) and cfn-lint over the construct in several configurations.

- cdk-nag: zero errors and zero warnings on every resource the construct creates. The
  construct's own acknowledgements each carry a written reason (checked below). The test
  fixtures' own resources (a callback function, target queues, a user pool) are built to pass
  too, and where a fixture cannot, the test acknowledges it with its reason.
- cfn-lint: zero errors, and no warnings except W3005, which CDK always triggers (see
  ``CFN_LINT_IGNORED``).
"""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Validations
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sqs as sqs
from cdk_nag import AwsSolutionsChecks
from construct_helpers import cfn_lint

from cdk_delayed_scheduler import ApiAuthorization, DelayedScheduler, SchedulerApi, targets

pytestmark = pytest.mark.slow

CFN_LINT_IGNORED = {
    # CDK's lambda.Function always renders both `DependsOn: [<Role>, <Role>DefaultPolicy]` and
    # `Role: Fn::GetAtt <Role>.Arn`; the explicit DependsOn is needed for the DefaultPolicy
    # (no GetAtt to it), and the redundant one on the role is harmless.
    "W3005": "redundant DependsOn that CDK's lambda.Function always renders next to a GetAtt",
}


def _callback(stack: cdk.Stack, id: str) -> lambda_.Function:
    """A target function that passes AwsSolutions itself: newest runtime, no managed policies."""
    role = iam.Role(stack, f"{id}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = logs.LogGroup(stack, f"{id}Logs", retention=logs.RetentionDays.ONE_WEEK,
                              removal_policy=cdk.RemovalPolicy.DESTROY)
    log_group.grant_write(role)
    return lambda_.Function(stack, id, runtime=lambda_.Runtime.PYTHON_3_14, handler="index.handler", role=role,
                            log_group=log_group,
                            code=lambda_.Code.from_inline("def handler(event, context):\n    return None\n"))


def _queue(stack: cdk.Stack, id: str, **kwargs) -> sqs.Queue:
    fifo = kwargs.get("fifo", False)
    dlq = sqs.Queue(stack, f"{id}Dlq", enforce_ssl=True, fifo=fifo or None)
    return sqs.Queue(stack, id, enforce_ssl=True, dead_letter_queue=sqs.DeadLetterQueue(queue=dlq, max_receive_count=3),
                     **kwargs)


ENV = cdk.Environment(account="123456789012", region="eu-west-1")
#: Stacks whose findings are reported on purpose: what the user chose, never acknowledged.
INTENDED = {
    "Open": {"AwsSolutions-APIG4", "AwsSolutions-COG4"},  # REST, ApiAuthorization.none()
    "HttpOpen": {"AwsSolutions-APIG4"},  # HTTP, ApiAuthorization.none()
    "HttpUnlogged": {"AwsSolutions-APIG1"},  # HTTP, access_logging=False
}


def _scheduler(app: cdk.App, name: str, api: SchedulerApi | None = None, *, env: cdk.Environment | None = None,
               grant: bool = False, **props) -> DelayedScheduler:
    stack = cdk.Stack(app, name, env=env)
    scheduler = DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(_callback(stack, "Callback")), api=api,
                                 **props)
    if grant:
        scheduler.grant_schedule(iam.Role(stack, "Client", assumed_by=iam.AccountRootPrincipal()))
        scheduler.grant_invoke(iam.Role(stack, "Invoker", assumed_by=iam.AccountRootPrincipal()))
        if scheduler.api is not None:
            scheduler.grant_read(iam.Role(stack, "Reader", assumed_by=iam.AccountRootPrincipal()))
    return scheduler


def _pool(stack: cdk.Stack) -> cognito.UserPool:
    return cognito.UserPool(stack, "Pool", mfa=cognito.Mfa.REQUIRED,
                            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
                            password_policy=cognito.PasswordPolicy(min_length=12, require_digits=True,
                                                                   require_lowercase=True, require_symbols=True,
                                                                   require_uppercase=True),
                            feature_plan=cognito.FeaturePlan.PLUS,
                            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION)


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("nag-cdk-out")
    app = cdk.App(outdir=str(outdir))

    # Each API kind with grant_schedule and grant_read, in an environment-agnostic stack and in one
    # with an explicit account and region (where the granted ARNs hold concrete values); listing on
    # in some (its index and the api function's index grant).
    _scheduler(app, "Defaults", grant=True)
    _scheduler(app, "DefaultsEnv", env=ENV, grant=True, listing=True)
    _scheduler(app, "Rest", SchedulerApi.rest(), grant=True, listing=True)
    _scheduler(app, "RestEnv", SchedulerApi.rest(), env=ENV, grant=True)
    _scheduler(app, "NoApi", SchedulerApi.none(), grant=True)

    custom = cdk.Stack(app, "Custom")
    key = kms.Key(custom, "Key", enable_key_rotation=True)
    DelayedScheduler(
        custom, "Timers",
        target=targets.SqsSendMessage(_queue(custom, "Jobs", encryption=sqs.QueueEncryption.KMS,
                                             encryption_master_key=key)),
        extra_targets={"ordered": targets.SqsSendMessage(_queue(custom, "Ordered", fifo=True), message_group_id="g")},
        encryption_key=key,
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        listing=True,
        api=SchedulerApi.rest(authorization=ApiAuthorization.cognito(_pool(custom))),
        dispatcher_max_concurrency=5,
    )
    http_cognito = cdk.Stack(app, "HttpCognito")
    pool = _pool(http_cognito)
    DelayedScheduler(http_cognito, "Timers", target=targets.LambdaInvoke(_callback(http_cognito, "Callback")),
                     encryption_key=kms.Key(http_cognito, "Key", enable_key_rotation=True),
                     api=SchedulerApi.http(authorization=ApiAuthorization.cognito(
                         pool, user_pool_clients=[pool.add_client("App")])))
    _scheduler(app, "ApiKey", SchedulerApi.rest(authorization=ApiAuthorization.api_key(), cloud_watch_role=False))
    _scheduler(app, "Open", SchedulerApi.rest(authorization=ApiAuthorization.none()))
    _scheduler(app, "HttpOpen", SchedulerApi.http(authorization=ApiAuthorization.none()))
    _scheduler(app, "HttpUnlogged", SchedulerApi.http(access_logging=False))

    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    error = None
    try:
        app.synth()
    except Exception as exc:  # noqa: BLE001 - a validation failure is reported in the file read below
        error = exc
    report = json.loads((outdir / "validation-report.json").read_text())
    violations = []
    for plugin in report.get("pluginReports", []):
        for violation in plugin.get("violations", []):
            for construct in violation.get("violatingConstructs", []):
                violations.append((violation["ruleName"], violation.get("severity"), construct["constructPath"]))
    return {"outdir": outdir, "app": app, "violations": violations, "error": error,
            "stacks": [stack.stack_name for stack in app.node.children if isinstance(stack, cdk.Stack)]}


def test_cdk_nag_reports_nothing_for_secure_configurations(assembly):
    assert len(assembly["stacks"]) == 11
    findings = [v for v in assembly["violations"] if v[2].split("/")[0] not in INTENDED]
    assert findings == []


def test_cdk_nag_reports_the_users_insecure_choices_as_intended(assembly):
    """ApiAuthorization.none() and access_logging=False are never acknowledged: the user sees them."""
    reported = {}
    for rule, _, path in assembly["violations"]:
        reported.setdefault(path.split("/")[0], set()).add(rule)
    assert reported == INTENDED, assembly["violations"]
    assert {sev for _, sev, _ in assembly["violations"]} <= {"error"}


def _acknowledgements(construct) -> list[tuple[str, str, str]]:
    """(construct path, rule, reason) of every acknowledgement under ``construct``."""
    found = []
    for node in construct.node.find_all():
        for entry in node.node.metadata:
            if entry.type == cdk.Validations.ACKNOWLEDGED_RULES_METADATA_KEY:
                for rule, reason in entry.data.items():
                    found.append((node.node.path, rule.removeprefix("Annotation::"), reason))
    return found


def test_every_acknowledgement_has_a_written_reason(assembly):
    acknowledged = _acknowledgements(assembly["app"])
    ids = {rule for _, rule, _ in acknowledged if "execute-api" not in rule}
    assert {"AwsSolutions-IAM5[Resource::*]", "AwsSolutions-APIG3", "AwsSolutions-COG4", "AwsSolutions-APIG4",
            "AwsSolutions-L1",  # the default runtime (python3.13), while aws-cdk-lib offers a newer Python
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]"} == ids
    for path, rule, reason in acknowledged:
        assert isinstance(reason, str) and len(reason) >= 60, (path, rule, reason)
    for role, count in (("Client", 10), ("Reader", 3)):  # grant_schedule's and grant_read's {id}/{group}/{name} routes
        granted = {}
        for path, rule, _ in acknowledged:
            if path.endswith(f"/{role}"):
                granted.setdefault(path.split("/")[0], []).append(rule)
        assert sorted(granted) == ["Defaults", "DefaultsEnv", "Rest", "RestEnv"]  # not NoApi: no route granted
        _check_route_acknowledgements(granted, count)


def _check_route_acknowledgements(granted: dict, count: int) -> None:
    for stack, rules in granted.items():
        assert len(rules) == count and all(r.endswith(("/schedules/*]", "/periodic/*]", "/groups/*]", "/targets/*]"))
                                           for r in rules), rules
        # named as cdk-nag names the granted ARN: concrete region and account in a stack with an env
        assert all((":eu-west-1:123456789012:" in r) == stack.endswith("Env") for r in rules), rules
        assert all(("/$default/" in r) == stack.startswith("Defaults") for r in rules), rules


def _variants(app: cdk.App) -> None:
    """One scheduler per acknowledgement-bearing configuration."""
    _scheduler(app, "Plain", grant=True)
    _scheduler(app, "PlainEnv", env=ENV, grant=True, listing=True)  # the index adds no finding
    _scheduler(app, "RestEnv", SchedulerApi.rest(), env=ENV, grant=True)
    keyed = cdk.Stack(app, "Keyed")
    DelayedScheduler(keyed, "Timers", target=targets.LambdaInvoke(_callback(keyed, "Callback")),
                     api=SchedulerApi.rest(authorization=ApiAuthorization.api_key()),
                     encryption_key=kms.Key(keyed, "Key", enable_key_rotation=True))


def test_acknowledgements_are_needed(tmp_path):
    """Without the construct's acknowledgements, exactly the acknowledged findings appear: none is
    stale, none is missing."""
    from cdk_delayed_scheduler import _nag

    acknowledged_app = cdk.App(outdir=str(tmp_path / "acknowledged"))
    _variants(acknowledged_app)
    acknowledged = {(path.split("/")[0], rule) for path, rule, _ in _acknowledgements(acknowledged_app)}

    app = cdk.App(outdir=str(tmp_path / "bare"))
    original = _nag.acknowledge
    _nag.acknowledge = lambda scope, rule, reason: None
    try:
        _variants(app)
    finally:
        _nag.acknowledge = original
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "bare" / "validation-report.json").read_text())
    found = {(c["constructPath"].split("/")[0], v["ruleName"])
             for p in report["pluginReports"] for v in p["violations"] for c in v["violatingConstructs"]}
    assert found == acknowledged
    # 6 by the construct (one the default runtime's), 10 per grant_schedule in 3 stacks (grant_read's 3 are among them)
    assert len({rule for _, rule in found}) == 36


def test_cfn_lint_has_no_errors_and_only_the_listed_warnings(assembly, example_assembly, tmp_path):
    """One cfn-lint run over every template, plus one with a real mistake that shows the gate is live."""
    outdir = assembly["outdir"]
    templates = [outdir / f"{name}.template.json" for name in assembly["stacks"]]
    example_dir, example_stack, _ = example_assembly
    templates.append(example_dir / f"{example_stack}.template.json")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"Resources": {"Q": {"Type": "AWS::SQS::Queue",
                                                       "Properties": {"VisibilityTimeout": "forever"}}}}))
    matches = cfn_lint([*templates, broken])
    ours = [m for m in matches if Path(m["Filename"]) != broken]
    assert any(m["Level"] == "Error" for m in matches if Path(m["Filename"]) == broken), matches
    unexpected = [(m["Rule"]["Id"], m["Message"], m["Filename"]) for m in ours if m["Rule"]["Id"] not in CFN_LINT_IGNORED]
    assert unexpected == []
    assert {m["Filename"] for m in ours} <= {str(t) for t in templates}
