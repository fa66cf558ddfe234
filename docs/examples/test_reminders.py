"""The sample application's tests, written with the ``local_scheduler`` fixture."""

from datetime import timedelta

import pytest
from cdk_delayed_scheduler.testing import LocalScheduler

import reminders

# The app reads the scheduler's URL from TIMERS_API; the scheduler delivers to its Lambda handler.
pytestmark = pytest.mark.local_scheduler(url_env="TIMERS_API", target=reminders.send_reminder)


@pytest.fixture(autouse=True)
def empty_outbox() -> None:
    reminders.OUTBOX.clear()


def test_the_reminder_comes_an_hour_before_the_appointment(local_scheduler: LocalScheduler) -> None:
    starts_at = local_scheduler.now() + timedelta(days=2)
    reminders.book("a-1", starts_at, "ada@example.com")

    local_scheduler.advance(hours=46, minutes=59)
    assert reminders.OUTBOX == []                      # not a minute early

    local_scheduler.advance(minutes=1)
    assert reminders.OUTBOX == [("ada@example.com", "a-1")]
    (delivery,) = local_scheduler.deliveries()
    assert delivery.due_at == starts_at - timedelta(hours=1)
    assert timedelta(0) <= delivery.lateness < timedelta(seconds=2)


def test_a_cancelled_appointment_sends_nothing(local_scheduler: LocalScheduler) -> None:
    reminders.book("a-2", local_scheduler.now() + timedelta(days=1), "bob@example.com")
    reminders.cancel("a-2")

    local_scheduler.advance(days=2)
    assert reminders.OUTBOX == []
    assert local_scheduler.client.get("remind-a-2").status == "CANCELLED"
