"""A periodic timer that would never fire, through the typed clients against the local engine, over both
transports: the API's 400 reaches the caller as a ``ValidationError`` naming the field, and nothing is kept."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from cdk_delayed_scheduler.client import AsyncSchedulerClient, NotFoundError, ValidationError

from .conftest import Use, fresh_id

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("arguments", "field", "rule"), [
    ({"cron": "0 9 30 2 ? *"}, "cron", "matches no date at all"),
    ({"cron": "0 9 * * ? 2020-2025", "time_zone": "Europe/Paris"}, "cron", "has no occurrence to come"),
    ({"every": 60, "end_at": datetime(2020, 1, 1, tzinfo=timezone.utc)}, "endAt", "endAt must be in the future"),
    ({"every": timedelta(hours=1), "end_at": timedelta(minutes=10)}, "endAt", "must be later than the first occurrence"),
], ids=["february-30", "years-past", "end-past", "end-before-the-first"])
def test_a_periodic_timer_that_would_never_fire_is_a_validation_error_naming_the_field(client, arguments, field, rule):
    if isinstance(arguments.get("end_at"), timedelta):  # an end ahead of now, before the first occurrence
        arguments = {**arguments, "end_at": datetime.now(timezone.utc) + arguments["end_at"]}
    periodic_id = fresh_id("never")
    with pytest.raises(ValidationError) as raised:
        client.put_periodic(periodic_id, 1, **arguments)
    assert (raised.value.status, raised.value.field) == (400, field)
    assert rule in raised.value.message and "would never fire" in raised.value.message
    with pytest.raises(NotFoundError):
        client.get_periodic(periodic_id)


def test_the_async_client_raises_the_same(use: Use[Any]) -> None:
    async def calls(timers: AsyncSchedulerClient) -> ValidationError:
        try:
            await timers.put_periodic(fresh_id("never"), 1, cron="0 9 31 4 ? *")
        except ValidationError as refused:
            return refused
        raise AssertionError("a cron of 31 April was accepted")

    refused = use(calls)
    assert (refused.status, refused.field) == (400, "cron") and "matches no date at all" in refused.message
