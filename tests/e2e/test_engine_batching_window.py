"""The local engine's delayer poller gathers batches as the dispatcher's mapping does: with a batching
window of a second and room for a hundred messages, timers due in the same second share an invocation,
the messages sent a second early are waited for (never put back), and none is delivered early."""

from __future__ import annotations

import math
import time

import pytest

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import parse_due_ms, raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder
from scheduler_runtime.handlers import dispatcher

pytestmark = pytest.mark.e2e
PER_SECOND = 20


def test_timers_due_in_the_same_second_share_an_invocation_and_none_is_early(monkeypatch):
    batches: list[int] = []
    emit = dispatcher._emit_outcomes
    monkeypatch.setattr(dispatcher, "_emit_outcomes", lambda namespace, outcomes: (
        batches.append(len(outcomes)), emit(namespace, outcomes))[-1])
    recorder = Recorder()
    options = EngineOptions(target=recorder, shard_count=2, dispatcher_batch_size=100, dispatcher_max_batching_window=1)
    with Engine(options) as engine:
        api = raw_client(engine.api_url)
        first = math.floor(time.time()) + 4
        bodies = [{"id": f"s{second}-{k}", "dueAt": first + second + k / PER_SECOND, "payload": {}}
                  for second in range(2) for k in range(PER_SECOND)]
        for start in range(0, len(bodies), 10):
            assert api.raw("createScheduleBatch", {"schedules": bodies[start : start + 10]}).status == 200
        assert recorder.wait_for({b["id"] for b in bodies}, timeout_seconds=20)
        engine.wait_until_quiet()
        events = dict(engine.stats.events)
    deliveries = [d for ds in recorder.by_id().values() for d in ds]
    assert len(deliveries) == len(bodies)
    assert all(parse_due_ms(d.envelope["firedAt"]) >= parse_due_ms(d.envelope["dueAt"]) for d in deliveries)
    assert max(d.lateness_ms for d in deliveries) < 1000
    assert not events.get("put_back")  # surfacing early by the window is within the tolerance
    assert sum(batches) == len(bodies) and len(batches) < len(bodies) / 4, batches  # shared invocations
