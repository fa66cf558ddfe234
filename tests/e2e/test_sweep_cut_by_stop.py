"""A sweep that the engine's stop cuts short (Ctrl-C soon after ``local`` starts) is no warning: the
runtime's ``sweep_stopped_early`` goes on at INFO, and is silent at the default log level; a sweep that
stops early while the engine runs (out of time, as in AWS) stays a WARNING."""

from __future__ import annotations

import logging
import time

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.deliveries import Recorder

pytestmark = pytest.mark.e2e
EVENT = '"event": "sweep_stopped_early"'
# The most shards, swept back to back: a sweep is under way whenever the engine stops.
BUSY_SWEEPS = {"shard_count": 256, "sweep_interval": 0.01}


def stopped_early(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.levelname for record in caplog.records if EVENT in record.getMessage()]


def run_and_stop(log_level: str) -> Engine:
    engine = Engine(EngineOptions(target=Recorder(), log_level=log_level, **BUSY_SWEEPS)).start()
    time.sleep(0.5)  # real time on purpose: sweeps start at once and run back to back
    engine.stop()
    return engine


def test_a_sweep_cut_short_by_the_stop_is_logged_at_info_not_as_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        run_and_stop("INFO")
    assert stopped_early(caplog) == ["INFO"]  # the cut happened, and said so at INFO


def test_at_the_default_log_level_a_sweep_cut_short_by_the_stop_says_nothing(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO):
        engine = run_and_stop("WARNING")
    assert engine.options.log_level == "WARNING"
    assert stopped_early(caplog) == []


def test_a_sweep_stopped_early_while_the_engine_runs_stays_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with Engine(EngineOptions(target=Recorder(), sweep_interval=3600)), caplog.at_level(logging.INFO):
        from scheduler_runtime.observability import log_event

        log_event("sweep_stopped_early", level=logging.WARNING, resumeAt=3)  # as the sweeper logs it
    assert stopped_early(caplog) == ["WARNING"]
