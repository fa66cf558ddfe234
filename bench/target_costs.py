"""What each kind of target adds per million deliveries: the target service's own charge, and the
dispatcher's billed time spent in the call.

Nothing here is measured on AWS (no account is reachable): the prices are list prices (us-east-1, the
sources in :data:`TARGET_PRICES`), and the time a call takes is a **stated** in-region figure per kind
(:data:`CALL_MS`), not a measurement; moto's local calls take a few ms and say nothing about AWS's.
The envelope delivered is the runtime's own (``build_envelope``) around a payload of
``payload_bytes``; every kind here bills per 64 KB chunk or per GB, so below 64 KB only HTTPS's
egress moves with the size.

The dispatcher's share is the call's time at its memory and price: the construct's default
dispatcher (128 MB, arm64) bills about $0.0017 per million deliveries per millisecond of call. A
synchronous Lambda target also keeps the dispatcher billed for the function's whole run; an
``Event`` invoke only for Lambda's acceptance.

Free in this table (said so in the rendered notes): SNS's delivery to SQS and Lambda subscriptions,
EventBridge's delivery to AWS targets by a rule, the Secrets Manager reads of an HTTPS target (one
``GetSecretValue`` per sandbox per 300 s, $0.05 per 10,000: a few cents a month per warm sandbox),
and data transfer inside the region.
"""

from __future__ import annotations

import json

from scheduler_runtime.core.envelope import build_envelope

from .pricing import PRICES

TARGET_PRICES = {
    "sources": {
        "sqs": "https://aws.amazon.com/sqs/pricing/",
        "sns": "https://aws.amazon.com/sns/pricing/",
        "eventbridge": "https://aws.amazon.com/eventbridge/pricing/",
        "stepfunctions": "https://aws.amazon.com/step-functions/pricing/",
        "lambda": "https://aws.amazon.com/lambda/pricing/",
        "egress": "https://aws.amazon.com/ec2/pricing/on-demand/ (data transfer out to the internet)",
    },
    "chunk_bytes": 64 * 1024,
    "sqs_standard_per_million": 0.40,
    "sns_standard_publish_per_million": 0.50,  # per 64 KB chunk; delivery to SQS and Lambda subscriptions: free
    "eventbridge_custom_event_per_million": 1.00,  # per 64 KB chunk; a rule's delivery to AWS targets: free
    "stepfunctions_standard_per_million_transitions": 25.0,
    "stepfunctions_express_per_million_requests": 1.00,
    "stepfunctions_express_gb_second": 0.00001667,  # first 1,000 GB-hours a month; 64 MB and 100 ms minimum
    "lambda_per_million_requests": 0.20,
    "egress_per_gb": 0.09,  # the first 10 TB a month, after 100 GB free (aggregated over the account)
}

CALL_MS = {
    "lambda (RequestResponse)": None,  # the function's own run: the user's
    "lambda (Event)": 20.0,
    "sqs": 10.0,
    "sns": 20.0,
    "eventbridge": 20.0,
    "stepfunctions (STANDARD)": 30.0,
    "stepfunctions (EXPRESS)": 30.0,
    "https": 100.0,  # the receiver's answer over the internet, on a kept-alive connection
}
"""Stated time of one delivery call from the dispatcher, in ms (typical in-region figures, not measured)."""

HTTPS_HEADER_BYTES = 700
"""Request line and headers of a webhook POST (signature, schedule id, dedupeKey, attempt, host, type, length)
plus TLS record overhead, about; the answer travels inbound, which is free."""


def envelope_bytes(payload_bytes: int) -> int:
    """The size of the runtime's envelope around a JSON string payload of ``payload_bytes``."""
    payload = json.dumps("x" * max(0, payload_bytes - 2))
    envelope = build_envelope("order-reminder-000123", 1_790_000_000_000, 1_790_000_000_012, 1, payload, "default")
    return len(json.dumps(envelope, separators=(",", ":")).encode("utf-8"))


def dispatcher_usd_per_million_per_ms() -> float:
    """The dispatcher's billed cost per million deliveries for each millisecond a call takes."""
    gb = PRICES["lambda_memory_mb"]["dispatcher"] / 1024
    return 1_000_000 * 0.001 * gb * PRICES["lambda_arm_per_gb_second"]


def _chunks(size: int) -> int:
    return max(1, -(-size // TARGET_PRICES["chunk_bytes"]))


def per_kind(payload_bytes: int = 300, function_ms: float = 100.0, standard_transitions: int = 2,
             express_ms: float = 100.0, message_bytes: int | None = None) -> dict:
    """Per million deliveries, for each kind: ``service`` (the target's own charge), ``dispatcher`` (its time
    in the call), ``total``, and ``call_ms``. ``function_ms`` is a synchronous Lambda target's run, which
    the dispatcher waits for; ``standard_transitions`` the state transitions a STANDARD workflow's
    execution takes (the user's workflow; two for a one-state machine's start and end is the assumption);
    ``express_ms`` an EXPRESS execution's billed duration. ``message_bytes``: the size of what is delivered
    when it is not an envelope around ``payload_bytes`` (an outcome event)."""
    p = TARGET_PRICES
    size = envelope_bytes(payload_bytes) if message_bytes is None else message_bytes
    chunks = _chunks(size)
    express_gb_s = 64 / 1024 * max(0.1, -(-express_ms // 100) / 10)
    service = {
        "lambda (RequestResponse)": p["lambda_per_million_requests"],  # its run: billed to the function, not counted
        "lambda (Event)": p["lambda_per_million_requests"],
        "sqs": p["sqs_standard_per_million"] * chunks,
        "sns": p["sns_standard_publish_per_million"] * chunks,
        "eventbridge": p["eventbridge_custom_event_per_million"] * chunks,
        "stepfunctions (STANDARD)": p["stepfunctions_standard_per_million_transitions"] * standard_transitions,
        "stepfunctions (EXPRESS)": (p["stepfunctions_express_per_million_requests"]
                                    + 1_000_000 * express_gb_s * p["stepfunctions_express_gb_second"]),
        "https": 1_000_000 * (size + HTTPS_HEADER_BYTES) / 1e9 * p["egress_per_gb"],
    }
    per_ms = dispatcher_usd_per_million_per_ms()
    rows = {}
    for kind, charge in service.items():
        call_ms = CALL_MS[kind] if CALL_MS[kind] is not None else function_ms
        rows[kind] = {"service": charge, "dispatcher": call_ms * per_ms, "call_ms": call_ms,
                      "total": charge + call_ms * per_ms}
    return {"envelope_bytes": size, "payload_bytes": payload_bytes, "function_ms": function_ms,
            "standard_transitions": standard_transitions, "express_ms": express_ms,
            "dispatcher_per_ms": per_ms, "kinds": rows}
