"""``AsyncSchedulerClient``: :class:`SchedulerClient`'s calls for asyncio applications (FastAPI, aiohttp, ...)."""

from __future__ import annotations

import asyncio
import builtins
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, AsyncIterator, Callable, Iterable, Mapping, Protocol, TypeVar

import botocore.session

from ._auth import AsyncTokenProvider, header_auth
from ._core import (Answer, BatchItem, ClientCore, Done, Plan, Send, Sleep, Step, listing_query, next_step, route,
                    schedules_query)
from ._errors import SchedulerError
from ._models import KEEP_PAYLOAD, GroupCancellation, Periodic, Removed, RetryPolicy, Schedule, Target, When
from ._statuses import PeriodicStatus, ScheduleStatus, TargetState
from ._transport import Backoff, InvokeTransport

T = TypeVar("T")
C = TypeVar("C", bound="AsyncSchedulerClient")
_NEEDS_HTTPX = ("AsyncSchedulerClient over HTTP needs httpx: pip install 'cdk-delayed-scheduler[async]' (or httpx); "
                "AsyncSchedulerClient.for_function needs only botocore")


class AsyncTransport(Protocol):
    """One request to the api function, awaited, answered as ``(HTTP status, JSON body)``."""

    async def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]: ...

    async def aclose(self) -> None: ...


class AsyncInvokeTransport:
    """Direct invokes through botocore's ``lambda`` client, each on a worker thread (``asyncio.to_thread``).

    botocore's I/O blocks, so it never runs on the event loop; its client is thread-safe and keeps its
    connections alive (10 a client). As many invokes run at once as the loop's default executor has
    threads.
    """

    def __init__(self, function: str, session: botocore.session.Session, region: str | None) -> None:
        self._invoke = InvokeTransport(function, session, region, caller_frames=4)
        self.region = self._invoke.region

    async def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]:
        return await asyncio.to_thread(self._invoke.send, method, path, body)

    async def aclose(self) -> None:
        """Nothing to release: botocore's pool closes with its client."""


class AsyncSchedulerClient(ClientCore[AsyncTransport]):
    """:class:`SchedulerClient` for asyncio: the same constructor arguments, methods, results and errors, awaited.

    ```python
    async with AsyncSchedulerClient(api_url) as timers:          # or AsyncSchedulerClient.for_function(name)
        created = await timers.schedule(timedelta(minutes=5), {"order": 42})
        async for failed in timers.list(status="FAILED"):
            ...
    ```

    Over HTTP it sends with httpx (the ``async`` extra: ``pip install 'cdk-delayed-scheduler[async]'``)
    on one pool of kept-alive connections; a direct invoke (:meth:`for_function`) needs only botocore
    and runs each invoke on a worker thread. ``token`` may be an async callable. The constructor
    resolves the credentials as the sync client does (which may ask an instance metadata service):
    make one client when the application starts and share it; later credential refreshes run on a
    worker thread. Close it with ``async with`` or :meth:`aclose`. Calls on one client may run
    concurrently (``asyncio.gather``), within one event loop.
    """

    def __init__(self, api_url: str, session: botocore.session.Session | None = None, *, region: str | None = None,
                 timeout: float = 30.0, max_attempts: int = 4, backoff_base: float = 0.1, backoff_cap: float = 5.0,
                 sign: bool | None = None, api_key: str | None = None, token: AsyncTokenProvider | None = None) -> None:
        auth = header_auth(api_key, token, sign)
        try:
            from ._async_http import AsyncHttpTransport
        except ModuleNotFoundError as exc:
            if exc.name != "httpx":
                raise
            raise ModuleNotFoundError(_NEEDS_HTTPX, name="httpx") from exc
        transport = AsyncHttpTransport(api_url, session or botocore.session.get_session(), region, timeout, sign, auth)
        self._setup(transport, transport.region, Backoff(max_attempts, backoff_base, backoff_cap))

    @classmethod
    def for_function(cls, name_or_arn: str, session: botocore.session.Session | None = None, *,
                     region: str | None = None, max_attempts: int = 4, backoff_base: float = 0.1,
                     backoff_cap: float = 5.0) -> "AsyncSchedulerClient":
        """A client that invokes the api function (``lambda:InvokeFunction``), as :meth:`SchedulerClient.for_function`."""
        client = cls.__new__(cls)
        transport = AsyncInvokeTransport(name_or_arn, session or botocore.session.get_session(), region)
        client._setup(transport, transport.region, Backoff(max_attempts, backoff_base, backoff_cap))
        return client

    async def __aenter__(self: C) -> C:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the client's connections; a call after that raises ``RuntimeError`` (over HTTP)."""
        await self._transport.aclose()

    async def _run(self, plan: Plan[T]) -> T:
        """Carry out ``plan``'s steps by awaiting them and answer its result."""
        step = next_step(plan, None)
        while not isinstance(step, Done):
            step = next_step(plan, await self._take(step))
        return step.value

    async def _take(self, step: Step) -> Any:
        if isinstance(step, Sleep):
            await asyncio.sleep(step.seconds)
            return None
        try:
            return await self._transport.send(step.method, step.path, step.body)
        except SchedulerError as error:
            return error

    # --- one-shot schedules ---------------------------------------------------------------
    async def schedule(self, at: When, payload: Any, *, id: str | None = None,  # noqa: A002 - the API's name
                       target: str | None = None, retry: RetryPolicy | None = None,
                       group: str | None = None, max_lateness: timedelta | None = None) -> Schedule:
        """:meth:`SchedulerClient.schedule`: ``POST /schedules``."""
        return await self._run(self._calls.schedule(at, payload, id, target, retry, group, max_lateness))

    async def schedule_many(self, items: Iterable[BatchItem]) -> builtins.list[Schedule | SchedulerError]:
        """:meth:`SchedulerClient.schedule_many`: ``POST /schedule-batches``, 10 items a call."""
        return await self._run(self._calls.schedule_many(items))

    async def get(self, id: str) -> Schedule:  # noqa: A002 - the API's name
        """:meth:`SchedulerClient.get`: ``GET /schedules/{id}``."""
        return await self._run(self._calls.get(id))

    async def reschedule(self, id: str, at: When, payload: Any = KEEP_PAYLOAD) -> Schedule:  # noqa: A002
        """:meth:`SchedulerClient.reschedule`: ``PATCH /schedules/{id}``."""
        return await self._run(self._calls.reschedule(id, at, payload))

    async def cancel(self, id: str) -> Removed:  # noqa: A002 - the API's name
        """:meth:`SchedulerClient.cancel`: ``DELETE /schedules/{id}``."""
        return await self._run(self._calls.cancel(id))

    # --- periodic timers -------------------------------------------------------------------
    async def put_periodic(self, id: str, payload: Any, *, every: int | timedelta | None = None,  # noqa: A002
                           cron: str | None = None, time_zone: str | None = None, start_at: datetime | None = None,
                           end_at: datetime | None = None, target: str | None = None,
                           retry: RetryPolicy | None = None, group: str | None = None,
                           max_lateness: timedelta | None = None) -> Periodic:
        """:meth:`SchedulerClient.put_periodic`: ``PUT /periodic/{id}``."""
        return await self._run(self._calls.put_periodic(id, payload, every, cron, time_zone, start_at, end_at, target,
                                                        retry, group, max_lateness))

    async def get_periodic(self, id: str) -> Periodic:  # noqa: A002 - the API's name
        """:meth:`SchedulerClient.get_periodic`: ``GET /periodic/{id}``."""
        return await self._run(self._calls.get_periodic(id))

    async def pause_periodic(self, id: str) -> Periodic:  # noqa: A002 - the API's name
        """:meth:`SchedulerClient.pause_periodic`: ``PATCH /periodic/{id}`` with ``{"state": "PAUSED"}``."""
        return await self._run(self._calls.set_periodic_state(id, PeriodicStatus.PAUSED))

    async def resume_periodic(self, id: str) -> Periodic:  # noqa: A002 - the API's name
        """:meth:`SchedulerClient.resume_periodic`: ``PATCH /periodic/{id}`` with ``{"state": "ACTIVE"}``."""
        return await self._run(self._calls.set_periodic_state(id, PeriodicStatus.ACTIVE))

    async def delete_periodic(self, id: str) -> Removed:  # noqa: A002 - the API's name
        """:meth:`SchedulerClient.delete_periodic`: ``DELETE /periodic/{id}``."""
        return await self._run(self._calls.delete_periodic(id))

    def list_periodic(self, *, group: str | None = None, page_size: int | None = None) -> AsyncIterator[Periodic]:
        """:meth:`SchedulerClient.list_periodic`, iterated with ``async for``, fetching page after page."""
        return self._pages("listPeriodic", listing_query({"group": group, "limit": page_size}), Periodic.from_json)

    # --- groups ------------------------------------------------------------------------------
    async def cancel_group(self, group: str) -> GroupCancellation:
        """:meth:`SchedulerClient.cancel_group`: ``DELETE /groups/{group}``."""
        return await self._run(self._calls.cancel_group(group))

    # --- targets -----------------------------------------------------------------------------
    async def get_target(self, name: str, group: str | None = None) -> Target:
        """:meth:`SchedulerClient.get_target`: ``GET /targets/{name}`` (a group's counts with ``group``)."""
        return await self._run(self._calls.get_target(name, group))

    async def pause_target(self, name: str) -> Target:
        """:meth:`SchedulerClient.pause_target`: ``PATCH /targets/{name}`` with ``{"state": "PAUSED"}``."""
        return await self._run(self._calls.set_target_state(name, TargetState.PAUSED))

    async def resume_target(self, name: str) -> Target:
        """:meth:`SchedulerClient.resume_target`: ``PATCH /targets/{name}`` with ``{"state": "ACTIVE"}``."""
        return await self._run(self._calls.set_target_state(name, TargetState.ACTIVE))

    # --- the raw mode ------------------------------------------------------------------------
    async def raw(self, operation: str, body: Any = None, *, query: Mapping[str, Any] | None = None,
                  **parameters: str) -> Answer:
        """:meth:`SchedulerClient.raw`: the route of ``operation``, answered as it came."""
        return await self._run(self._calls.raw(route(operation, parameters, body, query, checked=False)))

    async def raw_request(self, method: str, path: str, body: Any = None) -> Answer:
        """:meth:`SchedulerClient.raw_request`: any method and path, answered as it came."""
        return await self._run(self._calls.raw(Send(method, path, body)))

    # --- listing (last: the method's name shadows the builtin in this class's body) ---------
    def list(self, *, status: ScheduleStatus | str | None = None, due_after: datetime | None = None,
             due_before: datetime | None = None, group: str | None = None,
             page_size: int | None = None) -> AsyncIterator[Schedule]:
        """:meth:`SchedulerClient.list`, iterated with ``async for``; a bad argument raises here, at the call."""
        query = schedules_query(status, due_after, due_before, page_size, group)
        return self._pages("listSchedules", query, Schedule.from_json)

    async def _pages(self, operation: str, query: dict[str, Any] | None,
                     build: Callable[[Mapping[str, Any]], T]) -> AsyncIterator[T]:
        while query is not None:
            items, query = await self._run(self._calls.page(operation, query, build))
            for item in items:
                yield item
