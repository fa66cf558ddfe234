"""Waits shared by the end-to-end tests: on a condition, with a bound, never a fixed sleep."""

from __future__ import annotations

import time
import urllib.request
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import boto3

from cdk_delayed_scheduler.local import Engine
from cdk_delayed_scheduler.local.client import parse_due_ms

DELAYER_COUNTS = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
                  "ApproximateNumberOfMessagesNotVisible"]


def wait_until(condition: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """``condition()``'s first truthy value; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(interval)


def _is_quiet(engine: Engine, sqs: Any, ddb: Any) -> bool:
    """Nothing left that could still deliver: the delayer queue holds no message (visible, delayed or
    in flight), no timer is due within the window, and every claim the engine saw was enqueued or
    written back (so none is between its stream record and the queue)."""
    attributes = sqs.get_queue_attributes(QueueUrl=engine.queue_url, AttributeNames=DELAYER_COUNTS)["Attributes"]
    if any(int(attributes[name]) for name in DELAYER_COUNTS):
        return False
    cutoff = int(time.time() * 1000) + engine.options.delay_window * 1000
    timers = ddb.scan(TableName=engine.table_name, ProjectionExpression="pk, sk")["Items"]  # tests may scan
    if any(t["pk"]["S"].startswith("TIMER#") and int(t["sk"]["S"].split("#", 1)[0]) <= cutoff for t in timers):
        return False
    with engine.stats.lock:
        events = dict(engine.stats.events)
    return events.get("enqueued", 0) + events.get("written_back", 0) >= events.get("claimed", 0)


def wait_until_quiet(engine: Engine, timeout: float = 20.0) -> None:
    """Return once the engine is quiet on two checks in a row (a quarter second apart), so a wrongful
    or duplicate delivery has had every chance to arrive; fail after ``timeout`` seconds."""
    session = boto3.session.Session(region_name="us-east-1")
    sqs = session.client("sqs", endpoint_url=engine.endpoint_url)
    ddb = session.client("dynamodb", endpoint_url=engine.endpoint_url)
    streak = {"n": 0}

    def quiet_twice() -> bool:
        streak["n"] = streak["n"] + 1 if _is_quiet(engine, sqs, ddb) else 0
        return streak["n"] >= 2

    wait_until(quiet_twice, timeout, "the engine did not become quiet", interval=0.25)


def lead_ms(due_at: str) -> float:
    """How long before ``due_at`` (an API answer's RFC 3339 string) it is now, in ms."""
    return parse_due_ms(due_at) - time.time() * 1000


@contextmanager
def external_moto() -> Iterator[str]:
    """A vanilla moto server on 127.0.0.1, reset, for engines that must share state across a restart
    (``EngineOptions(endpoint_url=...)``); its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    try:
        urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST")).close()
        yield endpoint
    finally:
        server.stop()


def all_pages(api: Any, path: str) -> list[tuple[int, dict]]:
    """``(status, body)`` of each page of a listing route, following ``nextToken`` from ``path`` on."""
    separator = "&" if "?" in path else "?"
    pages = [api.request("GET", path)]
    while pages[-1][1].get("nextToken"):
        pages.append(api.request("GET", f"{path}{separator}nextToken={pages[-1][1]['nextToken']}"))
    return pages
