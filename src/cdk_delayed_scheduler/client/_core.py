"""The client's calls without their I/O: what to send, how to read the answer, and when to retry.

Each call of the API is a *plan*, a generator that yields the steps to take (:class:`Send` a
request, :class:`Sleep` before a retry) and is sent each step's outcome (a ``Send``'s
``(status, body)``, thrown in as a :class:`SchedulerError` when the request got no answer), and
returns the typed result, or, in the raw mode (:meth:`Calls.raw`), the :class:`Answer` as it came.
:class:`~._client.SchedulerClient` carries the steps out by blocking calls,
:class:`~._async_client.AsyncSchedulerClient` by awaiting them: both share every request body, every
path (built from the contract's routes by :func:`route`), every parse of an answer, the error mapping
and the retries, which live here only.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Callable, Generator, Generic, Iterable, Mapping, Optional, Tuple, TypeVar, Union
from urllib.parse import quote, urlencode

from .._contract import contract
from ._errors import SchedulerError, ValidationError, error_for, retryable_status
from ._models import (GroupCancellation, Periodic, Removed, RetryPolicy, Schedule, ScheduleRequest, Target, When,
                      create_body, format_time, lateness_seconds, reschedule_body, whole_seconds)
from ._statuses import PeriodicStatus, ScheduleStatus, TargetState
from ._transport import Backoff

T = TypeVar("T")
MAX_BATCH_SIZE: int = contract.MAX_BATCH_SIZE
"""How many creates one ``POST /schedule-batches`` takes (``maxBatchSize`` in the runtime's ``contract.json``)."""
BatchItem = Union[ScheduleRequest, Mapping[str, Any]]
_IN_BATCH = re.compile(r"^schedules\[(\d+)\]")
ID, GROUP, NAME = "id", "group", "name"
PATH_PARAMETERS: Mapping[str, re.Pattern[str]] = {ID: contract.ID_PATTERN, GROUP: contract.GROUP_PATTERN,
                                                  NAME: re.compile(contract.TARGET_NAME_PATTERN)}
"""The rule of each ``{name}`` in the routes' paths: the runtime's own (``contract.json``)."""
ROUTES: Mapping[str, contract.Route] = {route.operation: route for route in contract.ROUTES}
"""The contract's routes by operation (``createSchedule``, ``getSchedule``, ... ``cancelGroup``)."""
_PARAMETER = re.compile(r"{(\w+)}")


@dataclass(frozen=True)
class Send:
    """Send one request to the api function; the plan is sent back ``(HTTP status, JSON body)``."""

    method: str
    path: str
    body: Any | None = None


class Answer(Tuple[Optional[int], Any]):
    """What a raw call got: the pair ``(status, body)`` of its last attempt, and how many ``attempts`` were sent.

    ``status`` is the HTTP status, ``None`` when no answer came (a refused or cut connection, a timeout); ``body``
    the JSON body, ``{"message": <what happened>}`` for no answer, or for an answer the transport reported without
    one (a direct invoke that Lambda throttled, or whose function failed). ``status, body = answer`` unpacks it.
    """

    attempts: int

    def __new__(cls, status: int | None, body: Any, attempts: int = 1) -> "Answer":
        answer = super().__new__(cls, (status, body))
        answer.attempts = attempts
        return answer

    def __getnewargs__(self) -> tuple[int | None, Any, int]:  # copy and pickle
        return self[0], self[1], self.attempts

    @property
    def status(self) -> int | None:
        return self[0]

    @property
    def body(self) -> Any:
        return self[1]

    def __repr__(self) -> str:
        return f"Answer(status={self[0]!r}, body={self[1]!r}, attempts={self.attempts})"


@dataclass(frozen=True)
class Sleep:
    """Wait ``seconds`` before the next attempt; the plan is sent back ``None``."""

    seconds: float


@dataclass(frozen=True)
class Done(Generic[T]):
    """The plan finished with ``value``."""

    value: T


Step = Union[Send, Sleep]
Plan = Generator[Step, Any, T]
"""A call's steps; its return value is the call's result."""


def next_step(plan: Plan[T], outcome: Any) -> Step | Done[T]:
    """Give ``plan`` the last step's outcome (a :class:`SchedulerError` is raised inside it) and answer its next step."""
    try:
        return plan.throw(outcome) if isinstance(outcome, SchedulerError) else plan.send(outcome)
    except StopIteration as done:
        return Done(done.value)


Page = tuple[list[T], Union[dict[str, Any], None]]
"""A listing page's items, and the query of the next page (``None`` after the last)."""


def route(operation: str, parameters: Mapping[str, str], body: Any | None = None,
          query: Mapping[str, Any] | None = None, checked: bool = True) -> Send:
    """The request for the contract's route of ``operation``: its method, its path with each ``{name}`` filled from
    ``parameters`` (percent-encoded), ``query`` appended (``None`` values left out), and ``body``.

    ``checked``: each parameter must match the runtime's rule for it (``ValidationError`` naming it otherwise, before
    anything is sent); the raw mode sends what it is given, for the server to judge. ``ValueError`` for an unknown
    operation, or parameters other than the route's.
    """
    known = ROUTES.get(operation)
    if known is None:
        raise ValueError(f"no route has the operation {operation!r}; the routes' operations: {', '.join(ROUTES)}")
    names = _PARAMETER.findall(known.path)
    if sorted(names) != sorted(parameters):
        raise ValueError(f"{operation} ({known.method} {known.path}) takes the parameters {names}, "
                         f"got {sorted(parameters)}")
    path = _PARAMETER.sub(lambda found: (_path_segment(parameters[found[1]], found[1]) if checked
                                         else quote(str(parameters[found[1]]), safe="")), known.path)
    query = listing_query(query or {})
    return Send(known.method, f"{path}?{urlencode(query)}" if query else path, body)


TransportT = TypeVar("TransportT")


class ClientCore(Generic[TransportT]):
    """What the sync and the asyncio client both hold: a transport, the calls, and the region."""

    def _setup(self, transport: TransportT, region: str | None, backoff: Backoff) -> None:
        self._transport = transport
        self._calls = Calls(backoff)
        self.region = region
        """The region requests are signed for (HTTP, when signed) or sent to (direct invoke); ``None`` for a
        client with ``api_key`` or ``token`` given no region (none is needed)."""


class Calls:
    """Every call of the API as a plan, retried as ``backoff`` says."""

    def __init__(self, backoff: Backoff) -> None:
        self.backoff = backoff

    def call(self, operation: str, body: Any | None = None, query: Mapping[str, Any] | None = None,
             **parameters: str) -> Plan[Any]:
        """``operation``'s route (:func:`route`): the body of a 2xx answer; the typed error otherwise, after retrying
        throttling and 5xx (never other 4xx)."""
        send = route(operation, parameters, body, query)
        for attempt in range(1, self.backoff.max_attempts + 1):
            try:
                status, answer = yield send
                if 200 <= status < 300:
                    return answer
                raise error_for(status, answer)
            except SchedulerError as error:
                if not error.retryable or attempt == self.backoff.max_attempts:
                    raise
            yield Sleep(self.backoff.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def raw(self, send: Send) -> Plan[Answer]:
        """The raw mode: ``send``'s :class:`Answer`, whatever its status (no typed result, no error raised), after
        retrying throttling and 5xx as :meth:`call` does (with ``max_attempts`` 1, every answer is seen as it came).
        A request that got no answer is not sent again: its answer's status is ``None``."""
        for attempt in range(1, self.backoff.max_attempts + 1):
            try:
                status, body = yield send
                answer = Answer(status, body, attempt)
            except SchedulerError as error:
                answer = Answer(error.status, {"message": error.message}, attempt)
            if not retryable_status(answer.status) or attempt == self.backoff.max_attempts:
                return answer
            yield Sleep(self.backoff.delay(attempt))
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns

    # --- one-shot schedules ---------------------------------------------------------------
    def schedule(self, at: When, payload: Any, schedule_id: str | None, target: str | None,
                 retry: RetryPolicy | None = None, group: str | None = None,
                 max_lateness: timedelta | None = None) -> Plan[Schedule]:
        body = create_body(at, payload, schedule_id if schedule_id is not None else str(uuid.uuid4()), target,
                           retry=retry, group=group, max_lateness=max_lateness)
        return Schedule.from_json((yield from self.call("createSchedule", body)))

    def schedule_many(self, items: Iterable[BatchItem]) -> Plan[list[Schedule | SchedulerError]]:
        bodies = [_item_body(index, item) for index, item in enumerate(items)]
        results: list[Schedule | SchedulerError | None] = [None] * len(bodies)
        for start in range(0, len(bodies), MAX_BATCH_SIZE):
            yield from self._batch(bodies, list(range(start, min(start + MAX_BATCH_SIZE, len(bodies)))), results)
        return [result for result in results if result is not None]

    def _batch(self, bodies: list[dict[str, Any]], pending: list[int],
               results: list[Schedule | SchedulerError | None]) -> Plan[None]:
        for attempt in range(1, self.backoff.max_attempts + 1):
            answer = yield from self.call("createScheduleBatch", {"schedules": [bodies[i] for i in pending]})
            retry = []
            for position, (index, result) in enumerate(zip(pending, answer["results"])):
                if 200 <= result["status"] < 300:
                    results[index] = Schedule.from_json(result["body"])
                    continue
                error = error_for(result["status"], _renumbered(result.get("body"), position, index))
                results[index] = error
                if error.retryable:
                    retry.append(index)
            pending = retry
            if not pending or attempt == self.backoff.max_attempts:
                return
            yield Sleep(self.backoff.delay(attempt))

    def get(self, schedule_id: str) -> Plan[Schedule]:
        return Schedule.from_json((yield from self.call("getSchedule", id=schedule_id)))

    def reschedule(self, schedule_id: str, at: When, payload: Any) -> Plan[Schedule]:
        body = reschedule_body(at, payload)
        return Schedule.from_json((yield from self.call("rescheduleSchedule", body, id=schedule_id)))

    def cancel(self, schedule_id: str) -> Plan[Removed]:
        return Removed.from_json((yield from self.call("cancelSchedule", id=schedule_id)))

    # --- periodic timers -------------------------------------------------------------------
    def put_periodic(self, periodic_id: str, payload: Any, every: int | timedelta | None, cron: str | None,
                     time_zone: str | None, start_at: datetime | None, end_at: datetime | None,
                     target: str | None, retry: RetryPolicy | None = None,
                     group: str | None = None, max_lateness: timedelta | None = None) -> Plan[Periodic]:
        fields = {"payload": payload, "every": None if every is None else whole_seconds(every), "cron": cron,
                  "timeZone": time_zone, "startAt": _time_or_none(start_at, "start_at"),
                  "endAt": _time_or_none(end_at, "end_at"), "target": target,
                  "retry": None if retry is None else retry.to_json(),
                  "maxLatenessSeconds": lateness_seconds(max_lateness), "group": group}
        body = {name: value for name, value in fields.items() if value is not None or name == "payload"}
        return Periodic.from_json((yield from self.call("putPeriodic", body, id=periodic_id)))

    def get_periodic(self, periodic_id: str) -> Plan[Periodic]:
        return Periodic.from_json((yield from self.call("getPeriodic", id=periodic_id)))

    def set_periodic_state(self, periodic_id: str, state: PeriodicStatus) -> Plan[Periodic]:
        body = {"state": str(state)}
        return Periodic.from_json((yield from self.call("setPeriodicState", body, id=periodic_id)))

    def delete_periodic(self, periodic_id: str) -> Plan[Removed]:
        return Removed.from_json((yield from self.call("deletePeriodic", id=periodic_id)))

    # --- groups ------------------------------------------------------------------------------
    def cancel_group(self, group: str) -> Plan[GroupCancellation]:
        return GroupCancellation.from_json((yield from self.call("cancelGroup", group=group)))

    # --- targets -----------------------------------------------------------------------------
    def get_target(self, name: str, group: str | None = None) -> Plan[Target]:
        return Target.from_json((yield from self.call("getTarget", query={"group": group}, name=name)))

    def set_target_state(self, name: str, state: TargetState) -> Plan[Target]:
        return Target.from_json((yield from self.call("updateTarget", {"state": str(state)}, name=name)))

    # --- listings ----------------------------------------------------------------------------
    def page(self, operation: str, query: dict[str, Any], build: Callable[[Mapping[str, Any]], T]) -> Plan[Page[T]]:
        """One page of the listing ``operation`` at ``query``; the next page's query follows its ``nextToken``."""
        answer = yield from self.call(operation, query=query)
        token = answer.get("nextToken")
        return [build(item) for item in answer.get("items") or []], ({**query, "nextToken": token} if token else None)


def schedules_query(status: ScheduleStatus | str | None, due_after: datetime | None, due_before: datetime | None,
                    page_size: int | None, group: str | None = None) -> dict[str, Any]:
    """``GET /schedules``'s first query; ``ValueError`` naming the argument for a naive datetime."""
    return listing_query({"status": None if status is None else str(status),
                           "dueAfter": _time_or_none(due_after, "due_after"),
                           "dueBefore": _time_or_none(due_before, "due_before"), "group": group, "limit": page_size})


def listing_query(params: Mapping[str, Any]) -> dict[str, Any]:
    """A listing's first query: the parameters given (``None`` ones left out)."""
    return {name: value for name, value in params.items() if value is not None}


def _path_segment(value: str, field: str) -> str:
    """``value`` as the path segment ``{field}`` of a route, checked by the runtime's rule for it first, so that
    a value the route cannot carry (an empty one, which names another path) raises ``ValidationError`` naming
    ``field`` before anything is sent."""
    pattern = PATH_PARAMETERS[field]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise ValidationError(400, f"{field} must match {pattern.pattern} (got {value!r})", field)
    return quote(value, safe="")


def _time_or_none(value: datetime | None, argument: str) -> str | None:
    return None if value is None else format_time(value, argument)


def _item_body(index: int, item: BatchItem) -> dict[str, Any]:
    request = item if isinstance(item, ScheduleRequest) else ScheduleRequest(**item)
    schedule_id = request.id if request.id is not None else str(uuid.uuid4())
    return create_body(request.at, request.payload, schedule_id, request.target, f"items[{index}].", request.retry,
                       request.group, request.max_lateness)


def _renumbered(body: Any, position: int, index: int) -> Any:
    """A batch item's error body with ``schedules[position]`` (its place in the call) made ``schedules[index]``."""
    if not isinstance(body, dict) or position == index:
        return body
    named = f"schedules[{index}]"
    renamed = {**body, "message": _IN_BATCH.sub(named, str(body.get("message", "")))}
    if isinstance(body.get("field"), str):
        renamed["field"] = _IN_BATCH.sub(named, body["field"])
    return renamed
