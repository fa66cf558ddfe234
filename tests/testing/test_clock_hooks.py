"""The kit's clock is the kit's alone: a plain engine's moto serves no clock, and once a kit scheduler
stops the runtime reads the real clock again, in every module."""

import sys
import urllib.error
import urllib.request

import pytest

from cdk_delayed_scheduler.local.moto_clock import CLOCK_PATH
from cdk_delayed_scheduler.local.moto_process import MotoProcess
from cdk_delayed_scheduler.testing import local_scheduler


def test_a_plain_engines_moto_has_no_clock_to_move():
    moto = MotoProcess()
    endpoint = moto.start()
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(endpoint + CLOCK_PATH, timeout=10)
        assert refused.value.code == 404
    finally:
        moto.stop()


def test_after_the_block_every_runtime_module_reads_the_real_clock():
    with local_scheduler() as scheduler:
        scheduler.advance(hours=5)
    from scheduler_runtime.core import timeparse

    holders = {name: module.now_ms for name, module in sys.modules.items()
               if name.startswith("scheduler_runtime") and hasattr(module, "now_ms")}
    holders.update({name: module.clock_ms for name, module in sys.modules.items()
                    if name.startswith("scheduler_runtime") and hasattr(module, "clock_ms")})
    assert len(holders) > 3
    assert {name: held is timeparse.now_ms for name, held in holders.items()} == {name: True for name in holders}
    assert timeparse.now_ms.__module__ == "scheduler_runtime.core.timeparse"
