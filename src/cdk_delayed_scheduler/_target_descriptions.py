"""The JSON description a bound target renders for the runtime (``TARGETS``), and the synth-time check
that the runtime can deliver to it: the fields of each kind are ``contract.json``'s ``targetTypes``."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from aws_cdk import Token

from ._contract import contract
from ._flow_control import judged_limits

#: The target classes, as code, in the refusal of a description the runtime cannot deliver to.
BUILT_IN_TARGETS = ("targets.LambdaInvoke", "targets.SqsSendMessage", "targets.SnsPublish",
                    "targets.EventBridgePutEvents", "targets.StepFunctionsStartExecution", "targets.HttpsEndpoint")
#: What the dispatcher waits for, by target type, in the refusal of a ``dispatcher_timeout`` too short for it.
_WAITED_FOR = {"lambda": "a Lambda function", "https": "an HTTPS endpoint"}


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def describe_target(kind: str, **fields: Any) -> dict[str, Any]:
    """``{"type": kind, <fields>}`` with the field names of ``contract.TARGET_TYPES[kind]``
    (``queue_url`` is ``queueUrl``); a name the contract does not list for ``kind`` raises ``KeyError``."""
    spec = contract.TARGET_TYPES[kind]
    description: dict[str, Any] = {"type": kind}
    for name, value in fields.items():
        field = _camel(name)
        if field not in spec.required and field not in spec.optional:
            raise KeyError(f"the {kind} target has no field {field!r} (contract.json's targetTypes)")
        description[field] = value
    return description


def check_deliverable(name: str, target: object, description: Mapping[str, Any]) -> None:
    """Refuse, at synth, a bound target the runtime cannot deliver to: its description must have a
    concrete ``type`` the runtime knows, with that kind's fields (``contract.target_description_problem``;
    a field's value may be an unresolved token, only its name is judged)."""
    kind = description.get("type")
    if kind is not None and Token.is_unresolved(kind):
        problem: Optional[str] = "its type must be concrete text, not a token"
    else:
        problem = contract.target_description_problem(_as_judged(description))
    if problem is not None:
        raise ValueError(
            f"target {name!r}: {type(target).__name__} describes a target the runtime cannot deliver to: {problem}. "
            f"The runtime delivers to these kinds: {', '.join(sorted(contract.TARGET_TYPES))} "
            f"({', '.join(BUILT_IN_TARGETS)}); a new kind needs runtime support, not only a bind.")


def _as_judged(description: Mapping[str, Any]) -> Mapping[str, Any]:
    """``description`` as it is judged at synth: a ``flowControl`` limit that is an unresolved token (a parameter's
    value) stands in as a value no rule refuses (:func:`~._flow_control.judged_limits`), so that only its name is
    judged, as a token in any other field is (the functions check its value when they start)."""
    limits = description.get(contract.FLOW_CONTROL_FIELD)
    if not isinstance(limits, Mapping):
        return description
    return {**description, contract.FLOW_CONTROL_FIELD: judged_limits(limits)}


def waited_for(description: Mapping[str, Any]) -> str:
    """What the dispatcher waits for when delivering to ``description``, for the refusal of a
    ``dispatcher_timeout`` that does not cover it: ``"an HTTPS endpoint"``, else ``"a Lambda function"``."""
    return _WAITED_FOR.get(str(description.get("type")), _WAITED_FOR["lambda"])
