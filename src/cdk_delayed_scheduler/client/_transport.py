"""The client's two ways to reach the api function, and its retry backoff.

- :class:`HttpTransport`: HTTP(S) requests to the API, signed with SigV4 for ``execute-api`` (unsigned
  when there are no credentials, or when asked: a local engine needs none), or carrying an API key
  or a JWT instead (:mod:`._auth`); :class:`HttpEndpoint` builds and signs them, for the asyncio
  client's transport too.
- :class:`InvokeTransport`: ``lambda:InvokeFunction`` of the api function with the direct-invoke
  event ``{"method", "path", "body"}``, answered ``{"statusCode", "body"}``.

Both answer ``(status, body)`` with the body as a JSON value, and raise a :class:`SchedulerError`
only when there is no answer to read (no connection, Lambda refused the invoke, the function crashed).
"""

from __future__ import annotations

import ipaddress
import json
import random
import re
import warnings
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import botocore.exceptions
import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSPreparedRequest, AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials, RefreshableCredentials
from botocore.httpsession import URLLib3Session
from botocore.utils import get_environ_proxies

from ._auth import HeaderAuth
from ._errors import FunctionError, ServerError, ThrottledError, TransportError, error_for

_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?$")
_FUNCTION_ARN = re.compile(r"^arn:aws[a-z-]*:lambda:(?P<region>[a-z0-9-]+):")


class UnsignedRequestsWarning(UserWarning):
    """A client sends unsigned requests because it found no AWS credentials (``sign=False`` asks for them without this)."""


class PlaceholderCredentialsWarning(UserWarning):
    """A direct-invoke client found no AWS credentials and signs its invokes of a local endpoint (127.0.0.1 or
    localhost: the local engine, which accepts any) with placeholder ones."""


_PLACEHOLDER_CREDENTIALS = {"aws_access_key_id": "local", "aws_secret_access_key": "local"}


class Transport(Protocol):
    """One request to the api function, answered as ``(HTTP status, JSON body)``."""

    def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]: ...


def _region(explicit: str | None, inferred: str | None, session: botocore.session.Session) -> str:
    region = _region_if_any(explicit, inferred, session)
    if not region:
        raise ValueError("no AWS region: pass region=, or configure one (AWS_REGION, AWS_DEFAULT_REGION or a profile)")
    return region


def _region_if_any(explicit: str | None, inferred: str | None, session: botocore.session.Session) -> str | None:
    region = explicit or inferred or session.get_config_variable("region")
    return str(region) if region else None


def json_or_text(raw: bytes) -> Any:
    text = raw.decode("utf-8", "replace")
    try:
        return json.loads(text) if text.strip() else None
    except ValueError:
        return text  # API Gateway's own error pages may be plain text


class HttpEndpoint:
    """The HTTP API's address, region and credentials, and its requests built and signed: no I/O.

    :class:`HttpTransport` sends what it builds with botocore's ``URLLib3Session``, and the
    asyncio client's transport with httpx. ``sign``: ``True`` signs (no credentials raise
    ``NoCredentialsError``), ``False`` never signs, ``None`` signs when the session has
    credentials and otherwise sends unsigned requests, with an :class:`UnsignedRequestsWarning`
    that names the line that made the client (three frames up: the transport, the client, the
    caller). With ``auth`` (an API key or a token), or ``sign=False``, it never signs, and needs no
    region (``region`` is ``None`` when none is given or configured).
    """

    def __init__(self, api_url: str, session: botocore.session.Session, region: str | None = None,
                 sign: bool | None = None, auth: HeaderAuth | None = None) -> None:
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"api_url must be an http(s) URL, got {api_url!r}")
        host = _EXECUTE_API_HOST.match(parts.hostname)
        inferred = host.group("region") if host else None
        self.region: str | None = (_region_if_any(region, inferred, session) if auth is not None or sign is False
                                   else _region(region, inferred, session))
        self.base = api_url.rstrip("/")
        self.auth = auth
        self.credentials: Credentials | None = (session.get_credentials() if sign is not False and auth is None
                                                else None)
        if self.credentials is None and sign:
            raise botocore.exceptions.NoCredentialsError()
        if self.credentials is None and sign is None and auth is None:
            warnings.warn(f"no AWS credentials found: requests to {self.base} go unsigned, and an API that requires "
                          "SigV4 refuses them (403); sign=False sends them unsigned without this warning",
                          UnsignedRequestsWarning, stacklevel=4)  # the line that made the client

    def refresh_due(self) -> bool:
        """Whether signing the next request would first refresh the credentials (botocore does that by blocking I/O)."""
        return isinstance(self.credentials, RefreshableCredentials) and bool(self.credentials.refresh_needed())

    def refresh(self) -> None:
        """Refresh the credentials now if they are due (blocking), so that the next signature need not."""
        if self.credentials is not None:
            self.credentials.get_frozen_credentials()

    def prepare(self, method: str, path: str, body: Any | None,
                auth_headers: dict[str, str] | None = None) -> AWSPreparedRequest:
        """The request to send: JSON body (``bytes`` sent as they are), the API key or token's ``auth_headers``, or a
        SigV4 signature."""
        data = body if body is None or isinstance(body, bytes) else json.dumps(body, ensure_ascii=False,
                                                                                allow_nan=False).encode("utf-8")
        headers = {"Content-Type": "application/json"} if data is not None else {}
        headers.update(auth_headers or {})
        request = AWSRequest(method=method, url=self.base + path, data=data, headers=headers)
        if self.credentials is not None and self.region is not None:
            SigV4Auth(self.credentials.get_frozen_credentials(), "execute-api", self.region).add_auth(request)
        return request.prepare()


class HttpTransport:
    """Requests to the API over one pool of kept-alive connections, built and signed by an :class:`HttpEndpoint`."""

    def __init__(self, api_url: str, session: botocore.session.Session, region: str | None = None,
                 timeout: float = 30.0, sign: bool | None = None, auth: HeaderAuth | None = None) -> None:
        self.endpoint = HttpEndpoint(api_url, session, region, sign, auth)
        self.region = self.endpoint.region
        self._http = URLLib3Session(proxies=get_environ_proxies(api_url), timeout=timeout)

    def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]:
        auth = self.endpoint.auth
        request = self.endpoint.prepare(method, path, body, None if auth is None else auth.headers())
        try:
            response = self._http.send(request)
        except botocore.exceptions.BotoCoreError as exc:
            raise TransportError(f"{method} {self.endpoint.base}{path}: {exc}") from exc
        return response.status_code, json_or_text(response.content)


class InvokeTransport:
    """Direct invokes of the api function through botocore's ``lambda`` client.

    The client honours ``AWS_ENDPOINT_URL_LAMBDA`` / ``AWS_ENDPOINT_URL`` and the session's
    configuration, and makes one attempt per call: :func:`send_with_retries` does the retrying.
    """

    def __init__(self, function: str, session: botocore.session.Session, region: str | None = None, *,
                 caller_frames: int = 3) -> None:
        """``caller_frames``: how far up the line that made the client is (a warning names it)."""
        arn = _FUNCTION_ARN.match(function)
        self.region = _region(region, arn.group("region") if arn else None, session)
        self.function = function
        config = Config(retries={"total_max_attempts": 1})
        self._lambda = session.create_client("lambda", region_name=self.region, config=config)
        endpoint = self._lambda.meta.endpoint_url
        if session.get_credentials() is None and _is_loopback(endpoint):
            warnings.warn(f"no AWS credentials found: invokes of {function} at {endpoint} are signed with placeholder "
                          "credentials, which the local engine accepts", PlaceholderCredentialsWarning,
                          stacklevel=caller_frames)
            self._lambda = session.create_client("lambda", region_name=self.region, config=config,
                                                 **_PLACEHOLDER_CREDENTIALS)

    def send(self, method: str, path: str, body: Any | None) -> tuple[int, Any]:
        event: dict[str, Any] = {"method": method, "path": path}
        if body is not None:
            event["body"] = body.decode("utf-8") if isinstance(body, bytes) else body  # bytes: JSON text
        payload = json.dumps(event, allow_nan=False).encode("utf-8")
        try:
            response = self._lambda.invoke(FunctionName=self.function, Payload=payload)
        except botocore.exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500)
            message = f"lambda:Invoke of {self.function}: {error.get('Code')}: {error.get('Message')}"
            if error.get("Code") == "TooManyRequestsException":
                raise ThrottledError(429, message) from exc
            raise error_for(status, {"message": message}) from exc
        except botocore.exceptions.BotoCoreError as exc:
            raise TransportError(f"lambda:Invoke of {self.function}: {exc}") from exc
        answer = json_or_text(response["Payload"].read())
        if response.get("FunctionError"):
            details = answer if isinstance(answer, dict) else {}
            raise FunctionError(f"the function failed: {details.get('errorMessage') or answer}", details.get("errorType"))
        if not isinstance(answer, dict) or not isinstance(answer.get("statusCode"), int):
            raise ServerError(502, f"the function answered {str(answer)[:200]!r}, not {{\"statusCode\", \"body\"}}")
        return answer["statusCode"], answer.get("body")


def _is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine's loopback interface (``localhost``, 127.0.0.0/8 or ::1)."""
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with full jitter: before retry ``n`` (1-based), sleep up to ``min(cap, base * 2**(n-1))`` s."""

    max_attempts: int = 4
    base: float = 0.1
    cap: float = 5.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")

    def delay(self, retry: int) -> float:
        """How long to wait before retry ``retry``: a random time up to its cap."""
        return random.uniform(0, min(self.cap, self.base * 2 ** (retry - 1)))
