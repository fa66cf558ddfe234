"""The HTTP client's ways to prove who calls: SigV4 (the default), an API key, or a JWT.

A scheduler deployed with ``ApiAuthorization.api_key()`` (a REST API) reads the key from the
``x-api-key`` header; one deployed with ``ApiAuthorization.cognito(pool)`` reads a JWT from the
``Authorization`` header. The token is sent exactly as the provider returns it: API Gateway's HTTP
API JWT authorizer takes it with or without a ``Bearer `` prefix, and a REST API's Cognito user
pool authorizer takes the bare token, so a bare token suits both.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Union

TokenProvider = Callable[[], str]
"""Called before every request; answers the JWT to send (a refreshed one once the last has expired)."""
AsyncTokenProvider = Callable[[], Union[str, Awaitable[str]]]
"""The asyncio client's :data:`TokenProvider`: a plain callable, or an async one whose answer is awaited."""
API_KEY_HEADER = "x-api-key"
TOKEN_HEADER = "Authorization"


@dataclass(frozen=True)
class ApiKey:
    """Sends ``x-api-key: <key>`` with every request."""

    key: str

    def headers(self) -> dict[str, str]:
        return {API_KEY_HEADER: self.key}

    async def headers_async(self) -> dict[str, str]:
        return self.headers()


@dataclass(frozen=True)
class Token:
    """Sends ``Authorization: <token>`` with every request, asking ``provider`` for the token each time."""

    provider: Callable[[], Any]
    """A :data:`TokenProvider`, or for the asyncio client an :data:`AsyncTokenProvider`."""

    def headers(self) -> dict[str, str]:
        token = self.provider()
        if inspect.isawaitable(token):
            _close(token)
            raise ValueError("token returned an awaitable: an async token provider needs AsyncSchedulerClient")
        return self._header(token)

    async def headers_async(self) -> dict[str, str]:
        token = self.provider()
        return self._header(await token if inspect.isawaitable(token) else token)

    @staticmethod
    def _header(token: object) -> dict[str, str]:
        if not isinstance(token, str) or not token.strip():
            raise ValueError(f"token must return the JWT as a non-empty str, it returned "
                             f"{'an empty str' if isinstance(token, str) else type(token).__name__}")
        return {TOKEN_HEADER: token}


def _close(awaitable: Awaitable[Any]) -> None:
    """Close a coroutine that will never be awaited, so that Python does not warn it was never awaited."""
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()


HeaderAuth = Union[ApiKey, Token]


def header_auth(api_key: str | None, token: Callable[[], Any] | None, sign: bool | None) -> HeaderAuth | None:
    """The API key or token auth asked for, or ``None`` for SigV4 (signed or not, as ``sign`` says).

    ``ValueError`` naming both arguments when more than one way is asked for (``sign=True`` with
    ``api_key`` or ``token``); ``sign=False`` goes with either, as neither signs.
    """
    asked = [name for name, given in (("api_key", api_key is not None), ("token", token is not None),
                                      ("sign=True", sign is True)) if given]
    if len(asked) > 1:
        raise ValueError(f"give one of api_key, token or sign=True, not both {asked[0]} and {asked[1]}")
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key.strip():
            raise ValueError(f"api_key must be a non-empty str, got "
                             f"{'an empty one' if isinstance(api_key, str) else type(api_key).__name__}")
        return ApiKey(api_key)
    if token is not None:
        if not callable(token):
            raise TypeError(f"token must be a callable that returns the JWT (called before each request, so a "
                            f"refreshed token is used), got {type(token).__name__}")
        return Token(token)
    return None
