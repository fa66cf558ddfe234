"""Deploy, into moto's CloudFormation, one stack whose scheduler delivers to an SNS topic (one with a
customer managed key), an EventBridge bus, a Step Functions state machine and two HTTPS endpoints (one
signed with a secret encrypted with a customer managed key), and audit the dispatcher's *deployed* role:
for each target exactly the one action on the one deployed resource, plus the key actions, and nothing
else of those services. Then one schedule per target goes through the deployed api and dispatcher
functions (run in-process with their deployed environment; the HTTPS endpoint is a receiver on
127.0.0.1 with a self-signed certificate): each is delivered, and every call the dispatcher made is one
its deployed role allows.

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
from moto_stack import deploy_assembly, moto_server_environment
from moto_wiring import (ACCOUNT, REGION, DeployedFunction, QueueMapping, allowed, drive_until, forget_stream_triggers,
                         iam_requests, role_statements)

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


@pytest.fixture(scope="module")
def receiver(tmp_path_factory):
    """The HTTPS endpoint of the ``hooks`` target: a receiver on 127.0.0.1 with a self-signed certificate."""
    from tests.handlers.https_receiver import Receiver, self_signed_certificate

    certificate = self_signed_certificate(tmp_path_factory.mktemp("receiver-tls"))
    with Receiver(certificate) as running:
        yield running, certificate


def _build(outdir: str, secrets: dict, hooks_url: str) -> None:
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
    scheduler.add_target("hooks", targets.HttpsEndpoint(hooks_url, signing_secret=keyed_secret,
                                                        headers={"X-Tenant": "acme"}))
    scheduler.add_target("partner", targets.HttpsEndpoint("https://partner.example.org/", signing_secret=partner_secret))
    app.synth()


@pytest.fixture(scope="module")
def deployed(tmp_path_factory, session, secrets, receiver) -> dict:
    """The stack deployed, with its event source mappings read and removed (this module plays Lambda's
    pollers: moto would invoke the functions in Docker, and without it swallow the messages)."""
    outdir = tmp_path_factory.mktemp("target-kinds-cdk-out")
    _build(str(outdir), secrets, receiver[0].url("/hooks"))
    stack, resources = deploy_assembly(session, outdir, STACK, STACK)
    template = json.loads((outdir / f"{STACK}.template.json").read_text())
    lam = session.client("lambda")
    mappings = lam.list_event_source_mappings()["EventSourceMappings"]
    for mapping in mappings:
        lam.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
        lam.delete_event_source_mapping(UUID=mapping["UUID"])
    forget_stream_triggers(ACCOUNT)
    return {"stack": stack, "resources": resources, "template": template, "mappings": mappings}


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


def test_a_delivery_to_each_kind_through_the_deployed_dispatcher_makes_only_calls_its_role_allows(
        session, deployed, secrets, arns, receiver, monkeypatch):
    """One schedule per target, created through the deployed api function and delivered by the deployed
    dispatcher (its environment, its queue's mapping): each reaches its target, and every call the
    dispatcher made, the targets' included, is one its deployed role allows."""
    running, certificate = receiver
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate.cert_path))  # the runtime trusts the receiver's certificate
    lam = session.client("lambda")
    api, dispatcher = (DeployedFunction(lam.get_function(FunctionName=_physical(deployed, "AWS::Lambda::Function", f)))
                       for f in ("TimersApiFunction", "TimersDispatcherFunction"))
    (mapping,) = [m for m in deployed["mappings"] if m["FunctionArn"] == dispatcher.arn]
    names = ("default", "keyed-alerts", "events", "workflow", "hooks")
    for name in names:
        created = api({"method": "POST", "path": "/schedules",
                       "body": {"id": f"to-{name}", "delaySeconds": 0, "payload": {"to": name}, "target": name}})
        assert created["statusCode"] == 201, created

    def statuses() -> dict:
        return {name: api({"method": "GET", "path": f"/schedules/to-{name}"})["body"]["status"] for name in names}

    last: dict = {}

    def ended() -> bool:
        last.update(statuses())
        return set(last.values()) <= {"FIRED", "FAILED"}

    try:
        drive_until(ended, [QueueMapping(session, mapping, dispatcher).poll], timeout=20)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; statuses: {last}; calls: {[c[:2] for c in dispatcher.calls]}") from None
    assert last == dict.fromkeys(names, "FIRED")
    assert [json.loads(seen.body)["id"] for seen in running.requests_to("/hooks")] == ["to-hooks"]
    statements = role_statements(session, arns["dispatcher_role"])
    requests = [r for service, operation, params in dispatcher.calls for r in iam_requests(service, operation, params)]
    assert [r for r in requests if not allowed(statements, *r)] == []
    assert {r for r in requests if r[0].startswith(TARGET_SERVICES)} == {
        ("sns:Publish", arns["alerts"]), ("sns:Publish", arns["keyed_alerts"]), ("events:PutEvents", arns["bus"]),
        ("states:StartExecution", arns["workflow"]), ("secretsmanager:GetSecretValue", secrets["keyed"])}


def test_the_deployed_targets_json_names_the_deployed_resources(session, deployed, secrets, arns, receiver):
    function = _physical(deployed, "AWS::Lambda::Function", "TimersDispatcherFunction")
    environment = session.client("lambda").get_function_configuration(FunctionName=function)["Environment"]
    rendered = json.loads(environment["Variables"]["TARGETS"])
    assert {name: {k: v for k, v in d.items() if k.endswith(("Arn", "url", "headers"))}
            for name, d in rendered.items()} == {
        "default": {"topicArn": arns["alerts"]},
        "keyed-alerts": {"topicArn": arns["keyed_alerts"]},
        "events": {"eventBusArn": arns["bus"]},
        "workflow": {"stateMachineArn": arns["workflow"]},
        "hooks": {"url": receiver[0].url("/hooks"), "secretArn": secrets["keyed"], "headers": {"X-Tenant": "acme"}},
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
