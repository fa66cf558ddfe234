"""The README's targets example (its ``## Targets`` section's code), run as written in a stack under cdk-nag 3:
the signing secret it makes is acknowledged for AwsSolutions-SMG4 (no automatic rotation), as
docs/consuming.md says to do without a rotation schedule. A secret made beside it without the
acknowledgement is reported, so the check sees cdk-nag run."""

from __future__ import annotations


import aws_cdk as cdk
import pytest
from aws_cdk import aws_events as events
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from construct_helpers import nag_clean_callback, nag_findings, readme_block

pytestmark = pytest.mark.slow


def readme_targets_example() -> str:
    return readme_block("Targets")


def test_the_readme_targets_example_acknowledges_smg4_on_its_signing_secret(tmp_path):
    example: dict = {}
    exec(compile(readme_targets_example(), "README.md", "exec"), example)  # noqa: S102 - verbatim
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Targets")
    machine = sfn.StateMachine(stack, "Machine", definition_body=sfn.DefinitionBody.from_chainable(sfn.Pass(stack, "Pass")))
    example["add_every_kind_of_target"](stack, nag_clean_callback(stack), sqs.Queue(stack, "Jobs", enforce_ssl=True),
                                        sns.Topic(stack, "Alerts", enforce_ssl=True), events.EventBus(stack, "Bus"),
                                        machine)
    secretsmanager.Secret(stack, "Unacknowledged")
    rotation = sorted(path for rule, _, path in nag_findings(app, tmp_path) if rule.startswith("AwsSolutions-SMG4"))
    assert rotation == ["Targets/Unacknowledged/Resource"], rotation
