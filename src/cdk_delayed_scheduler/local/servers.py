"""The two HTTP servers of the engine, both on 127.0.0.1.

- :class:`ApiServer` serves the scheduler's HTTP API by turning each request
  into an HTTP API (payload format 2.0) event for the runtime's api handler.
- :class:`LambdaEndpoint` answers Lambda's Invoke API for local functions, so
  the dispatcher's real Lambda target delivers to a callable of ours.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import re
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qsl, unquote, urlsplit

from .._contract import contract
from .._runtime_asset import runtime_asset_path
from .signature import signature_problem

logger = logging.getLogger("cdk_delayed_scheduler.local")
MAX_REQUEST_BYTES = 10 * 1024 * 1024  # API Gateway's payload limit
POLL_SECONDS = 0.02
"""How often a server's loop checks whether it should stop (what ``stop()`` waits at most)."""
OPENAPI_PATH = "/openapi.json"
"""Where the API server serves the OpenAPI document (no signature needed): the engine's, not a route of the API."""


class _QuietHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle's algorithm the body
    # would wait for the client's delayed ACK (up to 40 ms on loopback).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - BaseHTTPRequestHandler's name
        logger.debug("%s %s", self.address_string(), format % args)

    def _read_body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_REQUEST_BYTES:
            return None
        return self.rfile.read(length) if length else b""

    def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 overflows when a burst opens a pool's worth of connections
    # at once; the kernel then resets some of them, and their first request fails.
    request_queue_size = 1024

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up is routine; anything else is logged, not printed raw."""
        logger.debug("connection from %s ended with an error", client_address, exc_info=True)


def host_and_port(httpd: Any) -> tuple[str, int]:
    """Where a server on 127.0.0.1 listens."""
    host, port = httpd.server_address[:2]
    return str(host), int(port)


def _base_url(httpd: Any) -> str:
    host, port = host_and_port(httpd)
    return f"http://{host}:{port}"


class _Server:
    def __init__(self, handler_class: type, port: int) -> None:
        self._httpd = _QuietServer(("127.0.0.1", port), handler_class)
        # A short poll interval: shutdown() waits for the serving loop's next poll (0.5 s by default).
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": POLL_SECONDS},
                                        name=handler_class.__name__, daemon=True)

    @property
    def url(self) -> str:
        return _base_url(self._httpd)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class ApiServer(_Server):
    """The HTTP API; with ``require_signature``, a request without well-formed SigV4 headers gets 403
    (the signature itself is not verified: see :mod:`.signature`). ``GET /openapi.json`` answers the
    API's OpenAPI document, signed or not."""

    def __init__(self, api_handler: Callable[[dict[str, Any], Any], dict[str, Any]], port: int = 0, require_signature: bool = False) -> None:
        class Handler(_QuietHandler):
            def _serve(self) -> None:
                raw = self._read_body()
                if raw is None:
                    body = json.dumps({"message": f"request body exceeds {MAX_REQUEST_BYTES} bytes", "field": "body"})
                    self._reply(413, body.encode(), {"Content-Type": "application/json"})
                    return
                if self.command == "GET" and urlsplit(self.path).path == OPENAPI_PATH:
                    self._reply(200, openapi_document(_base_url(self.server)).encode("utf-8"), {"Content-Type": "application/json"})
                    return
                problem = signature_problem({k.lower(): v for k, v in self.headers.items()}) if require_signature else None
                if problem:
                    body = json.dumps({"message": problem, "field": None})
                    self._reply(403, body.encode(), {"Content-Type": "application/json"})
                    return
                response = api_handler(_http_api_event(self.command, self.path, dict(self.headers), raw), None)
                headers = dict(response.get("headers") or {})
                self._reply(int(response["statusCode"]), str(response.get("body", "")).encode("utf-8"), headers)

            def __getattr__(self, name: str) -> Any:
                """``do_<METHOD>`` for every method: the api function answers 405 naming the allowed ones
                where API Gateway has no route (http.server alone would answer a 501 HTML page)."""
                if name.startswith("do_"):
                    return self._serve
                raise AttributeError(name)

        super().__init__(Handler, port)


@functools.lru_cache(maxsize=4)
def openapi_document(server_url: str) -> str:
    """The API's OpenAPI 3.1 document (the runtime's ``core.openapi``), with ``server_url`` as its server."""
    path = str(runtime_asset_path())
    if path not in sys.path:
        sys.path.insert(0, path)
    from scheduler_runtime.core.openapi import document_json  # noqa: PLC0415 - importable once the path is set

    return document_json(server_url)


def _http_api_event(method: str, raw_path: str, headers: dict[str, Any], raw_body: bytes) -> dict[str, Any]:
    """An HTTP API (payload format 2.0) event on the ``$default`` stage, as the deployed API sends it."""
    parts = urlsplit(raw_path)
    segments = [unquote(s) for s in parts.path.split("/") if s]
    route, path_parameters = _route_of(method, segments)
    try:
        body, is_base64 = raw_body.decode("utf-8"), False
    except UnicodeDecodeError:
        body, is_base64 = base64.b64encode(raw_body).decode("ascii"), True
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route,
        "rawPath": parts.path or "/",
        "rawQueryString": parts.query,
        "headers": {name.lower(): value for name, value in headers.items()},
        "requestContext": {"stage": "$default", "http": {"method": method, "path": parts.path or "/"},
                           "routeKey": route},
        "isBase64Encoded": is_base64,
    }
    if parts.query:
        event["queryStringParameters"] = dict(parse_qsl(parts.query))
    if path_parameters:
        event["pathParameters"] = path_parameters
    if raw_body:
        event["body"] = body
    return event


def _route_of(method: str, segments: list[str]) -> tuple[str, dict[str, str] | None]:
    """The route key the deployed HTTP API would match (the contract's routes), and its path parameters, decoded as
    API Gateway decodes them (``%3A`` is ``:``); ``$default`` when none matches, for the function to answer."""
    paths = sorted(dict.fromkeys(route.path for route in contract.ROUTES), key=lambda p: p.count("{"))  # literals first
    for path in paths:
        template = [s for s in path.split("/") if s]
        if len(template) == len(segments) and all(t == s or t.startswith("{") for t, s in zip(template, segments)):
            parameters = {t[1:-1]: s for t, s in zip(template, segments) if t.startswith("{")}
            return f"{method} {path}", parameters or None
    return "$default", None


_INVOKE_PATH = re.compile(r"^/2015-03-31/functions/(?P<name>[^/]+)/invocations$")


class LambdaEndpoint(_Server):
    """Lambda's ``Invoke`` for in-process functions, keyed by function name (or ARN). An invoke with
    ``X-Amz-Invocation-Type: Event`` is answered 202 at once, as Lambda queues the event, and the function
    runs on a thread of its own: what it raises is logged, never answered."""

    def __init__(self, functions: dict[str, Callable[[dict[str, Any]], Any]], port: int = 0) -> None:
        self._events_running = 0
        self._events_lock = threading.Lock()
        endpoint = self

        class Handler(_QuietHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                match = _INVOKE_PATH.match(urlsplit(self.path).path)
                raw = self._read_body() or b""
                if not match:
                    self._reply(404, b'{"Message":"unknown route"}', {"Content-Type": "application/json"})
                    return
                name = unquote(match.group("name")).split(":function:")[-1].split(":")[0]
                function = functions.get(name)
                if function is None:
                    body = json.dumps({"Type": "User", "Message": f"Function not found: {name}"}).encode()
                    self._reply(404, body, {"Content-Type": "application/json", "x-amzn-ErrorType": "ResourceNotFoundException"})
                    return
                if self.headers.get("X-Amz-Invocation-Type") == "Event":
                    endpoint._run_event(name, function, json.loads(raw or b"null"))
                    self._reply(202, b"", {"Content-Type": "application/json"})
                    return
                try:
                    result = function(json.loads(raw or b"null"))
                    self._reply(200, json.dumps(result).encode(), {"Content-Type": "application/json"})
                except Exception as exc:  # noqa: BLE001 - reported the way Lambda reports it
                    error = {"errorMessage": str(exc), "errorType": type(exc).__name__,
                             "stackTrace": traceback.format_exc().splitlines()[-3:]}
                    self._reply(200, json.dumps(error).encode(),
                                {"Content-Type": "application/json", "X-Amz-Function-Error": "Unhandled"})

        super().__init__(Handler, port)

    @property
    def events_running(self) -> int:
        """How many functions invoked as an event are still running."""
        with self._events_lock:
            return self._events_running

    def _run_event(self, name: str, function: Callable[[dict[str, Any]], Any], event: Any) -> None:
        with self._events_lock:
            self._events_running += 1

        def run() -> None:
            try:
                function(event)
            except Exception:  # noqa: BLE001 - an event's failure is the function's own (Lambda retries it there)
                logger.warning("function %s invoked as an event raised", name, exc_info=True)
            finally:
                with self._events_lock:
                    self._events_running -= 1

        threading.Thread(target=run, name=f"event-{name}", daemon=True).start()
