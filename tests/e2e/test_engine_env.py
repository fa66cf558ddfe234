"""The engine sets the functions' environment as the construct does, and leaves the process
environment as it found it."""

import json
import logging
import os

import pytest

from cdk_delayed_scheduler._contract import contract
from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder

pytestmark = pytest.mark.e2e


def test_every_function_variable_is_set_from_the_options_and_log_level_governs_the_runtime_records(caplog):
    recorder = Recorder()
    options = EngineOptions(target=recorder, shard_count=1, metrics_namespace="MyTimers", log_level="info")
    caplog.set_level(logging.DEBUG, logger="cdk_delayed_scheduler.local")
    with Engine(options) as engine:
        optional = {contract.ENV.max_lateness_seconds, contract.ENV.outcomes}  # set only when the option is given
        flow_queue = contract.ENV.flow_queue_url  # set only when a target is limited, as the construct does
        assert os.environ.get(flow_queue) is None and engine.flow_queue_url is None
        seen = {name: os.environ.get(name) for name in contract.ENV.names() if name not in optional | {flow_queue}}
        created = raw_client(engine.api_url).raw("createSchedule", {"id": "env-1", "delaySeconds": 0, "payload": 1})
        assert created.status == 201
        assert recorder.wait_for({"env-1"}, timeout_seconds=20)
        engine.wait_until_quiet()
        counted = engine.stats.events["delivered"]
    assert all(seen.values()), seen
    env = contract.ENV
    assert (seen[env.metrics_namespace], seen[env.log_level]) == ("MyTimers", "INFO")
    assert seen[env.dispatcher_timeout_seconds] == "5" and seen[env.shard_count] == "1"
    assert json.loads(seen[env.targets])[contract.DEFAULT_TARGET_NAME]["type"] == "lambda"
    delivered = [r for r in caplog.records if r.name == "scheduler_runtime" and getattr(r, "event", None) == "delivered"]
    assert counted == len(delivered) == 1
    metrics = [json.loads(r.getMessage().removeprefix("metric ")) for r in caplog.records
               if r.getMessage().startswith("metric ")]
    assert metrics and {m["_aws"]["CloudWatchMetrics"][0]["Namespace"] for m in metrics} == {"MyTimers"}


def test_a_default_engine_counts_the_runtime_events_logs_none_below_warning_and_restores_the_environment(
        monkeypatch, caplog):
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("TABLE_NAME", "mine")
    before = dict(os.environ)
    recorder = Recorder()
    caplog.set_level(logging.DEBUG)
    with Engine(EngineOptions(target=recorder, shard_count=1)) as engine:
        assert os.environ["AWS_ENDPOINT_URL"] == engine.endpoint_url
        assert os.environ["TABLE_NAME"] == engine.table_name
        created = raw_client(engine.api_url).raw("createSchedule", {"id": "quiet-1", "delaySeconds": 0, "payload": 1})
        assert created.status == 201
        assert recorder.wait_for({"quiet-1"}, timeout_seconds=20)
        engine.wait_until_quiet()
        assert engine.stats.events["delivered"] == 1
    assert dict(os.environ) == before
    assert contract.DEFAULT_LOG_LEVEL == "WARNING"
    assert not [r for r in caplog.records if r.name == "scheduler_runtime" and r.levelno < logging.WARNING]


def test_wait_until_quiet_counts_a_timer_item_only_once_it_is_due_within_the_window():
    """A timer item due beyond the window leaves the engine quiet; the same timer, once within the window
    and not yet swept (sweeps an hour apart here), keeps it from being quiet. The time moves on a virtual
    clock, the one the runtime (and the engine's check) reads."""
    options = EngineOptions(target=Recorder(), shard_count=2, delay_window=3, sweep_interval=3600)
    with Engine(options) as engine:
        from scheduler_runtime import clock
        from scheduler_runtime.clock import VirtualClock

        status, created = raw_client(engine.api_url).raw("createSchedule",
                                                         {"id": "quiet-1", "delaySeconds": 6, "payload": 1})
        assert status == 201
        engine.wait_until_quiet(timeout=2)
        within_window_ms = parse_due_ms(created["dueAt"]) - 3000  # from this instant on, due within the window
        virtual = VirtualClock(within_window_ms - 1)
        clock.use(virtual)
        try:
            engine.wait_until_quiet(timeout=2)  # a millisecond before: still beyond the window
            virtual.move_to(within_window_ms)
            with pytest.raises(TimeoutError, match="timers due within the delay window"):
                engine.wait_until_quiet(timeout=1)
        finally:
            clock.use(None)


def test_an_engine_whose_stop_hook_fails_still_stops_and_leaves_the_environment_as_it_found_it(caplog):
    before = dict(os.environ)

    def failing() -> None:
        raise RuntimeError("the hook's endpoint is gone")

    with Engine(EngineOptions(target=Recorder(), shard_count=1), on_stop=failing) as engine:
        assert os.environ["AWS_ENDPOINT_URL_LAMBDA"] == engine.lambda_endpoint_url
    assert dict(os.environ) == before
    assert "on_stop failed" in caplog.text
