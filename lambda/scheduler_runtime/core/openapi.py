"""The HTTP API's OpenAPI 3.1 document, built from the constants the validators use.

Nothing in it is written a second time: the routes (method, path and ``operationId``), the id and
target name patterns, the limits and the defaults come from ``contract.json`` (:mod:`.contract`),
each route described by its operation in :func:`operations`; the allowed fields from
:mod:`.validation` and :mod:`.periodic`, the query parameters, listed statuses and page limits
from :mod:`.listing`, the statuses from :mod:`.states`, the instant patterns from
:mod:`.timeparse`. A validator that changes a rule changes the document with it.

Pure and standard library only, and no handler imports it, so the api function's cold start does
not grow: the local engine serves it at ``GET /openapi.json`` and ``scripts/openapi.py`` writes
``docs/openapi.json`` (a test fails when that copy is stale).
"""

from __future__ import annotations

import json
from typing import Any

from . import contract, listing, periodic, retry, states, targets_api, validation
from .contract import (DEFAULT_TARGET_NAME, FLOW_CONTROL, FLOW_CONTROL_FIELD, GROUP_PATTERN, ID_PATTERN, MAX_BATCH_SIZE,
                       PER_GROUP_FIELD, MAX_PAYLOAD_BYTES, MAX_RECEIVE_COUNT, PERIODIC_DEFAULT_TIME_ZONE, PERIODIC_MIN_EVERY_SECONDS,
                       RETRY_MAX_AGE_SECONDS, ROUTES, TARGET_NAME_PATTERN, Route)
from .timeparse import FORMATTED_PATTERN, MAX_EPOCH_MS, RFC3339_PATTERN

OPENAPI_VERSION = "3.1.0"
API_VERSION = "1"
"""The API's version: the routes and bodies of this document, which have had no incompatible change."""
DEFAULT_SERVER = {"url": "https://{apiId}.execute-api.{region}.amazonaws.com",
                  "description": "the construct's HTTP API ($default stage): DelayedScheduler.url",
                  "variables": {"apiId": {"default": "abcdef1234"}, "region": {"default": "us-east-1"}}}
SECURITY_SCHEME = "sigv4"
JSON = "application/json"
Schema = dict[str, Any]


def document(server_url: str | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 document of every route, with ``server_url`` as its one server (default: the
    deployed HTTP API's URL template)."""
    described = operations()
    undescribed = [f"{r.method} {r.path} ({r.operation})" for r in ROUTES if r.operation not in described]
    if undescribed:
        raise ValueError(f"no description in openapi.operations() for {', '.join(undescribed)}")
    paths: dict[str, dict[str, Schema]] = {}
    for route in _in_document_order(ROUTES):
        paths.setdefault(route.path, {})[route.method.lower()] = {"operationId": route.operation,
                                                                  **described[route.operation]}
    return {
        "openapi": OPENAPI_VERSION,
        "info": {"title": "cdk-delayed-scheduler", "version": API_VERSION, "description": _DESCRIPTION,
                 "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"}},
        "servers": [{"url": server_url} if server_url else DEFAULT_SERVER],
        "security": [{SECURITY_SCHEME: []}],
        "paths": paths,
        "components": {"schemas": _schemas(), "securitySchemes": {SECURITY_SCHEME: _SIGV4}},
    }


def _in_document_order(routes: tuple[Route, ...]) -> list[Route]:
    """Each resource's paths together, in the order the contract first names the resource, its
    collection before its items; each path's methods in the contract's order."""
    resources: dict[str, int] = {}
    for route in routes:
        resources.setdefault(route.path.split("/")[1], len(resources))
    return sorted(routes, key=lambda route: (resources[route.path.split("/")[1]], route.path))


def document_json(server_url: str | None = None) -> str:
    """:func:`document` as the text ``docs/openapi.json`` holds: indented, ending with a newline."""
    return json.dumps(document(server_url), indent=2, ensure_ascii=False) + "\n"


_DESCRIPTION = (
    "To-the-second one-shot and periodic timers. Every route is also reachable by a direct invoke of the api "
    "function (`{\"method\", \"path\", \"body\"}`), with the same bodies and status codes. Every 4xx and 5xx "
    "the function answers is `{\"message\", \"field\"}`: the rule broken and the field it concerns (null when "
    "none); 403 and 429 come from API Gateway itself, as `{\"message\"}`."
)
_SIGV4 = {
    "type": "apiKey", "in": "header", "name": "Authorization", "x-amazon-apigateway-authtype": "awsSigv4",
    "description": "AWS Signature Version 4 for the service execute-api (IAM authorization, the construct's "
                   "default): sign each request with credentials whose policy allows execute-api:Invoke on the "
                   "route (DelayedScheduler.grant_schedule, grant_read). A scheduler deployed with "
                   "ApiAuthorization.api_key() or cognito() takes an x-api-key header or a JWT instead.",
}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def _object(properties: dict[str, Schema], required: tuple[str, ...] | list[str] = (), **extra: Any) -> Schema:
    """A JSON object with exactly ``properties``."""
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False,
            **extra}


def _fields(allowed: tuple[str, ...], schemas: dict[str, Schema]) -> dict[str, Schema]:
    """The request fields a validator allows, each with its schema (a KeyError names one without)."""
    return {name: schemas[name] for name in allowed}


# --- pieces -----------------------------------------------------------------------------------------
def _id(what: str = "The schedule's id") -> Schema:
    return {"type": "string", "pattern": ID_PATTERN.pattern, "description": f"{what}: 1-128 of A-Za-z0-9._:-."}


def _addressable_id(what: str) -> Schema:
    """An id a request names: not ``.`` or ``..``, which no URL path carries (and which a create refuses)."""
    return {**_id(what), "not": {"enum": list(validation.DOT_SEGMENTS)},
            "description": f"{what}: 1-128 of A-Za-z0-9._:-, other than . and .. (which no URL path carries)."}


def _instant_in(what: str) -> Schema:
    return {"description": f"{what}: an RFC 3339 timestamp with an offset, or epoch seconds (a fraction finer "
                           "than a millisecond rounds up, never down).",
            "anyOf": [{"type": "string", "pattern": RFC3339_PATTERN},
                      {"type": "number", "minimum": 0, "maximum": MAX_EPOCH_MS / 1000}]}


def _instant_out(what: str) -> Schema:
    return {"type": "string", "format": "date-time", "pattern": FORMATTED_PATTERN,
            "description": f"{what}, RFC 3339 UTC with milliseconds."}


_PAYLOAD = {"description": f"Any JSON value, delivered as given; at most {MAX_PAYLOAD_BYTES} bytes serialized "
                           "(413 beyond)."}
_TARGET_IN = {"type": "string", "pattern": TARGET_NAME_PATTERN, "default": DEFAULT_TARGET_NAME,
              "description": "A target name registered on the construct."}
_LAST_ERROR = {"type": "string", "description": "Why the latest delivery attempt failed."}
_GROUP = {"type": "string", "pattern": GROUP_PATTERN.pattern,
          "description": "A group (1-64 of A-Za-z0-9._:-): DELETE /groups/{group} stops every member created before it, "
                         "and group= lists the waiting ones. Part of the request: the same id in another group is a 409."}
_COUNT = {"type": "integer", "minimum": 0}
_TARGET_NAME = {"type": "string", "pattern": TARGET_NAME_PATTERN, "description": "A target name registered on the construct."}


def _flow_control() -> Schema:
    """A target's ``flowControl``, as its description gives it (``GET /targets/{name}``), with each group's own."""
    bounds = {name: {"type": "integer", "minimum": FLOW_CONTROL[name]["min"], "maximum": FLOW_CONTROL[name]["max"]}
              for name in ("rate", "periodSeconds", "maxInFlight")}
    per_group = {**_object(bounds, anyOf=[{"required": ["rate"]}, {"required": ["maxInFlight"]}]), "description": (
        "Each group's own limits (a schedule's `group`), within the target's: a delivery of a group starts only when "
        "its group and its target both have room; a delivery without a group is held to the target's alone.")}
    return {**_object({**bounds, PER_GROUP_FIELD: per_group},
                      anyOf=[{"required": ["rate"]}, {"required": ["maxInFlight"]}, {"required": [PER_GROUP_FIELD]}]),
            "description": ("The target's limits, as deployed: at most `rate` deliveries start per `periodSeconds` "
                            "(spaced one interval apart), at most `maxInFlight` are under way at once, and each "
                            "group's own (`perGroup`).")}


def _counted(what: str, absent: str) -> Schema:
    return {"anyOf": [_COUNT, {"type": "null"}], "description": f"{what} (an estimate read from the target's item); "
                                                               f"null {absent}."}


def _max_lateness(what: str) -> Schema:
    """``maxLatenessSeconds``, as a create body, a batch item or a PUT gives it and as GET answers it."""
    bounds = contract.MAX_LATENESS_SECONDS
    return {"type": "integer", "minimum": bounds.min, "maximum": bounds.max,
            "description": f"{what}: an attempt (the first, or a retry) that would start more than this many seconds "
                           "after the due time is not started. A one-shot schedule ends FAILED with a reason that "
                           "begins `stale` and is parked in the dead-letter queue; a periodic occurrence is skipped "
                           "(`skippedCount`). Unlike `retry.maxAgeSeconds`, which only stops retries, it stops a "
                           "first attempt too. Default: the construct's `max_lateness`, if any; else no bound."}


def _retry(what: str) -> Schema:
    """``retry``, as a create body, a batch item or a PUT gives it and as GET answers it (the fields given)."""
    limits = {
        retry.MAX_ATTEMPTS: {"type": "integer", "minimum": 1, "maximum": MAX_RECEIVE_COUNT.max,
                             "description": "Delivery attempts in all, the first included; at most the deployment's "
                                            "max_receive_count (a 400 names the limit), which is also the default "
                                            f"({MAX_RECEIVE_COUNT.default} unless the construct sets it)."},
        retry.MAX_AGE_SECONDS: {"type": "integer", "minimum": RETRY_MAX_AGE_SECONDS.min,
                                "maximum": RETRY_MAX_AGE_SECONDS.max,
                                "description": "No attempt starts later than this many seconds after the due time: "
                                               "a failed attempt whose next one would is parked instead. Default: "
                                               f"the construct's retry_max_age ({RETRY_MAX_AGE_SECONDS.default} "
                                               "unless it sets one)."},
    }
    return {**_object(limits, minProperties=1), "description": (
        f"{what}: when a failing delivery stops being retried and is parked in the dead-letter queue with its "
        "payload and the limit reached as the reason. A field left out follows the deployment.")}


def _schedule_view(with_payload: bool, statuses: tuple[str, ...]) -> Schema:
    """``describe_record``'s body: ``GET /schedules/{id}``, and a list item without the payload."""
    properties: dict[str, Schema] = {
        "id": _id(), "dueAt": _instant_out("When it is due"), "status": {"enum": list(statuses)},
        "target": {"type": "string"}, "createdAt": _instant_out("When it was created"),
        "attempts": {**_COUNT, "description": "Delivery attempts started."},
        "firedAt": _instant_out("When it was delivered"), "endedAt": _instant_out("When it was cancelled or failed"),
        "lastError": _LAST_ERROR, "retry": _retry("The create's retry policy, as given (absent when none was)"),
        retry.MAX_LATENESS: _max_lateness("The create's lateness bound, as given (absent when none was)"),
        "group": _GROUP,
    }
    required = ["id", "dueAt", "status", "target", "createdAt", "attempts"]
    if with_payload:
        properties["payload"], required = _PAYLOAD, [*required, "payload"]
    return _object(properties, required)


def _definition_view(with_payload: bool) -> Schema:
    """``describe_definition``'s body: ``GET /periodic/{id}``; a PUT's answer and a list item leave out the payload."""
    properties: dict[str, Schema] = {
        "id": _id("The periodic timer's id"), "status": {"enum": [periodic.ACTIVE, periodic.PAUSED, periodic.ENDED]},
        "every": {"type": "integer"}, "cron": {"type": "string"}, "timeZone": {"type": "string"},
        "startAt": _instant_out("The first occurrence's earliest time"),
        "endAt": _instant_out("The time no occurrence reaches"), "target": {"type": "string"},
        "nextDueAt": {"anyOf": [_instant_out("The pending occurrence's due time"), {"type": "null"}]},
        "firedCount": _COUNT, "skippedCount": {**_COUNT, "description": "Occurrences passed over after an outage."},
        "pausedCount": {**_COUNT, "description": "Occurrences passed over while paused (counted at each resume)."},
        "pausedAt": _instant_out("When it was paused (while PAUSED)"),
        "createdAt": _instant_out("When it was created"), "updatedAt": _instant_out("When it last changed"),
        "lastDueAt": _instant_out("The latest occurrence's due time"),
        "lastFiredAt": _instant_out("When the latest occurrence was delivered"), "lastError": _LAST_ERROR,
        "retry": _retry("The PUT's retry policy, as given (absent when none was)"), "group": _GROUP,
        retry.MAX_LATENESS: _max_lateness("The PUT's lateness bound, as given (absent when none was)"),
    }
    required = ["id", "status", "target", "nextDueAt", "firedCount", "skippedCount", "pausedCount", "createdAt",
                "updatedAt"]
    if with_payload:
        properties["payload"], required = _PAYLOAD, [*required, "payload"]
    return _object(properties, required, oneOf=[{"required": ["every"]}, {"required": ["cron", "timeZone"]}])


def _page(item: str) -> Schema:
    return _object({"items": {"type": "array", "items": ref(item)},
                    "nextToken": {"type": "string", "description": "Pass it back for the next page; absent on the last."}},
                   ["items"])


# --- components -------------------------------------------------------------------------------------
def _schemas() -> dict[str, Schema]:
    create_fields = {
        "id": {**_addressable_id("The schedule's id"),
               "description": "An idempotency key: the same id and body again is answered 200 (a replay), another "
                              "body 409; 1-128 of A-Za-z0-9._:-, other than . and .. . Default: a fresh UUID."},
        "dueAt": _instant_in("When to deliver"),
        "delaySeconds": {"type": "number", "minimum": 0, "description": "Deliver this many seconds from now."},
        "payload": _PAYLOAD, "target": _TARGET_IN, "retry": _retry("The delivery's retry policy"), "group": _GROUP,
        retry.MAX_LATENESS: _max_lateness("The schedule's lateness bound"),
    }
    periodic_fields = {
        "payload": _PAYLOAD, "target": _TARGET_IN,
        "startAt": _instant_in("No occurrence before this; `every` counts from it (default: one period after "
                               "the PUT)"),
        "endAt": _instant_in("No occurrence at or after this; later than startAt"),
        "every": {"type": "integer", "minimum": PERIODIC_MIN_EVERY_SECONDS, "maximum": periodic.MAX_EVERY_SECONDS,
                  "description": "Whole seconds between occurrences."},
        "cron": {"type": "string", "description": "EventBridge's six fields, `minutes hours day-of-month month "
                                                  "day-of-week year`, e.g. `0 9 ? * MON-FRI *`."},
        "timeZone": {"type": "string", "default": PERIODIC_DEFAULT_TIME_ZONE,
                     "description": "The IANA time zone of cron (cron only)."},
        "retry": _retry("Each occurrence's retry policy"), "group": _GROUP,
        retry.MAX_LATENESS: _max_lateness("Each occurrence's lateness bound"),
    }
    error_statuses = sorted({400, 409, 413, 500, 503})
    return {
        "CreateSchedule": _object(_fields(validation.ALLOWED_FIELDS, create_fields), ["payload"],
                                  oneOf=[{"required": ["dueAt"]}, {"required": ["delaySeconds"]}]),
        "RescheduleSchedule": _object(_fields(validation.RESCHEDULE_FIELDS, {
            "dueAt": _instant_in("The new due time"),
            "delaySeconds": {"type": "number", "minimum": 0, "description": "Due this many seconds from now."},
            "payload": {"description": f"The new payload (default: it stays as it is). {_PAYLOAD['description']}"}}),
            [], oneOf=[{"required": ["dueAt"]}, {"required": ["delaySeconds"]}]),
        "CreateScheduleBatch": _object({"schedules": {
            "type": "array", "minItems": 1, "maxItems": MAX_BATCH_SIZE, "items": ref("CreateSchedule"),
            "description": "Each item is validated, created or refused on its own, and answered in its result."}},
            ["schedules"]),
        "PutPeriodic": _object(_fields(periodic.ALLOWED_FIELDS, periodic_fields), ["payload"], oneOf=[
            {"required": ["every"], "not": {"anyOf": [{"required": ["cron"]}, {"required": ["timeZone"]}]}},
            {"required": ["cron"], "not": {"required": ["every"]}}]),
        "Error": _object({"message": {"type": "string", "description": "The rule broken, in words."},
                          "field": {"type": ["string", "null"],
                                    "description": "The field, path or query parameter concerned "
                                                   "(`schedules[3].dueAt` in a batch); null when none."}},
                         ["message", "field"]),
        "GatewayError": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"],
                         "description": "An answer of API Gateway itself (403: unsigned or not allowed; 429: "
                                        "throttled)."},
        "CreateAnswer": _object({"id": _id(), "dueAt": _instant_out("When it is due"),
                                 "status": {"enum": list(states.ALL)}, "target": {"type": "string"}},
                                ["id", "dueAt", "status", "target"]),
        "Created": {"allOf": [ref("CreateAnswer"), {"properties": {"status": {"enum": list(states.CREATED)}}}]},
        "BatchAnswer": _object({"results": {"type": "array", "minItems": 1, "maxItems": MAX_BATCH_SIZE,
                                            "items": ref("BatchResult")}}, ["results"]),
        "BatchResult": {"oneOf": [
            _object({"status": {"const": 201}, "body": ref("Created")}, ["status", "body"]),
            _object({"status": {"const": 200}, "body": ref("CreateAnswer")}, ["status", "body"]),
            _object({"status": {"enum": error_statuses}, "body": ref("Error")}, ["status", "body"]),
        ], "description": "What POST /schedules would have answered for the item (503: the delayer queue refused "
                          "it and nothing was stored)."},
        "Schedule": _schedule_view(True, states.ALL),
        "ScheduleSummary": _schedule_view(False, (*listing.STATUSES, states.CANCELLED)),
        "SchedulePage": _page("ScheduleSummary"),
        "Cancelled": _object({"id": _id(), "status": {"const": states.CANCELLED}}, ["id", "status"]),
        "Periodic": _definition_view(True),
        "PeriodicSummary": _definition_view(False),
        "PeriodicPage": _page("PeriodicSummary"),
        "PeriodicState": _object({periodic.STATE_FIELD: {"enum": list(periodic.STATES)}}, [periodic.STATE_FIELD]),
        "GroupCancelled": _object({
            "group": _GROUP, "cancelledBefore": _instant_out("Members created before this are stopped"),
            "stopped": _object({"schedules": _COUNT, "periodic": _COUNT}, ["schedules", "periodic"],
                               description="The waiting members this call stopped (created since any earlier cancel "
                                           "of the group), as the group index counted them."),
            "countComplete": {"type": "boolean", "description": "False when the group was too large to count within "
                                                                "the call (the counts are then a lower bound); every "
                                                                "member is stopped all the same."}},
            ["group", "cancelledBefore", "stopped", "countComplete"]),
        "Target": _object({
            targets_api.NAME_FIELD: _TARGET_NAME,
            targets_api.STATE_FIELD: {"enum": list(targets_api.STATES),
                                      "description": "PAUSED: no delivery to it starts until it is resumed."},
            FLOW_CONTROL_FIELD: {"anyOf": [_flow_control(), {"type": "null"}]},
            "waiting": _counted("Deliveries holding a start slot ahead of now", "for a target without a rate"),
            "inFlight": _counted("Deliveries under way now (the places held)", "for a target without maxInFlight"),
            "heldUntil": {"anyOf": [_instant_out("Until when the target's own slow-down answer (a 429, a throttle) "
                                                 "holds its deliveries back"), {"type": "null"}]},
            "group": {**_GROUP, "description": "The group whose counts these are (GET with group=); absent for the "
                                               "target's own"}},
            [targets_api.NAME_FIELD, targets_api.STATE_FIELD, FLOW_CONTROL_FIELD, "waiting", "inFlight", "heldUntil"]),
        "TargetState": _object({targets_api.STATE_FIELD: {"enum": list(targets_api.STATES)}},
                               [targets_api.STATE_FIELD]),
        "PeriodicDeleted": _object({"id": _id("The periodic timer's id"), "status": {"const": periodic.DELETED}},
                                   ["id", "status"]),
    }


# --- operations -------------------------------------------------------------------------------------
def _id_parameter(what: str, example: str) -> Schema:
    return {"name": "id", "in": "path", "required": True, "schema": _addressable_id(what), "example": example}


def _query(name: str, schema: Schema, description: str) -> Schema:
    return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}


def _page_parameters() -> list[Schema]:
    limits = {"type": "integer", "minimum": listing.MIN_LIMIT, "maximum": listing.MAX_LIMIT,
              "default": listing.DEFAULT_LIMIT}
    schemas = {"limit": (limits, "Items per page at most."),
               "nextToken": ({"type": "string"}, "The previous page's nextToken, with the same other parameters.")}
    return [_query(name, *schemas[name]) for name in listing.PAGE_PARAMETERS]


def _list_parameters() -> list[Schema]:
    instant: Schema = {"anyOf": [{"type": "string", "pattern": RFC3339_PATTERN},
                                 {"type": "string", "pattern": listing.EPOCH_SECONDS_PATTERN}]}
    filters: dict[str, tuple[Schema, str]] = {"status": ({"enum": list(listing.STATUSES)}, "Only schedules showing this status (FIRED and "
                                                           "CANCELLED ones are not listed: read them by id)."),
               "dueAfter": (instant, "Only schedules due at or after this (RFC 3339 or epoch seconds)."),
               "dueBefore": (instant, "Only schedules due before this (RFC 3339 or epoch seconds).")}
    page = {p["name"]: p for p in _page_parameters()}
    return [page[name] if name in page else _query(name, *filters[name]) for name in listing.PARAMETERS] + [
        _group_parameter("schedules", "a schedule its group's cancel stopped shows as CANCELLED until it is cleaned up")]


def _group_parameter(what: str, stopped: str) -> Schema:
    return _query("group", _GROUP, f"Only the waiting {what} of this group, in the order they joined ({stopped}); takes "
                                   "limit and nextToken besides, nothing else.")


def _body(schema: str, examples: dict[str, Any]) -> Schema:
    return {"required": True, "content": {JSON: {"schema": ref(schema),
                                                 "examples": {k: {"value": v} for k, v in examples.items()}}}}


def _answer(description: str, schema: str) -> Schema:
    return {"description": description, "content": {JSON: {"schema": ref(schema)}}}


_ERRORS = {400: "A rule is broken: the message names it, and the field.",
           404: "Not found.",
           409: "Conflict.",
           413: f"Too large: a payload over {MAX_PAYLOAD_BYTES} bytes serialized, or a body over API Gateway's 10 MB.",
           500: "A service fault: nothing was changed that a retry would not repeat safely; retry."}
_GATEWAY = {403: "Not signed with SigV4 for execute-api, or not allowed by IAM (API Gateway).",
            429: "Throttled by the stage's limits (API Gateway)."}


def _operation(summary: str, answers: dict[int, tuple[str, str]], errors: dict[int, str],
               parameters: list[Schema] | None = None, body: Schema | None = None) -> Schema:
    """An operation's description (its ``operationId`` is the contract's ``operation``, added by :func:`document`)."""
    responses = {str(status): _answer(text, schema) for status, (text, schema) in answers.items()}
    errors = {**{status: _ERRORS[status] for status in (400, 500)}, **errors}
    responses.update({str(status): _answer(text, "Error") for status, text in sorted(errors.items())})
    responses.update({str(status): _answer(text, "GatewayError") for status, text in _GATEWAY.items()})
    operation: Schema = {"summary": summary}
    if parameters:
        operation["parameters"] = parameters
    if body:
        operation["requestBody"] = body
    operation["responses"] = dict(sorted(responses.items()))
    return operation


def operations() -> dict[str, Schema]:
    """Every operation of the API, described, by its name in ``contract.json``'s routes (the ``operationId``)."""
    schedule_id = [_id_parameter("The schedule's id", "order-42-reminder")]
    periodic_id = [_id_parameter("The periodic timer's id", "weekday-report")]
    target_name = [{"name": targets_api.NAME_FIELD, "in": "path", "required": True, "schema": _TARGET_NAME,
                    "example": DEFAULT_TARGET_NAME}]
    replay = "The same id and body again (a replay): the first create's answer, with the status now."
    create_examples = {"inAMinute": {"delaySeconds": 60, "payload": {"order": 42}},
                       "atATime": {"id": schedule_id[0]["example"], "dueAt": "2030-01-01T09:00:00Z",
                                   "payload": {"order": 42}, "target": DEFAULT_TARGET_NAME}}
    return {
        "createSchedule": _operation(
            "Create a one-shot timer.",
            {201: ("Created: QUEUED when due within the delay window, SCHEDULED otherwise.", "Created"),
             200: (replay, "CreateAnswer")},
            {409: "The id exists with a different body.", 413: _ERRORS[413]},
            body=_body("CreateSchedule", create_examples)),
        "listSchedules": _operation(
            "A page of pending (SCHEDULED, QUEUED) and FAILED schedules, in due order; or of a group's waiting ones.",
            {200: ("A page.", "SchedulePage")},
            {404: "Listing is off for this scheduler (the construct's listing=True turns it on); a group= listing "
                  "needs no listing."},
            parameters=_list_parameters()),
        "getSchedule": _operation(
            "Read a schedule.", {200: ("The schedule.", "Schedule")},
            {404: "No such schedule (or its history has expired)."}, parameters=schedule_id),
        "cancelSchedule": _operation(
            "Cancel a schedule; cancelling it again answers the same.",
            {200: ("Cancelled: it will not be delivered.", "Cancelled")},
            {404: "No such schedule.", 409: "Its delivery has started or ended: it can no longer be cancelled."},
            parameters=schedule_id),
        "rescheduleSchedule": _operation(
            "Give a waiting (SCHEDULED or QUEUED) schedule a new due time, and a new payload if given; its old due "
            "time is never delivered.",
            {200: ("Rescheduled (QUEUED when due within the delay window, SCHEDULED otherwise); the same body again "
                   "answers the same, with the status now, and changes nothing.", "CreateAnswer")},
            {404: "No such schedule.", 409: "Its delivery has started, or it ended (the message names its status); "
                                            "or other reschedules of it kept changing it (retry).",
             413: _ERRORS[413]},
            parameters=schedule_id,
            body=_body("RescheduleSchedule", {"later": {"delaySeconds": 3600},
                                              "atATime": {"dueAt": "2030-01-01T10:00:00Z", "payload": {"order": 43}}})),
        "createScheduleBatch": _operation(
            f"Create up to {MAX_BATCH_SIZE} one-shot timers in one call.",
            {200: ("One result per item, in request order.", "BatchAnswer")}, {413: _ERRORS[413]},
            body=_body("CreateScheduleBatch", {"two": {"schedules": list(create_examples.values())}})),
        "listPeriodic": _operation(
            "A page of periodic timers, in id order; or of a group's, in the order they joined.",
            {200: ("A page.", "PeriodicPage")}, {}, parameters=[*_page_parameters(), _group_parameter("periodic timers", "one its group's cancel stopped is left out, as GET answers 404 for it")]),
        "putPeriodic": _operation(
            "Create or replace a periodic timer.",
            {201: ("Created.", "PeriodicSummary"),
             200: ("The same body again, or a different one, which replaces the definition from its next "
                   "occurrence.", "PeriodicSummary")},
            {413: _ERRORS[413]}, parameters=periodic_id,
            body=_body("PutPeriodic", {"every": {"every": 30, "payload": {"job": "poll"}},
                                       "cron": {"cron": "0 9 ? * MON-FRI *", "timeZone": "Europe/Paris",
                                                "payload": {"job": "report"}, "endAt": "2030-01-01T00:00:00Z"}})),
        "getPeriodic": _operation(
            "Read a periodic timer.", {200: ("The definition.", "Periodic")},
            {404: "No such periodic timer (or it was deleted)."}, parameters=periodic_id),
        "setPeriodicState": _operation(
            "Pause or resume a periodic timer: nothing is delivered after a pause's answer; a resume arms the "
            "first occurrence after now and counts the ones passed over in pausedCount.",
            {200: ("Paused or resumed; the state it already had again changes nothing.", "PeriodicSummary")},
            {404: "No such periodic timer.", 409: "It has ENDED: nothing is left to pause or resume."},
            parameters=periodic_id,
            body=_body("PeriodicState", {"pause": {periodic.STATE_FIELD: periodic.PAUSED},
                                         "resume": {periodic.STATE_FIELD: periodic.ACTIVE}})),
        "cancelGroup": _operation(
            "Cancel a group: no schedule or periodic timer of the group created before this call starts a delivery "
            "after its answer; members created later are not affected. Idempotent.",
            {200: ("Stopped (the counts of what this call stopped; a repeat counts what joined since).",
                   "GroupCancelled")}, {},
            parameters=[{"name": "group", "in": "path", "required": True, "schema": _GROUP, "example": "user-42"}]),
        "deletePeriodic": _operation(
            "Delete a periodic timer: nothing is delivered after this answer.",
            {200: ("Deleted.", "PeriodicDeleted")}, {404: "No such periodic timer."}, parameters=periodic_id),
        "getTarget": _operation(
            "Read a target: its state, its limits, and how many deliveries wait for it and are under way.",
            {200: ("The target (a target without flowControl: ACTIVE, with null counts).", "Target")},
            {404: "No target of this scheduler has this name."},
            parameters=[*target_name, _query("group", _GROUP, "A group's own counts (waiting, inFlight), judged by "
                                                              "flowControl.perGroup: only for a target with per-group "
                                                              "limits (400 naming group otherwise).")]),
        "updateTarget": _operation(
            "Pause or resume a target with flowControl: once a pause is answered no delivery to it starts; those "
            "due meanwhile wait (looking again every few seconds) and start after the resume, never dropped. A "
            "delivery already started finishes.",
            {200: ("Paused or resumed: the target after the write; the state it already had again changes nothing.",
                   "Target")},
            {404: "No target of this scheduler has this name.",
             409: "The target has no flowControl: a target is paused through its limits."},
            parameters=target_name,
            body=_body("TargetState", {"pause": {targets_api.STATE_FIELD: targets_api.TargetStateName.PAUSED},
                                       "resume": {targets_api.STATE_FIELD: targets_api.TargetStateName.ACTIVE}})),
    }
