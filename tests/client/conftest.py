"""Fixtures for the typed client's tests: one local engine per module (SigV4 required, listing on),
the client and the asyncio client over each transport, a scripted HTTP server for retries and error
mapping (and a client of either transport answered by it), and an environment with no AWS credentials."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, TypeVar

import botocore.session
import pytest

from cdk_delayed_scheduler.client import AsyncSchedulerClient, SchedulerClient
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.deliveries import Recorder
from cdk_delayed_scheduler.local.engine import API_FUNCTION

TRANSPORTS = ["http", "invoke"]
FAST = {"backoff_base": 0.01, "backoff_cap": 0.02}
"""Backoff options that keep a test's retries short."""
WINDOW = 4  # seconds: the engine's delay window, so the sweeper path runs in seconds
T = TypeVar("T")
Use = Callable[[Callable[[AsyncSchedulerClient], Awaitable[T]]], T]
CREDENTIAL_VARIABLES = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                        "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                        "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")


@dataclass
class Local:
    engine: Engine
    recorder: Recorder
    session: botocore.session.Session = field(default_factory=botocore.session.get_session)
    """The module's clients' botocore session: a session loads a service's model once, not once per client."""


@pytest.fixture(scope="module")
def local() -> Iterator[Local]:
    """One engine for the module: SigV4 required on the HTTP API, the listing index on, a recording target."""
    recorder = Recorder()
    options = EngineOptions(target=recorder, require_signature=True, listing=True, delay_window=WINDOW,
                            sweep_interval=0.5, shard_count=2)
    with Engine(options) as engine:
        yield Local(engine, recorder)


def client_for(transport: str, engine: Engine, monkeypatch: pytest.MonkeyPatch, **options: Any) -> SchedulerClient:
    """A client for ``engine``: SigV4-signed HTTP, or direct invokes through the engine's Lambda endpoint
    (named by ``AWS_ENDPOINT_URL_LAMBDA``, as an application would name a local endpoint)."""
    if transport == "http":
        return SchedulerClient(engine.api_url, **options)
    monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", engine.lambda_endpoint_url)
    return SchedulerClient.for_function(API_FUNCTION, **options)


@pytest.fixture(params=TRANSPORTS)
def client(request: pytest.FixtureRequest, local: Local, monkeypatch: pytest.MonkeyPatch) -> SchedulerClient:
    """The client, once over each transport."""
    return client_for(request.param, local.engine, monkeypatch, session=local.session)


@pytest.fixture(params=TRANSPORTS)
def use(request: pytest.FixtureRequest, local: Local, monkeypatch: pytest.MonkeyPatch) -> Use[Any]:
    """``use(calls)``: runs ``await calls(client)`` in a new event loop with an async client of the engine
    over the transport, closed after (a client lives in one event loop)."""
    if request.param == "invoke":
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", local.engine.lambda_endpoint_url)

    def run(calls: Callable[[AsyncSchedulerClient], Awaitable[Any]]) -> Any:
        async def main() -> Any:
            client = (AsyncSchedulerClient(local.engine.api_url, local.session) if request.param == "http"
                      else AsyncSchedulerClient.for_function(API_FUNCTION, local.session))
            async with client as timers:
                return await calls(timers)
        return asyncio.run(main())
    return run


def fresh_id(prefix: str) -> str:
    """An id no other test (or transport's run) uses in the module's engine."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


@dataclass
class Seen:
    method: str
    path: str
    headers: dict
    body: Any


@dataclass
class ScriptedServer:
    """An HTTP server on 127.0.0.1 that answers ``script`` in turn (then its last answer again) and records each request.

    Each answer is ``(status, JSON body)``, ``(status, JSON body, headers)``, or a callable that
    takes the request (a :class:`Seen`) and returns one of those.
    """

    script: list
    seen: list = field(default_factory=list)

    def __post_init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen = Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()},
                            json.loads(raw) if raw else None)
                with server._lock:
                    server.seen.append(seen)
                    answer = server.script[min(len(server.seen), len(server.script)) - 1]
                status, body, *headers = answer(seen) if callable(answer) else answer
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in {"Content-Type": "application/json", **(headers[0] if headers else {})}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _answer

        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


@pytest.fixture
def scripted() -> Iterator[Any]:
    """``scripted([(status, body[, headers]), ...])`` starts a :class:`ScriptedServer`; all are closed after the test."""
    servers: list[ScriptedServer] = []

    def start(script: list) -> ScriptedServer:
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def credential_free(tmp_path: Path) -> dict[str, str]:
    """This process's environment with no AWS credentials anywhere botocore looks."""
    empty = tmp_path / "empty"
    empty.write_text("")
    environ = {name: value for name, value in os.environ.items() if name not in CREDENTIAL_VARIABLES}
    environ.update(AWS_SHARED_CREDENTIALS_FILE=str(empty), AWS_CONFIG_FILE=str(empty), BOTO_CONFIG=str(empty),
                   AWS_EC2_METADATA_DISABLED="true", AWS_DEFAULT_REGION="us-east-1")
    return environ


@pytest.fixture
def no_credentials(credential_free: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """This process, for the test, with no AWS credentials."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name, value in credential_free.items():
        monkeypatch.setenv(name, value)
    assert botocore.session.get_session().get_credentials() is None


def invoke_answer(status: int, body: object) -> tuple:
    """What Lambda's Invoke answers when the api function returns ``{"statusCode", "body"}``."""
    return 200, {"statusCode": status, "body": body}


@pytest.fixture
def invoke_client(monkeypatch):
    """``invoke_client(server, **options)``: a direct-invoke client whose Lambda endpoint is ``server``."""
    def make(server, **options) -> SchedulerClient:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", server.url)
        return SchedulerClient.for_function("timers-api", **{**FAST, **options})
    return make


@pytest.fixture
def over(scripted, invoke_client):
    """``over(transport, answers)``: a client of either transport, and a scripted server answering
    ``answers`` (``(status, API body)`` pairs) in that transport's shape."""
    def make(transport: str, answers: list, **options) -> tuple:
        if transport == "invoke":
            server = scripted([invoke_answer(status, body) for status, body in answers])
            return invoke_client(server, **options), server
        server = scripted(answers)
        return SchedulerClient(server.url, **{**FAST, **options}), server
    return make


def sent_paths(server) -> list:
    """The API paths the client asked for, whichever the transport (a direct invoke's are in its event)."""
    return [seen.body["path"] if seen.path.endswith("/invocations") else seen.path for seen in server.seen]


def sent_bodies(server) -> list:
    """The API request bodies the client sent, whichever the transport."""
    return [seen.body.get("body") if seen.path.endswith("/invocations") else seen.body for seen in server.seen]
