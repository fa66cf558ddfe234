"""Waits shared by the end-to-end tests: on a condition, with a bound, never a fixed sleep."""

from __future__ import annotations

import time
import urllib.request
from contextlib import contextmanager
from typing import Any, Callable, Iterator

from cdk_delayed_scheduler.local.api_calls import parse_due_ms


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
