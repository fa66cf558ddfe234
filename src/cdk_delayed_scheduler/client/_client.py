"""``SchedulerClient``: every call of the scheduler's API as a typed method."""

from __future__ import annotations

import builtins
import time
from datetime import datetime, timedelta
from typing import Any, Callable, Iterable, Iterator, Mapping, TypeVar

import botocore.session

from ._auth import TokenProvider, header_auth
from ._core import (MAX_BATCH_SIZE, Answer, BatchItem, ClientCore, Done, Plan, Send, Sleep, Step, listing_query,
                    next_step, route, schedules_query)
from ._errors import SchedulerError
from ._models import KEEP_PAYLOAD, GroupCancellation, Periodic, Removed, RetryPolicy, Schedule, Target, When
from ._statuses import PeriodicStatus, ScheduleStatus, TargetState
from ._transport import Backoff, HttpTransport, InvokeTransport, Transport

T = TypeVar("T")
__all__ = ["MAX_BATCH_SIZE", "BatchItem", "SchedulerClient"]


class SchedulerClient(ClientCore[Transport]):
    """The scheduler's API, typed: over HTTP(S) (this constructor) or by direct invoke (:meth:`for_function`).

    ``session`` (a ``botocore.session.Session``; default ``botocore.session.get_session()``) gives
    the credentials and the region. ``sign`` chooses the signing: ``None`` (the default) signs
    when the session has credentials and otherwise sends unsigned requests, saying so once with an
    :class:`UnsignedRequestsWarning` (a local engine needs no signature unless it was started with
    ``--require-signature``); ``True`` always signs (no credentials raise botocore's
    ``NoCredentialsError`` here); ``False`` never signs. An API deployed with an API key or a
    Cognito authorizer takes ``api_key`` (sent as ``x-api-key``) or ``token`` (a callable answering
    the JWT, called before every request and sent as ``Authorization``) instead: such requests are
    not signed, and asking for two of ``api_key``, ``token`` and ``sign=True`` raises ``ValueError``.

    Throttling (429) and server errors (5xx) are retried up to ``max_attempts`` times in all, with
    exponential backoff and full jitter (``backoff_base`` seconds doubled each retry, at most
    ``backoff_cap``); other errors raise at once. Retrying a create is safe: the client sends an id
    with every create (a new uuid4 unless you give one), and the same id with the same body answers
    the same schedule.
    """

    def __init__(self, api_url: str, session: botocore.session.Session | None = None, *, region: str | None = None,
                 timeout: float = 30.0, max_attempts: int = 4, backoff_base: float = 0.1, backoff_cap: float = 5.0,
                 sign: bool | None = None, api_key: str | None = None, token: TokenProvider | None = None) -> None:
        auth = header_auth(api_key, token, sign)
        transport = HttpTransport(api_url, session or botocore.session.get_session(), region, timeout, sign, auth)
        self._setup(transport, transport.region, Backoff(max_attempts, backoff_base, backoff_cap))

    @classmethod
    def for_function(cls, name_or_arn: str, session: botocore.session.Session | None = None, *,
                     region: str | None = None, max_attempts: int = 4, backoff_base: float = 0.1,
                     backoff_cap: float = 5.0) -> "SchedulerClient":
        """A client that invokes the api function (``lambda:InvokeFunction``) instead of calling the HTTP API.

        The region comes from ``region=``, the function's ARN, or the session. The Lambda client
        honours ``AWS_ENDPOINT_URL_LAMBDA`` and ``AWS_ENDPOINT_URL``.
        """
        client = cls.__new__(cls)
        transport = InvokeTransport(name_or_arn, session or botocore.session.get_session(), region)
        client._setup(transport, transport.region, Backoff(max_attempts, backoff_base, backoff_cap))
        return client

    def _run(self, plan: Plan[T]) -> T:
        """Carry out ``plan``'s steps by blocking calls and answer its result."""
        step = next_step(plan, None)
        while not isinstance(step, Done):
            step = next_step(plan, self._take(step))
        return step.value

    def _take(self, step: Step) -> Any:
        if isinstance(step, Sleep):
            time.sleep(step.seconds)
            return None
        try:
            return self._transport.send(step.method, step.path, step.body)
        except SchedulerError as error:
            return error

    # --- one-shot schedules ---------------------------------------------------------------
    def schedule(self, at: When, payload: Any, *, id: str | None = None,  # noqa: A002 - the API's name
                 target: str | None = None, retry: RetryPolicy | None = None, group: str | None = None,
                 max_lateness: timedelta | None = None) -> Schedule:
        """Schedule ``payload`` for delivery at ``at``: ``POST /schedules``.

        ``at`` is a timezone-aware ``datetime`` (sent as ``dueAt``, RFC 3339 UTC with milliseconds)
        or a ``timedelta`` from when the server receives the call (sent as ``delaySeconds``;
        fractions of a second are kept). ``id`` defaults to a new uuid4, generated here so that a
        retried call is idempotent. ``retry`` (a :class:`RetryPolicy`) caps the delivery's attempts
        and age before it is parked in the dead-letter queue; without it the deployment's defaults
        apply. ``group`` (1-64 of ``A-Za-z0-9._:-``) puts it in a group, for :meth:`cancel_group` and
        ``list(group=...)``. ``max_lateness`` (a ``timedelta`` of whole seconds, 1 s to 365 days; sent as
        ``maxLatenessSeconds``) bounds how late its delivery may start: one that would start later after the due
        time (first attempt or retry) ends ``FAILED``, parked in the dead-letter queue; without it the deployment's
        bound applies, if any. Answers the schedule's ``id``, ``due_at``, ``status`` (``QUEUED`` or
        ``SCHEDULED``) and ``target``; the same id and body (group included) again answers the same.
        """
        return self._run(self._calls.schedule(at, payload, id, target, retry, group, max_lateness))

    def schedule_many(self, items: Iterable[BatchItem]) -> builtins.list[Schedule | SchedulerError]:
        """Schedule many at once: ``POST /schedule-batches``, ``MAX_BATCH_SIZE`` (10) items a call.

        Each item is a :class:`ScheduleRequest` or a mapping with its keys (``at``, ``payload``,
        ``id``, ``target``, ``retry``, ``group``, ``max_lateness``). The answer has one entry per item, in order:
        the :class:`Schedule`, or
        the typed error for that item (returned, not raised; its ``field`` names the item's place in
        ``items``: ``schedules[12].dueAt``). Items answered with throttling or a server error are
        sent again, alone, within ``max_attempts``. Raises only when a whole call fails.
        """
        return self._run(self._calls.schedule_many(items))

    def get(self, id: str) -> Schedule:  # noqa: A002 - the API's name
        """The schedule with all its fields: ``GET /schedules/{id}``; :class:`NotFoundError` if unknown (or expired)."""
        return self._run(self._calls.get(id))

    def reschedule(self, id: str, at: When, payload: Any = KEEP_PAYLOAD) -> Schedule:  # noqa: A002 - the API's name
        """Move a waiting schedule (``SCHEDULED`` or ``QUEUED``) to ``at``: ``PATCH /schedules/{id}``.

        ``at`` is what :meth:`schedule` takes (an aware ``datetime``, or a ``timedelta`` from when the
        server receives the call); ``payload``, when given, replaces the payload (``None`` is JSON null).
        The old due time is never delivered; the target and ``retry`` stay as they were. Answers the
        schedule with its new ``due_at``; the same call again answers the same and changes nothing.
        :class:`NotFoundError` if unknown, :class:`ConflictError` once its delivery started or it ended.
        """
        return self._run(self._calls.reschedule(id, at, payload))

    def cancel(self, id: str) -> Removed:  # noqa: A002 - the API's name
        """Cancel a schedule: ``DELETE /schedules/{id}``.

        Answers ``Removed(id, status="CANCELLED")`` (again for one already cancelled);
        :class:`NotFoundError` if unknown, :class:`ConflictError` once it has fired or failed.
        """
        return self._run(self._calls.cancel(id))

    # --- periodic timers -------------------------------------------------------------------
    def put_periodic(self, id: str, payload: Any, *, every: int | timedelta | None = None,  # noqa: A002 - the API's name
                     cron: str | None = None, time_zone: str | None = None, start_at: datetime | None = None,
                     end_at: datetime | None = None, target: str | None = None,
                     retry: RetryPolicy | None = None, group: str | None = None,
                     max_lateness: timedelta | None = None) -> Periodic:
        """Create or replace a periodic timer: ``PUT /periodic/{id}``.

        Give exactly one of ``every`` (whole seconds, an int or a timedelta) or ``cron``
        (EventBridge's six fields, e.g. ``"0 9 ? * MON-FRI *"``, in ``time_zone``, IANA, default
        UTC). ``start_at``/``end_at`` are aware datetimes. ``retry`` (a :class:`RetryPolicy`) holds
        each occurrence's delivery to its limits. ``max_lateness`` (as for :meth:`schedule`) skips an occurrence
        whose delivery would start later than that after its due time (counted in ``skipped_count``). ``group``
        puts it in a group (:meth:`cancel_group`). The same body again changes nothing; a different one
        replaces the definition from its next occurrence.
        """
        return self._run(self._calls.put_periodic(id, payload, every, cron, time_zone, start_at, end_at, target,
                                                    retry, group, max_lateness))

    def get_periodic(self, id: str) -> Periodic:  # noqa: A002 - the API's name
        """The periodic timer's definition and progress: ``GET /periodic/{id}``; :class:`NotFoundError` if unknown."""
        return self._run(self._calls.get_periodic(id))

    def pause_periodic(self, id: str) -> Periodic:  # noqa: A002 - the API's name
        """Pause a periodic timer: ``PATCH /periodic/{id}`` with ``{"state": "PAUSED"}``. Once it returns, nothing
        of it is delivered until :meth:`resume_periodic`; pausing a paused one changes nothing.
        :class:`NotFoundError` if unknown, :class:`ConflictError` once it has ENDED."""
        return self._run(self._calls.set_periodic_state(id, PeriodicStatus.PAUSED))

    def resume_periodic(self, id: str) -> Periodic:  # noqa: A002 - the API's name
        """Resume a paused periodic timer: ``PATCH /periodic/{id}`` with ``{"state": "ACTIVE"}``. Its next
        occurrence is the first one after now; those passed over while paused are added to ``paused_count``
        (never delivered). Resuming an active one changes nothing."""
        return self._run(self._calls.set_periodic_state(id, PeriodicStatus.ACTIVE))

    def delete_periodic(self, id: str) -> Removed:  # noqa: A002 - the API's name
        """Delete a periodic timer, so that no further occurrence is delivered: ``DELETE /periodic/{id}``.

        Answers ``Removed(id, status="DELETED")``; :class:`NotFoundError` if unknown.
        """
        return self._run(self._calls.delete_periodic(id))

    def list_periodic(self, *, group: str | None = None, page_size: int | None = None) -> Iterator[Periodic]:
        """Every periodic timer: ``GET /periodic?limit=&nextToken=``, page after page as the iterator is consumed.

        With ``group``, the group's ``ACTIVE`` and ``PAUSED`` timers, in the order they joined (``GET
        /periodic?group=``).
        """
        return self._pages("listPeriodic", listing_query({"group": group, "limit": page_size}), Periodic.from_json)

    # --- groups ------------------------------------------------------------------------------
    def cancel_group(self, group: str) -> GroupCancellation:
        """Stop every schedule and periodic timer of ``group`` created before this call: ``DELETE /groups/{group}``.

        Once it returns, none of them starts a delivery: a stopped schedule's status is ``CANCELLED``, a
        stopped periodic timer is gone (:class:`NotFoundError`). Members created later are not affected.
        The answer comes about a second after the call. A repeat answers the same way, counting what joined
        since (usually nothing). :class:`ValidationError` (``field`` ``group``) for a malformed name.
        """
        return self._run(self._calls.cancel_group(group))

    # --- targets -----------------------------------------------------------------------------
    def get_target(self, name: str, group: str | None = None) -> Target:
        """A target's state, limits and counts: ``GET /targets/{name}``. The counts are estimates read from the
        target's one item; a target without ``flow_control`` is ``ACTIVE`` with ``None`` for each. With ``group``
        (a target with per-group limits), ``waiting`` and ``in_flight`` are that group's, judged by its
        ``perGroup`` limits. :class:`NotFoundError` (``field`` ``name``) if no target of the scheduler has this
        name; :class:`ValidationError` (``field`` ``group``) for a group of a target without per-group limits."""
        return self._run(self._calls.get_target(name, group))

    def pause_target(self, name: str) -> Target:
        """Pause a target: ``PATCH /targets/{name}`` with ``{"state": "PAUSED"}``. Once it returns, no delivery to
        it starts until :meth:`resume_target`; those due meanwhile wait, looking again every few seconds, and are
        never dropped (a delivery already started finishes). Pausing a paused one changes nothing. Answers the
        target after the pause. :class:`ConflictError` (``field`` ``state``) for a target without ``flow_control``
        (a target is paused through its limits), :class:`NotFoundError` for an unknown name."""
        return self._run(self._calls.set_target_state(name, TargetState.PAUSED))

    def resume_target(self, name: str) -> Target:
        """Resume a paused target: ``PATCH /targets/{name}`` with ``{"state": "ACTIVE"}``. What waited for it starts
        within its limits; resuming an active one changes nothing. Errors as :meth:`pause_target`."""
        return self._run(self._calls.set_target_state(name, TargetState.ACTIVE))

    # --- the raw mode ------------------------------------------------------------------------
    def raw(self, operation: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
            **parameters: str) -> Answer:
        """Call the route of ``operation`` (the contract's name: ``createSchedule``, ``getSchedule``,
        ``listSchedules``, ``putPeriodic``, ``cancelGroup``...) and answer its :class:`Answer` as it came:
        ``status, body = timers.raw("getSchedule", id="order-42")``.

        ``parameters`` fill the path's ``{id}``, ``{group}`` or ``{name}`` (percent-encoded, not checked: the server judges
        them), ``query`` is the listing's query string, ``body`` any JSON value (or ``bytes``, sent as they are).
        No error is raised for a 4xx or a 5xx, and no result is parsed; throttling and 5xx are retried as by every
        call (``max_attempts=1`` shows each answer). A call that got no answer (a refused connection, a timeout)
        answers ``status`` ``None``.
        """
        return self._run(self._calls.raw(route(operation, parameters, body, query, checked=False)))

    def raw_request(self, method: str, path: str, body: Any = None) -> Answer:
        """:meth:`raw` for any ``method`` and ``path`` (its query string included), routed or not: for a test of what
        the API answers a path or a method it does not route."""
        return self._run(self._calls.raw(Send(method, path, body)))

    # --- listing (last: the method's name shadows the builtin in this class's body) ---------
    def list(self, *, status: ScheduleStatus | str | None = None, due_after: datetime | None = None,
             due_before: datetime | None = None, group: str | None = None,
             page_size: int | None = None) -> Iterator[Schedule]:
        """Schedules by status and due time: ``GET /schedules?status=&dueAfter=&dueBefore=&limit=&nextToken=``.

        Follows ``nextToken`` page after page (``page_size`` items each, the server's ``limit``) as
        the iterator is consumed; errors raise when the page that meets them is fetched. The
        items carry no payload (:meth:`get` has it). The scheduler must be deployed with ``listing``.
        ``status`` is a :class:`ScheduleStatus` or its text (``"FAILED"``).

        With ``group`` (``GET /schedules?group=``, with or without ``listing``): the group's waiting
        schedules in the order they joined (one its cancel stopped shows ``CANCELLED`` until cleaned up).
        It takes no ``status``, ``due_after`` or ``due_before``: the server's :class:`ValidationError`
        names the one given.
        """
        query = schedules_query(status, due_after, due_before, page_size, group)
        return self._pages("listSchedules", query, Schedule.from_json)

    def _pages(self, operation: str, query: dict[str, Any] | None,
               build: Callable[[Mapping[str, Any]], T]) -> Iterator[T]:
        while query is not None:
            items, query = self._run(self._calls.page(operation, query, build))
            yield from items
