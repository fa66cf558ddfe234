"""The HTTPS target's signature, shared by the sender (the dispatcher) and a receiver
(``cdk_delayed_scheduler.webhook.verify_signature``), as Stripe's and QStash's webhooks sign:

    Scheduler-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>." + the exact body bytes)>

The timestamp is signed with the body, so a captured request cannot be replayed later than the
receiver's tolerance; the version tag lets a later scheme sit beside this one. A receiver accepts a
header with several ``v1`` entries, and checks each against every secret it holds (the old and the new
one during a rotation).

Standard library only, and no import of a sibling module at run time: the package loads this file on
its own (``cdk_delayed_scheduler._contract.load_core_module``), so the header names come in as a
:class:`~scheduler_runtime.core.contract.Webhook` argument (``contract.WEBHOOK``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import TYPE_CHECKING, Any, Mapping, Sequence, Union

if TYPE_CHECKING:
    from .contract import Webhook

Secret = Union[str, bytes]
Secrets = Union[Secret, Sequence[Secret]]


class SignatureError(ValueError):
    """A request's signature is missing, malformed, out of its time tolerance or matches no secret."""


def envelope_body(envelope: Mapping[str, Any]) -> bytes:
    """The request body: the envelope as compact UTF-8 JSON, the exact bytes that are signed."""
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of ``"<timestamp>." + body`` under ``secret``."""
    return hmac.new(secret, str(timestamp).encode("ascii") + b"." + body, hashlib.sha256).hexdigest()


def signature_header(secret: bytes, body: bytes, now_s: float, webhook: Webhook) -> str:
    """The signature header's value, ``t=<unix seconds>,v1=<hex>``, for ``body`` sent at ``now_s``."""
    timestamp = int(now_s)
    return f"t={timestamp},{webhook.signature_version}={signature(secret, timestamp, body)}"


def webhook_headers(envelope: Mapping[str, Any], body: bytes, secret: bytes, now_s: float,
                    webhook: Webhook) -> dict[str, str]:
    """The runtime's own headers of one delivery: ``Content-Type``, the signature of ``body`` (the
    envelope's bytes, :func:`envelope_body`), and the envelope's ``id``, ``dedupeKey`` and ``attempt`` (an
    outcome event, which has no ``attempt``, goes without that header)."""
    headers = {"Content-Type": "application/json",
               webhook.signature_header: signature_header(secret, body, now_s, webhook),
               webhook.schedule_id_header: str(envelope["id"]),
               webhook.dedupe_key_header: str(envelope["dedupeKey"])}
    if "attempt" in envelope:
        headers[webhook.attempt_header] = str(envelope["attempt"])
    return headers


def verify(body: bytes | str, headers: Mapping[str, Any], secrets: Secrets, tolerance_s: float, now_s: float,
           webhook: Webhook) -> int:
    """Check that ``body`` was signed, within ``tolerance_s`` of ``now_s`` either way, with one of
    ``secrets``; the signed timestamp. ``headers`` is looked up whatever the case of its names.
    Raises :class:`SignatureError` saying what failed."""
    keys = secret_keys(secrets)
    data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    value = header(headers, webhook.signature_header)
    if value is None:
        raise SignatureError(f"the request has no {webhook.signature_header} header")
    timestamp, signatures = parse_signature_header(value, webhook)
    age = now_s - timestamp
    if age > tolerance_s:
        raise SignatureError(f"the {webhook.signature_header} timestamp is {int(age)} s old, more than the "
                             f"{tolerance_s:g} s tolerance")
    if -age > tolerance_s:
        raise SignatureError(f"the {webhook.signature_header} timestamp is {int(-age)} s in the future, more than "
                             f"the {tolerance_s:g} s tolerance")
    expected = [signature(key, timestamp, data) for key in keys]
    if not any(hmac.compare_digest(mine, theirs) for mine in expected for theirs in signatures):
        raise SignatureError(f"no {webhook.signature_version} signature in {webhook.signature_header} matches the "
                             f"body with {'the secret' if len(keys) == 1 else f'any of the {len(keys)} secrets'}")
    return timestamp


def secret_keys(secrets: Secrets) -> list[bytes]:
    """``secrets`` (one, or a sequence of them, each text or bytes) as HMAC keys: text as its UTF-8 bytes."""
    many = [secrets] if isinstance(secrets, (str, bytes, bytearray)) else list(secrets)
    if not many:
        raise ValueError("no secret given to check the signature with")
    keys = []
    for secret in many:
        if not isinstance(secret, (str, bytes, bytearray)):
            raise TypeError(f"a secret must be str or bytes, got {type(secret).__name__}")
        key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
        if not key:
            raise ValueError("a secret must not be empty")
        keys.append(key)
    return keys


def header(headers: Mapping[str, Any], name: str) -> str | None:
    """The value of header ``name`` in ``headers``, whatever the case of its key (Flask, Django and API
    Gateway write names differently); the first of several values; ``None`` when absent."""
    wanted = name.lower()
    for key, value in headers.items():
        if str(key).lower() == wanted:
            if isinstance(value, (list, tuple)):
                value = value[0] if value else None
            if isinstance(value, (bytes, bytearray)):
                value = bytes(value).decode("latin-1")
            return None if value is None else str(value)
    return None


def parse_signature_header(value: str, webhook: Webhook) -> tuple[int, list[str]]:
    """``(timestamp, [hex signatures of this version])`` from ``t=<seconds>,v1=<hex>[,v1=<hex>...]``."""
    timestamp: int | None = None
    signatures: list[str] = []
    for part in value.split(","):
        name, sep, text = part.strip().partition("=")
        if not sep:
            raise SignatureError(f"malformed {webhook.signature_header}: {part.strip()[:40]!r} is not name=value")
        if name == "t":
            if not text.isascii() or not text.isdigit():
                raise SignatureError(f"malformed {webhook.signature_header}: t must be unix seconds, "
                                     f"got {text[:20]!r}")
            timestamp = int(text)
        elif name == webhook.signature_version:
            signatures.append(text.lower())
    if timestamp is None:
        raise SignatureError(f"malformed {webhook.signature_header}: no t=<unix seconds>")
    if not signatures:
        raise SignatureError(f"malformed {webhook.signature_header}: no {webhook.signature_version}=<signature>")
    return timestamp, signatures
