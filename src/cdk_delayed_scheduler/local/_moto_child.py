"""The child process of :class:`~cdk_delayed_scheduler.local.moto_process.MotoProcess`: corrected moto on 127.0.0.1."""

from __future__ import annotations

import logging
import sys

from cdk_delayed_scheduler.local.moto_process import READY


def _serve() -> None:
    """The child: corrected moto on 127.0.0.1 until the parent closes our stdin."""
    from moto.server import ThreadedMotoServer

    from cdk_delayed_scheduler.local import moto_patches

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    moto_patches.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    print(f"{READY}http://{host}:{port}", flush=True)
    try:
        sys.stdin.read()  # returns at end of file: the parent is gone or stopping
    finally:
        server.stop()


if __name__ == "__main__":
    _serve()
