"""The child process of :class:`~cdk_delayed_scheduler.local.moto_process.MotoProcess`: corrected moto on 127.0.0.1."""

from __future__ import annotations

import signal
import sys

from cdk_delayed_scheduler.local.moto_process import CLOCK_FLAG, READY, serve_moto
from cdk_delayed_scheduler.local.servers import host_and_port


def _serve() -> None:
    """The child: corrected moto on 127.0.0.1 until the parent closes our stdin.

    Its life is that pipe alone: Ctrl-C in a terminal signals the whole process group, and the parent,
    which still needs moto to stop cleanly, closes the pipe once it has stopped.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = serve_moto(clock=CLOCK_FLAG in sys.argv[1:])
    host, port = host_and_port(server)
    print(f"{READY}http://{host}:{port}", flush=True)
    try:
        sys.stdin.read()  # returns at end of file: the parent is gone or stopping
    finally:
        server.shutdown()


if __name__ == "__main__":
    _serve()
