"""A periodic timer declared in a stack (the construct's ``PeriodicTimer``): CloudFormation's custom
resource events, which CDK's provider framework hands the api function, answered by the same routes
as the API, so the same validation runs.

- ``Create`` and ``Update`` are ``PUT /periodic/{Id}`` with the ``Definition`` property (the PUT body
  as JSON text: CloudFormation passes every property value as text, so the construct sends the body
  whole). An update replaces the definition from its next occurrence; an update to another ``Id``
  creates that one and answers its id as the new physical id, and CloudFormation then deletes the old.
- ``Delete`` is ``DELETE /periodic/{PhysicalResourceId}``; one already gone counts as deleted.

The answer is what the provider framework expects of its ``onEvent`` handler: ``PhysicalResourceId``
(the timer's id) and ``Data`` (``Id``, ``Status``, ``NextDueAt``, readable with ``Fn::GetAtt``). A
refusal raises :class:`DefinitionRefused`, whose message (the method, the path, the API's status,
message and field) the framework reports to CloudFormation as the reason the deploy failed.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..aws.context import Context
from ..core.validation import ApiError
from ._api_events import parse_event
from ._router import Router

class DefinitionRefused(Exception):
    """The API refused a periodic timer's definition, or could not store it: the deploy fails with this text."""


def answer_resource_event(router: Router, ctx: Context, event: Mapping[str, Any]) -> dict[str, Any]:
    """``{"PhysicalResourceId", "Data"}`` for a Create, Update or Delete; :class:`DefinitionRefused` otherwise."""
    request_type = event["RequestType"]
    if request_type == "Delete":
        periodic_id = str(event.get("PhysicalResourceId") or "")
        status, body = _route(router, ctx, "DELETE", periodic_id, None)
        gone = status == 404 or (status == 400 and body.get("field") == "id")  # never stored, or not an id
        if status != 200 and not gone:
            raise _refused("DELETE", periodic_id, status, body)
        return {"PhysicalResourceId": periodic_id}
    if request_type not in ("Create", "Update"):
        raise DefinitionRefused(f"unknown RequestType {request_type!r}: expected Create, Update or Delete")
    properties = event["ResourceProperties"]
    periodic_id, definition = str(properties.get("Id") or ""), properties.get("Definition")
    if not isinstance(definition, str):
        raise DefinitionRefused("the Definition property must be the PUT /periodic/{id} body as JSON text")
    status, body = _route(router, ctx, "PUT", periodic_id, definition)
    if status not in (200, 201):
        raise _refused("PUT", periodic_id, status, body)
    return {"PhysicalResourceId": periodic_id,
            "Data": {"Id": periodic_id, "Status": body.get("status"), "NextDueAt": body.get("nextDueAt") or ""}}


def _route(router: Router, ctx: Context, method: str, periodic_id: str, body: Any) -> tuple[int, dict[str, Any]]:
    try:
        return router.answer(ctx, parse_event({"method": method, "path": f"/periodic/{periodic_id}", "body": body}))
    except ApiError as err:
        return err.status, err.body()


def _refused(method: str, periodic_id: str, status: int, body: Mapping[str, Any]) -> DefinitionRefused:
    field = body.get("field")
    where = f" (field {field})" if field else ""
    return DefinitionRefused(f"{method} /periodic/{periodic_id} answered {status}: {body.get('message')}{where}")
