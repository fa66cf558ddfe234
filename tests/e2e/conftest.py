"""Waits shared by the end-to-end tests: on a condition, with a bound, never a fixed sleep."""

from __future__ import annotations

import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from cdk_delayed_scheduler.local.api_calls import parse_due_ms

from ..waiting import wait_until

__all__ = ["all_pages", "external_moto", "lead_ms", "process_alive", "wait_until"]


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (read from ``/proc``; a zombie counts as ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


def lead_ms(due_at: str) -> float:
    """How long before ``due_at`` (an API answer's RFC 3339 string) it is now, in ms."""
    return parse_due_ms(due_at) - time.time() * 1000


@contextmanager
def external_moto() -> Iterator[str]:
    """A moto server on 127.0.0.1 in a child process, for engines that must share state across a restart
    (``EngineOptions(endpoint_url=...)``); its endpoint URL. It is the engine's own corrected moto
    (``local/moto_patches.py``): vanilla moto applies a conditional update without a lock and restores a
    copy of the item when a condition fails, so a cancel and a delivery start racing on one item can
    both succeed, or one undo the other: a race DynamoDB never lets happen."""
    from cdk_delayed_scheduler.local.moto_process import MotoProcess

    moto = MotoProcess()
    try:
        yield moto.start()
    finally:
        moto.stop()


def all_pages(api: Any, operation: str, **query: Any) -> list[tuple[int, dict]]:
    """``(status, body)`` of each page of the listing ``operation`` (``listSchedules``, ``listPeriodic``), following
    ``nextToken`` from ``query`` on; ``api`` is a client for raw calls (``local.api_calls.raw_client``)."""
    pages = [api.raw(operation, query=query)]
    while pages[-1][1].get("nextToken"):
        pages.append(api.raw(operation, query={**query, "nextToken": pages[-1][1]["nextToken"]}))
    return pages
