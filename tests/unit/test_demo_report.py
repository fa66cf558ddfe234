"""The demo's verdict: a cancel that wins and is then delivered fails it; a cancel refused because the
delivery had started (409, as a loaded machine can make a cancel of a timer due in seconds) does not."""

from __future__ import annotations

import io

from rich.console import Console

from cdk_delayed_scheduler.local.api_calls import parse_due_ms
from cdk_delayed_scheduler.local.demo import PlannedTimer, _report
from cdk_delayed_scheduler.local.deliveries import Recorder

DUE = "2026-11-25T12:00:00.000Z"


def _verdict(cancel_code: int) -> tuple[int, str]:
    recorder = Recorder()
    timers = [PlannedTimer("on-time", "short", 2.0), PlannedTimer("late-cancel", "cancel-short", 2.0)]
    for timer in timers:  # both delivered, on time
        recorder({"id": timer.schedule_id, "dueAt": DUE, "payload": None})  # type: ignore[arg-type]
    for delivery in recorder.deliveries:
        delivery.received_ms = parse_due_ms(DUE) + 5
    output = io.StringIO()
    code = _report(Console(file=output, width=120), timers, recorder, {"late-cancel": ("QUEUED", cancel_code)},
                   {}, {}, 200, 409, 0)
    return code, output.getvalue()


def test_a_delivery_after_a_cancel_answered_200_fails_the_demo():
    code, text = _verdict(200)
    assert code == 1 and "delivered despite cancel 1" in text and "FAILED" in text


def test_a_delivery_after_a_cancel_refused_with_409_is_reported_but_passes():
    code, text = _verdict(409)
    assert code == 0, text
    assert "delivered despite cancel 0" in text and "1 refused with 409" in text and "OK" in text
