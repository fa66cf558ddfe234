"""The construct's cdk-nag acknowledgements in both forms: CDK's native acknowledgements (cdk-nag 3,
a validation plugin) and ``cdk_nag`` resource metadata (cdk-nag 2, an Aspect), and the one on the
default runtime, present only while aws-cdk-lib offers a newer Python. cdk-nag 2 itself is run over
them in test_floor.py."""

from __future__ import annotations

import aws_cdk as cdk
import pytest
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from cdk_delayed_scheduler import DelayedScheduler, targets
from construct_helpers import acknowledged


def _scheduler(name: str, **props) -> tuple[cdk.Stack, DelayedScheduler]:
    stack = cdk.Stack(cdk.App(), name)
    target = targets.SqsSendMessage(sqs.Queue(stack, "Deliveries", enforce_ssl=True))
    return stack, DelayedScheduler(stack, "Timers", target=target, **props)


@pytest.fixture(scope="module")
def rest(stacks):
    """The shared REST stack (``construct_stacks``): IAM authorization, ``grant_schedule`` to ``Client``."""
    b = stacks["rest"]
    return b.stack, b.scheduler, b.json


def _nag2_rules(template: dict) -> dict[str, list[dict]]:
    """{logical id: cdk-nag 2 suppressions} of every resource that has some."""
    return {k: r["Metadata"]["cdk_nag"]["rules_to_suppress"] for k, r in template["Resources"].items()
            if "cdk_nag" in r.get("Metadata", {})}


def test_every_native_acknowledgement_is_also_cdk_nag_2_metadata(rest):
    stack, scheduler, template = rest
    native = acknowledged(stack)
    assert native, "the REST API with a grant has acknowledgements"
    metadata = _nag2_rules(template)
    nodes = {n.node.path: n for n in stack.node.find_all()}
    for path, rules in native.items():
        node = nodes[path]
        resources = [n for n in node.node.find_all() if cdk.CfnResource.is_cfn_resource(n)]
        assert resources, path
        for resource in resources:
            suppressed = {s["id"] + (f"[{s['applies_to'][0]}]" if "applies_to" in s else "")
                          for s in metadata[stack.get_logical_id(resource)]}
            assert rules <= suppressed, (path, rules, suppressed)
    for suppressions in metadata.values():
        for s in suppressions:
            assert s["id"].startswith("AwsSolutions-") and "[" not in s["id"] and len(s["reason"]) >= 60, s


def test_granular_findings_become_applies_to(rest):
    stack, _, template = rest
    enqueuer_policy = next(v for k, v in _nag2_rules(template).items() if k.startswith("TimersEnqueuerFunctionRoleDefaultPolicy"))
    assert [(s["id"], s.get("applies_to")) for s in enqueuer_policy] == [("AwsSolutions-IAM5", ["Resource::*"])]
    client = next(v for k, v in _nag2_rules(template).items() if k.startswith("ClientDefaultPolicy"))
    routes = sorted(s["applies_to"][0] for s in client)
    assert len(routes) == 10 and all(r.startswith("Resource::arn:<AWS::Partition>:execute-api:") for r in routes)
    assert [r.rsplit("/", 3)[-3:] for r in routes] == [
        ["DELETE", "groups", "*"], ["DELETE", "periodic", "*"], ["DELETE", "schedules", "*"], ["GET", "periodic", "*"], ["GET", "schedules", "*"],
        ["GET", "targets", "*"], ["PATCH", "periodic", "*"], ["PATCH", "schedules", "*"], ["PATCH", "targets", "*"],
        ["PUT", "periodic", "*"]]


def test_the_default_runtime_is_acknowledged_only_while_a_newer_python_exists(monkeypatch):
    from cdk_delayed_scheduler import _functions

    stack, scheduler = _scheduler("Current")  # this aws-cdk-lib offers python3.14, newer than the default
    assert _functions.newest_python_runtime().name == "python3.14"
    functions = {f.node.default_child.node.path for f in scheduler.functions}  # each AWS::Lambda::Function
    assert {path for path, rules in acknowledged(stack).items() if "AwsSolutions-L1" in rules} == functions
    reasons = {_l1_reason(f) for f in scheduler.functions}
    assert reasons == {"cdk-delayed-scheduler's runtime is tested on python3.13, its default runtime, and pinned "
                       "there so that an aws-cdk-lib upgrade never changes it; python3.14 is chosen with the "
                       "runtime prop (runtime=Runtime.PYTHON_3_14)."}
    # an aws-cdk-lib whose newest Python is the default: nothing to acknowledge
    monkeypatch.setattr(_functions, "newest_python_runtime", lambda: lambda_.Runtime.PYTHON_3_13)
    stack, _ = _scheduler("Newest")
    assert not any("AwsSolutions-L1" in rules for rules in acknowledged(stack).values())
    monkeypatch.undo()
    # the user's own choice of runtime is theirs to answer, older or newer
    for name, runtime in (("Older", lambda_.Runtime.PYTHON_3_12), ("Newer", lambda_.Runtime.PYTHON_3_14)):
        stack, _ = _scheduler(name, runtime=runtime)
        assert not any("AwsSolutions-L1" in rules for rules in acknowledged(stack).values())


def _l1_reason(function: lambda_.Function) -> str:
    """The reason of the cdk-nag 2 suppression of AwsSolutions-L1 on ``function``'s CloudFormation resource."""
    (suppression,) = [s for s in function.node.default_child.get_metadata("cdk_nag")["rules_to_suppress"]
                      if s["id"] == "AwsSolutions-L1"]
    return suppression["reason"]
