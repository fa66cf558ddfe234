"""A sample application: booking an appointment schedules a reminder an hour before it.

The scheduler's URL comes from the environment (``TIMERS_API``), as a deployed app reads a
CloudFormation output; ``send_reminder`` is the Lambda function the scheduler delivers to.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from cdk_delayed_scheduler.client import NotFoundError, SchedulerClient
from cdk_delayed_scheduler.envelope import Envelope

OUTBOX: list[tuple[str, str]] = []
"""Stands in for an email service: (address, appointment) per reminder sent."""


def _timers() -> SchedulerClient:
    return SchedulerClient(os.environ["TIMERS_API"])


def book(appointment: str, starts_at: datetime, email: str) -> None:
    _timers().schedule(starts_at - timedelta(hours=1), {"appointment": appointment, "email": email},
                       id=f"remind-{appointment}")


def cancel(appointment: str) -> None:
    try:
        _timers().cancel(f"remind-{appointment}")
    except NotFoundError:
        pass


def send_reminder(event: dict[str, Any], context: object) -> None:
    """The scheduler's target: one envelope per due reminder."""
    payload = Envelope.from_event(event).payload
    OUTBOX.append((payload["email"], payload["appointment"]))
