"""``--targets FILE``: named targets for ``cdk-delayed-scheduler local``, in the description the construct renders.

The file is a JSON object, target name -> description, as the construct puts it in the functions'
``TARGETS`` (``contract.json``'s ``targetTypes``), less what names a deployed resource: the engine
creates each queue, topic, bus or state machine in its moto, so ``queueUrl``, ``topicArn``,
``eventBusArn`` and ``stateMachineArn`` are left out. A Lambda target names, instead of its
``functionArn``, the in-process handler the engine calls (``module:function``); an HTTPS target, instead
of its ``secretArn``, the signing secret itself, which the engine keeps in its moto's Secrets Manager
(on the engine, its ``url`` may be ``http://`` to 127.0.0.1 or localhost). Any of them may carry ``flowControl``,
its limits, as the construct renders them (``{"rate": n, "periodSeconds": s, "maxInFlight": m}``, with each group's
own in ``perGroup``, the same fields, e.g. ``"perGroup": {"rate": 5, "maxInFlight": 2}``)::

    {"orders": {"type": "sqs", "fifo": true, "messageGroupId": "orders", "flowControl": {"rate": 50, "maxInFlight": 10}},
     "alerts": {"type": "sns"},
     "events": {"type": "eventbridge", "detailType": "Reminder due", "source": "my.app"},
     "flows": {"type": "stepfunctions"},
     "audit": {"type": "lambda", "handler": "audit:handler", "invocationType": "Event"},
     "hook": {"type": "https", "url": "http://127.0.0.1:9000/timers", "secret": "s3cret", "timeoutSeconds": 5,
              "headers": {"X-App": "reminders"}}}
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._contract import contract
from .deliveries import (LAMBDA_INVOCATION_TYPES, BusTarget, HttpsTarget, LambdaTarget, QueueTarget, ResourceTarget,
                         StateMachineTarget, TopicTarget, load_handler)
from .flow_control import check_flow_control

_FIELDS = {"sqs": {"type", "fifo", "messageGroupId"}, "sns": {"type", "fifo", "messageGroupId"},
           "eventbridge": {"type", "detailType", "source"}, "stepfunctions": {"type"},
           "lambda": {"type", "handler", "invocationType"}, "https": {"type", "url", "secret", "timeoutSeconds", "headers"}}
"""The fields of each kind; every kind also takes ``flowControl``."""
_FLOW_CONTROL = contract.FLOW_CONTROL_FIELD
_MADE_BY_THE_ENGINE = {"queueUrl", "topicArn", "eventBusArn", "stateMachineArn", "functionArn", "secretArn"}
_HTTPS_FIELDS = {"url": "url", "secret": "secret", "headers": "headers", "timeout_seconds": "timeoutSeconds"}
"""An :class:`HttpsTarget` field's name in the file."""


def read_target_file(path: Path) -> dict[str, ResourceTarget]:
    """The named targets ``path`` describes; ``ValueError`` naming the file, the target and the field."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--targets {path}: cannot be read as JSON ({exc})") from None
    if not isinstance(document, dict) or not document:
        raise ValueError(f"--targets {path}: must be a JSON object of target name -> description, with one or more")
    return {name: _limited(f"--targets {path}: {name!r}", description) for name, description in document.items()}


def _limited(where: str, description: Any) -> ResourceTarget:
    """The target ``description`` describes, with its ``flowControl`` limits when it has them."""
    target = _target(where, description)
    if _FLOW_CONTROL not in description:
        return target
    check_flow_control(description[_FLOW_CONTROL], f"{where}: {_FLOW_CONTROL}")
    return replace(target, flow_control=description[_FLOW_CONTROL])


def _target(where: str, description: Any) -> ResourceTarget:
    if not isinstance(description, dict) or description.get("type") not in _FIELDS:
        raise ValueError(f"{where}: must be an object whose type is one of {', '.join(sorted(_FIELDS))}")
    kind = description["type"]
    made = sorted(set(description) & _MADE_BY_THE_ENGINE)
    if made:
        raise ValueError(f"{where}: leave out {', '.join(made)}: the engine creates the {kind} resource itself")
    unknown = sorted(set(description) - _FIELDS[kind] - {_FLOW_CONTROL})
    if unknown:
        takes = ", ".join(sorted(_FIELDS[kind] - {"type"})) or "no other field"
        raise ValueError(f"{where}: unknown field {', '.join(unknown)} (a {kind} target takes {takes})")
    if kind == "stepfunctions":
        return StateMachineTarget()
    if kind == "https":
        return _https(where, description)
    if kind == "lambda":
        invocation_type = description.get("invocationType", LAMBDA_INVOCATION_TYPES[0])
        if invocation_type not in LAMBDA_INVOCATION_TYPES:
            raise ValueError(f"{where}: invocationType must be one of {', '.join(LAMBDA_INVOCATION_TYPES)}, "
                             f"got {invocation_type!r}")
        handler = load_handler(_text(where, description, "handler"), f"{where}: handler")
        return LambdaTarget(handler, invocation_type)
    if kind == "eventbridge":
        return BusTarget(detail_type=_text(where, description, "detailType"), source=_text(where, description, "source"))
    fifo = description.get("fifo", False)
    if not isinstance(fifo, bool):
        raise ValueError(f"{where}: fifo must be true or false, got {fifo!r}")
    group = _text(where, description, "messageGroupId") if "messageGroupId" in description else None
    if group is not None and not fifo:
        raise ValueError(f"{where}: messageGroupId is for a FIFO {kind} target only (set fifo to true)")
    return (QueueTarget if kind == "sqs" else TopicTarget)(fifo=fifo, message_group_id=group)


def _text(where: str, description: dict[str, Any], field: str) -> str:
    value = description.get(field)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: {field} must be a non-empty string, got {value!r}")
    return value


def _https(where: str, description: dict[str, Any]) -> HttpsTarget:
    """An HTTPS target; what :class:`HttpsTarget` refuses, said with the file's field names."""
    given = {field: description[name] for field, name in _HTTPS_FIELDS.items() if name in description}
    try:
        return HttpsTarget(**{"url": None, "secret": None, **given})
    except ValueError as exc:
        message = str(exc)
        for field, name in _HTTPS_FIELDS.items():
            message = message.replace(field, name)
        raise ValueError(f"{where}: {message}") from None
