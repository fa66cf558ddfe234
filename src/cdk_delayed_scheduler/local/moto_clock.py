"""A test-only clock for the engine's moto child: SQS (and Step Functions' execution start dates) read
its clock plus an offset that a client sets.

Off unless the child is started with it (``MotoProcess(clock=True)``, which only
``cdk_delayed_scheduler.testing`` does): then SQS's delays, visibility timeouts and timestamps read
moto's clock plus ``offsetMs``, and ``/_local/clock`` on the child's endpoint answers (GET) or sets
(POST ``{"offsetMs": n}``) the offset, with every message not yet receivable in every queue
(``{"queue": <name>, "visibleAtMs", "body"}``, on the shifted clock), so that a test can tell when the next
one comes due. Nothing of the runtime changes: the same offset on the runtime's clock is the kit's.
"""

from __future__ import annotations

import datetime
import json
import threading
import urllib.request
from typing import Any, Callable

CLOCK_PATH = "/_local/clock"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Any]


class _Offset:
    def __init__(self) -> None:
        self.ms = 0
        self.lock = threading.Lock()


def install(app: WsgiApp) -> WsgiApp:
    """In the child, before :func:`.moto_patches.apply`: shift SQS's clock by the offset, and serve ``CLOCK_PATH``."""
    import moto.core.utils as moto_utils
    import moto.sqs.models as sqs_models
    import moto.stepfunctions.models as stepfunctions_models

    offset = _Offset()
    real_seconds = moto_utils.unix_time

    def unix_time(dt: Any = None) -> float:
        return real_seconds(dt) + (offset.ms / 1000 if dt is None else 0.0)

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    for module in (moto_utils, sqs_models):  # moto_patches and moto's SQS read them by name
        setattr(module, "unix_time", unix_time)  # noqa: B010 - moto's stubs do not export these names
        setattr(module, "unix_time_millis", unix_time_millis)  # noqa: B010
    real_now = moto_utils.utcnow

    def utcnow() -> Any:
        return real_now() + datetime.timedelta(milliseconds=offset.ms)

    setattr(stepfunctions_models, "utcnow", utcnow)  # noqa: B010 - an execution's startDate: when it was delivered

    def clock_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != CLOCK_PATH:
            return app(environ, start_response)
        if environ.get("REQUEST_METHOD") == "POST":
            with offset.lock:
                offset.ms = int(json.loads(environ["wsgi.input"].read() or b"{}")["offsetMs"])
        body = json.dumps({"offsetMs": offset.ms, "messages": _waiting_messages(sqs_models, unix_time_millis())})
        start_response("200 OK", [("Content-Type", "application/json")])
        return [body.encode("utf-8")]

    return clock_app


def _waiting_messages(sqs_models: Any, now_ms: float) -> list[dict[str, Any]]:
    waiting = []
    for account in list(sqs_models.sqs_backends.values()):
        for backend in list(account.values()):
            for queue in list(backend.queues.values()):
                for message in list(queue._messages):
                    visible_at = max(message.visible_at, message.delayed_until)
                    if visible_at > now_ms:
                        waiting.append({"queue": queue.name, "visibleAtMs": int(visible_at), "body": message.body})
    return waiting


def moto_clock(endpoint_url: str, offset_ms: int | None = None) -> dict[str, Any]:
    """Read (or, with ``offset_ms``, set) the clock of a moto child started with ``clock=True``."""
    data = None if offset_ms is None else json.dumps({"offsetMs": offset_ms}).encode()
    request = urllib.request.Request(endpoint_url + CLOCK_PATH, data=data, method="GET" if data is None else "POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer
