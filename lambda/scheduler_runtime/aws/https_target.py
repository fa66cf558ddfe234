"""Delivery to an HTTPS endpoint: ``{"type": "https", "url": ..., "secretArn": ..., "timeoutSeconds": n,
"headers": {...}?}``.

One ``POST`` of the envelope as compact UTF-8 JSON (:func:`~scheduler_runtime.core.signing.envelope_body`),
signed with the secret in ``secretArn`` (:mod:`scheduler_runtime.core.signing`), with the target's own
``headers`` beside the runtime's (which they never override).

- A 2xx answer is the delivery. A 429 or a 503 says slow down (:class:`Throttled`, with its ``Retry-After``
  in seconds or as a date): a target with flow control is held back that long. 408, 429, a 5xx, a timeout (``timeoutSeconds``, for the connection
  and for the answer) or a connection error is a failed delivery, retried through the delayer queue.
  Any other status (a 3xx included: redirects are never followed; a 4xx) is :class:`Undeliverable`,
  parked at once, with the status as the reason. The answer's body is read (at most
  :data:`DRAIN_LIMIT_BYTES`): never logged nor part of a reason, its start is the answer a ``DELIVERED``
  outcome event carries.
- Connections are kept alive per (scheme, host, port) in a small thread-safe pool of idle ones
  (:class:`ConnectionPool`): a batch delivers on several threads at once, and each takes an idle
  connection or opens one, so a warm sandbox makes a TLS handshake only when all are busy. A connection
  that failed, or whose answer asked to close it, is dropped.
- A pooled connection that the server closed while it was idle fails before any byte of the answer (the
  keep-alive race). The request is then sent once more, at once, on a fresh connection. The server may
  have received the first one before it closed: the receiver then gets a duplicate with the same
  ``dedupeKey`` and attempt, which it must accept anyway (every target is at-least-once).
- The secret (its ``SecretString``, whose UTF-8 bytes are the key) is read once per sandbox and kept
  :data:`~scheduler_runtime.core.contract.WEBHOOK` ``.secret_cache_seconds``, so a rotation is used
  within that time without a deploy. A failed first read is retried, except a denied permission or a
  secret that does not exist, which park at once; a refresh that fails for now keeps the value read
  before for :data:`STALE_RETRY_SECONDS` more.
- TLS verifies the certificate against the system's trust store (``ssl.create_default_context``; it
  honours ``SSL_CERT_FILE`` and ``SSL_CERT_DIR``). ``http://`` is taken only for a loopback host
  (``127.0.0.1``, ``::1``, ``localhost``): the local engine's receivers.
"""

from __future__ import annotations

import email.utils
import http.client
import os
import re
import socket
import ssl
import threading
from typing import Any, Callable, Mapping
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from ..clock import REAL
from ..core.contract import WEBHOOK
from ..core.outcomes import ANSWER_MAX_CHARS, answer_summary
from ..core.signing import envelope_body, webhook_headers
from .target_errors import DeliveryError, Throttled, Undeliverable

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})
"""The hosts an ``http://`` URL may name."""
RETRIED_STATUSES = frozenset({408, 429})
"""Statuses below 500 that are retried (every 5xx is too)."""
SLOW_DOWN_STATUSES = frozenset({429, 503})
"""Statuses that say slow down (:class:`Throttled`), with ``Retry-After`` when the server says how long."""
RETRY_AFTER_MAX_SECONDS = 86_400.0
"""The longest ``Retry-After`` taken as it is; a longer one is cut to it."""
SECRET_PARKED_AT_ONCE = frozenset({"AccessDeniedException", "ResourceNotFoundException"})
"""Error codes of ``GetSecretValue`` that park the envelope at once; every other one is retried."""
DRAIN_LIMIT_BYTES = 64 * 1024
"""The most of an answer's body read (and dropped) to keep its connection; past it the connection is closed."""
MAX_IDLE_PER_HOST = 10
"""Idle connections kept per (scheme, host, port): the most deliveries one dispatcher batch runs at once."""
MAX_IDLE_SECONDS = 30.0
"""An idle connection older than this is closed rather than reused (servers close idle ones too)."""
STALE_RETRY_SECONDS = 30.0
"""After a failed refresh of a cached secret, how long the value read before is used until the next try."""
_CLOSED_WHILE_IDLE = (ConnectionError, ssl.SSLEOFError, ssl.SSLZeroReturnError)
"""How sending on, or reading the status line from, a connection the server closed fails: a reset,
a broken pipe, no status line at all (``http.client.RemoteDisconnected``), or TLS's end of stream."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_RESERVED = frozenset(name.lower() for name in (*WEBHOOK.own_headers(), "Content-Length", "Host"))
Connection = http.client.HTTPConnection


def real_seconds() -> float:
    """The real time in epoch seconds: what a receiver checks a signature against, and what a server's idle
    connection and a secret's rotation age by. Not the runtime's clock, which the testing kit moves forward."""
    return REAL.now_ms() / 1000


class ConnectionPool:
    """Idle keep-alive connections by (scheme, host, port), shared by every thread of a sandbox."""

    def __init__(self, max_idle: int = MAX_IDLE_PER_HOST, max_idle_seconds: float = MAX_IDLE_SECONDS,
                 clock: Callable[[], float] = real_seconds) -> None:
        self._idle: dict[tuple[str, str, int], list[tuple[Connection, float]]] = {}
        self._lock = threading.Lock()
        self.max_idle, self.max_idle_seconds, self.clock = max_idle, max_idle_seconds, clock

    def take(self, key: tuple[str, str, int]) -> Connection | None:
        """The most recently used idle connection to ``key``, or ``None`` (the caller opens one)."""
        stale: list[Connection] = []
        taken: Connection | None = None
        with self._lock:
            idle = self._idle.get(key, [])
            while idle:
                connection, since = idle.pop()
                if self.clock() - since <= self.max_idle_seconds:
                    taken = connection
                    break
                stale.append(connection)
        for connection in stale:
            connection.close()
        return taken

    def give_back(self, key: tuple[str, str, int], connection: Connection) -> None:
        """Keep ``connection`` for the next delivery to ``key`` (closed when the pool is full)."""
        with self._lock:
            idle = self._idle.setdefault(key, [])
            if len(idle) < self.max_idle:
                idle.append((connection, self.clock()))
                return
        connection.close()

    def clear(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection, _ in connections:
                connection.close()


class SecretCache:
    """Signing secrets read from Secrets Manager, by ARN, each kept ``ttl_s`` seconds of ``clock``. The
    threads of a batch that all need a secret not (or no longer) cached wait for one read of it."""

    def __init__(self, ttl_s: float = WEBHOOK.secret_cache_seconds,
                 clock: Callable[[], float] = real_seconds) -> None:
        self._values: dict[str, tuple[bytes, float]] = {}
        self._reads: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self.ttl_s, self.clock = ttl_s, clock

    def get(self, client: Any, secret_arn: str) -> bytes:
        key = self._fresh(secret_arn)
        if key is not None:
            return key
        with self._lock:
            read = self._reads.setdefault(secret_arn, threading.Lock())
        with read:
            key = self._fresh(secret_arn)  # another thread may have read it meanwhile
            if key is None:
                key, read_at = self._read(client, secret_arn)
                with self._lock:
                    self._values[secret_arn] = (key, read_at)
        return key

    def _read(self, client: Any, secret_arn: str) -> tuple[bytes, float]:
        """The secret and the time to count its age from. A refresh that fails for now (throttled, a 5xx)
        keeps the value read before, and is tried again :data:`STALE_RETRY_SECONDS` later."""
        try:
            return _read_secret(client, secret_arn), self.clock()
        except Undeliverable:
            raise
        except DeliveryError:
            with self._lock:
                cached = self._values.get(secret_arn)
            if cached is None:
                raise
            return cached[0], self.clock() - self.ttl_s + STALE_RETRY_SECONDS

    def _fresh(self, secret_arn: str) -> bytes | None:
        with self._lock:
            cached = self._values.get(secret_arn)
        return cached[0] if cached is not None and self.clock() - cached[1] < self.ttl_s else None

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


# Both clocks are the wall clock, not time.monotonic: a Lambda sandbox frozen between invocations may
# not count the frozen time on its monotonic clock, and a secret would then be kept past its 300 s.
POOL = ConnectionPool()
SECRETS = SecretCache()
_tls: dict[tuple[str | None, str | None], ssl.SSLContext] = {}
_tls_lock = threading.Lock()


def deliver_https(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> dict[str, Any]:
    """POST ``envelope`` to the target's URL, signed; raise :class:`DeliveryError` or :class:`Undeliverable`."""
    scheme, host, port, path, shown = _address(str(target["url"]))
    secret = SECRETS.get(ctx.client("secretsmanager"), str(target["secretArn"]))
    body = envelope_body(envelope)
    headers = _own_headers(target.get("headers") or {}, shown)
    # Signed at the real time, not the runtime's clock (ctx.clock): the testing kit moves that clock forward, and
    # a receiver checks the timestamp against its own real clock.
    headers.update(webhook_headers(envelope, body, secret, real_seconds(), WEBHOOK))
    timeout = float(target["timeoutSeconds"])
    status, start, retry_after = _post((scheme, host, port), path, body, headers, timeout, shown)
    if 200 <= status < 300:
        return answer_summary(status=status, body=start.decode("utf-8", "replace"))
    if status in SLOW_DOWN_STATUSES:
        raise Throttled(f"{shown} answered {status}", retry_after_seconds(retry_after, real_seconds()))
    if status in RETRIED_STATUSES or status >= 500:
        raise DeliveryError(f"{shown} answered {status}")
    raise Undeliverable(f"{shown} answered {status}")


def _own_headers(given: Mapping[str, Any], shown: str) -> dict[str, str]:
    """The target's own headers, less those the runtime sets; one that no request can carry (a name that
    is not an RFC 9110 token, a value with a line break) parks at once, named but its value not shown."""
    headers = {}
    for name, value in given.items():
        text = str(value)
        if not _TOKEN.fullmatch(str(name)) or any(c in text for c in "\r\n\0"):
            raise Undeliverable(f"{shown}: the target's header {str(name)[:64]!r} cannot be sent (a name must be a "
                                "token, a value a single line)")
        if str(name).lower() not in _RESERVED:
            headers[str(name)] = text
    return headers


def _address(url: str) -> tuple[str, str, int, str, str]:
    """``(scheme, host, port, path with query, the URL as shown in a reason: without its query)``."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), parts.hostname or ""
    shown = f"{scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"
    if scheme not in ("https", "http") or not host:
        raise Undeliverable(f"{shown}: the URL must be https://<host>/...")
    if scheme == "http" and host.lower() not in LOOPBACK_HOSTS:
        raise Undeliverable(f"{shown}: http:// is allowed only to a loopback host "
                            f"({', '.join(sorted(LOOPBACK_HOSTS))}); use https://")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise Undeliverable(f"{shown}: {exc}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, port, path, shown


def _post(key: tuple[str, str, int], path: str, body: bytes, headers: dict[str, str], timeout: float,
          shown: str) -> tuple[int, bytes, str | None]:
    """Send the request on a pooled connection (again on a fresh one if the pooled one turns out
    closed before any byte of the answer); the answer's status, the start of its body and its ``Retry-After``."""
    pooled = POOL.take(key)
    connection = pooled or _open(key, timeout)
    try:
        try:
            return _exchange(key, connection, path, body, headers, timeout)
        except _CLOSED_WHILE_IDLE:
            connection.close()
            if pooled is None:
                raise
        connection = _open(key, timeout)  # the keep-alive race: once more, on a new connection
        return _exchange(key, connection, path, body, headers, timeout)
    except (TimeoutError, socket.timeout):
        connection.close()
        raise DeliveryError(f"{shown} did not answer within {timeout:g} s") from None
    except (OSError, http.client.HTTPException) as exc:
        connection.close()
        raise DeliveryError(f"{shown}: {type(exc).__name__}: {exc}") from None
    except BaseException:
        connection.close()
        raise


def _exchange(key: tuple[str, str, int], connection: Connection, path: str, body: bytes, headers: dict[str, str],
              timeout: float) -> tuple[int, bytes, str | None]:
    """One request and its answer (its status, the start of its body and its ``Retry-After``); the connection goes
    back to the pool when it can carry another."""
    connection.timeout = timeout
    if connection.sock is not None:
        connection.sock.settimeout(timeout)
    connection.request("POST", path, body=body, headers=headers)
    response = connection.getresponse()
    start = response.read(DRAIN_LIMIT_BYTES)[:ANSWER_MAX_CHARS]  # never logged nor part of a reason
    if response.isclosed() and not response.will_close:
        POOL.give_back(key, connection)
    else:  # the server asked to close, or the body was larger than we drain
        response.close()
        connection.close()
    return response.status, start, response.getheader("Retry-After")


def retry_after_seconds(value: str | None, now_s: float) -> float | None:
    """A ``Retry-After`` header as seconds from now (RFC 9110: a number of seconds, or an HTTP date), at most
    :data:`RETRY_AFTER_MAX_SECONDS`; None when there is none or it cannot be read."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return min(float(text), RETRY_AFTER_MAX_SECONDS)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return min(max(0.0, when.timestamp() - now_s), RETRY_AFTER_MAX_SECONDS)


def _open(key: tuple[str, str, int], timeout: float) -> Connection:
    scheme, host, port = key
    if scheme == "http":
        return http.client.HTTPConnection(host, port, timeout=timeout)
    return http.client.HTTPSConnection(host, port, timeout=timeout, context=_tls_context())


def _tls_context() -> ssl.SSLContext:
    """One verifying client context per trust store (``SSL_CERT_FILE``/``SSL_CERT_DIR``): building one
    reads the whole CA bundle."""
    where = (os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    context = _tls.get(where)
    if context is None:
        with _tls_lock:
            context = _tls.get(where) or _tls.setdefault(where, ssl.create_default_context())
    return context


def _read_secret(client: Any, secret_arn: str) -> bytes:
    try:
        answer = client.get_secret_value(SecretId=secret_arn)
    except ClientError as exc:
        code = exc.response.get("Error", {}).get("Code")
        message = f"signing secret {secret_arn}: {code}: {exc.response.get('Error', {}).get('Message', '')}"
        if code in SECRET_PARKED_AT_ONCE:
            raise Undeliverable(message) from None
        raise DeliveryError(message) from None
    text = answer.get("SecretString")
    if not text:
        raise Undeliverable(f"signing secret {secret_arn} holds no SecretString (a text secret signs the requests)")
    return str(text).encode("utf-8")
