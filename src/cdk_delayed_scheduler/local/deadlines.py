"""The api function's timeout, kept as Lambda keeps it: nothing an invocation asks of DynamoDB is applied once
its time is up.

The runtime relies on it. A create sends its message before it writes its record, and the dispatcher takes a
message whose record is still missing for a stray only once the call that sent it can no longer write
(``STRAY_AFTER_MS``: the api function's timeout plus a margin). In Lambda, an invocation is stopped at its
timeout. The engine runs the api handler in a thread, which nothing stops: on a loaded machine a create could
write its record a minute after its message was dropped, and the schedule read ``QUEUED`` with nothing left to
deliver it.

So every AWS request an api invocation makes (from its own thread, or from a pool it submitted work to) carries
the instant its time is up (:data:`HEADER`, real epoch milliseconds), and the engine's moto refuses a DynamoDB
request that reaches its turn after that instant (``moto_patches``, correction 14): as if the function had been
stopped before it was sent.
"""

from __future__ import annotations

import contextvars
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

HEADER = "x-local-invocation-deadline-ms"
_DEADLINE_MS: contextvars.ContextVar[int | None] = contextvars.ContextVar("api_invocation_deadline_ms", default=None)


def real_now_ms() -> int:
    """The wall clock, on which Lambda stops an invocation (the kit's simulated clock moves only the timers')."""
    return time.time_ns() // 1_000_000


def within_timeout(handler: Callable[..., Any], timeout_seconds: float) -> Callable[..., Any]:
    """``handler`` (an api invocation: ``(event, context)``) with its AWS requests marked by the instant its
    ``timeout_seconds`` are up."""

    def invoke(event: Any, context: Any = None) -> Any:
        running = _DEADLINE_MS.set(real_now_ms() + int(timeout_seconds * 1000))
        try:
            return handler(event, context)
        finally:
            _DEADLINE_MS.reset(running)

    return invoke


def expired(headers: Any) -> bool:
    """Whether a request with these headers comes from an invocation whose time is up (in moto)."""
    deadline = headers.get(HEADER)
    return deadline is not None and real_now_ms() > int(deadline)


class DeadlineLayer:
    """Marks the requests of the invocations :func:`within_timeout` wraps, until :meth:`uninstall`.

    A task submitted to a worker pool runs in a copy of the submitter's context (the runtime writes a batch's
    records from a pool), so its requests carry its invocation's deadline, as they would in its own process.
    """

    def __init__(self) -> None:
        self._restore: Callable[[], None] | None = None

    def install(self) -> None:
        from botocore.endpoint import Endpoint  # noqa: PLC0415 - botocore is loaded with the runtime

        send, submit = Endpoint._send, ThreadPoolExecutor.submit

        def _send(endpoint: Any, request: Any) -> Any:
            deadline = _DEADLINE_MS.get()
            if deadline is not None:
                request.headers[HEADER] = str(deadline)
            return send(endpoint, request)

        def _submit(pool: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
            return submit(pool, contextvars.copy_context().run, fn, *args, **kwargs)

        Endpoint._send = _send
        ThreadPoolExecutor.submit = _submit  # type: ignore[assignment]

        def restore() -> None:
            Endpoint._send = send
            ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]

        self._restore = restore

    def uninstall(self) -> None:
        if self._restore is not None:
            self._restore()
            self._restore = None
