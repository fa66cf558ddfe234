"""Redrive rate on the local engine: schedules parked in the dead-letter queue, sent back for delivery.

    ./dev bench --only redrive                      # the section in docs/benchmarks.md
    .venv/bin/python -m bench.redrive --messages 500  # one run, its figures as JSON

Each schedule (``retry.maxAttempts`` 1) fails its one attempt against a target that refuses, and is
parked; the target is mended; ``Engine.redrive()`` is timed (every message re-armed, sent and
deleted); then every schedule must arrive exactly once more, with its ``dedupeKey`` and attempt 2.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass, field
from typing import Any

from cdk_delayed_scheduler.local import Engine, EngineOptions
from cdk_delayed_scheduler.local.api_calls import raw_client
from cdk_delayed_scheduler.local.deliveries import Recorder


@dataclass
class MendableTarget:
    """A local target that refuses every delivery until mended, then records them."""

    recorder: Recorder = field(default_factory=Recorder)
    broken: bool = True

    def __call__(self, envelope: Any) -> None:
        if self.broken:
            raise RuntimeError("the target refuses (until mended)")
        self.recorder(envelope)


def dead_letter_depth(engine: Engine) -> int:
    attributes = engine.client("sqs").get_queue_attributes(
        QueueUrl=engine.dead_letter_queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return sum(int(value) for value in attributes.values())


def park(engine: Engine, count: int, prefix: str, timeout: float = 120.0) -> list[str]:
    """``count`` schedules due now whose one attempt fails: parked in the dead-letter queue. Their ids."""
    api, ids = raw_client(engine.api_url), [f"{prefix}-{n}" for n in range(count)]
    depth = dead_letter_depth(engine)
    for start in range(0, count, 10):  # a batch create takes 1-10
        status, answer = api.raw("createScheduleBatch", {"schedules": [
            {"id": schedule_id, "delaySeconds": 0, "payload": {"n": schedule_id}, "retry": {"maxAttempts": 1}}
            for schedule_id in ids[start:start + 10]]})
        assert status is not None and status < 300, answer
    deadline = time.monotonic() + timeout
    while dead_letter_depth(engine) < depth + count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{count} schedules were not all parked within {timeout} s")
        time.sleep(0.1)
    return ids


def park_and_redrive(engine: Engine, target: MendableTarget, count: int, prefix: str = "redrive") -> dict[str, Any]:
    """Park ``count`` schedules, mend the target, redrive them all; the figures, checked. The target is
    broken first: an engine and target shared by several runs (a test module's) may have been mended."""
    target.broken = True
    ids = park(engine, count, prefix)
    target.broken = False
    began = time.perf_counter()
    report = engine.redrive(ids=ids)
    seconds = time.perf_counter() - began
    assert len(report.moved) == count and not report.skipped, report.lines()[:5]
    assert target.recorder.wait_for(set(ids), timeout_seconds=60 + count / 20), "not every redriven schedule arrived"
    engine.wait_until_quiet(timeout=60)
    arrived = {schedule_id: target.recorder.by_id().get(schedule_id, []) for schedule_id in ids}
    twice = [schedule_id for schedule_id, got in arrived.items() if len(got) != 1]
    assert not twice, f"delivered other than once: {twice[:5]}"
    assert {d.envelope["attempt"] for got in arrived.values() for d in got} == {2}
    return {"messages": count, "seconds": round(seconds, 3), "per_second": round(count / seconds, 1)}


def run(messages: int, repeats: int) -> dict[str, Any]:
    """The section: ``repeats`` runs of ``messages`` each, each on a fresh engine; the median rate."""
    runs = []
    for _ in range(repeats):
        target = MendableTarget()
        with Engine(EngineOptions(target=target, port=0, sweep_interval=5)) as engine:
            runs.append(park_and_redrive(engine, target, messages))
    rates = sorted(r["per_second"] for r in runs)
    return {"messages": messages, "repeats": repeats, "runs": runs, "per_second": {
        "median": rates[len(rates) // 2], "min": rates[0], "max": rates[-1]}}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.redrive", description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=500)
    args = parser.parse_args()
    target = MendableTarget()
    with Engine(EngineOptions(target=target, port=0, sweep_interval=5)) as engine:
        print(json.dumps(park_and_redrive(engine, target, args.messages)))


if __name__ == "__main__":
    main()
