"""Fault injection for the local engine (``--faults SPEC --seed N``).

Faults are injected where AWS would produce them, never in the runtime's code:

- in the AWS layer, between the runtime's botocore clients and the endpoint: a request is refused
  with a throttling error before it reaches the endpoint, or it is applied and its answer is lost,
  or a ``SendMessageBatch`` fails whole or in part; a dispatcher "crashes" (its invocation ends at
  once) right after one of its requests was answered, with the rest of its batch in flight;
- in Lambda, as the engine plays it: an invocation of a function is throttled, and the target
  function fails or times out.

Only requests made while a runtime function runs are touched (the engine's own pollers and
set-up are the AWS service itself). Each decision draws from one RNG seeded with ``--seed``;
thread scheduling still varies from run to run, so a seed fixes the rates and the workload, not
the exact sequence. :class:`FaultInjector` counts what it injected, by kind and by operation.
"""

from __future__ import annotations

import collections
import contextvars
import json
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

FAULT_KINDS: dict[str, str] = {
    "ddb-throttle": "a DynamoDB request is refused with ProvisionedThroughputExceededException (nothing applied)",
    "sqs-throttle": "an SQS request is refused with RequestThrottled (nothing applied)",
    "lambda-throttle": "a Lambda invocation is refused with 429 TooManyRequestsException: the target's invoke, "
                       "the pollers' invocations of the functions, and API requests (answered 429)",
    "lost-answer": "a DynamoDB or SQS write, or a target invoke, put or execution start, is applied but its "
                   "answer is lost (a read timeout the SDK may retry)",
    "batch-fail": "a SendMessageBatch fails whole with a 500 (nothing sent)",
    "batch-partial": "a SendMessageBatch sends some entries and reports the others Failed",
    "crash": "a dispatcher invocation dies right after one of its requests was answered, its batch in flight",
    "target-error": "the target function raises an error",
    "target-timeout": "the target function runs past the dispatcher's read timeout, then times out",
}
_WRITES = {"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem",
           "SendMessage", "SendMessageBatch", "DeleteMessage", "ChangeMessageVisibility", "Invoke",
           "PutEvents", "StartExecution"}
_SERVICES = {"DynamoDB_20120810": "dynamodb", "AmazonSQS": "sqs", "AWSEvents": "events",
             "AWSStepFunctions": "stepfunctions"}
_FUNCTION: contextvars.ContextVar[str | None] = contextvars.ContextVar("faulted_function", default=None)
"""The runtime function whose invocation is running (None: the engine itself, or the AWS service)."""


class FaultSpecError(ValueError):
    """A ``--faults`` spec that cannot be used; the message names the part and the rule."""


def parse_spec(text: str) -> dict[str, float]:
    """``kind=rate[,kind=rate...]`` (``all=rate`` sets every kind; later parts override) -> rates."""
    rates: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, sep, value = part.partition("=")
        kind = kind.strip()
        if not sep:
            raise FaultSpecError(f"--faults: {part!r} must look like kind=rate, e.g. ddb-throttle=0.05")
        if kind != "all" and kind not in FAULT_KINDS:
            raise FaultSpecError(f"--faults: unknown fault kind {kind!r}; kinds: all, {', '.join(FAULT_KINDS)}")
        try:
            rate = float(value)
        except ValueError:
            raise FaultSpecError(f"--faults: the rate of {kind!r} must be a number from 0 to 1, got {value!r}") from None
        if not 0 <= rate <= 1:
            raise FaultSpecError(f"--faults: the rate of {kind!r} must be from 0 to 1, got {value}")
        rates.update(dict.fromkeys(FAULT_KINDS, rate) if kind == "all" else {kind: rate})
    if not rates:
        raise FaultSpecError("--faults: give at least one kind=rate, e.g. all=0.02")
    return rates


class FunctionCrashed(BaseException):
    """The injected death of a function's process: not an ``Exception``, so the runtime cannot catch it."""


class Throttled(RuntimeError):
    """Lambda refused to run the invocation (429)."""


class TargetTimedOut(RuntimeError):
    """The target function ran out of time."""


class _Body:
    """A raw body for :class:`botocore.awsrequest.AWSResponse`."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self._data


@dataclass
class FaultInjector:
    """Seeded faults at the configured rates, and the counts of those injected."""

    rates: dict[str, float]
    seed: int = 0
    target_timeout_seconds: float = 2.0
    counts: collections.Counter[tuple[str, str]] = field(default_factory=collections.Counter)
    _rng: random.Random = field(init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _restore: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    # --- decisions -----------------------------------------------------------
    def _roll(self, kind: str, where: str) -> bool:
        rate = self.rates.get(kind, 0.0)
        if not rate:
            return False
        with self._lock:
            hit = self._rng.random() < rate
            if hit:
                self.counts[(kind, where)] += 1
        return hit

    def by_kind(self) -> dict[str, int]:
        """Faults injected per kind (every configured kind listed, 0 included)."""
        totals = dict.fromkeys(sorted(k for k, r in self.rates.items() if r), 0)
        with self._lock:
            for (kind, _), count in self.counts.items():
                totals[kind] = totals.get(kind, 0) + count
        return totals

    def by_stage(self) -> dict[str, int]:
        """Faults injected per ``kind @ function:operation``."""
        with self._lock:
            return {f"{kind} @ {where}": n for (kind, where), n in sorted(self.counts.items())}

    # --- Lambda, as the engine plays it ----------------------------------------
    def function(self, name: str, handler: Callable[..., Any], throttle: bool = True) -> Callable[..., Any]:
        """``handler`` as Lambda runs it under faults: maybe throttled; its AWS requests marked as its own."""

        def invoke(*args: Any) -> Any:
            if throttle and self._roll("lambda-throttle", f"{name}:invocation"):
                raise Throttled(f"Rate exceeded: {name} was throttled (injected)")
            running = _FUNCTION.set(name)
            try:
                return handler(*args)
            except FunctionCrashed as exc:
                raise RuntimeError(f"{name} crashed (injected): {exc}") from None
            finally:
                _FUNCTION.reset(running)

        return invoke

    def api(self, handler: Callable[[dict[str, Any], Any], dict[str, Any]]) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
        """The api function behind API Gateway: a throttled invocation is answered 429, with API Gateway's body."""
        run = self.function("api", handler)

        def serve(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
            try:
                answer: dict[str, Any] = run(event, context)
                return answer
            except Throttled:
                return {"statusCode": 429, "headers": {"Content-Type": "application/json"},
                        "body": json.dumps({"message": "Too Many Requests"})}

        return serve

    def target(self, deliver: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """The target function under faults: it may fail, or run past its caller's read timeout."""

        def run(envelope: dict[str, Any]) -> Any:
            if self._roll("target-error", "target:invocation"):
                raise RuntimeError("target failed (injected)")
            if self._roll("target-timeout", "target:invocation"):
                time.sleep(self.target_timeout_seconds)
                raise TargetTimedOut(f"Task timed out after {self.target_timeout_seconds:.2f} seconds (injected)")
            return deliver(envelope)

        return run

    # --- the AWS layer ---------------------------------------------------------
    def install(self) -> None:
        """Route every botocore request of this process through :meth:`_send`, until :meth:`uninstall`.

        The runtime's worker pools (a delivery per thread, parallel sends and writes) work for the
        invocation that started them: the engine's :class:`~.deadlines.DeadlineLayer`, installed first, runs
        a task submitted to a pool in a copy of the submitter's context, so its requests count as that
        function's, as they would in its own Lambda process.
        """
        from botocore.endpoint import Endpoint  # noqa: PLC0415

        send = Endpoint._send
        injector = self

        def _send(endpoint: Any, request: Any) -> Any:
            return injector._send(send, endpoint, request)

        Endpoint._send = _send

        def restore() -> None:
            Endpoint._send = send

        self._restore = restore

    def uninstall(self) -> None:
        if self._restore is not None:
            self._restore()
            self._restore = None

    def _current_function(self) -> str | None:
        return _FUNCTION.get()

    def _send(self, send: Callable[[Any, Any], Any], endpoint: Any, request: Any) -> Any:
        function = self._current_function()
        if function is None:
            return send(endpoint, request)
        service, operation = _operation(request)
        where = f"{function}:{service}.{operation}"
        throttle = {"dynamodb": "ddb-throttle", "sqs": "sqs-throttle", "lambda": "lambda-throttle"}.get(service)
        if throttle and self._roll(throttle, where):
            return _throttled(request, service)
        if operation == "SendMessageBatch":
            if self._roll("batch-fail", where):
                return _error(request, 500, "com.amazonaws.sqs#InternalError", "InternalError (injected)")
            if self._roll("batch-partial", where):
                return self._partial_batch(send, endpoint, request)
        response = send(endpoint, request)
        if operation in _WRITES and self._roll("lost-answer", where):
            from botocore.exceptions import ReadTimeoutError  # noqa: PLC0415

            raise ReadTimeoutError(endpoint_url=request.url)
        if function == "dispatcher" and self._roll("crash", where):
            raise FunctionCrashed(f"after {service}.{operation}")
        return response

    def _partial_batch(self, send: Callable[[Any, Any], Any], endpoint: Any, request: Any) -> Any:
        """Send a random part of the batch's entries; report the rest Failed (SenderFault false)."""
        body = json.loads(request.body)
        entries = body["Entries"]
        with self._lock:
            refused = set(self._rng.sample(range(len(entries)), self._rng.randint(1, len(entries))))
        failed = [{"Id": entries[i]["Id"], "SenderFault": False, "Code": "InternalError",
                   "Message": "injected partial batch failure"} for i in sorted(refused)]
        kept = [e for i, e in enumerate(entries) if i not in refused]
        if not kept:
            return _json_response(request, 200, {"Successful": [], "Failed": failed})
        request.body = json.dumps({**body, "Entries": kept}).encode()
        request.headers["Content-Length"] = str(len(request.body))
        response = send(endpoint, request)
        if response.status_code != 200:
            return response
        answer = json.loads(response.content or b"{}")
        return _json_response(request, 200, {"Successful": answer.get("Successful", []),
                                             "Failed": answer.get("Failed", []) + failed})


def _operation(request: Any) -> tuple[str, str]:
    target = request.headers.get("X-Amz-Target")
    if isinstance(target, bytes):
        target = target.decode()
    if target:
        prefix, _, operation = target.partition(".")
        return _SERVICES.get(prefix, prefix), operation
    if "/functions/" in request.url and request.url.endswith("/invocations"):
        return "lambda", "Invoke"
    return "other", request.method


def _json_response(request: Any, status: int, body: dict[str, Any], headers: dict[str, Any] | None = None) -> Any:
    from botocore.awsrequest import AWSResponse  # noqa: PLC0415

    data = json.dumps(body).encode()
    return AWSResponse(request.url, status, {"Content-Type": "application/x-amz-json-1.0",
                                             "Content-Length": str(len(data)), "x-amzn-RequestId": "injected",
                                             **(headers or {})}, _Body(data))


def _error(request: Any, status: int, error_type: str, message: str) -> Any:
    return _json_response(request, status, {"__type": error_type, "message": message})


def _throttled(request: Any, service: str) -> Any:
    if service == "dynamodb":
        return _error(request, 400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
                      "The level of configured provisioned throughput for the table was exceeded (injected)")
    if service == "sqs":
        return _error(request, 400, "com.amazonaws.sqs#RequestThrottled", "Request is throttled (injected)")
    return _json_response(request, 429, {"Type": "User", "message": "Rate exceeded (injected)",
                                         "Reason": "ReservedFunctionConcurrentInvocationLimitExceeded"},
                          {"x-amzn-ErrorType": "TooManyRequestsException"})
