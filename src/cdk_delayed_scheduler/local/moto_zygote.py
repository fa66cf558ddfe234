"""A moto child that forks moto servers: each engine's moto in milliseconds, not a second of imports.

Starting moto costs about two CPU seconds of imports (moto, Flask, its backends), paid again by every
engine a process starts: a test session, the testing kit, a benchmark. The zygote pays them once. It
is a child process that imports moto and the engine's corrections, then waits; asked for a server, it
forks, and the fork serves a fresh moto (an empty account) on a port of its own. A fork copies the
zygote before any request was served, so no engine sees another's state.

Lifetimes, as with a plain child (:class:`~.moto_process.MotoProcess`):
- the zygote reads its stdin until end of file, so it exits when the process that started it ends;
- each server holds the connection it was asked on, and exits when that connection closes: when its
  engine stops, or the engine's process ends however it ends (SIGKILL included).

The zygote starts no thread before it forks (a fork copies only the thread that forks), and ignores
SIGCHLD, so the servers it forks leave no zombies.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from typing import IO

from .moto_server import KeepAliveWSGIServer, serve_moto
from .servers import host_and_port

READY = "READY "
# A module the package does not import itself, so ``-m`` runs it without a double import.
CHILD_MODULE = "cdk_delayed_scheduler.local._moto_child"
ZYGOTE_FLAG = "--zygote"


def serve_forks() -> None:
    """The zygote's loop (in the child started with ``ZYGOTE_FLAG``): fork a server per connection."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the group; the parent ends us through stdin
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked servers are reaped by the kernel
    # The imports a server needs, made once here so that every fork has them.
    os.environ.setdefault("MOTO_DISABLE_GLOBAL_CORS", "true")
    import moto.dynamodb.responses  # noqa: F401
    import moto.dynamodbstreams.responses  # noqa: F401
    import moto.moto_server.werkzeug_app  # noqa: F401
    import moto.sqs.responses  # noqa: F401

    from . import moto_clock, moto_patches  # noqa: F401

    _warm_up()
    # Everything built so far (moto, botocore's models, the warmed backends) lives as long as the process:
    # frozen out of the collector's reach, a fork's full collections walk only what its own requests made.
    # Unfrozen, a full collection a few hundred requests into a run walked them all and stalled the
    # server 200-350 ms (a delivery's UpdateItem waited for it: the targets section's p99).
    gc.collect()
    gc.freeze()

    folder = tempfile.mkdtemp(prefix="moto-zygote-")
    path = os.path.join(folder, "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    print(f"{READY}{path}", flush=True)
    try:
        while True:
            readable, _, _ = select.select([sys.stdin, listener], [], [])
            if sys.stdin in readable and not os.read(sys.stdin.fileno(), 1 << 16):
                return  # end of file: the process that started us is gone or stopping
            if listener in readable:
                connection, _ = listener.accept()
                if os.fork() == 0:
                    listener.close()
                    _serve_one(connection)
                connection.close()
    finally:
        listener.close()
        os.unlink(path)
        os.rmdir(folder)


def _warm_up() -> None:
    """Answer one read-only request per service the engine uses, in this zygote, before any fork: moto
    builds each service's application and its empty account's backends on a first request (most of a
    second), and every fork then starts with them built. Nothing is created, so a fork's account is empty;
    the server stops, and its thread has ended, before the first fork."""
    import botocore.session
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

    from .resources import REGION

    server = KeepAliveWSGIServer(DomainDispatcherApplication(create_backend_app))
    thread = threading.Thread(target=server.serve_forever, name="moto-warm-up")
    thread.start()
    try:
        host, port = host_and_port(server)
        session = botocore.session.get_session()
        for service, operation in (("sqs", "list_queues"), ("dynamodb", "list_tables"),
                                   ("dynamodbstreams", "list_streams")):
            client = session.create_client(service, region_name=REGION, endpoint_url=f"http://{host}:{port}",
                                           aws_access_key_id="warm-up", aws_secret_access_key="warm-up")
            getattr(client, operation)()
            client.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _serve_one(connection: socket.socket) -> None:
    """In a fork: read the request (the environment and whether to install the clock), serve moto,
    answer ``READY <endpoint> <pid>``, and exit once the connection closes."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    status = 0
    try:
        reader = connection.makefile("r", encoding="utf-8")
        request = json.loads(reader.readline())
        os.environ.clear()
        os.environ.update(request["environment"])
        os.environ.setdefault("MOTO_DISABLE_GLOBAL_CORS", "true")
        server = serve_moto(clock=request["clock"])
        host, port = host_and_port(server)
        connection.sendall(f"{READY}http://{host}:{port} {os.getpid()}\n".encode())
        while connection.recv(1 << 12):  # until end of file: the engine stopped, or its process ended
            pass
        server.shutdown()
    except BaseException:  # noqa: BLE001 - a fork must never return into the zygote's loop
        status = 1
    finally:
        os._exit(status)


class Zygote:
    """The client side: one zygote per process, started on first use."""

    _lock = threading.Lock()
    _process: subprocess.Popen[str] | None = None
    _path = ""

    @classmethod
    def fork(cls, *, clock: bool, timeout: float) -> tuple[str, int, socket.socket]:
        """A fresh moto server: its endpoint URL, its pid, and the connection that keeps it alive."""
        path = cls._socket_path(timeout)
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.settimeout(timeout)
        try:
            connection.connect(path)
            request = {"environment": dict(os.environ), "clock": clock}
            connection.sendall((json.dumps(request) + "\n").encode())
            line = connection.makefile("r", encoding="utf-8").readline()
        except OSError:
            connection.close()
            raise
        if not line.startswith(READY):
            connection.close()
            raise OSError(f"moto did not start within {timeout} s (said {line.strip()!r})")
        endpoint, pid = line[len(READY):].split()
        connection.settimeout(None)
        return endpoint, int(pid), connection

    @classmethod
    def _socket_path(cls, timeout: float) -> str:
        with cls._lock:
            if cls._process is not None and cls._process.poll() is None:
                return cls._path
            process = subprocess.Popen(
                cls._command(CHILD_MODULE), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=None, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
            line = _read_line(process.stdout, timeout)
            if not line.startswith(READY):
                process.kill()
                raise OSError(f"the moto zygote did not start within {timeout} s (said {line.strip()!r})")
            cls._process, cls._path = process, line[len(READY):].strip()
            atexit.register(cls._stop, process)
            return cls._path

    @staticmethod
    def _stop(process: subprocess.Popen[str]) -> None:
        """At exit: end of file on the zygote's stdin ends it (the servers it forked end with their engines)."""
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()

    @staticmethod
    def _command(module: str) -> list[str]:
        return [sys.executable, "-m", module, ZYGOTE_FLAG]


def _read_line(stream: IO[str] | None, timeout: float) -> str:
    line: list[str] = []
    reader = threading.Thread(target=lambda: line.append(stream.readline() if stream else ""), daemon=True)
    reader.start()
    reader.join(timeout)
    return line[0] if line else ""
