"""The integration tests' target, and the consumer behind every other target: it reads each delivery with
``Envelope.all_from_event``, whatever shape it arrives in, and writes it down in the seen table.

- invoked by the dispatcher (a Lambda target, synchronous or as an event) or by a state machine's task
  (``{"execution": <name>, "envelope": <the execution's input>}``, arrived as ``stepfunctions``);
- an SQS event (a FIFO queue target), an SNS event (a topic target), an EventBridge event (a bus target).

A delivery whose payload holds ``"failUntilHealed": true`` raises until the test writes ``(<id>, "heal")``:
a failing target, for the dead-letter queue and the redrive.
"""

from __future__ import annotations

from typing import Any

import seen
from cdk_delayed_scheduler.envelope import Envelope


class NotHealed(Exception):
    """The target refuses this delivery (the test has not healed it yet)."""


def arrival(event: Any) -> str:
    """How the event reached this function: ``sqs``, ``sns``, ``eventbridge``, ``stepfunctions`` or ``invoke``."""
    if isinstance(event, dict) and event.get("Records"):
        first = event["Records"][0]
        return "sns" if first.get("EventSource") == "aws:sns" else first.get("eventSource", "?").removeprefix("aws:")
    if isinstance(event, dict) and "detail-type" in event:
        return "eventbridge"
    return "stepfunctions" if isinstance(event, dict) and "execution" in event else "invoke"


def handler(event: Any, context: object) -> dict[str, int]:
    arrived_as = arrival(event)
    extra = {"execution": event["execution"]} if arrived_as == "stepfunctions" else {}
    envelopes = Envelope.all_from_event(event["envelope"] if arrived_as == "stepfunctions" else event)
    for envelope in envelopes:
        payload = envelope.payload if isinstance(envelope.payload, dict) else {}
        if payload.get("failUntilHealed") and not seen.healed(envelope.id):
            raise NotHealed(f"{envelope.id}: refused until healed")
        seen.record(envelope, arrived_as, **extra)
    return {"recorded": len(envelopes)}
