"""Each engine's moto: forked by one zygote per process, empty at its start, gone when its engine stops."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import process_alive, wait_until

pytestmark = pytest.mark.e2e


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_each_engine_a_process_starts_gets_an_empty_moto_of_its_own_that_ends_with_it():
    options = EngineOptions(target=Recorder(), delay_window=4, shard_count=1)
    with Engine(options) as first:
        created = {"id": "mine", "delaySeconds": 3600, "payload": {}}
        assert raw_client(first.api_url).raw("createSchedule", created).status == 201
        first_moto = first.moto_pid
        assert first_moto is not None and process_alive(first_moto)
        zygote = _parent(first_moto)
        assert zygote != os.getpid()  # not started by this process: forked by its zygote
    wait_until(lambda: not process_alive(first_moto), 10, "a stopped engine's moto went on running")
    assert first.moto_pid is None
    with Engine(options) as second:
        assert raw_client(second.api_url).raw("getSchedule", id="mine").status == 404  # an empty account
        assert second.moto_pid not in (None, first_moto)
        assert _parent(second.moto_pid) == zygote  # forked by the same zygote: moto was not imported again
