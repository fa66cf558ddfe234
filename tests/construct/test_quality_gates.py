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
import subprocess
import sys
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

from cdk_delayed_scheduler import ApiAuthorization, DelayedScheduler, targets

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


@pytest.fixture(scope="module")
def assembly(tmp_path_factory):
    outdir = tmp_path_factory.mktemp("nag-cdk-out")
    app = cdk.App(outdir=str(outdir))

    defaults = cdk.Stack(app, "Defaults")
    scheduler = DelayedScheduler(defaults, "Timers", target=targets.LambdaInvoke(_callback(defaults, "Callback")))
    scheduler.grant_schedule(iam.Role(defaults, "Client", assumed_by=iam.AccountRootPrincipal()))

    custom = cdk.Stack(app, "Custom")
    key = kms.Key(custom, "Key", enable_key_rotation=True)
    pool = cognito.UserPool(custom, "Pool", mfa=cognito.Mfa.REQUIRED,
                            mfa_second_factor=cognito.MfaSecondFactor(otp=True, sms=False),
                            password_policy=cognito.PasswordPolicy(min_length=12, require_digits=True,
                                                                   require_lowercase=True, require_symbols=True,
                                                                   require_uppercase=True),
                            feature_plan=cognito.FeaturePlan.PLUS,
                            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION)
    DelayedScheduler(
        custom, "Timers",
        target=targets.SqsSendMessage(_queue(custom, "Jobs", encryption=sqs.QueueEncryption.KMS,
                                             encryption_master_key=key)),
        extra_targets={"ordered": targets.SqsSendMessage(_queue(custom, "Ordered", fifo=True), message_group_id="g")},
        encryption_key=key,
        billing_mode=dynamodb.BillingMode.PROVISIONED,
        api_authorization=ApiAuthorization.cognito(pool),
        dispatcher_max_concurrency=5,
    )

    keyed = cdk.Stack(app, "ApiKey")
    DelayedScheduler(keyed, "Timers", target=targets.LambdaInvoke(_callback(keyed, "Callback")),
                     api_authorization=ApiAuthorization.api_key(), api_cloud_watch_role=False)

    opened = cdk.Stack(app, "Open")
    DelayedScheduler(opened, "Timers", target=targets.LambdaInvoke(_callback(opened, "Callback")),
                     api_authorization=ApiAuthorization.none())

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
            "stacks": ("Defaults", "Custom", "ApiKey", "Open")}


def test_cdk_nag_reports_nothing_for_secure_configurations(assembly):
    findings = [v for v in assembly["violations"] if not v[2].startswith("Open/")]
    assert findings == []


def test_cdk_nag_reports_an_open_api_as_intended(assembly):
    """ApiAuthorization.none() is never acknowledged by the construct: the user sees it."""
    open_rules = {(rule, path.split("/")[-2] if path.count("/") > 2 else path)
                  for rule, _, path in assembly["violations"] if path.startswith("Open/")}
    rules = {rule for rule, _ in open_rules}
    assert rules == {"AwsSolutions-APIG4", "AwsSolutions-COG4"}, assembly["violations"]
    assert {sev for _, sev, path in assembly["violations"]} <= {"error"}


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
    assert {"AwsSolutions-IAM5[Resource::*]", "AwsSolutions-IAM5[Action::kms:ReEncrypt*]",
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]", "AwsSolutions-APIG3", "AwsSolutions-COG4", "AwsSolutions-APIG4",
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
            "AmazonAPIGatewayPushToCloudWatchLogs]"} == ids
    for path, rule, reason in acknowledged:
        assert isinstance(reason, str) and len(reason) >= 60, (path, rule, reason)
    granted = sorted(rule for path, rule, _ in acknowledged if path == "Defaults/Client")
    assert len(granted) == 2 and all(r.endswith("/schedules/*]") for r in granted), granted


def _variants(app: cdk.App, prefix: str) -> None:
    """One scheduler per acknowledgement-bearing configuration."""
    plain = cdk.Stack(app, f"{prefix}Plain")
    scheduler = DelayedScheduler(plain, "Timers", target=targets.LambdaInvoke(_callback(plain, "Callback")))
    scheduler.grant_schedule(iam.Role(plain, "Client", assumed_by=iam.AccountRootPrincipal()))
    keyed = cdk.Stack(app, f"{prefix}Keyed")
    DelayedScheduler(keyed, "Timers", target=targets.LambdaInvoke(_callback(keyed, "Callback")),
                     api_authorization=ApiAuthorization.api_key(),
                     encryption_key=kms.Key(keyed, "Key", enable_key_rotation=True))


def test_acknowledgements_are_needed(tmp_path):
    """Without the construct's acknowledgements, exactly the acknowledged findings appear: none is
    stale, none is missing."""
    import cdk_delayed_scheduler.scheduler as scheduler_module

    acknowledged_app = cdk.App(outdir=str(tmp_path / "acknowledged"))
    _variants(acknowledged_app, "Bare")
    acknowledged = {(path.split("/")[0], rule) for path, rule, _ in _acknowledgements(acknowledged_app)}

    app = cdk.App(outdir=str(tmp_path / "bare"))
    original = scheduler_module._acknowledge
    scheduler_module._acknowledge = lambda scope, rule, reason: None
    try:
        _variants(app, "Bare")
    finally:
        scheduler_module._acknowledge = original
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "bare" / "validation-report.json").read_text())
    found = {(c["constructPath"].split("/")[0], v["ruleName"])
             for p in report["pluginReports"] for v in p["violations"] for c in v["violatingConstructs"]}
    assert found == acknowledged
    assert len({rule for _, rule in found}) == 9


def _cfn_lint(paths: list[Path]) -> list[dict]:
    result = subprocess.run(
        [str(Path(sys.executable).with_name("cfn-lint")), "--format", "json", "--regions", "us-east-1", "eu-west-1",
         "--", *map(str, paths)],
        capture_output=True, text=True, check=False,
    )
    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout)


def test_cfn_lint_has_no_errors_and_only_the_listed_warnings(assembly, example_assembly):
    outdir = assembly["outdir"]
    templates = [outdir / f"{name}.template.json" for name in assembly["stacks"]]
    example_dir, example_stack, _ = example_assembly
    templates.append(example_dir / f"{example_stack}.template.json")
    matches = _cfn_lint(templates)
    unexpected = [(m["Rule"]["Id"], m["Message"], m["Filename"]) for m in matches
                  if m["Rule"]["Id"] not in CFN_LINT_IGNORED]
    assert unexpected == []
    assert {m["Rule"]["Id"] for m in matches} <= set(CFN_LINT_IGNORED)


def test_cfn_lint_gate_can_fail(tmp_path):
    """The gate is live: a template with a real mistake is reported."""
    broken = {"Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {"VisibilityTimeout": "forever"}}}}
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(broken))
    assert any(m["Level"] == "Error" for m in _cfn_lint([path]))
