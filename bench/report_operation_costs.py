"""The cost section's table of what a reschedule and a redrive cost, from ``bench.operation_costs`` (no run needed)."""

from __future__ import annotations

from .operation_costs import per_million
from .pricing import PRICES

_SHORT = {"dynamodb.GetItem": "GetItem", "dynamodb.PutItem": "PutItem", "dynamodb.UpdateItem": "UpdateItem",
          "dynamodb.DeleteItem": "DeleteItem", "sqs.SendMessage": "SendMessage", "sqs.ReceiveMessage": "ReceiveMessage",
          "sqs.SendMessageBatch": "SendMessageBatch", "sqs.DeleteMessageBatch": "DeleteMessageBatch"}


def _calls(calls: dict) -> str:
    return ", ".join(f"{_SHORT[call]}{'' if count == 1 else f' {count:g}'}" for call, count in calls.items())


def _row(operation: str, case: dict) -> str:
    return (f"| {operation} | {_calls(case['calls'])} | ${case['calls_on_demand']:.3f} | **${case['on_demand']:.2f}** | "
            f"${case['provisioned']:.2f} |")


def section() -> list[str]:
    """The subsection (``###``, inside the cost section)."""
    c = per_million()
    rows = [_row(f"reschedule {case}", figures) for case, figures in c["reschedules"].items()]
    rows += [_row(f"adds: {case}", figures) for case, figures in c["extras"].items()]
    rows.append(_row("redrive, per parked delivery (batches of ten)", c["redrive"]))
    stray = c["stray_drop"]
    return ["### What a reschedule and a redrive cost, per million", "",
            "bench/operation_costs.py, rendered with the report (no run needed): the AWS requests each makes, "
            "**counted** by `tests/handlers/test_reschedule_and_redrive_calls.py` (the handlers and the operator's "
            "redrive on moto, every request botocore sends recorded and required to be exactly these), priced by "
            "the bill above (`PRICES`). Each write is one write unit and each strongly consistent read one read "
            "unit (items under 1 KB, as the record of a 1 KB JSON payload and every timer item are; a record past "
            "1 KB costs a unit more a write); each SQS request one request.", "",
            "| operation | requests | the requests, on demand, $ | total on demand, $ | total provisioned (70 %), $ |",
            "|---|---|---|---|---|", *rows, "",
            f"- **A reschedule** is a `PATCH /schedules/{{id}}` through the HTTP API: its total adds the API "
            f"request (${PRICES['apigw_http_per_million']:.2f} per million), the API function's request and its "
            f"billed time at {PRICES['lambda_memory_mb']['api']} MB, **stated** at {c['aws_call_ms']:.0f} ms per "
            "AWS request (not measured; the Cost section's API durations are moto's), and the access log line. "
            "The record's read comes first, then the new due time is armed (a message within the window, a "
            "timer beyond it), then the record's conditional update; from `SCHEDULED` the old timer is flagged "
            "and deleted, so its removal is not enqueued. A new due time at most "
            f"{c['announced_within_s']} s away is announced to the dispatcher first, and a grouped schedule's "
            "read of its group's cancel comes with the record's: the \"adds\" rows, with the function's time "
            "in them.",
            "- **From `QUEUED`**, the old message stays in the delayer queue and surfaces at the old due time: "
            f"the dispatcher drops it with one refused conditional write (${stray['on_demand']:.3f} per million on "
            "demand, a write unit), plus its place in a receive, a delete and an invocation, as a delivery's. Moved "
            "beyond the window, the new timer is later claimed and enqueued as a long timer is (the long path's "
            "sweeper and enqueuer lines above).",
            "- **A redrive** runs where the operator runs it (`cdk-delayed-scheduler redrive`, "
            "`cdk_delayed_scheduler.operator.redrive`): no Lambda, no API. Per received batch of ten, one "
            "`ReceiveMessage`, one `SendMessageBatch` to the delayer queue and one `DeleteMessageBatch`; per parked "
            "delivery, its record's consistent read and its conditional re-arm. Once per run, one more receive (a "
            "1 s long poll) finds the queue empty and ends it. The delivery it sends is then a delivery like any "
            "other (the dispatcher's lines above), left out here.", ""]
