"""A test-only clock for the engine's moto child: SQS (and Step Functions' execution start dates) read a
time that a client sets, and stands still between its moves.

Off unless the child is started with it (``MotoProcess(clock=True)``, which only
``cdk_delayed_scheduler.testing`` does). Until the first move the child reads the real clock; from then on
SQS's delays, visibility timeouts and timestamps read the instant last set. ``/_local/clock`` on the child's
endpoint answers (GET) or moves (POST ``{"atMs": n}``, never back) that instant, or sets the real clock
again (DELETE). A POST of ``{"endLongPolls": true}`` answers every long poll under way at once, empty (its
engine is stopping). A POST's ``holdUntilDue`` names queues whose messages are receivable only once their body's
``dueMs`` has come (the delayer queue: a deployed one hands a message out up to a second early, and the
dispatcher waits out the rest; here it comes at its due instant, so no wait of the runtime races another).
The answer has:

- ``handedOut``: by queue name, how many messages its receives answered since the last DELETE;
- ``receivable``: by queue name, how many messages a receive would get now;
- ``messages``: with the query ``?messages``, every message not yet receivable in every queue (``{"queue": <name>, "visibleAtMs", "body"}``),
  so that a test can tell when the next one comes due;
- ``timers``: with the query ``?timers=<prefix>``, the smallest sort key of each partition whose key starts
  with ``prefix`` in each table (``{"table", "partition", "sortKey"}``): the earliest timer of each shard,
  read in the child's memory instead of by one query a shard.

A move wakes every long poll, which would otherwise wait out its time on the old instant. Nothing of the
runtime changes: the same instant on the runtime's clock is the kit's.
"""

from __future__ import annotations

import datetime
import json
import threading
import time
import urllib.parse
import urllib.request
from typing import Any, Callable

CLOCK_PATH = "/_local/clock"
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Any]


class _Instant:
    def __init__(self) -> None:
        self.ms: int | None = None  # None: the real clock
        self.lock = threading.Lock()
        self.handed_out: dict[str, int] = {}  # queue name -> messages its receives answered, since the last DELETE
        self.held: set[str] = set()  # queues whose messages are receivable from their body's dueMs on
        self.polls_ended = 0  # how many times the long polls under way were ended (their engine stopping)


def install(app: WsgiApp) -> WsgiApp:
    """In the child, before :func:`.moto_patches.apply`: SQS's clock is the instant set, and serve ``CLOCK_PATH``."""
    import moto.core.utils as moto_utils
    import moto.sqs.models as sqs_models
    import moto.stepfunctions.models as stepfunctions_models

    instant = _Instant()
    real_seconds = moto_utils.unix_time
    real_now = moto_utils.utcnow

    def unix_time(dt: Any = None) -> float:
        at = instant.ms
        return real_seconds(dt) if dt is not None or at is None else at / 1000

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    for module in (moto_utils, sqs_models):  # moto_patches and moto's SQS read them by name
        setattr(module, "unix_time", unix_time)  # noqa: B010 - moto's stubs do not export these names
        setattr(module, "unix_time_millis", unix_time_millis)  # noqa: B010

    def utcnow() -> Any:
        at = instant.ms
        return real_now() if at is None else datetime.datetime.fromtimestamp(at / 1000, datetime.timezone.utc
                                                                            ).replace(tzinfo=None)

    setattr(stepfunctions_models, "utcnow", utcnow)  # noqa: B010 - an execution's startDate: when it was delivered

    def visible(message: Any) -> bool:  # at the instant its visibility ends (moto: a millisecond later)
        return bool(unix_time_millis() >= message.visible_at)

    sqs_models.Message.visible = property(visible)  # type: ignore[method-assign,assignment]
    real_receive = sqs_models.SQSBackend.receive_message

    def receive_message(backend: Any, queue_name: str, count: int, wait_seconds_timeout: int, *args: Any,
                        **kwargs: Any) -> Any:
        # moto ends a long poll on its own clock, which stands still between moves: end it in real time instead,
        # and look again whenever a message arrives or the clock moves
        ends, ended = time.monotonic() + (wait_seconds_timeout or 0), instant.polls_ended
        while True:
            messages = real_receive(backend, queue_name, count, 0, *args, **kwargs)
            left = ends - time.monotonic()
            if messages or left <= 0 or instant.polls_ended != ended:
                with instant.lock:
                    instant.handed_out[queue_name] = instant.handed_out.get(queue_name, 0) + len(messages)
                return messages
            backend.get_queue(queue_name).wait_for_messages(left)

    sqs_models.SQSBackend.receive_message = receive_message  # type: ignore[method-assign,assignment]
    real_add = sqs_models.Queue.add_message

    def add_message(queue: Any, message: Any) -> None:
        if queue.name in instant.held:
            due_ms = _due_ms(message.body)
            if due_ms is not None:
                message.delayed_until = max(message.delayed_until, due_ms)
        real_add(queue, message)

    sqs_models.Queue.add_message = add_message  # type: ignore[method-assign,assignment]

    def clock_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("PATH_INFO") != CLOCK_PATH:
            return app(environ, start_response)
        method = environ.get("REQUEST_METHOD")
        if method == "POST":
            moved = json.loads(environ["wsgi.input"].read() or b"{}")
            with instant.lock:
                if "atMs" in moved:
                    instant.ms = max(int(moved["atMs"]), instant.ms or 0)
                    instant.held.update(moved.get("holdUntilDue", []))
                if moved.get("endLongPolls"):
                    instant.polls_ended += 1
            _wake_long_polls(sqs_models)
        elif method == "DELETE":
            with instant.lock:
                instant.ms = None
                instant.handed_out.clear()
                instant.held.clear()
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""), keep_blank_values=True)
        with instant.lock:
            answer: dict[str, Any] = {"atMs": instant.ms, "handedOut": dict(instant.handed_out)}
        answer["receivable"] = {queue.name: len(queue.messages) for queue in _queues(sqs_models)}
        if "messages" in query:
            answer["messages"] = _waiting_messages(sqs_models, unix_time_millis())
        if "timers" in query:
            answer["timers"] = _earliest_sort_keys(query["timers"][0])
        start_response("200 OK", [("Content-Type", "application/json")])
        return [json.dumps(answer).encode("utf-8")]

    return clock_app


def _due_ms(body: str) -> int | None:
    try:
        return int(json.loads(body)["dueMs"])
    except (ValueError, KeyError, TypeError):
        return None


def _queues(sqs_models: Any) -> list[Any]:
    return [queue for account in list(sqs_models.sqs_backends.values()) for backend in list(account.values())
            for queue in list(backend.queues.values())]


def _wake_long_polls(sqs_models: Any) -> None:
    for queue in _queues(sqs_models):
        with queue._messages_lock:  # noqa: SLF001 - moto's condition, which a long poll waits on
            queue._messages_lock.notify_all()  # noqa: SLF001


def _waiting_messages(sqs_models: Any, now_ms: float) -> list[dict[str, Any]]:
    waiting = []
    for queue in _queues(sqs_models):
        for message in list(queue._messages):  # noqa: SLF001 - moto keeps them there
            visible_at = max(message.visible_at, message.delayed_until)
            if visible_at > now_ms:
                waiting.append({"queue": queue.name, "visibleAtMs": int(visible_at), "body": message.body})
    return waiting


def _earliest_sort_keys(prefix: str) -> list[dict[str, str]]:
    import moto.dynamodb.models as dynamodb_models

    earliest = []
    for account in list(dynamodb_models.dynamodb_backends.values()):
        for backend in list(account.values()):
            for table in list(backend.tables.values()):
                if not table.range_key_attr:
                    continue
                for partition, items in list(table.items.items()):
                    if isinstance(partition.value, str) and partition.value.startswith(prefix) and items:
                        earliest.append({"table": table.name, "partition": partition.value,
                                         "sortKey": min(key.value for key in list(items))})
    return earliest


def moto_clock(endpoint_url: str, at_ms: int | None = None, *, messages: bool = False, timers: str | None = None,
               real: bool = False, hold_until_due: tuple[str, ...] = (), end_long_polls: bool = False) -> dict[str, Any]:
    """Read (or, with ``at_ms``, move; with ``real``, set back to the real clock) the clock of a moto child
    started with ``clock=True``; with ``messages``, the messages waiting for it; with ``timers``, the earliest sort
    key of each partition whose key starts with it; with ``hold_until_due`` (and ``at_ms``), the queues whose
    messages come at their due time; with ``end_long_polls``, answer every long poll under way at once."""
    body: dict[str, Any] = {}
    if at_ms is not None:
        body.update(atMs=at_ms, holdUntilDue=list(hold_until_due))
    if end_long_polls:
        body["endLongPolls"] = True
    data = json.dumps(body).encode() if body else None
    params = {**({"messages": ""} if messages else {}), **({"timers": timers} if timers else {})}
    query = "?" + urllib.parse.urlencode(params) if params else ""
    method = "DELETE" if real else "GET" if data is None else "POST"
    request = urllib.request.Request(endpoint_url + CLOCK_PATH + query, data=data, method=method)
    with urllib.request.urlopen(request, timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer
