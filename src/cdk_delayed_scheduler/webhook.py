"""Checking an HTTPS target's request on the receiving side: ``from cdk_delayed_scheduler.webhook import verify_signature``.

Standard library only (no aws-cdk-lib, botocore or boto3): the check is the runtime's own
(``scheduler_runtime/core/signing.py``, loaded from the package's runtime asset), so sender and
receiver cannot drift apart.

```python
from cdk_delayed_scheduler.webhook import SignatureVerificationError, verify_signature

@app.post("/timers")                               # Flask; any framework that gives the raw body
def timer_due():
    try:
        envelope = verify_signature(request.get_data(), request.headers, SIGNING_SECRET)
    except SignatureVerificationError:
        return "", 401
    settle(envelope.payload, dedupe_key=envelope.dedupe_key)
    return "", 204
```
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

from ._contract import contract, load_core_module
from .envelope import Envelope

if TYPE_CHECKING:
    from scheduler_runtime.core import signing
else:
    signing = load_core_module("signing")

__all__ = ["SignatureVerificationError", "verify_signature", "SIGNATURE_HEADER", "DEFAULT_TOLERANCE_SECONDS"]

SIGNATURE_HEADER: str = contract.WEBHOOK.signature_header
"""The header that carries the signature: ``t=<unix seconds>,v1=<hex HMAC-SHA256>``."""
DEFAULT_TOLERANCE_SECONDS: int = contract.WEBHOOK.tolerance_seconds
"""How far the signed timestamp may be from now, either way, by default (300 s)."""


class SignatureVerificationError(ValueError):
    """The request was not signed by the scheduler with a secret given: the signature header is
    missing or malformed, its timestamp is out of the tolerance, or no signature matches the body."""


def verify_signature(body: Union[bytes, str], headers: Mapping[str, Any],
                     secret: Union[str, bytes, Sequence[Union[str, bytes]]], *,
                     tolerance: float = DEFAULT_TOLERANCE_SECONDS, now: float | None = None) -> Envelope:
    """Check an HTTPS target's request and return the envelope it carries.

    ``body`` is the request's raw body, exactly as received (bytes, or text that is those bytes
    decoded as UTF-8): parsing it first and serializing it again breaks the signature. ``headers`` is
    any mapping of the request's headers, names in any case (Flask, Django, API Gateway events).
    ``secret`` is the target's signing secret (the secret's text, or its UTF-8 bytes), or several of
    them: during a rotation, pass the new and the old one, and a request signed with either passes.
    ``tolerance`` is how many seconds the signed timestamp may be from ``now`` (default the clock),
    either way: an older request is refused as a possible replay.

    Raises :class:`SignatureVerificationError` saying what failed; ``ValueError`` (or ``TypeError``)
    for no secret, an empty one, or one that is neither text nor bytes.
    """
    at = time.time() if now is None else now
    try:
        signing.verify(body, headers, secret, tolerance, at, contract.WEBHOOK)
    except signing.SignatureError as exc:
        raise SignatureVerificationError(str(exc)) from None
    try:
        return Envelope.from_json(_json_object(body))
    except ValueError as exc:
        raise SignatureVerificationError(f"the signed body is not an envelope: {exc}") from None


def _json_object(body: Union[bytes, str]) -> Mapping[str, Any]:
    value = json.loads(body)
    if not isinstance(value, Mapping):
        raise ValueError(f"a JSON object is expected, got {type(value).__name__}")
    return value
