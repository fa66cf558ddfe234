"""Corrected moto on 127.0.0.1, as each engine's moto process serves it (:mod:`.moto_zygote` forks it).

moto's own server (werkzeug's) answers every request with ``Connection: close`` and then
waits up to 10 ms for stray request bytes before it closes the socket, so each AWS call
costs a new TCP connection and a new server thread. This serves moto's WSGI
application with KeepAliveWSGIServer instead: HTTP/1.1 with persistent connections, one
thread per connection, bodies read exactly by Content-Length (or chunked coding), and
TCP_NODELAY: the engine's own server and handler (servers.py), calling a WSGI application.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
from typing import Any, Callable
from urllib.parse import unquote, urlsplit

from .servers import _QuietHandler, _QuietServer, host_and_port

logger = logging.getLogger("cdk_delayed_scheduler.local.moto")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}


class _WSGIHandler(_QuietHandler):
    """The engine's HTTP/1.1 handler (persistent connections, ``TCP_NODELAY``), calling a WSGI app."""

    def _body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _environ(self, body: bytes) -> dict[str, Any]:
        url = urlsplit(self.path)
        host, port = host_and_port(self.server)
        environ = {
            "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False, "wsgi.run_once": False,
            "REQUEST_METHOD": self.command, "SCRIPT_NAME": "",
            # WSGI carries the decoded path as latin-1 code points of its UTF-8 bytes (PEP 3333)
            "PATH_INFO": unquote(url.path, "latin-1"), "QUERY_STRING": url.query,
            "RAW_URI": self.path, "REQUEST_URI": self.path,
            "REMOTE_ADDR": self.client_address[0], "REMOTE_PORT": self.client_address[1],
            "SERVER_NAME": str(host), "SERVER_PORT": str(port), "SERVER_PROTOCOL": self.request_version,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""), "CONTENT_LENGTH": str(len(body)),
        }
        for name, value in self.headers.items():
            key = name.upper().replace("-", "_")
            if key not in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                environ[f"HTTP_{key}"] = f"{environ[f'HTTP_{key}']},{value}" if f"HTTP_{key}" in environ else value
        return environ

    def _call(self) -> None:
        answer: dict[str, Any] = {}

        def start_response(status: str, headers: list[Any], exc_info: Any = None) -> Callable[[bytes], None]:
            answer.update(status=status, headers=headers)
            return lambda data: answer.setdefault("written", []).append(data)

        try:
            iterable = self.server.app(self._environ(self._body()), start_response)  # type: ignore[attr-defined]
            try:
                body = b"".join([*answer.get("written", []), *iterable])
            finally:
                if hasattr(iterable, "close"):
                    iterable.close()
        except Exception:  # noqa: BLE001 - answered as werkzeug answers it: a 500, and the connection stays usable
            logger.exception("moto failed on %s %s", self.command, self.path)
            answer.update(status="500 Internal Server Error", headers=[("Content-Type", "text/plain")])
            body = b"Internal Server Error"
        code, _, reason = answer["status"].partition(" ")
        self.send_response(int(code), reason)
        for name, value in answer["headers"]:
            if name.lower() not in _HOP_BY_HOP:
                self.send_header(name, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _call


class KeepAliveWSGIServer(_QuietServer):
    """A WSGI application on 127.0.0.1, HTTP/1.1 with persistent connections (the engine's own server kind)."""

    def __init__(self, app: Callable[..., Any], port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _WSGIHandler)
        self.app = app


def serve_moto(port: int = 0, *, clock: bool = False) -> KeepAliveWSGIServer:
    """Corrected moto on 127.0.0.1 (this process's moto: call it in a process of its own), serving in a thread;
    with ``clock``, the test-only clock of :mod:`.moto_clock` too."""
    # CORS headers serve browsers; the AWS SDK has no use for them, and they cost every request.
    os.environ.setdefault("MOTO_DISABLE_GLOBAL_CORS", "true")
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from . import moto_clock, moto_patches

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app: Callable[..., Any] = DomainDispatcherApplication(create_backend_app)
    if clock:
        app = moto_clock.install(app)  # before the patches, which read moto's clock by name
    moto_patches.apply()
    server = KeepAliveWSGIServer(app, port)
    threading.Thread(target=server.serve_forever, name="moto", daemon=True).start()
    return server
