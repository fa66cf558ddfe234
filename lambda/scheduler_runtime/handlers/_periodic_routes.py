"""``PUT``/``GET``/``PATCH``/``DELETE /periodic/{id}`` and ``GET /periodic``: periodic timers through the api function.

The router (:mod:`.api`) imports this module on the first call to a route under ``/periodic``.
"""

from __future__ import annotations

from typing import Any

from ..aws.context import Context
from ..aws.definitions import DELETED, Definition, DefinitionStore
from ..aws.groups import GroupStore
from ..aws.outcomes import OutcomeSink
from ..aws.periodic import Periodic
from ..aws.store import ScheduleStore
from ..core.groups import PERIODIC as PERIODIC_MEMBERS
from ..core.groups import is_stopped
from ..core.outcomes import CancelReason
from ..core.listing import PAGE_PARAMETERS, make_token, page_position, refuse_unknown
from ..core.periodic import ACTIVE, PAUSED, STATE_FIELD, PeriodicRequest, never_fires, validate_periodic, validate_state
from ..core.validation import GROUP_FIELD, ApiError
from ..observability import log_event
from ._router import Answer, Call, Operations
from ._views import describe_definition

OPERATIONS = Operations()

PAGE_FILTERS = ["periodic"]
"""What a ``GET /periodic`` token is bound to: a token of a schedules listing is refused here, and back."""


def _definitions(ctx: Context) -> DefinitionStore:
    return DefinitionStore(ctx.dynamodb, ctx.config.table_name)


def _service(ctx: Context) -> Periodic:
    return Periodic(_definitions(ctx), ScheduleStore.for_config(ctx.dynamodb, ctx.config),
                    ctx.delayer_queue(), ctx.config, ctx.clock)


@OPERATIONS.answers("putPeriodic")
def put_periodic(call: Call) -> Answer:
    config = call.ctx.config
    service = _service(call.ctx)
    request_body = validate_periodic(call.id, call.request.json_body(), config.targets, config.default_target,
                                     max_receive_count=config.max_receive_count)
    now = call.ctx.clock.now_ms()
    refusal = never_fires(request_body, now)
    if refusal is not None and not _replays(call.ctx, request_body):
        raise refusal
    put = service.put(request_body, now)
    if put.changed:
        log_event("periodic_put", id=call.id, created=put.created, nextDueMs=put.definition.next_due_ms)
    return (201 if put.created else 200), describe_definition(put.definition, with_payload=False)


def _replays(ctx: Context, request: PeriodicRequest) -> bool:
    """Whether ``request`` is the stored definition's body again: a replay is answered as before (200), even
    once that body could no longer fire (its ``endAt`` passed since)."""
    stored = _definitions(ctx).get(request.periodic_id)
    return stored is not None and stored.status != DELETED and stored.request_hash == request.request_hash


@OPERATIONS.answers("getPeriodic")
def get_periodic(call: Call) -> Answer:
    definition = _definitions(call.ctx).get(call.id)
    if definition is None or definition.status == DELETED or not _live(call.ctx, [definition]):
        raise ApiError(404, f"periodic timer '{call.id}' not found", "id")
    return 200, describe_definition(definition)


def _live(ctx: Context, definitions: list[Definition]) -> list[Definition]:
    """``definitions`` without those a cancel of their group stopped (deleted, as far as the API shows, before
    the group's sweep reaches them): one read per group among them."""
    grouped = {d.group for d in definitions if d.group is not None and d.group_stamp_ms is not None}
    if not grouped:
        return definitions
    store = GroupStore(ctx.dynamodb, ctx.config.table_name)
    cutoffs = {group: store.cancelled_before(group) for group in grouped}
    return [d for d in definitions if d.group is None or d.group_stamp_ms is None
            or not is_stopped(d.group_stamp_ms, cutoffs[d.group])]


@OPERATIONS.answers("setPeriodicState")
def set_periodic_state(call: Call) -> Answer:
    """Pause or resume; the state it already has again changes nothing (200)."""
    state = validate_state(call.request.json_body())
    service = _service(call.ctx)
    change = (service.pause if state == PAUSED else service.resume)(call.id, call.ctx.clock.now_ms())
    if change is None:
        raise ApiError(404, f"periodic timer '{call.id}' not found", "id")
    status = change.definition.status
    if not change.changed and status not in (ACTIVE, PAUSED):  # a resume past endAt ends it (changed): 200
        raise ApiError(409, f"periodic timer '{call.id}' is {status}: only an ACTIVE or PAUSED one can be "
                            f"paused or resumed", STATE_FIELD)
    if change.changed:
        log_event("periodic_paused" if state == PAUSED else "periodic_resumed", id=call.id,
                  nextDueMs=change.definition.next_due_ms, pausedCount=change.definition.paused_count)
    return 200, describe_definition(change.definition, with_payload=False)


@OPERATIONS.answers("deletePeriodic")
def delete_periodic(call: Call) -> Answer:
    old = _service(call.ctx).delete(call.id, call.ctx.clock.now_ms())
    if old is None:
        raise ApiError(404, f"periodic timer '{call.id}' not found", "id")
    log_event("periodic_deleted", id=call.id)
    sink = OutcomeSink.of(call.ctx)
    if sink is not None:
        sink.cancelled_periodic(old, CancelReason.DELETED)
        sink.flush()
    return 200, {"id": call.id, "status": DELETED}


@OPERATIONS.answers("listPeriodic")
def list_periodic(call: Call) -> Answer:
    """A page of definitions in id order, merged across the definition partitions."""
    params, token_key = call.request.query, call.ctx.config.table_name
    if GROUP_FIELD in params:
        return _list_group(call.ctx, params)
    refuse_unknown(params, PAGE_PARAMETERS)
    limit, after = page_position(params, token_key, PAGE_FILTERS)
    page, more = _definitions(call.ctx).page(after, limit)
    body: dict[str, Any] = {"items": [describe_definition(d, with_payload=False) for d in _live(call.ctx, page)]}
    if more:
        body["nextToken"] = make_token(page[-1].periodic_id, PAGE_FILTERS, token_key)
    return 200, body


def _list_group(ctx: Context, params: dict[str, Any]) -> Answer:
    """``GET /periodic?group=``: a page of the group's ACTIVE and PAUSED periodic timers, in the order they joined."""
    from ._group_routes import list_members, read_items  # noqa: PLC0415 - loaded by the first group listing only

    def describe(entries: list[dict[str, Any]], _: Any) -> list[dict[str, Any]]:
        definitions = [Definition.from_item(item) for item in read_items(ctx, entries, {})]
        return [describe_definition(d, with_payload=False) for d in _live(ctx, definitions) if d.status != DELETED]

    return list_members(ctx, params, PERIODIC_MEMBERS, describe)
