"""Deploy, into moto's CloudFormation, one stack whose scheduler delivers to an SNS topic (one with a
customer managed key), an EventBridge bus, a Step Functions state machine and two HTTPS endpoints (one
signed with a secret encrypted with a customer managed key), and audit the dispatcher's *deployed* role:
for each target exactly the one action on the one deployed resource, plus the key actions, and nothing
else of those services.

moto 5.2 has no CloudFormation model for ``AWS::SecretsManager::Secret`` (its CloudFormation skips the
type, and a ``Ref`` to it resolves to nothing). So the signing secrets (and the key of one) are created
through moto's Secrets Manager and KMS APIs before the stack is synthesized, and the stack imports them by
their ARNs: the grant then names the deployed secret. A secret defined in the stack is audited on the
template instead (the last test), which pins moto's gap: when moto deploys the type, that test fails and
the secret belongs in the deploy.
"""

from __future__ import annotations

import json

import pytest
from moto_wiring import REGION, allowed, deploy_assembly, moto_server_environment, role_statements

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:Tried to parse:UserWarning")]

STACK = "TargetKinds"
#: The services of the targets' grants; the dispatcher's own (DynamoDB, SQS, logs) are test_moto_deploy.py's.
TARGET_SERVICES = ("sns:", "events:", "states:", "secretsmanager:", "kms:")


@pytest.fixture(scope="module")
def moto_endpoint():
    with moto_server_environment() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def session(moto_endpoint):
    import boto3

    return boto3.session.Session()


@pytest.fixture(scope="module")
def secrets(session) -> dict:
    """The signing secrets, made through moto's APIs (its CloudFormation cannot): one encrypted with a key
    of its own, imported by its complete ARN with that key; one imported by its partial ARN."""
    key = session.client("kms").create_key(Description="hook secret key")["KeyMetadata"]["Arn"]
    manager = session.client("secretsmanager")
    keyed = manager.create_secret(Name="hooks/keyed", SecretString="k3y3d", KmsKeyId=key)["ARN"]
    partner = manager.create_secret(Name="hooks/partner", SecretString="p4rtn3r")["ARN"]
    other = manager.create_secret(Name="hooks/other", SecretString="0th3r")["ARN"]
    return {"key": key, "keyed": keyed, "partner": partner, "other": other}


def _build(outdir: str, secrets: dict) -> None:
    import aws_cdk as cdk
    from aws_cdk import aws_events as events
    from aws_cdk import aws_kms as kms
    from aws_cdk import aws_secretsmanager as secretsmanager
    from aws_cdk import aws_sns as sns
    from aws_cdk import aws_stepfunctions as sfn

    from cdk_delayed_scheduler import DelayedScheduler, targets

    app = cdk.App(outdir=outdir)
    stack = cdk.Stack(app, STACK)
    alerts = sns.Topic(stack, "Alerts")
    keyed_alerts = sns.Topic(stack, "KeyedAlerts", master_key=kms.Key(stack, "AlertsKey", enable_key_rotation=True))
    workflow = sfn.StateMachine(stack, "Workflow",
                                definition_body=sfn.DefinitionBody.from_chainable(sfn.Succeed(stack, "Done")))
    keyed_secret = secretsmanager.Secret.from_secret_attributes(
        stack, "KeyedSecret", secret_complete_arn=secrets["keyed"],
        encryption_key=kms.Key.from_key_arn(stack, "SecretKey", secrets["key"]))
    partner_secret = secretsmanager.Secret.from_secret_partial_arn(
        stack, "PartnerSecret", secrets["partner"].rsplit("-", 1)[0])
    scheduler = DelayedScheduler(stack, "Timers", target=targets.SnsPublish(alerts))
    scheduler.add_target("keyed-alerts", targets.SnsPublish(keyed_alerts))
    scheduler.add_target("events", targets.EventBridgePutEvents(events.EventBus(stack, "Bus"), detail_type="Timer due",
                                                                source="com.example.timers"))
    scheduler.add_target("workflow", targets.StepFunctionsStartExecution(workflow))
    scheduler.add_target("hooks", targets.HttpsEndpoint("https://hooks.example.com/timers", signing_secret=keyed_secret,
                                                        headers={"X-Tenant": "acme"}))
    scheduler.add_target("partner", targets.HttpsEndpoint("https://partner.example.org/", signing_secret=partner_secret))
    app.synth()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, session, secrets) -> dict:
    outdir = tmp_path_factory.mktemp("target-kinds-cdk-out")
    _build(str(outdir), secrets)
    stack, resources = deploy_assembly(session, outdir, STACK, STACK)
    template = json.loads((outdir / f"{STACK}.template.json").read_text())
    return {"stack": stack, "resources": resources, "template": template}


def _physical(deployed: dict, cfn_type: str, contains: str) -> str:
    (physical,) = [r["PhysicalResourceId"] for lid, r in deployed["resources"].items()
                   if r["ResourceType"] == cfn_type and lid.startswith(contains)]
    return physical


@pytest.fixture(scope="module")
def arns(session, deployed) -> dict:
    """The deployed resources' ARNs, as moto's own APIs answer them."""
    topics = {t["TopicArn"] for t in session.client("sns").list_topics()["Topics"]}
    alerts, keyed_alerts = (_physical(deployed, "AWS::SNS::Topic", logical) for logical in ("Alerts", "KeyedAlerts"))
    assert {alerts, keyed_alerts} == topics
    # (moto leaves an event bus's physical id empty: the stack's bus is the one besides the default bus)
    (bus,) = [b for b in session.client("events").list_event_buses()["EventBuses"] if b["Name"] != "default"]
    machines = session.client("stepfunctions").list_state_machines()["stateMachines"]
    # the key the deployed topic encrypts with: the stack's key
    key = session.client("sns").get_topic_attributes(TopicArn=keyed_alerts)["Attributes"]["KmsMasterKeyId"]
    assert key.endswith(f":key/{_physical(deployed, 'AWS::KMS::Key', 'AlertsKey')}")
    dispatcher = _physical(deployed, "AWS::IAM::Role", "TimersDispatcherFunctionRole")
    return {"alerts": alerts, "keyed_alerts": keyed_alerts, "alerts_key": key,
            "bus": bus["Arn"], "workflow": machines[0]["stateMachineArn"],
            "dispatcher_role": session.client("iam").get_role(RoleName=dispatcher)["Role"]["Arn"]}


def test_the_stack_with_every_kind_of_target_is_create_complete(deployed, session):
    assert deployed["stack"]["StackStatus"] == "CREATE_COMPLETE", deployed["stack"].get("StackStatusReason")
    types = {r["ResourceType"] for r in deployed["resources"].values()}
    assert {"AWS::SNS::Topic", "AWS::Events::EventBus", "AWS::StepFunctions::StateMachine", "AWS::KMS::Key",
            "AWS::Lambda::Function", "AWS::IAM::Policy"} <= types
    assert len(session.client("stepfunctions").list_state_machines()["stateMachines"]) == 1


def test_the_dispatcher_holds_exactly_one_action_on_each_deployed_target(session, deployed, secrets, arns):
    statements = role_statements(session, arns["dispatcher_role"])
    granted = {(action, resource, json.dumps(s.get("Condition"), sort_keys=True))
               for s in statements for action in _listed(s["Action"]) for resource in _listed(s["Resource"])
               if action.startswith(TARGET_SERVICES)}
    partner_partial = secrets["partner"].rsplit("-", 1)[0]
    via_secrets_manager = json.dumps({"StringEquals": {"kms:ViaService": f"secretsmanager.{REGION}.amazonaws.com"}})
    assert granted == {
        ("sns:Publish", arns["alerts"], "null"),
        ("sns:Publish", arns["keyed_alerts"], "null"),
        ("kms:GenerateDataKey", arns["alerts_key"], "null"),
        ("kms:Decrypt", arns["alerts_key"], "null"),
        ("events:PutEvents", arns["bus"], "null"),
        ("states:StartExecution", arns["workflow"], "null"),
        ("secretsmanager:GetSecretValue", secrets["keyed"], "null"),
        ("secretsmanager:GetSecretValue", f"{partner_partial}-??????", "null"),
        ("kms:Decrypt", secrets["key"], via_secrets_manager),
    }


def test_each_granted_call_reaches_its_deployed_resource_and_no_other(session, secrets, arns):
    """What IAM would decide for the calls the runtime makes, by the deployed policy: the partial ARN's
    ``-??????`` matches the deployed secret's six characters, and no other secret."""
    statements = role_statements(session, arns["dispatcher_role"])
    calls = [("sns:Publish", arns["alerts"]), ("sns:Publish", arns["keyed_alerts"]), ("events:PutEvents", arns["bus"]),
             ("states:StartExecution", arns["workflow"]), ("secretsmanager:GetSecretValue", secrets["keyed"]),
             ("secretsmanager:GetSecretValue", secrets["partner"])]
    assert [call for call in calls if not allowed(statements, *call)] == []
    refused = [("secretsmanager:GetSecretValue", secrets["other"]), ("secretsmanager:DescribeSecret", secrets["keyed"]),
               ("secretsmanager:PutSecretValue", secrets["partner"]), ("sns:Subscribe", arns["alerts"]),
               ("events:PutRule", arns["bus"]), ("states:StopExecution", arns["workflow"]),
               ("kms:Encrypt", secrets["key"])]
    assert [call for call in refused if allowed(statements, *call)] == []


def test_the_deployed_targets_json_names_the_deployed_resources(session, deployed, secrets, arns):
    function = _physical(deployed, "AWS::Lambda::Function", "TimersDispatcherFunction")
    environment = session.client("lambda").get_function_configuration(FunctionName=function)["Environment"]
    rendered = json.loads(environment["Variables"]["TARGETS"])
    assert {name: {k: v for k, v in d.items() if k.endswith(("Arn", "url", "headers"))}
            for name, d in rendered.items()} == {
        "default": {"topicArn": arns["alerts"]},
        "keyed-alerts": {"topicArn": arns["keyed_alerts"]},
        "events": {"eventBusArn": arns["bus"]},
        "workflow": {"stateMachineArn": arns["workflow"]},
        "hooks": {"url": "https://hooks.example.com/timers", "secretArn": secrets["keyed"],
                  "headers": {"X-Tenant": "acme"}},
        "partner": {"url": "https://partner.example.org/", "secretArn": secrets["partner"].rsplit("-", 1)[0]},
    }


def test_a_secret_defined_in_the_stack_is_audited_on_the_template_as_moto_cannot_deploy_one(stacks):
    """moto's CloudFormation has no model for the type (this fails once it has: then deploy it above). On
    the template, the dispatcher may read that secret, by its ``Ref`` (its full ARN), and nothing else."""
    from moto.cloudformation.parsing import get_model_map

    assert "AWS::SecretsManager::Secret" not in get_model_map()
    b = stacks["https"]
    plain = b.stack.get_logical_id(b.extra["plain"].node.default_child)
    (policy,) = [v for k, v in b.json["Resources"].items()
                 if v["Type"] == "AWS::IAM::Policy" and k.startswith("TimersDispatcherFunctionRole")]
    reads = [s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Resource"] == {"Ref": plain}]
    assert reads == [{"Action": "secretsmanager:GetSecretValue", "Effect": "Allow", "Resource": {"Ref": plain}}]


def _listed(value) -> list:
    return value if isinstance(value, list) else [value]
