"""The client's typed errors, one class per kind of answer the scheduler gives."""

from __future__ import annotations

from typing import Any


class SchedulerError(Exception):
    """An answer other than success, or a call that got no answer.

    ``status`` is the HTTP status (or the one the api function answered on a direct invoke;
    ``None`` when no answer came), ``message`` the server's ``message``, and ``field`` the
    request field it names (``None`` when it names none).
    """

    def __init__(self, status: int | None, message: str, field: str | None = None) -> None:
        super().__init__(f"{status}: {message}" if status is not None else message)
        self.status = status
        self.message = message
        self.field = field

    @property
    def retryable(self) -> bool:
        """Whether the same call may succeed when sent again: throttling and server errors."""
        return retryable_status(self.status)


class ValidationError(SchedulerError):
    """400: the request breaks a rule; ``field`` names the field (``dueAt``, ``schedules[3].id``)."""


class AccessDeniedError(SchedulerError):
    """401 or 403: the request was not signed, or its principal may not call the API or invoke the function."""


class NotFoundError(SchedulerError):
    """404: no schedule or periodic timer has that id (or the route, or function, does not exist)."""


class ConflictError(SchedulerError):
    """409: the id exists with a different body, or the schedule has fired or failed and can no longer be cancelled."""


class PayloadTooLargeError(SchedulerError):
    """413: the payload serializes to more than 256 KiB."""


class RequestError(SchedulerError):
    """Any other 4xx (405, for example): the request is wrong and sending it again will not help."""


class ThrottledError(SchedulerError):
    """429 (or Lambda's ``TooManyRequestsException``): retried with backoff, raised once the attempts run out."""


class ServerError(SchedulerError):
    """5xx: the scheduler failed; retried with backoff, raised once the attempts run out."""


class FunctionError(ServerError):
    """A direct invoke whose function raised or timed out (Lambda's ``FunctionError``); ``error_type`` is Lambda's."""

    def __init__(self, message: str, error_type: str | None = None) -> None:
        super().__init__(500, message)
        self.error_type = error_type


class TransportError(SchedulerError):
    """The request got no answer (connection refused or reset, timeout); ``status`` is ``None``.

    Not retried by the client: sending a create again is safe (ids are idempotency keys).
    """

    def __init__(self, message: str) -> None:
        super().__init__(None, message)


def retryable_status(status: int | None) -> bool:
    """Whether the same call may succeed when sent again after an answer with ``status``: 429 and 5xx (``None``, no
    answer, is not retried by the client: :class:`TransportError`)."""
    return status is not None and (status == 429 or status >= 500)


_BY_STATUS: dict[int, type[SchedulerError]] = {
    400: ValidationError, 401: AccessDeniedError, 403: AccessDeniedError, 404: NotFoundError,
    409: ConflictError, 413: PayloadTooLargeError, 429: ThrottledError,
}


def error_for(status: int, body: Any) -> SchedulerError:
    """The typed error for an answer with HTTP ``status`` and JSON ``body`` (``{"message", "field"}``)."""
    message, field = f"HTTP {status}", None
    if isinstance(body, dict):
        message = str(body.get("message") or body.get("Message") or message)
        field = body.get("field") if isinstance(body.get("field"), str) else None
    elif isinstance(body, str) and body.strip():
        message = body.strip()[:500]
    kind = _BY_STATUS.get(status) or (ServerError if status >= 500 else RequestError)
    return kind(status, message, field)
