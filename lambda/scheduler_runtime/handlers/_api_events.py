"""The api function's three front doors, read into one request and answered in kind.

- **HTTP API** (API Gateway v2, payload format 2.0, the construct's default): ``rawPath``
  (with the stage prefix on a named stage), ``requestContext.http.method``, ``pathParameters``.
- **REST API** (API Gateway proxy integration): ``httpMethod``, ``path``, ``pathParameters``.
- **Direct invoke** (``lambda:InvokeFunction``, no API Gateway): ``{"method": "POST",
  "path": "/schedules", "body": {...}}``; ``body`` is a JSON value or JSON text, and the
  answer is ``{"statusCode": 201, "body": {...}}`` with the body as a JSON value. Query
  parameters go in the path (``/schedules?status=FAILED&limit=10``). A body given as a JSON
  value was parsed by Lambda, so its numbers arrive as binary floats and are read by their
  shortest decimal form; given as JSON text, they are read with the digits written, as over HTTP.

The routes, bodies and status codes are the same through each door. A fourth kind of event, a
CloudFormation custom resource event for a periodic timer declared in a stack, is told apart by
:func:`is_resource_event` and answered by :mod:`._periodic_resource` through the same routes.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote
from typing import Any, Mapping

from ..core.validation import ApiError, parse_json_body

JSON_HEADERS = {"Content-Type": "application/json"}


@dataclass(frozen=True)
class ApiRequest:
    method: str
    segments: list[str]
    """The path's non-empty segments (``/schedules//a/`` is ``["schedules", "a"]``)."""
    path: str
    direct: bool
    _body: Any
    _base64: bool = False
    path_parameters: Mapping[str, Any] = field(default_factory=dict)
    """What API Gateway read from the path (``{"id": ...}``, decoded); empty for a direct invoke."""
    query: dict[str, str] = field(default_factory=dict)
    """Query string parameters (the last value of a repeated one)."""

    def json_body(self) -> dict[str, Any]:
        """The body as a JSON object; :class:`ApiError` (400) when it is not one."""
        if self.direct and not isinstance(self._body, (str, type(None))):
            if not isinstance(self._body, dict):
                raise ApiError(400, "request body must be a JSON object", "body")
            return self._body
        text = self._body
        if text is not None and self._base64:
            try:
                text = base64.b64decode(text).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                raise ApiError(400, "request body must be UTF-8 JSON", "body") from None
        return parse_json_body(text)


def is_direct(event: Any) -> bool:
    """Whether ``event`` came by direct invoke rather than through API Gateway."""
    return not (isinstance(event, dict) and ("httpMethod" in event or event.get("version") == "2.0"))


def is_resource_event(event: Any) -> bool:
    """Whether ``event`` is a CloudFormation custom resource event (a ``PeriodicTimer`` of the stack, which
    CDK's provider framework passes on; answered by :mod:`._periodic_resource`)."""
    return isinstance(event, dict) and "RequestType" in event and "ResourceProperties" in event


def parse_event(event: Any) -> ApiRequest:
    """One request from any of the three event shapes."""
    if not isinstance(event, dict):
        raise ApiError(400, "the event must be a JSON object such as {\"method\", \"path\", \"body\"}", None)
    context = event.get("requestContext") or {}
    query = dict(event.get("queryStringParameters") or {})
    if event.get("version") == "2.0":
        method = str((context.get("http") or {}).get("method") or "")
        path = str(event.get("rawPath") or "/")
        stage = context.get("stage")
        if stage and stage != "$default" and (path == f"/{stage}" or path.startswith(f"/{stage}/")):
            path = path[len(stage) + 1:] or "/"
    elif "httpMethod" in event:
        method, path = str(event.get("httpMethod") or ""), str(event.get("path") or "/")
    else:
        method, path = str(event.get("method") or ""), str(event.get("path") or "")
        if not method or not path:
            raise ApiError(400, "a direct invoke needs \"method\" and \"path\", e.g. "
                                "{\"method\": \"POST\", \"path\": \"/schedules\", \"body\": {...}}", None)
        path, _, query_string = path.partition("?")
        query = dict(parse_qsl(query_string, keep_blank_values=True))
    return ApiRequest(
        method=method.upper(),
        # decoded as API Gateway decodes path parameters (a client quotes an id's ':' as %3A); ids and group
        # names never hold '%', so decoding is never ambiguous
        segments=[unquote(s) for s in path.split("/") if s],
        path=path,
        direct=is_direct(event),
        _body=event.get("body"),
        _base64=bool(event.get("isBase64Encoded")),
        path_parameters=dict(event.get("pathParameters") or {}),
        query={str(k): str(v) for k, v in query.items()},
    )


def respond(direct: bool, status: int, body: dict[str, Any]) -> dict[str, Any]:
    """The answer in the shape of the door the request came through."""
    if direct:
        return {"statusCode": status, "body": body}
    return {"statusCode": status, "headers": JSON_HEADERS, "body": json.dumps(body, ensure_ascii=False)}
