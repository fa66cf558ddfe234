"""A sweep that the engine's stop cuts short (Ctrl-C soon after ``local`` starts) is no warning: the
runtime's ``sweep_stopped_early`` goes on at INFO, and is silent at the default log level; a sweep that
stops early while the engine runs (out of time, as in AWS) stays a WARNING."""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterator

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.deliveries import Recorder

from .conftest import wait_until

pytestmark = pytest.mark.e2e
EVENT = '"event": "sweep_stopped_early"'
HOLD_LIMIT_SECONDS = 30
"""A bound on the held sweep, for an engine that never stops (a broken test), not a timing."""


def stopped_early(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.levelname for record in caplog.records if EVENT in record.getMessage()]


@pytest.fixture
def sweep_held_until_the_stop(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The engine's first sweep is held in its first shard's query until the engine is stopping (its context then
    has no time left); the event is set once it is held. The sweep then reads an empty page, finds no time left
    and stops early, exactly as a sweep that a Ctrl-C cuts short: ordered by the test, not by timing."""
    from scheduler_runtime.aws.store import ScheduleStore
    from scheduler_runtime.handlers import sweeper

    held, contexts = threading.Event(), []
    real_handler = sweeper.handler

    def handler(event: dict[str, Any], context: Any = None) -> Any:
        contexts.append(context)
        return real_handler(event, context)

    def due_timer_pages(self: ScheduleStore, shard: int, cutoff_ms: int, page_size: int = 500) -> Iterator[list[Any]]:
        if not held.is_set():
            held.set()
            wait_until(lambda: contexts[-1].get_remaining_time_in_millis() == 0, HOLD_LIMIT_SECONDS,
                       "the engine stopping, its sweep's context with no time left", interval=0.01)
        yield []

    monkeypatch.setattr(sweeper, "handler", handler)
    monkeypatch.setattr(ScheduleStore, "due_timer_pages", due_timer_pages)
    return held


def run_and_stop(log_level: str, held: threading.Event) -> Engine:
    engine = Engine(EngineOptions(target=Recorder(), log_level=log_level, shard_count=4, sweep_interval=3600)).start()
    assert held.wait(HOLD_LIMIT_SECONDS), "the engine's first sweep never ran"
    engine.stop()
    return engine


def test_a_sweep_cut_short_by_the_stop_is_logged_at_info_not_as_a_warning(
        caplog: pytest.LogCaptureFixture, sweep_held_until_the_stop: threading.Event) -> None:
    with caplog.at_level(logging.INFO):
        run_and_stop("INFO", sweep_held_until_the_stop)
    assert stopped_early(caplog) == ["INFO"]  # the cut happened, and said so at INFO


def test_at_the_default_log_level_a_sweep_cut_short_by_the_stop_says_nothing(
        caplog: pytest.LogCaptureFixture, sweep_held_until_the_stop: threading.Event) -> None:
    with caplog.at_level(logging.INFO):
        engine = run_and_stop("WARNING", sweep_held_until_the_stop)
    assert engine.options.log_level == "WARNING"
    assert stopped_early(caplog) == []


def test_a_sweep_stopped_early_while_the_engine_runs_stays_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with Engine(EngineOptions(target=Recorder(), sweep_interval=3600)), caplog.at_level(logging.INFO):
        from scheduler_runtime.observability import log_event

        log_event("sweep_stopped_early", level=logging.WARNING, resumeAt=3)  # as the sweeper logs it
    assert stopped_early(caplog) == ["WARNING"]
