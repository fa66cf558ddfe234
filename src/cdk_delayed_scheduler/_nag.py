"""How the construct acknowledges the cdk-nag (AwsSolutions) findings it makes on purpose: each is
acknowledged, with its reason, by the code that creates the resource it is about.

Every acknowledgement goes through :func:`acknowledge`, so a test can turn them all off and see
exactly the findings they answer. Each is written twice: as CDK's native validation
acknowledgement, which cdk-nag 3 (a validation plugin) reads, and as the ``cdk_nag`` metadata of
each CloudFormation resource under the scope, which cdk-nag 2 (an Aspect) reads, the form its own
``NagSuppressions.add_resource_suppressions`` writes.
"""

from __future__ import annotations

from typing import Any, cast

from aws_cdk import Acknowledgment, CfnResource, Validations
from constructs import IConstruct

#: The metadata key cdk-nag 2 reads its suppressions from.
NAG2_METADATA = "cdk_nag"


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
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
            resource = cast(CfnResource, node)
            existing = resource.get_metadata(NAG2_METADATA) or {}
            rules = [*existing.get("rules_to_suppress", []), suppression]
            resource.add_metadata(NAG2_METADATA, {**existing, "rules_to_suppress": rules})


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
            return str(delimiter).join(flatten_reference(item) for item in items)
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
