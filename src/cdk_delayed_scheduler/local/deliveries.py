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
from typing import Any, Callable, Mapping, TextIO
from urllib.parse import urlsplit

from .._contract import contract
from .api_calls import parse_due_ms
from .flow_control import FlowControl, check_flow_control

Envelope = dict[str, Any]
LocalTarget = Callable[[Envelope], Any]
"""A target of the engine: called with each delivery's envelope; an exception is a failed delivery."""
LAMBDA_INVOCATION_TYPES = contract.TARGET_TYPES["lambda"].values["invocationType"]
"""How the runtime invokes a Lambda target (Lambda's ``InvocationType`` names, the runtime's
``invocationType``, from the contract); the first is the default."""


@dataclass(frozen=True)
class _Limitable:
    """A named target given by what it is, which may carry limits (the construct's ``flow_control=`` on each of
    its targets)."""

    flow_control: FlowControl | None = field(default=None, kw_only=True)
    """``{"rate": n, "periodSeconds": s, "maxInFlight": m}`` (either limit, or both): how fast, and how many at once,
    deliveries to this target start, rendered as its description's ``flowControl``. Default: no limits."""

    def __post_init__(self) -> None:
        check_flow_control(self.flow_control)


@dataclass(frozen=True)
class QueueTarget(_Limitable):
    """A named target that is an SQS queue (``targets.SqsSendMessage`` when deployed): the engine creates it."""

    fifo: bool = False
    message_group_id: str | None = None
    """A FIFO queue's message group for every delivery; default: the schedule's id."""


@dataclass(frozen=True)
class TopicTarget(_Limitable):
    """A named target that is an SNS topic (``targets.SnsPublish`` when deployed): the engine creates it, and an
    SQS queue subscribed to it with raw message delivery, where its deliveries arrive."""

    fifo: bool = False
    message_group_id: str | None = None
    """A FIFO topic's message group for every delivery; default: the schedule's id."""


@dataclass(frozen=True)
class BusTarget(_Limitable):
    """A named target that is an EventBridge bus (``targets.EventBridgePutEvents`` when deployed): the engine
    creates it, and a rule that sends its events of this source and detail type to an SQS queue, where they
    arrive (each an EventBridge event whose ``detail`` is the envelope)."""

    detail_type: str
    source: str


@dataclass(frozen=True)
class StateMachineTarget(_Limitable):
    """A named target that is a Step Functions state machine (``targets.StepFunctionsStartExecution`` when
    deployed): the engine creates it in its moto, where each delivery starts an execution with the envelope
    as its input. moto runs no workflow: every execution stays ``RUNNING``, and its input is the delivery."""

    express: bool = False
    """An EXPRESS state machine instead of a STANDARD one."""


@dataclass(frozen=True)
class LambdaTarget(_Limitable):
    """A named target that is a Lambda function of the engine's, with the way it is invoked: ``handler`` is
    called as ``handler(envelope, None)``. With ``invocation_type="Event"`` the engine's Lambda answers 202
    at once, which is the delivery, and runs the handler on a thread of its own: what it raises is logged,
    not a failed delivery (``targets.LambdaInvoke(invocation_type=EVENT)`` when deployed)."""

    handler: Callable[[Envelope, Any], Any] | None = None
    """``None``: a function that does nothing (the testing kit still records what it receives)."""
    invocation_type: str = LAMBDA_INVOCATION_TYPES[0]
    """``RequestResponse`` (the default: what the handler raises is a failed delivery, retried) or ``Event``."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.invocation_type not in LAMBDA_INVOCATION_TYPES:
            raise ValueError(f"invocation_type must be one of {', '.join(LAMBDA_INVOCATION_TYPES)}, "
                             f"got {self.invocation_type!r}")
        if self.handler is not None and not callable(self.handler):
            raise ValueError(f"handler must be a Lambda-style callable or None, got {type(self.handler).__name__}")


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
"""The hosts an ``http://`` URL of an :class:`HttpsTarget` may name (the runtime's rule for plain HTTP)."""


@dataclass(frozen=True)
class HttpsTarget(_Limitable):
    """A named target that is an HTTPS endpoint (``targets.HttpsEndpoint`` when deployed): each delivery is
    a POST of the envelope signed with ``secret``, which the engine keeps in its moto's Secrets Manager (the
    description's ``secretArn``). On the engine alone the URL may be ``http://``, to a loopback host."""

    url: str
    secret: str
    """The signing secret, as the secret's ``SecretString`` holds it; a receiver verifies with the same."""
    headers: Mapping[str, str] | None = None
    """Headers sent with each request beside the runtime's own (which they never override)."""
    timeout_seconds: int = contract.WEBHOOK.timeout_seconds.default or 10
    """For the connection and for the answer, each."""

    def __post_init__(self) -> None:
        super().__post_init__()
        parts = urlsplit(self.url) if isinstance(self.url, str) else None
        if parts is None or parts.scheme not in ("https", "http") or not parts.hostname:
            raise ValueError(f"url must be an https:// URL, got {self.url!r}")
        if parts.scheme == "http" and parts.hostname not in LOOPBACK_HOSTS:
            raise ValueError(f"url: http:// is allowed on the local engine only to {', '.join(LOOPBACK_HOSTS)}, "
                             f"got {self.url!r} (use https://)")
        if not isinstance(self.secret, str) or not self.secret:
            raise ValueError("secret must be a non-empty string")
        bounds = contract.WEBHOOK.timeout_seconds
        if isinstance(self.timeout_seconds, bool) or not isinstance(self.timeout_seconds, int) or not (
                bounds.min <= self.timeout_seconds <= bounds.max):
            raise ValueError(f"timeout_seconds must be a whole number of seconds from {bounds.min} to {bounds.max}, "
                             f"got {self.timeout_seconds!r}")
        if self.headers is not None and not (isinstance(self.headers, Mapping) and all(
                isinstance(k, str) and isinstance(v, str) for k, v in self.headers.items())):
            raise ValueError(f"headers must map header names to values, both strings, got {self.headers!r}")

    def description(self, secret_arn: str) -> dict[str, Any]:
        """As the construct renders it in ``TARGETS``."""
        headers = {"headers": dict(self.headers)} if self.headers else {}
        return {"type": "https", "url": self.url, "secretArn": secret_arn, "timeoutSeconds": self.timeout_seconds,
                **headers}


ResourceTarget = QueueTarget | TopicTarget | BusTarget | StateMachineTarget | HttpsTarget | LambdaTarget
"""A named target given by what it is rather than by a callable: the engine makes its resource in its moto
(a queue, topic or bus with the SQS queue its deliveries arrive in, a state machine, an HTTPS endpoint's
signing secret), or its function."""
RESOURCE_TARGETS = (QueueTarget, TopicTarget, BusTarget, StateMachineTarget, HttpsTarget, LambdaTarget)


def resource_target_names() -> str:
    """The named target classes, for a message: ``"one of QueueTarget, ..., LambdaTarget"``."""
    return f"one of {', '.join(kind.__name__ for kind in RESOURCE_TARGETS)}"


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


def url_target(url: str, timeout_seconds: float = 10.0, where: str = "--target-url") -> LocalTarget:
    """POST the envelope (or outcome event) as JSON; any non-2xx answer is a failed delivery (and is retried).
    A bad URL is a ``ValueError`` starting with ``where``."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"{where} must be an http(s) URL, got {url!r}")

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


def handler_target(spec: str, where: str = "--target-handler") -> LocalTarget:
    """``module:function``, called like a Lambda handler with the envelope (or outcome event) as its event."""
    function = load_handler(spec, where)

    def deliver(envelope: Envelope) -> Any:
        return function(envelope, None)

    return deliver


def load_handler(spec: str, where: str) -> Callable[[Envelope, Any], Any]:
    """The Lambda-style handler ``module:function`` names; ``ValueError`` starting with ``where``.

    The module is looked up in the working directory first, as ``python -m`` and uvicorn do (the
    console script's own ``sys.path`` starts at its ``bin`` folder instead).
    """
    module_name, _, function_name = spec.partition(":")
    if not module_name or not function_name:
        raise ValueError(f"{where} must look like module:function, got {spec!r}")
    working_dir = os.getcwd()
    if working_dir not in sys.path and "" not in sys.path:
        sys.path.insert(0, working_dir)
    try:
        function: Callable[[Envelope, Any], Any] = getattr(importlib.import_module(module_name), function_name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{where} {spec!r} cannot be loaded: {exc}") from None
    return function


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
        self.record(envelope, time.time_ns() // 1_000_000)

    def record(self, envelope: Envelope, received_ms: int) -> None:
        """Record a delivery that arrived at ``received_ms`` (read back from where it arrived)."""
        with self._arrived:
            self.deliveries.append(Delivery(envelope, received_ms))
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
