"""What a reschedule and a redrive cost per million, from the AWS requests each makes.

The requests are counted, not measured on AWS: ``tests/handlers/test_reschedule_and_redrive_calls.py`` runs each
case through the runtime's handlers (and the operator's redrive) on moto, records every request botocore sends,
and requires exactly the requests listed here. They are priced by :func:`bench.pricing.bill`, at the one price
table's unit prices, as the Cost section prices a timer:

- each DynamoDB write one write unit and each (strongly consistent) read one read unit: items under 1 KB, as the
  record of the Cost section's 1 KB JSON payload and every timer item are (an ``UpdateItem`` is billed by the
  larger of the item before and after it, so a record whose payload takes it past 1 KB costs a unit more a write);
- each SQS request one request (a message under 64 KB);
- a reschedule is a ``PATCH`` through the construct's default HTTP API: its request, the API function's request and
  its billed time, and the access log line. The function's time is **stated**: :data:`AWS_CALL_MS` per AWS request
  it makes (target_costs' in-region figure for an SQS send, taken for a DynamoDB request too), the rest of its work
  left out;
- a redrive runs where the operator runs it (the command line, :func:`cdk_delayed_scheduler.operator.redrive`): no
  Lambda, no API. Its requests come per received batch of ten, priced at full batches, per parked delivery.

What follows either operation is left out and said so in the rendered notes: the delivery a redrive sends (a
delivery as any other), and, from ``QUEUED``, the old message that a reschedule leaves in the delayer queue (a
stray the dispatcher drops when it surfaces: :data:`STRAY_DROP`).
"""

from __future__ import annotations

from collections import Counter

from .cost import access_log_bytes  # first: bench.common puts lambda/ on the path
from .pricing import bill
from .target_costs import CALL_MS

from scheduler_runtime.core.window import STRAY_AFTER_MS  # noqa: E402

GET, PUT, UPDATE, DELETE = "dynamodb.GetItem", "dynamodb.PutItem", "dynamodb.UpdateItem", "dynamodb.DeleteItem"
SEND, RECEIVE = "sqs.SendMessage", "sqs.ReceiveMessage"
SEND_BATCH, DELETE_BATCH = "sqs.SendMessageBatch", "sqs.DeleteMessageBatch"
QUERY = "dynamodb.Query"
READS = (GET, QUERY)

AWS_CALL_MS = CALL_MS["sqs"]
"""Stated in-region time of one AWS request from the API function, in ms (not measured)."""

ANNOUNCED_WITHIN_S = STRAY_AFTER_MS // 1000
"""A new due time at most this far away is announced to the dispatcher first: one more ``UpdateItem``."""

RESCHEDULES: dict[str, tuple[str, ...]] = {
    "from QUEUED to a due time within the window": (GET, SEND, UPDATE),
    "from QUEUED to a due time beyond the window": (GET, PUT, UPDATE),
    "from SCHEDULED to a due time within the window": (GET, SEND, UPDATE, UPDATE, DELETE),
    "from SCHEDULED to a due time beyond the window": (GET, PUT, UPDATE, UPDATE, DELETE),
    "to a new payload at the same due time": (GET, UPDATE),
}
"""A reschedule's requests, in order: the record's read, the new due time armed (a message or a timer), the record's
conditional update, then, from ``SCHEDULED``, the old timer flagged and deleted (its removal is not enqueued)."""

RESCHEDULE_EXTRAS: dict[str, tuple[str, ...]] = {
    f"a new due time at most {ANNOUNCED_WITHIN_S} s away": (UPDATE,),
    "a schedule in a group": (GET,),
}
"""What a case adds to the requests of :data:`RESCHEDULES`: the announce of the new message's token; the read of the
group's cancel."""

STRAY_DROP = (UPDATE,)
"""The dispatcher's requests for the old message a reschedule from ``QUEUED`` leaves: its refused conditional write
(billed as a write)."""

REDRIVE_BATCH = 10
"""Messages a receive of the dead-letter queue brings at most, and a send or delete batch holds."""

REDRIVE_TEN: Counter[str] = Counter({RECEIVE: 1, GET: REDRIVE_BATCH, UPDATE: REDRIVE_BATCH, SEND_BATCH: 1,
                                     DELETE_BATCH: 1})
"""A redrive's requests for one received batch of ten parked deliveries: each one's record read and re-armed, the
batch sent to the delayer queue and deleted from the dead-letter queue."""

REDRIVE_RUN_END: Counter[str] = Counter({RECEIVE: 1})
"""Once per run: the receive that finds the dead-letter queue empty (a 1 s long poll), which ends it."""


def _usage(calls: Counter[str], api_requests: int) -> dict:
    """``bill``'s usage for ``calls`` (per operation), behind ``api_requests`` requests of the HTTP API."""
    usage: dict = {"create_requests": api_requests, "create_request_bytes": 200, "access_log_bytes": access_log_bytes(),
                   "lambda": {}, "sqs": {}, "wru": {}, "rru": {}, "log_bytes": {}}
    if api_requests:
        usage["lambda"]["api"] = {"invocations": api_requests, "billed_ms": sum(calls.values()) * AWS_CALL_MS}
    for call, count in calls.items():
        service, _, operation = call.partition(".")
        kind = "sqs" if service == "sqs" else "rru" if call in READS else "wru"
        usage[kind][operation] = count
    return usage


def priced_calls(calls: Counter[str], api_requests: int) -> dict:
    """Per million: the AWS requests' share and the total, on demand and provisioned."""
    b = bill(_usage(calls, api_requests), door="http" if api_requests else "direct")
    aws = [r for r in b["rows"] if r["group"] in ("DynamoDB", "SQS")]
    return {"calls": dict(calls), "calls_on_demand": sum(r["usd_od"] for r in aws),
            "on_demand": b["total_on_demand"], "provisioned": b["total_provisioned"]}


def _added(base: Counter[str], extra: Counter[str]) -> dict:
    """What ``extra`` adds to a reschedule making ``base``: its requests and the API function's time in them."""
    with_extra, without = priced_calls(base + extra, 1), priced_calls(base, 1)
    return {"calls": dict(extra), **{key: with_extra[key] - without[key]
                                     for key in ("calls_on_demand", "on_demand", "provisioned")}}


def per_million() -> dict:
    """Per million of each case: a reschedule's (a PATCH each), what its extras add, a stray's drop, and a redrive's
    per parked delivery at full batches."""
    reschedules = {case: priced_calls(Counter(calls), 1) for case, calls in RESCHEDULES.items()}
    base = Counter(next(iter(RESCHEDULES.values())))  # linear in the requests: any case gives the same difference
    extras = {case: _added(base, Counter(calls)) for case, calls in RESCHEDULE_EXTRAS.items()}
    per_delivery = Counter({call: count / REDRIVE_BATCH for call, count in REDRIVE_TEN.items()})
    return {"reschedules": reschedules, "extras": extras, "stray_drop": priced_calls(Counter(STRAY_DROP), 0),
            "redrive": priced_calls(per_delivery, 0), "aws_call_ms": AWS_CALL_MS, "announced_within_s": ANNOUNCED_WITHIN_S}
