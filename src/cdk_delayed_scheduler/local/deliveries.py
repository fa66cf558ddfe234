"""Where the local engine delivers (stdout, a URL, a Python handler, all behind one local function),
and :class:`Recorder`, a target that keeps every delivery with its arrival time (for the demo, chaos
and tests)."""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, TextIO

from .api_calls import parse_due_ms

Envelope = dict[str, Any]
LocalTarget = Callable[[Envelope], Any]
"""A target of the engine: called with each delivery's envelope; an exception is a failed delivery."""


@dataclass(frozen=True)
class QueueTarget:
    """A named target that is an SQS queue (``targets.SqsSendMessage`` when deployed): the engine creates it."""

    fifo: bool = False
    message_group_id: str | None = None
    """A FIFO queue's message group for every delivery; default: the schedule's id."""


@dataclass(frozen=True)
class TopicTarget:
    """A named target that is an SNS topic (``targets.SnsPublish`` when deployed): the engine creates it, and an
    SQS queue subscribed to it with raw message delivery, where its deliveries arrive."""

    fifo: bool = False
    message_group_id: str | None = None
    """A FIFO topic's message group for every delivery; default: the schedule's id."""


@dataclass(frozen=True)
class BusTarget:
    """A named target that is an EventBridge bus (``targets.EventBridgePutEvents`` when deployed): the engine
    creates it, and a rule that sends its events of this source and detail type to an SQS queue, where they
    arrive (each an EventBridge event whose ``detail`` is the envelope)."""

    detail_type: str
    source: str


ResourceTarget = QueueTarget | TopicTarget | BusTarget
"""A named target the engine creates in its moto, whose deliveries arrive in an SQS queue of its own."""
RESOURCE_TARGETS = (QueueTarget, TopicTarget, BusTarget)


def stdout_target(stream: TextIO | None = None) -> LocalTarget:
    """One JSON line per delivery."""
    lock = threading.Lock()

    def deliver(envelope: Envelope) -> None:
        line = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)
        with lock:
            out = stream or sys.stdout
            out.write(line + "\n")
            out.flush()

    return deliver


def url_target(url: str, timeout_seconds: float = 10.0) -> LocalTarget:
    """POST the envelope as JSON; any non-2xx answer is a failed delivery (and is retried)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"--target-url must be an http(s) URL, got {url!r}")

    def deliver(envelope: Envelope) -> None:
        request = urllib.request.Request(
            url, data=json.dumps(envelope).encode("utf-8"), method="POST", headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_seconds) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{url} answered {exc.code}") from None

    return deliver


def handler_target(spec: str) -> LocalTarget:
    """``module:function``, called like a Lambda handler with the envelope as its event.

    The module is looked up in the working directory first, as ``python -m`` and uvicorn do (the
    console script's own ``sys.path`` starts at its ``bin`` folder instead).
    """
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ValueError(f"--target-handler must look like module:function, got {spec!r}")
    working_dir = os.getcwd()
    if working_dir not in sys.path and "" not in sys.path:
        sys.path.insert(0, working_dir)
    try:
        function = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--target-handler {spec!r} cannot be loaded: {exc}") from None

    def deliver(envelope: Envelope) -> Any:
        return function(envelope, None)

    return deliver


@dataclass
class Delivery:
    """One delivery a :class:`Recorder` received: the envelope and when it arrived (wall clock, ms)."""

    envelope: Envelope
    received_ms: int

    @property
    def lateness_ms(self) -> int:
        """Negative means early."""
        return self.received_ms - parse_due_ms(self.envelope["dueAt"])


@dataclass
class Recorder:
    """A target that records every envelope with its arrival time (wall clock, ms)."""

    deliveries: list[Delivery] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _arrived: threading.Condition = field(init=False)

    def __post_init__(self) -> None:
        self._arrived = threading.Condition(self._lock)

    def __call__(self, envelope: Envelope) -> None:
        with self._arrived:
            self.deliveries.append(Delivery(envelope, time.time_ns() // 1_000_000))
            self._arrived.notify_all()

    def by_id(self) -> dict[str, list[Delivery]]:
        with self._lock:
            grouped: dict[str, list[Delivery]] = {}
            for delivery in self.deliveries:
                grouped.setdefault(delivery.envelope["id"], []).append(delivery)
            return grouped

    def wait_for(self, ids: set[str], timeout_seconds: float) -> bool:
        """Wait until every id in ``ids`` has been delivered at least once."""
        deadline = time.monotonic() + timeout_seconds
        with self._arrived:
            while not ids <= {d.envelope["id"] for d in self.deliveries}:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._arrived.wait(min(left, 0.2))
            return True


def percentile(values: list[int] | list[float], fraction: float) -> float:
    """Nearest-rank percentile of ``values`` (0 < fraction <= 1)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = max(1, -(-int(fraction * 1000) * len(ordered) // 1000))
    return ordered[min(rank, len(ordered)) - 1]
