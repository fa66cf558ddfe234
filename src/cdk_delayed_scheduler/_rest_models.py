"""What the REST API checks before the api function runs: a JSON schema for each body, the path's parameter
(``{id}``, ``{group}``, ``{name}``) and the listing routes' query strings. The api handler validates everything again,
in full (RFC 3339 parsing, cron expressions, the 256 KiB payload limit, ...), and answers with the field."""

from __future__ import annotations

import re
from typing import Any

from aws_cdk import aws_apigateway as apigw

from ._contract import contract
from .api import ROUTES

_STRING, _NUMBER, _INTEGER = apigw.JsonSchemaType.STRING, apigw.JsonSchemaType.NUMBER, apigw.JsonSchemaType.INTEGER

#: The optional query-string parameters of the listing routes, by operation (none is required).
QUERY_PARAMETERS: dict[str, tuple[str, ...]] = {
    "listSchedules": ("status", "dueAfter", "dueBefore", "limit", "nextToken", "group"),
    "listPeriodic": ("limit", "nextToken", "group"),
}


def _object(title: str, required: list[str], properties: dict[str, apigw.JsonSchema]) -> apigw.JsonSchema:
    """A draft-4 object schema with exactly ``properties``."""
    return apigw.JsonSchema(schema=apigw.JsonSchemaVersion.DRAFT4, title=title, type=apigw.JsonSchemaType.OBJECT,
                            additional_properties=False, required=required, properties=properties)


def _instant() -> apigw.JsonSchema:
    """``dueAt``, ``startAt``, ``endAt``: RFC 3339 text or epoch seconds."""
    return apigw.JsonSchema(type=[_STRING, _NUMBER])


def _target() -> apigw.JsonSchema:
    return apigw.JsonSchema(type=_STRING, pattern=contract.TARGET_NAME_PATTERN)


def _retry() -> apigw.JsonSchema:
    """``retry``: allowed through, any value, for the api handler to check (its shape, its fields and
    their ranges, one of them the deployment's ``max_receive_count``), so that its 400 names the field
    (``retry``, ``retry.maxAttempts``) and the rule, which API Gateway's refusal would not."""
    return apigw.JsonSchema()


def _max_lateness() -> apigw.JsonSchema:
    """``maxLatenessSeconds``: allowed through, any value, for the api handler to check, so that its 400 names
    the field and its range (as for ``retry``)."""
    return apigw.JsonSchema()


def _group() -> apigw.JsonSchema:
    """``group``: allowed through, any value, for the api handler to check, so that its 400 names ``group``
    and the rule (as for ``retry``)."""
    return apigw.JsonSchema()


def create_schedule_schema() -> apigw.JsonSchema:
    """The JSON schema API Gateway applies to ``POST /schedules`` before the function runs."""
    return _object("CreateSchedule", ["payload"], {
        "id": apigw.JsonSchema(type=_STRING, pattern=contract.ID_PATTERN.pattern),
        "dueAt": _instant(),
        "delaySeconds": apigw.JsonSchema(type=_NUMBER, minimum=0),
        "payload": apigw.JsonSchema(),
        "target": _target(),
        "retry": _retry(),
        "maxLatenessSeconds": _max_lateness(),
        "group": _group(),
    })


def create_schedule_batch_schema() -> apigw.JsonSchema:
    """The JSON schema API Gateway applies to ``POST /schedule-batches``: ``{"schedules": [...]}``
    with 1 to ``maxBatchSize`` JSON objects. Each item is validated by the api handler, which answers
    per item (``schedules[i].field``), so one bad item never refuses the others."""
    return _object("CreateScheduleBatch", ["schedules"], {
        "schedules": apigw.JsonSchema(type=apigw.JsonSchemaType.ARRAY, min_items=1,
                                      max_items=contract.MAX_BATCH_SIZE,
                                      items=apigw.JsonSchema(type=apigw.JsonSchemaType.OBJECT)),
    })


def reschedule_schedule_schema() -> apigw.JsonSchema:
    """The JSON schema API Gateway applies to ``PATCH /schedules/{id}``: the new ``dueAt`` or ``delaySeconds``
    (exactly one: the api handler's rule, which names the field) and, optionally, the new ``payload``."""
    return _object("RescheduleSchedule", [], {
        "dueAt": _instant(),
        "delaySeconds": apigw.JsonSchema(type=_NUMBER, minimum=0),
        "payload": apigw.JsonSchema(),
    })


def put_periodic_schema() -> apigw.JsonSchema:
    """The JSON schema API Gateway applies to ``PUT /periodic/{id}``. Exactly one of ``every`` and
    ``cron`` is the api handler's rule (it names the field), as exactly one of ``dueAt`` and
    ``delaySeconds`` is for a create."""
    return _object("PutPeriodic", ["payload"], {
        "payload": apigw.JsonSchema(),
        "every": apigw.JsonSchema(type=_INTEGER, minimum=contract.PERIODIC_MIN_EVERY_SECONDS),
        "cron": apigw.JsonSchema(type=_STRING),
        "timeZone": apigw.JsonSchema(type=_STRING),
        "startAt": _instant(),
        "endAt": _instant(),
        "target": _target(),
        "retry": _retry(),
        "maxLatenessSeconds": _max_lateness(),
        "group": _group(),
    })


def periodic_state_schema() -> apigw.JsonSchema:
    """The JSON schema API Gateway applies to ``PATCH /periodic/{id}``: ``{"state": ...}``, any text, so
    that the api handler's 400 names the states it takes."""
    return _state("PeriodicState")


def target_state_schema() -> apigw.JsonSchema:
    """The JSON schema API Gateway applies to ``PATCH /targets/{name}``: ``{"state": ...}``, any text, as for a
    periodic timer's state."""
    return _state("TargetState")


def _state(title: str) -> apigw.JsonSchema:
    return _object(title, ["state"], {"state": apigw.JsonSchema(type=_STRING)})


#: Each route with a body, by operation: (the model's construct id, its name, its schema).
_BODY_MODELS = {
    "createSchedule": ("CreateScheduleModel", "CreateSchedule", create_schedule_schema),
    "createScheduleBatch": ("CreateScheduleBatchModel", "CreateScheduleBatch", create_schedule_batch_schema),
    "rescheduleSchedule": ("RescheduleScheduleModel", "RescheduleSchedule", reschedule_schedule_schema),
    "putPeriodic": ("PutPeriodicModel", "PutPeriodic", put_periodic_schema),
    "setPeriodicState": ("PeriodicStateModel", "PeriodicState", periodic_state_schema),
    "updateTarget": ("TargetStateModel", "TargetState", target_state_schema),
}


def method_requests(api: apigw.RestApi) -> dict[tuple[str, str], dict[str, Any]]:
    """For each route, ``add_method``'s request options: its validator, its body model, its parameters.

    ``BodyValidator`` checks the body and the parameters of the routes with a body;
    ``ParametersValidator`` the path's parameter (required) and the query strings (optional) of the others.
    """
    body = api.add_request_validator("BodyValidator", validate_request_body=True, validate_request_parameters=True)
    parameters = api.add_request_validator("ParametersValidator", validate_request_parameters=True)
    models = {operation: api.add_model(model_id, content_type="application/json", model_name=name, schema=schema())
              for operation, (model_id, name, schema) in _BODY_MODELS.items()}
    requests = {}
    for route in ROUTES:
        model = models.get(route.operation)
        options: dict[str, Any] = dict(request_validator=body if model is not None else parameters)
        if model is not None:
            options["request_models"] = {"application/json": model}
        wanted = {f"method.request.querystring.{name}": False for name in QUERY_PARAMETERS.get(route.operation, ())}
        wanted.update({f"method.request.path.{name}": True for name in re.findall(r"{(\w+)}", route.path)})
        if wanted:
            options["request_parameters"] = wanted
        requests[(route.method, route.path)] = options
    return requests
