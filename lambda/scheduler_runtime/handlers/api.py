"""The api function: every route of ``contract.json``, answered through one route table (:mod:`._router`).

This module answers the one-shot routes: ``POST /schedules``, ``GET``/``DELETE /schedules/{id}``,
``POST /schedule-batches`` and ``GET /schedules?status=&dueAfter=&dueBefore=&limit=&nextToken=``
(with listing on). The routes under ``/periodic`` are answered by :mod:`._periodic_routes`, which
the first periodic call loads, so a deployment that only schedules one-shots never imports it.

It answers the HTTP API (the default), the REST API and direct invokes alike
(:mod:`._api_events`). A batch takes up to ``MAX_BATCH_SIZE`` creates in one call: one
request and one invocation instead of ten, and one ``SendMessageBatch`` for its short timers.
"""

from __future__ import annotations

import logging
from typing import Any

from ..aws.context import Context, current
from ..aws.create import CreateConflict, Created, Creator, NotQueued
from ..aws.items import ScheduleRecord
from ..aws.outcomes import OutcomeSink
from ..aws.store import ScheduleStore
from ..core import states
from ..core.groups import SCHEDULES as SCHEDULE_MEMBERS
from ..core.groups import is_stopped
from ..core.keys import schedule_id_of
from ..core.outcomes import CancelReason
from ..core.timeparse import format_rfc3339_ms
from ..core.validation import GROUP_FIELD, ApiError, CreateRequest, batch_items, in_batch, validate_create
from ..observability import log_event
from ._api_events import is_direct, is_resource_event, parse_event, respond
from ._router import Answer, Call, Operations, Router
from ._views import describe_record

logger = logging.getLogger("scheduler_runtime")
OPERATIONS = Operations()


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    if is_resource_event(event):  # a PeriodicTimer of the stack, through CDK's provider framework
        from ._periodic_resource import answer_resource_event  # noqa: PLC0415 - loaded by deploys only

        return answer_resource_event(ROUTER, current(), event)
    direct = is_direct(event)
    try:
        request = parse_event(event)
        status, body = ROUTER.answer(current(), request)
    except ApiError as err:
        status, body = err.status, err.body()
    except Exception:  # noqa: BLE001 - a genuine server fault: logged, never leaked
        logger.exception("api handler failed")
        status, body = 500, {"message": "internal error; the request may be retried", "field": None}
    return respond(direct, status, body)


def _store(ctx: Context) -> ScheduleStore:
    return ScheduleStore.for_config(ctx.dynamodb, ctx.config)


def _creator(ctx: Context) -> Creator:
    return Creator(_store(ctx), ctx.delayer_queue(), ctx.config)


@OPERATIONS.answers("getSchedule")
def get_schedule(call: Call) -> Answer:
    store = _store(call.ctx)
    record = store.get(call.id)
    if record is None:
        raise ApiError(404, f"schedule '{call.id}' not found", "id")
    return 200, describe_record(record, _current_status(store, record))


@OPERATIONS.answers("cancelSchedule")
def cancel_schedule(call: Call) -> Answer:
    schedule_id, config = call.id, call.ctx.config
    record, changed = _store(call.ctx).cancel(schedule_id, call.ctx.clock.now_ms(), config.history_retention_seconds)
    if record is None:
        raise ApiError(404, f"schedule '{schedule_id}' not found", "id")
    if changed:
        log_event("cancelled", id=schedule_id)
    elif states.cancel_outcome(record.status) == "conflict":
        raise ApiError(409, f"schedule '{schedule_id}' is {record.status} and can no longer be cancelled", "id")
    sink = OutcomeSink.of(call.ctx)
    if sink is not None:  # a repeated cancel sends it again: a cancel whose answer was lost is retried
        sink.cancelled_schedule(record, CancelReason.CANCELLED)
        sink.flush()
    return 200, {"id": schedule_id, "status": states.CANCELLED}


@OPERATIONS.answers("rescheduleSchedule")
def reschedule_schedule(call: Call) -> Answer:
    """A waiting schedule's new due time (and payload): 200 with it, also for a repeat of the same body."""
    from ..aws import reschedule  # noqa: PLC0415 - loaded by the first reschedule only
    from ..core.validation import validate_reschedule  # noqa: PLC0415

    ctx = call.ctx
    now = ctx.clock.now_ms()
    request = validate_reschedule(call.request.json_body(), now)
    rescheduler = reschedule.Rescheduler(reschedule.RescheduleStore.for_config(ctx.dynamodb, ctx.config),
                                         ctx.delayer_queue(),
                                         ctx.config)
    try:
        outcome = rescheduler.reschedule(call.id, request, now)
    except reschedule.NotFound:
        raise ApiError(404, f"schedule '{call.id}' not found", "id") from None
    except reschedule.Ended as ended:
        raise ApiError(409, f"schedule '{call.id}' is {ended.record.status} and can no longer be rescheduled "
                            "(delivery started, or the schedule ended)", "id") from None
    except reschedule.Contended:
        raise ApiError(409, f"schedule '{call.id}' was rescheduled by other calls meanwhile; retry", "id") from None
    record = outcome.record
    if outcome.changed:
        log_event("rescheduled", id=record.schedule_id, dueMs=record.due_ms, status=record.status)
    status = record.status if outcome.changed else _current_status(rescheduler.store, record)
    return 200, {"id": record.schedule_id, "dueAt": format_rfc3339_ms(record.due_ms), "status": status,
                 "target": record.target}


@OPERATIONS.answers("listSchedules")
def list_schedules(call: Call) -> Answer:
    config = call.ctx.config
    if GROUP_FIELD in call.request.query:
        return _list_group(call)
    if not config.listing:
        raise ApiError(404, "listing is off for this scheduler: deploy it with listing=True (the local engine: "
                            "--listing); each create and status change then also writes the listing index", None)
    from ..aws.listing import list_page  # noqa: PLC0415 - loaded by the first listing only
    from ..core.listing import parse_list_query  # noqa: PLC0415

    query = parse_list_query(call.request.query, config.table_name)
    items, token = list_page(call.ctx.dynamodb, config, query, call.ctx.clock)
    body: dict[str, Any] = {"items": [describe_record(record, status, with_payload=False) for record, status in items]}
    if token:
        body["nextToken"] = token
    return 200, body


@OPERATIONS.answers("createSchedule")
def create_schedule(call: Call) -> Answer:
    """One schedule: 201 with the answer, 200 for an idempotent replay; ApiError otherwise."""
    creator, config = _creator(call.ctx), call.ctx.config
    now = call.ctx.clock.now_ms()
    request = validate_create(call.request.json_body(), now, config.targets, config.default_target,
                              max_receive_count=config.max_receive_count)
    try:
        return _answer(creator.create(request, now), creator.store)
    except CreateConflict:
        raise _conflict(request) from None


@OPERATIONS.answers("createScheduleBatch")
def create_schedule_batch(call: Call) -> Answer:
    """Up to ``MAX_BATCH_SIZE`` schedules in one call, each created (or refused) on its own, answered in order.

    The call answers 200 with ``{"results": [{"status", "body"}, ...]}``: each result is what
    ``POST /schedules`` would have answered for that item, with error fields named
    ``schedules[i].field``. One bad or failed item never stops the others: a service fault on
    one item's writes answers that item alone (503 when the delayer queue refused it, 500
    otherwise), never the whole call.

    A retry of the call is duplicate-free only for items that carry an ``id``: an item without
    one gets a fresh uuid on each call, so a retry after a lost answer would create it again.
    Clients send ids (the typed client gives every item a uuid4 before its first send and sends
    it again on a retry), and the same id with the same body is answered as a replay.
    """
    creator, config = _creator(call.ctx), call.ctx.config
    items = batch_items(call.request.json_body())
    now = call.ctx.clock.now_ms()
    results: list[dict[str, Any] | None] = [None] * len(items)
    valid: list[tuple[int, CreateRequest]] = []
    for index, item in enumerate(items):
        try:
            if not isinstance(item, dict):
                raise ApiError(400, "each schedule must be a JSON object", None)
            valid.append((index, validate_create(item, now, config.targets, config.default_target,
                                                 max_receive_count=config.max_receive_count)))
        except ApiError as err:
            results[index] = _result_of_error(in_batch(err, index))
    outcomes = creator.create_many([request for _, request in valid], now) if valid else []
    for (index, request), outcome in zip(valid, outcomes):
        try:
            if isinstance(outcome, CreateConflict):
                raise _conflict(request)
            if isinstance(outcome, NotQueued):
                raise ApiError(503, f"{outcome}; nothing was stored, retry this schedule", None)
            if isinstance(outcome, Exception):
                logger.error("create of %s failed: %r", request.schedule_id, outcome)
                raise ApiError(500, "internal error; nothing was accepted for this schedule, retry it", None)
            status, answer = _answer(outcome, creator.store)
            results[index] = {"status": status, "body": answer}
        except ApiError as err:
            results[index] = _result_of_error(in_batch(err, index))
    return 200, {"results": results}


def _answer(outcome: Created, store: ScheduleStore) -> Answer:
    """201 with the new schedule, or 200 for a replay: the first create's id, ``dueAt`` and target,
    with the schedule's status now (``CANCELLED``, ``FIRED``... when that has happened since), as GET reads it."""
    record = outcome.record
    if outcome.created:
        log_event("created", id=record.schedule_id, dueMs=record.due_ms, status=record.status)
        status = record.status
    else:
        status = _current_status(store, record)
    answer = {"id": record.schedule_id, "dueAt": format_rfc3339_ms(record.due_ms), "status": status,
              "target": record.target}
    return (201 if outcome.created else 200), answer


def _current_status(store: ScheduleStore, record: ScheduleRecord) -> str:
    """The stored status, except that a long timer whose timer the sweeper claimed is ``QUEUED`` (one more read),
    and that a waiting member of a cancelled group is ``CANCELLED`` (one more read, for grouped ones only)."""
    if record.group is not None and record.status in states.CANCELLABLE_STORED:
        from ..aws.groups import GroupStore  # noqa: PLC0415 - loaded by the first grouped schedule only

        if is_stopped(record.created_ms, GroupStore(store.dynamodb, store.table_name).cancelled_before(record.group)):
            return states.CANCELLED
    if record.status == states.SCHEDULED and not store.timer_pending(record):
        return states.QUEUED
    return record.status


def _list_group(call: Call) -> Answer:
    """``GET /schedules?group=``: a page of the group's waiting schedules, in the order they were created."""
    from ..aws.listing import read_records, shown_statuses  # noqa: PLC0415 - loaded by the first listing only
    from ._group_routes import list_members  # noqa: PLC0415

    ctx = call.ctx

    def describe(entries: list[dict[str, Any]], _: Any) -> list[dict[str, Any]]:
        records = read_records(ctx.dynamodb, ctx.config.table_name, [schedule_id_of(e["pk"]["S"]) for e in entries],
                               ctx.clock)
        page = [records[i] for i in (schedule_id_of(e["pk"]["S"]) for e in entries) if i in records]
        statuses = shown_statuses(ctx.dynamodb, ctx.config, page, ctx.clock)
        return [describe_record(r, statuses[r.schedule_id], with_payload=False) for r in page]

    return list_members(ctx, call.request.query, SCHEDULE_MEMBERS, describe)


def _conflict(request: CreateRequest) -> ApiError:
    return ApiError(409, f"schedule '{request.schedule_id}' exists with a different body; ids are idempotency keys", "id")


def _result_of_error(err: ApiError) -> dict[str, Any]:
    return {"status": err.status, "body": err.body()}


ROUTER = Router()
ROUTER.include(OPERATIONS)
ROUTER.include_lazily(f"{__package__}._periodic_routes", under="/periodic")  # loaded by the first periodic call
ROUTER.include_lazily(f"{__package__}._group_routes", under="/groups")  # loaded by the first group cancel
ROUTER.include_lazily(f"{__package__}._target_routes", under="/targets")  # loaded by the first target call
ROUTER.check()
