"""The asyncio client's HTTP transport: the requests :class:`HttpEndpoint` builds and signs, sent by httpx.

Imported only when an :class:`~._async_client.AsyncSchedulerClient` is made for the HTTP API, so
``import cdk_delayed_scheduler.client`` never imports httpx (the ``async`` extra).
"""

from __future__ import annotations

import asyncio
from typing import Any

import botocore.session
import httpx

from ._auth import HeaderAuth
from ._errors import TransportError
from ._transport import HttpEndpoint, json_or_text


class AsyncHttpTransport:
    """Requests to the API over one httpx pool of kept-alive connections (HTTP/1.1).

    Building and signing a request is computation, done on the event loop; the one blocking step
    signing can take, botocore refreshing expiring credentials (an STS or metadata call), runs on a
    worker thread. Proxies come from the environment (httpx's ``trust_env``), as for the sync client.
    """

    def __init__(self, api_url: str, session: botocore.session.Session, region: str | None, timeout: float,
                 sign: bool | None, auth: HeaderAuth | None) -> None:
        self.endpoint = HttpEndpoint(api_url, session, region, sign, auth)
        self.region = self.endpoint.region
        self._http = httpx.AsyncClient(timeout=timeout)

    async def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]:
        auth = self.endpoint.auth
        auth_headers = None if auth is None else await auth.headers_async()
        if self.endpoint.refresh_due():
            await asyncio.to_thread(self.endpoint.refresh)
        request = self.endpoint.prepare(method, path, body, auth_headers)
        try:
            response = await self._http.request(request.method, request.url, headers=dict(request.headers.items()),
                                                content=request.body)
        except httpx.HTTPError as exc:
            raise TransportError(f"{method} {self.endpoint.base}{path}: {type(exc).__name__}: {exc}") from exc
        return response.status_code, json_or_text(response.content)

    async def aclose(self) -> None:
        await self._http.aclose()
