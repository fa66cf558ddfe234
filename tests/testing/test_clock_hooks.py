"""The kit's clock is the kit's alone: a plain engine's moto serves no clock; while a kit scheduler runs, every
handler reads the kit's clock (set with the runtime's one call, ``scheduler_runtime.clock.use``); once it stops,
however its block ends, they read the real clock again."""

import time
import urllib.error
import urllib.request
from datetime import timedelta

import pytest

from cdk_delayed_scheduler.local.moto_clock import CLOCK_PATH
from cdk_delayed_scheduler.local.moto_process import MotoProcess
from cdk_delayed_scheduler.testing import local_scheduler

FIVE_HOURS_MS = 5 * 3600 * 1000


def _real_ms() -> int:
    return time.time_ns() // 1_000_000


def _ms(moment) -> int:
    return round(moment.timestamp() * 1000)


def test_a_plain_engines_moto_has_no_clock_to_move():
    moto = MotoProcess()
    endpoint = moto.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(endpoint + CLOCK_PATH, timeout=10)
        assert refused.value.code == 404
    finally:
        moto.stop()


def test_while_the_kit_runs_the_handlers_read_its_clock_and_after_it_stopped_the_real_one():
    from scheduler_runtime import clock
    from scheduler_runtime.aws.context import current

    with pytest.raises(RuntimeError, match="the block ends"), local_scheduler() as scheduler:
        started = _ms(scheduler.now())
        assert started <= _real_ms()  # it started at the real time, and stands still since
        scheduler.advance(hours=5)
        due = _ms(scheduler.client.schedule(timedelta(minutes=1), {}).due_at)  # the api handler adds it to its clock
        assert due == _ms(scheduler.now()) + 60_000 == started + FIVE_HOURS_MS + 1 + 60_000  # the call took 1 ms
        assert clock.in_use() is not clock.REAL
        handlers = current()  # the context every handler of this process is given
        assert handlers.clock.now_ms() == _ms(scheduler.now())
        raise RuntimeError("the block ends with an error")
    before = _real_ms()
    read = (handlers.clock.now_ms(), clock.PROCESS.now_ms())
    after = _real_ms()
    assert all(before <= each <= after for each in read), (before, read, after)
    assert clock.in_use() is clock.REAL
