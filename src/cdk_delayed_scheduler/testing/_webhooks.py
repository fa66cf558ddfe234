"""The kit's receiver of ``HttpsTarget`` requests: it takes each signed request in place of the target's URL,
records it, and answers what the test chose (a 2xx unless told otherwise).

An ``HttpsTarget`` whose URL is on this machine (a loopback host) is left alone: its requests go to that
receiver, the test's own. Any other URL is replaced, in the target's description the runtime reads, by one
on this receiver (``http://127.0.0.1:<port>/<n>/<the URL's path and query>``), so nothing leaves the machine,
and the runtime's real HTTPS target (signing, headers, timeouts, retries by status) does the sending.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any, Callable, Union
from urllib.parse import urlsplit

from ._deliveries import DeliveryLog, WebhookRequest

if TYPE_CHECKING:
    from ..local.deliveries import HttpsTarget

WebhookAnswer = Union[int, Callable[[WebhookRequest], int]]
"""What the kit answers an ``HttpsTarget``'s requests: a status, or a callable that chooses one per request."""
DEFAULT_ANSWER = 200
ANSWERS = range(200, 600)
"""The statuses the kit can answer: a 2xx is a delivery; 408, 429 and a 5xx are retried; any other parks the schedule
(the runtime's rule, as deployed)."""


def check_answer(answer: object) -> None:
    """``ValueError`` unless ``answer`` is a status the kit can answer, or a callable (which returns one)."""
    if not callable(answer):
        _check_status(answer, "answer")


def _check_status(status: object, what: str) -> None:
    if isinstance(status, bool) or not isinstance(status, int) or status not in ANSWERS:
        raise ValueError(f"{what}: an HTTP status from {ANSWERS.start} to {ANSWERS.stop - 1} is expected (or a "
                         f"callable that takes the WebhookRequest and returns one), got {status!r}")


def received_by_the_kit(target: HttpsTarget) -> bool:
    """Whether the kit receives ``target``'s requests: unless its URL is on this machine (the test's receiver)."""
    from ..local.deliveries import LOOPBACK_HOSTS  # noqa: PLC0415 - loaded with the engine

    return urlsplit(target.url).hostname not in LOOPBACK_HOSTS


class WebhookReceiver(ThreadingHTTPServer):
    """One receiver on 127.0.0.1 for every ``HttpsTarget`` of a kit scheduler that the kit receives."""

    daemon_threads = True

    def __init__(self, log: DeliveryLog) -> None:
        self._log = log
        self._targets: list[tuple[str, HttpsTarget]] = []
        self._answers: dict[str, WebhookAnswer] = {}
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                receiver._receive(self)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="kit-webhooks", daemon=True)
        self._thread.start()

    def take(self, name: str, target: HttpsTarget) -> HttpsTarget:
        """``target`` as the engine is given it: its URL one on this receiver, its path and query kept."""
        parts = urlsplit(target.url)
        with self._lock:
            self._targets.append((name, target))
            number = len(self._targets)
        query = f"?{parts.query}" if parts.query else ""
        url = f"http://127.0.0.1:{self.server_address[1]}/{number}{parts.path or '/'}{query}"
        return dataclasses.replace(target, url=url)

    @property
    def names(self) -> list[str]:
        """The targets this receiver takes the requests of."""
        with self._lock:
            return [name for name, _ in self._targets]

    def answer(self, name: str, answer: WebhookAnswer) -> None:
        with self._lock:
            self._answers[name] = answer

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def _receive(self, handler: BaseHTTPRequestHandler) -> None:
        received_ms = self._log.now_ms()
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        number, _, _ = handler.path.lstrip("/").partition("/")
        with self._lock:
            name, target = self._targets[int(number) - 1]
            answer = self._answers.get(name, DEFAULT_ANSWER)
        host = urlsplit(target.url).netloc.rpartition("@")[2]
        headers = {key: host if key.lower() == "host" else value for key, value in handler.headers.items()}
        request = WebhookRequest(handler.command, target.url, headers, body)
        status, error = self._answer(answer, request)
        self._log.add(name, json.loads(body), received_ms, error=error, request=request)
        handler.close_connection = True
        try:
            handler.send_response(status)
            handler.send_header("Content-Length", "0")
            handler.send_header("Connection", "close")  # no idle connection outlives the receiver
            handler.end_headers()
        except OSError:  # the runtime stopped waiting (the target's timeout_seconds): a timed-out delivery
            pass

    @staticmethod
    def _answer(answer: WebhookAnswer, request: WebhookRequest) -> tuple[int, str | None]:
        """The status to answer, and the delivery's error (``None`` for a 2xx)."""
        if not callable(answer):
            status = answer
        else:
            try:
                status = answer(request)
                _check_status(status, "what the answer callable returned")
            except Exception as exc:  # noqa: BLE001 - the test's callable: what it raises is a 500, recorded
                return 500, f"answered 500: {type(exc).__name__}: {exc}"
        return status, None if 200 <= status < 300 else f"answered {status}"
