"""``retry=`` on the sync and the asyncio client, against the local engine over both transports: a
:class:`RetryPolicy` is sent as the API's ``retry`` and read back from GET; a bad one is refused."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from cdk_delayed_scheduler.client import (AsyncSchedulerClient, RetryPolicy, SchedulerClient, ScheduleRequest,
                                          ValidationError)

from .conftest import Use, fresh_id

pytestmark = pytest.mark.e2e
HOUR = timedelta(hours=1)
POLICY = RetryPolicy(max_attempts=2, max_age=timedelta(minutes=10))


def test_schedule_sends_the_retry_policy_and_get_shows_it(client: SchedulerClient) -> None:
    schedule_id = fresh_id("retry")
    client.schedule(HOUR, {"order": 42}, id=schedule_id, retry=POLICY)
    assert client.get(schedule_id).retry == POLICY
    assert client.get(schedule_id).raw["retry"] == {"maxAttempts": 2, "maxAgeSeconds": 600}
    plain = fresh_id("plain")
    client.schedule(HOUR, 1, id=plain)
    assert client.get(plain).retry is None


def test_batch_items_and_periodic_timers_take_a_retry_policy(client: SchedulerClient) -> None:
    first, second = fresh_id("batch"), fresh_id("batch")
    results = client.schedule_many([ScheduleRequest(HOUR, 1, id=first, retry=RetryPolicy(max_attempts=1)),
                                    {"at": HOUR, "payload": 2, "id": second}])
    assert [result.id for result in results] == [first, second]  # type: ignore[union-attr]
    assert client.get(first).retry == RetryPolicy(max_attempts=1) and client.get(second).retry is None
    periodic_id = fresh_id("beat")
    put = client.put_periodic(periodic_id, {"job": "poll"}, every=3600, retry=RetryPolicy(max_age=timedelta(hours=1)))
    assert put.retry == RetryPolicy(max_age=timedelta(hours=1))
    assert client.get_periodic(periodic_id).retry == put.retry


def test_a_retry_beyond_the_deployments_limits_is_a_validation_error_naming_the_field(client: SchedulerClient) -> None:
    with pytest.raises(ValidationError) as refused:
        client.schedule(HOUR, 1, retry=RetryPolicy(max_attempts=6))  # the engine's max_receive_count is 5
    assert refused.value.field == "retry.maxAttempts" and "from 1 to 5" in str(refused.value)
    results = client.schedule_many([ScheduleRequest(HOUR, 1), ScheduleRequest(HOUR, 1, retry=RetryPolicy(
        max_age=timedelta(seconds=30)))])
    assert isinstance(results[1], ValidationError) and results[1].field == "schedules[1].retry.maxAgeSeconds"


@pytest.mark.parametrize(("policy", "error", "says"), [
    (RetryPolicy(), ValueError, "retry must set max_attempts, max_age or both"),
    (RetryPolicy(max_age=timedelta(seconds=90.5)), ValueError, "retry.max_age must be whole seconds"),
    (RetryPolicy(max_age=600), TypeError, "retry.max_age must be a timedelta"),  # type: ignore[arg-type]
    (RetryPolicy(max_attempts=2.0), TypeError, "retry.max_attempts must be an int"),  # type: ignore[arg-type]
])
def test_a_malformed_retry_policy_is_refused_before_anything_is_sent(client: SchedulerClient, policy: RetryPolicy,
                                                                     error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        client.schedule(HOUR, 1, retry=policy)


def test_the_asyncio_client_sends_and_reads_the_retry_policy(use: Use[Any]) -> None:
    schedule_id, periodic_id = fresh_id("async-retry"), fresh_id("async-beat")

    async def calls(timers: AsyncSchedulerClient) -> tuple[Any, Any]:
        await timers.schedule(HOUR, {"order": 7}, id=schedule_id, retry=POLICY)
        await timers.put_periodic(periodic_id, 1, every=60, retry=RetryPolicy(max_attempts=3))
        return await timers.get(schedule_id), await timers.get_periodic(periodic_id)

    schedule, periodic = use(calls)
    assert schedule.retry == POLICY and periodic.retry == RetryPolicy(max_attempts=3)
