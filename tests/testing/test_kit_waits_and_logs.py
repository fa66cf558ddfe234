"""What the kit says while a test waits: ``wait_until_quiet`` timing out names what waits for the kit's
clock (each schedule and when it comes due) and the ``advance`` that reaches it; ``advance`` leaves
nothing in the test's log (no urllib3 "Connection pool is full" warnings, from reading the shards or from a
burst of deliveries)."""

from __future__ import annotations

import logging
import re
import threading
from datetime import timedelta
from typing import Any

import pytest

from cdk_delayed_scheduler.client import ScheduleRequest
from cdk_delayed_scheduler.testing import local_scheduler
from scheduler_runtime.aws.context import MAX_POOL_CONNECTIONS
from scheduler_runtime.handlers.dispatcher import MAX_PARALLEL_DELIVERIES


def test_wait_until_quiet_with_a_retry_pending_names_it_and_the_advance_that_reaches_it() -> None:
    calls: list[Any] = []

    def down_once(envelope: Any, _context: Any) -> None:
        calls.append(envelope)
        if len(calls) == 1:
            raise RuntimeError("the target is down")

    with local_scheduler(down_once) as timers:
        timers.client.schedule(timedelta(0), {"order": 42}, id="retry-me")
        with pytest.raises(TimeoutError) as not_quiet:
            timers.wait_until_quiet(timeout=2)
        message = str(not_quiet.value)
        assert message.startswith("the engine did not become quiet within 2 s: delayer messages: 1 in flight"), message
        waiting = re.search(r"Waiting for the kit's clock: retry-me due (\S+Z) \(in ([\d.]+) s\)\. The clock moves "
                            r"only with advance\(\): call advance\(seconds=(\d+)\) to reach them$", message)
        assert waiting, message
        due, seconds = waiting.group(1), int(waiting.group(3))
        assert timers.now() < timers.now().fromisoformat(due.replace("Z", "+00:00"))
        assert len(calls) == 1
        timers.advance(seconds=seconds)  # as the message says
        assert [(d.envelope.attempt, d.error is None) for d in timers.deliveries()] == [(1, False), (2, True)]


def test_advance_through_timers_in_every_shard_and_a_burst_logs_no_connection_pool_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    burst_under_way = threading.Barrier(MAX_PARALLEL_DELIVERIES)

    def held(envelope: Any, _context: Any) -> None:
        if isinstance(envelope["payload"], dict):  # a burst delivery: held until the whole burst is under way at once
            burst_under_way.wait(timeout=20)

    with local_scheduler(held) as timers, caplog.at_level(logging.WARNING):
        shards = timers.engine.options.shard_count
        for n in range(2 * shards):  # the kit reads every shard's earliest timer at each step
            timers.client.schedule(timedelta(hours=1, seconds=7 * n), n)
        burst = timers.now() + timedelta(hours=2)
        timers.client.schedule_many([ScheduleRequest(burst, {"burst": n}) for n in range(MAX_PARALLEL_DELIVERIES)])
        timers.advance(hours=2)
        assert [d.error for d in timers.deliveries()] == [None] * (2 * shards + MAX_PARALLEL_DELIVERIES)
    assert shards > 10  # more than a botocore client's default pool of connections
    assert [r.getMessage() for r in caplog.records if r.name.startswith("urllib3")] == []


def test_a_runtime_client_keeps_a_connection_for_every_parallel_delivery() -> None:
    assert MAX_POOL_CONNECTIONS >= MAX_PARALLEL_DELIVERIES
