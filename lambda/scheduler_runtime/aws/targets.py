"""Delivery to targets. A target is a JSON description in ``TARGETS``.

- ``{"type": "lambda", "functionArn": ...}``: a synchronous invoke; a function
  error counts as a failed delivery, so it is retried and, at the end, parked
  in the dead-letter queue with the error.
- ``{"type": "sqs", "queueUrl": ..., "fifo": bool, "messageGroupId": str?}``:
  a FIFO queue gets a ``MessageGroupId`` (the configured one, else the
  schedule id) and a deduplication id derived from the ``dedupeKey``. The
  body is compact JSON that SQS accepts whatever the payload holds
  (``core.envelope.sqs_safe_json``).

What a target refuses for good (an envelope larger than the queue's maximum
message size, which only SQS knows: 1 KiB to 1 MiB per queue) raises
:class:`Undeliverable`, which the dispatcher parks at once instead of retrying.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Callable, Mapping

from botocore.exceptions import ClientError, ConnectTimeoutError, EndpointConnectionError

from ..core.envelope import sqs_safe_json

Deliverer = Callable[[Any, Mapping[str, Any], dict[str, Any]], None]
_UNREACHED_PAUSES = (0.1, 0.4)
"""Pauses before trying again an invoke that never reached the function (three tries in all)."""
_THROTTLED = {"TooManyRequestsException", "ThrottlingException", "EC2ThrottledException"}


class DeliveryError(Exception):
    """The target refused or failed the delivery; the message says why."""


class Undeliverable(DeliveryError):
    """The target refuses this envelope for good (retrying cannot help): park it now, with the reason."""


_REFUSED_FOR_GOOD = {"InvalidParameterValue", "InvalidParameterValueException", "InvalidMessageContents",
                     "RequestTooLargeException"}
"""Error codes of a send or invoke that no retry of the same envelope can change (a sender fault)."""


def refused_for_good(exc: Exception) -> bool:
    """Whether ``exc`` says the service will never take this request as it is (e.g. a message too long)."""
    return isinstance(exc, ClientError) and exc.response.get("Error", {}).get("Code") in _REFUSED_FOR_GOOD


def _invoke_lambda(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> None:
    """A synchronous invoke, made once per delivery attempt.

    The Lambda client makes no retries of its own (``context.client_config``): an invoke that timed out
    or lost its answer may have run the function, and is retried only as the next delivery attempt.
    An invoke that never reached the function (throttled, or no connection) is tried again at once.
    """
    payload = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    for pause in (*_UNREACHED_PAUSES, None):
        try:
            response = ctx.client("lambda").invoke(FunctionName=target["functionArn"],
                                                   InvocationType="RequestResponse", Payload=payload)
            break
        except (ClientError, EndpointConnectionError, ConnectTimeoutError) as exc:
            if pause is None or not _never_reached(exc):
                raise
            time.sleep(pause)
    # Read to the end even when unused: an unread body keeps the connection out of the pool,
    # and the next invoke would open (on AWS: handshake) a new one.
    answer = response["Payload"].read()
    if response.get("FunctionError"):
        detail = answer.decode("utf-8", "replace")[:500]
        raise DeliveryError(f"lambda {target['functionArn']} failed: {response['FunctionError']}: {detail}")


def _never_reached(exc: Exception) -> bool:
    """Whether a failed invoke certainly never ran the function: throttled, or never connected."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code") in _THROTTLED
    return True


def _send_sqs(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> None:
    body = sqs_safe_json(envelope)
    params: dict[str, Any] = {
        "QueueUrl": target["queueUrl"],
        "MessageBody": body,
        "MessageAttributes": {"dedupeKey": {"DataType": "String", "StringValue": envelope["dedupeKey"]}},
    }
    if target.get("fifo"):
        params["MessageGroupId"] = target.get("messageGroupId") or envelope["id"]
        params["MessageDeduplicationId"] = fifo_deduplication_id(envelope["dedupeKey"])
    try:
        ctx.client("sqs").send_message(**params)
    except ClientError as exc:
        if refused_for_good(exc):
            raise Undeliverable(f"queue {target['queueUrl']} refuses the envelope ({len(body.encode('utf-8'))} bytes) "
                                f"for good: {exc.response['Error'].get('Message', exc)}") from exc
        raise


def fifo_deduplication_id(dedupe_key: str) -> str:
    """SQS allows 128 characters here; a SHA-256 hex digest is 64 and stable."""
    return hashlib.sha256(dedupe_key.encode("utf-8")).hexdigest()


DELIVERERS: dict[str, Deliverer] = {"lambda": _invoke_lambda, "sqs": _send_sqs}


def deliver(ctx: Any, target: Mapping[str, Any], envelope: dict[str, Any]) -> None:
    """Deliver ``envelope`` to ``target``; raise :class:`DeliveryError` when it fails."""
    deliverer = DELIVERERS.get(str(target.get("type")))
    if deliverer is None:
        raise DeliveryError(f"target type {target.get('type')!r} is not supported")
    try:
        deliverer(ctx, target, envelope)
    except DeliveryError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure is a failed delivery with its reason
        raise DeliveryError(f"{type(exc).__name__}: {exc}") from exc
