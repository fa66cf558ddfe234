"""The cdk-nag (AwsSolutions) findings the construct makes on purpose, acknowledged with their reasons.

Every acknowledgement goes through :func:`acknowledge`, so a test can turn them all off and see
exactly the findings they answer. Each is written twice: as CDK's native validation
acknowledgement, which cdk-nag 3 (a validation plugin) reads, and as the ``cdk_nag`` metadata of
each CloudFormation resource under the scope, which cdk-nag 2 (an Aspect) reads, the form its own
``NagSuppressions.add_resource_suppressions`` writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from aws_cdk import Acknowledgment, CfnResource, Stack, Validations
from aws_cdk import aws_iam as iam
from constructs import Construct

from . import _functions
from .api import ApiAuthorizationKind, SchedulerApiKind

if TYPE_CHECKING:
    from .scheduler import DelayedScheduler

#: The metadata key cdk-nag 2 reads its suppressions from.
NAG2_METADATA = "cdk_nag"


def acknowledge(scope: Construct, rule: str, reason: str) -> None:
    """Acknowledge one cdk-nag finding on ``scope`` and the resources under it.

    :param rule: cdk-nag 3's finding id, e.g. ``AwsSolutions-IAM5[Resource::*]``; cdk-nag 2 gets
        ``{"id": "AwsSolutions-IAM5", "applies_to": ["Resource::*"]}`` from it.
    """
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))
    rule_id, _, finding = rule.partition("[")
    suppression: dict[str, Any] = {"id": rule_id, "reason": reason}
    if finding:
        suppression["applies_to"] = [finding.removesuffix("]")]
    for node in scope.node.find_all():
        if CfnResource.is_cfn_resource(node):
            existing = node.get_metadata(NAG2_METADATA) or {}
            rules = [*existing.get("rules_to_suppress", []), suppression]
            node.add_metadata(NAG2_METADATA, {**existing, "rules_to_suppress": rules})


def flatten_reference(value: Any) -> str:
    """A resolved CloudFormation value as cdk-nag names it in a finding: ``Fn::Join`` parts joined,
    ``{"Ref": X}`` as ``<X>``, ``{"Fn::GetAtt": [X, Y]}`` as ``<X.Y>``, ``${X}`` as ``<X>``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value.replace("${", "<").replace("}", ">")
    if isinstance(value, dict):
        if "Fn::Join" in value:
            delimiter, items = value["Fn::Join"]
            return delimiter.join(flatten_reference(item) for item in items)
        if "Fn::Sub" in value:
            return flatten_reference(value["Fn::Sub"])
        if "Fn::GetAtt" in value:
            resource, attribute = value["Fn::GetAtt"]
            return f"<{flatten_reference(resource)}.{flatten_reference(attribute)}>"
        if "Fn::ImportValue" in value:
            return flatten_reference(value["Fn::ImportValue"])
        if "Ref" in value:
            return f"<{flatten_reference(value['Ref'])}>"
    raise ValueError(f"cannot name {value!r} as cdk-nag does")


def acknowledge_route_wildcards(stack: Stack, grantee: iam.IGrantable, route_arns: Sequence[str], method: str) -> None:
    """The ``/<collection>/*`` resources ``method`` (``grant_schedule``, ``grant_read``) granted: each ``*``
    is the ``{id}`` path parameter of one route.

    The finding names the ARN as it stands in the grantee's policy (concrete region and account in a
    stack with an explicit environment, ``<AWS::Region>``/``<AWS::AccountId>`` otherwise), so the
    acknowledgement is rendered from the same ARN. Only for a grantee in the scheduler's own
    ``stack``: elsewhere the ARN becomes a cross-stack reference.
    """
    if not isinstance(grantee, Construct) or Stack.of(grantee) is not stack:
        return
    for arn in route_arns:
        resource = flatten_reference(stack.resolve(arn))
        if resource.endswith("/*"):
            verb, collection = resource.rsplit("/", 3)[-3:-1]
            acknowledge(
                grantee,
                f"AwsSolutions-IAM5[Resource::{resource}]",
                f"{method}: the * is the {{id}} path parameter of {verb} /{collection}/{{id}} on this "
                "scheduler's own API and stage; no other route or API is granted.",
            )


def acknowledge_findings(scheduler: "DelayedScheduler") -> None:
    """cdk-nag (AwsSolutions) findings that are deliberate, each with its reason."""
    acknowledge(
        scheduler.enqueuer_function.role.node.find_child("DefaultPolicy"),
        rule="AwsSolutions-IAM5[Resource::*]",
        reason="dynamodb:ListStreams, which the DynamoDB event source mapping needs, does not support "
               "resource-level permissions; every other stream action is scoped to this table's stream.",
    )
    if scheduler.api_choice.kind == SchedulerApiKind.REST:
        _acknowledge_rest_api(scheduler)
    _acknowledge_pinned_runtime(scheduler)


def _python_version(runtime: Any) -> tuple[int, ...]:
    return tuple(int(part) for part in runtime.name.removeprefix("python").split("."))


def _acknowledge_pinned_runtime(scheduler: "DelayedScheduler") -> None:
    """AwsSolutions-L1 (not the newest runtime) on the pinned default runtime, only while this
    aws-cdk-lib offers a newer Python; a runtime the user chose is the user's to answer."""
    pinned = _functions.DEFAULT_RUNTIME
    if scheduler.runtime.name != pinned.name:
        return
    newest = _functions.newest_python_runtime()
    if _python_version(newest) <= _python_version(pinned):
        return
    for function in scheduler.functions:
        acknowledge(function,
            rule="AwsSolutions-L1",
            reason=f"cdk-delayed-scheduler pins its functions' runtime ({pinned.name}) so that an aws-cdk-lib "
                   f"upgrade never changes it; {newest.name} is chosen with the runtime prop "
                   f"(runtime=Runtime.{newest.name.upper().replace('PYTHON', 'PYTHON_').replace('.', '_')}).",
        )


def _acknowledge_rest_api(scheduler: "DelayedScheduler") -> None:
    """On the stage (APIG3) and on each method (COG4, APIG4): the resources those rules judge."""
    api, kind = scheduler.api, scheduler.api_choice.authorization.kind
    acknowledge(api.deployment_stage,
        rule="AwsSolutions-APIG3",
        reason="A WAFv2 web ACL is an account-level choice with its own cost; the API is protected by "
               "IAM/Cognito/API-key auth, request validation and stage throttling, and a user can "
               "associate a web ACL with the stage (DelayedScheduler.api_stage).",
    )
    for method in api.methods:
        if kind in (ApiAuthorizationKind.IAM, ApiAuthorizationKind.API_KEY):
            acknowledge(method,
                rule="AwsSolutions-COG4",
                reason="The API is authorized with "
                       + ("IAM (SigV4)" if kind == ApiAuthorizationKind.IAM
                          else "an API key, as the user chose with ApiAuthorization.api_key()")
                       + "; a Cognito authorizer is one of the options, not a requirement.",
            )
        if kind == ApiAuthorizationKind.API_KEY:
            acknowledge(method,
                rule="AwsSolutions-APIG4",
                reason="The user chose API key authorization (ApiAuthorization.api_key()); every method "
                       "requires the key.",
            )
    cloud_watch_role = api.node.try_find_child("CloudWatchRole")
    if cloud_watch_role is not None:
        acknowledge(cloud_watch_role,
            rule="AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/"
                 "AmazonAPIGatewayPushToCloudWatchLogs]",
            reason="API Gateway's account-level logging role needs this AWS managed policy for REST access "
                   "and execution logs; set cloud_watch_role=False when the account already has one.",
        )
