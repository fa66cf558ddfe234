"""Time passing without sleeping: the kit's clock moves from one due instant to the next.

At each step the clock moves to the next instant at which something comes due (a delayer message's
due time, or the schedule rule's first run after a waiting timer entered the delay window, when the
sweeper then runs once), and the engine is left to settle: the runtime delivers what is due through its real
protocol (the conditional write that starts a delivery, the target, the next periodic occurrence armed).
The clock stands still while it settles, so each delivery starts at its due instant.
"""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..local import Engine
    from ._clock import KitClock

MAX_STEPS = 10_000
SETTLE_POLL_SECONDS = 0.002
SETTLE_TIMEOUT_SECONDS = 30.0


def settle(engine: Engine, clock: KitClock, timeout: float = SETTLE_TIMEOUT_SECONDS) -> None:
    """Wait until nothing is under way (``Engine.under_way``, with every message moto handed out from the delayer
    queue, and the flow queue, taken up by an invocation) on two checks in a row."""
    deadline = time.monotonic() + timeout
    queues = waiting_queues(engine)
    streak = 0
    while True:
        under_way = engine.under_way(lambda: clock.queue_counts(*queues))
        streak = 0 if under_way else streak + 1
        if streak == 2:
            return
        if under_way and time.monotonic() > deadline:
            raise TimeoutError(f"the local scheduler did not settle within {timeout} s: {', '.join(under_way)} "
                               "(a target still running?)")
        time.sleep(SETTLE_POLL_SECONDS)


def advance(engine: Engine, clock: KitClock, milliseconds: int) -> int:
    """Move ``clock`` forward by ``milliseconds``, step by step; answers the number of steps taken."""
    until_ms = clock.now_ms() + milliseconds
    settle(engine, clock)
    swept: set[int] = set()
    for step in range(MAX_STEPS):
        now = clock.now_ms()
        messages, claims = due_instants(engine, clock)
        sweeps = {claim: sweep_instant(engine, clock, claim) for claim in claims}
        ready = {claim for claim, sweep in sweeps.items() if sweep <= now} - swept
        if ready:  # a timer entered the window: the rule's sweep claims it (a cancelled one it leaves)
            swept |= ready
            engine.sweep_now()
            settle(engine, clock)
            continue
        upcoming = min([instant for instant in [*messages, *sweeps.values()] if instant > now], default=None)
        if upcoming is None or upcoming > until_ms:
            clock.move_to(until_ms)
            settle(engine, clock)
            return step + 1
        clock.move_to(upcoming)
        settle(engine, clock)
    raise RuntimeError(f"advance: more than {MAX_STEPS} due instants within {milliseconds / 1000:g} seconds; "
                       "advance by less at a time")


def sweep_instant(engine: Engine, clock: KitClock, claim_ms: int) -> int:
    """When the schedule rule's sweep claims a timer that enters the delay window at ``claim_ms``: at the rule's
    first run from then on (it runs every ``sweep_interval`` from the scheduler's start, as deployed), or at
    ``claim_ms`` when that run would come after the timer is due (a window shorter than the interval)."""
    interval_ms = max(1, round(engine.options.sweep_interval * 1000))
    run_ms = clock.started_ms + max(0, math.ceil((claim_ms - clock.started_ms) / interval_ms)) * interval_ms
    due_ms = claim_ms + engine.options.delay_window * 1000 - 1
    return run_ms if run_ms < due_ms else claim_ms


def due_instants(engine: Engine, clock: KitClock) -> tuple[list[int], list[int]]:
    """When each waiting delayer message comes due (receivable, and its own due time reached), and when the
    earliest timer of each shard enters the delay window (the sweeper then claims it): one read of moto's
    memory for both."""
    from scheduler_runtime.core import keys  # noqa: PLC0415 - importable once the engine started

    waiting = clock.waiting(keys.TIMER_PREFIX)
    queues = waiting_queues(engine)
    messages = [_message_instant(m) for m in waiting["messages"] if m["queue"] in queues]
    window_ms = engine.options.delay_window * 1000
    claims = [keys.parse_timer_sort_key(timer["sortKey"])[0] - window_ms + 1 for timer in waiting["timers"]
              if timer["table"] == engine.table_name]
    return messages, claims


def waiting_for_the_clock(engine: Engine, clock: KitClock, ddb: Any) -> list[tuple[str, int]]:
    """What waits for the clock to reach it, as ``(schedule id, instant due)`` in due order: each delayer message
    (a short timer's, or a retry's waiting out its backoff) and each timer due within the delay window."""
    queues = waiting_queues(engine)
    waiting = [(_message_id(m), _message_instant(m)) for m in clock.waiting()["messages"] if m["queue"] in queues]
    store, shards = _timer_store(engine, ddb)
    cutoff_ms = clock.now_ms() + engine.options.delay_window * 1000
    waiting += [(timer.schedule_id, timer.due_ms) for shard in range(shards)
                for page in store.due_timer_pages(shard, cutoff_ms) for timer in page]
    return sorted(waiting, key=lambda pair: pair[1])


def waiting_queues(engine: Engine) -> tuple[str, ...]:
    """The names of the queues where deliveries wait for their instant (``Engine.waiting_queue_urls``)."""
    return tuple(url.rstrip("/").rsplit("/", 1)[-1] for url in engine.waiting_queue_urls)


def _message_instant(message: dict[str, Any]) -> int:
    """When a delayer message is due: receivable, and its own due time reached (SQS delays are whole seconds)."""
    visible_at: int = message["visibleAtMs"]
    try:
        return max(visible_at, int(json.loads(message["body"])["dueMs"]))
    except (ValueError, KeyError, TypeError):
        return visible_at


def _message_id(message: dict[str, Any]) -> str:
    """The schedule a delayer message delivers (its body's ``id``)."""
    try:
        return str(json.loads(message["body"])["id"])
    except (ValueError, KeyError, TypeError):
        return "a message without an id"


def _timer_store(engine: Engine, ddb: Any) -> tuple[Any, int]:
    """The engine's timers (a ``ScheduleStore``) and how many shards hold them."""
    from scheduler_runtime.aws.shards import ShardMark  # noqa: PLC0415 - importable once the engine started
    from scheduler_runtime.aws.store import ScheduleStore  # noqa: PLC0415

    return (ScheduleStore(ddb, engine.table_name),
            max(engine.options.shard_count, ShardMark(ddb, engine.table_name).read() or 0))
