"""``PUT``/``GET``/``DELETE /periodic/{id}`` and ``GET /periodic``: periodic timers through the api function."""

from __future__ import annotations

from ..aws.context import Context
from ..aws.definitions import DELETED, DefinitionStore
from ..aws.delayer import DelayerQueue
from ..aws.periodic import Periodic
from ..aws.store import ScheduleStore
from ..core.listing import PAGE_PARAMETERS, make_token, page_position, refuse_unknown
from ..core.periodic import validate_periodic
from ..core.timeparse import now_ms
from ..core.validation import ApiError, validate_schedule_id
from ..observability import log_event
from ._api_events import ApiRequest, require_method
from ._views import describe_definition


PAGE_FILTERS = ["periodic"]
"""What a ``GET /periodic`` token is bound to: a token of a schedules listing is refused here, and back."""


def periodic_route(ctx: Context, request: ApiRequest) -> tuple[int, dict]:
    definitions = DefinitionStore(ctx.dynamodb, ctx.config.table_name)
    if len(request.segments) == 1:
        require_method(request, "GET")
        return _list(definitions, ctx.config.table_name, request.query)
    periodic_id = validate_schedule_id(request.path_id or request.segments[1])
    method = require_method(request, "PUT", "GET", "DELETE")
    if method == "GET":
        definition = definitions.get(periodic_id)
        if definition is None or definition.status == DELETED:
            raise ApiError(404, f"periodic timer '{periodic_id}' not found", "id")
        return 200, describe_definition(definition)
    service = Periodic(definitions, ScheduleStore.for_config(ctx.dynamodb, ctx.config),
                       DelayerQueue(ctx.sqs, ctx.config.delayer_queue_url), ctx.config)
    if method == "DELETE":
        if service.delete(periodic_id, now_ms()) is None:
            raise ApiError(404, f"periodic timer '{periodic_id}' not found", "id")
        log_event("periodic_deleted", id=periodic_id)
        return 200, {"id": periodic_id, "status": DELETED}
    request_body = validate_periodic(periodic_id, request.json_body(), ctx.config.targets, ctx.config.default_target)
    put = service.put(request_body, now_ms())
    if put.changed:
        log_event("periodic_put", id=periodic_id, created=put.created, nextDueMs=put.definition.next_due_ms)
    return (201 if put.created else 200), describe_definition(put.definition, with_payload=False)


def _list(definitions: DefinitionStore, token_key: str, params: dict) -> tuple[int, dict]:
    """A page of definitions in id order, merged across the definition partitions."""
    refuse_unknown(params, PAGE_PARAMETERS)
    limit, after = page_position(params, token_key, PAGE_FILTERS)
    page, more = definitions.page(after, limit)
    body: dict = {"items": [describe_definition(d, with_payload=False) for d in page]}
    if more:
        body["nextToken"] = make_token(page[-1].periodic_id, PAGE_FILTERS, token_key)
    return 200, body
