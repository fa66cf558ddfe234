"""Time passing without sleeping: the kit's clock moves from one due instant to the next.

At each step the clock moves to the next instant at which something comes due (a delayer message's
due time, or a waiting timer's claim time, its due time less the delay window, when the sweeper then
runs once), and the engine is left to settle: the runtime delivers what is due through its real
protocol (the conditional write that starts a delivery, the target, the next periodic occurrence armed).
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..local import Engine
    from ._clock import SimulatedClock

MAX_STEPS = 10_000
SHARD_READERS = 16
"""Shards read at once for their earliest timer (each on a connection of its own: the client's pool holds them)."""
SETTLE_POLL_SECONDS = 0.01
SETTLE_TIMEOUT_SECONDS = 30.0


def settle(engine: Engine, timeout: float = SETTLE_TIMEOUT_SECONDS) -> None:
    """Wait until nothing is under way (``Engine.under_way``) on two checks in a row."""
    deadline = time.monotonic() + timeout
    streak = 0
    while streak < 2:
        under_way = engine.under_way()
        streak = 0 if under_way else streak + 1
        if under_way and time.monotonic() > deadline:
            raise TimeoutError(f"the local scheduler did not settle within {timeout} s: {', '.join(under_way)} "
                               "(a target still running?)")
        time.sleep(SETTLE_POLL_SECONDS)


def advance(engine: Engine, clock: SimulatedClock, ddb: Any, milliseconds: int) -> int:
    """Move ``clock`` forward by ``milliseconds``, step by step; answers the number of steps taken."""
    until_ms = clock.now_ms() + milliseconds
    settle(engine)
    swept_late: set[int] = set()
    for step in range(MAX_STEPS):
        now = clock.now_ms()
        messages, claims = message_instants(engine, clock), timer_claim_instants(engine, ddb)
        if engine.under_way():
            # A message whose SQS delay (whole seconds, so up to a second before its due time) ran out in real
            # time since the last settle is neither waiting nor handled yet: let it be, then look again.
            settle(engine)
            continue
        late = {claim for claim in claims if claim <= now} - swept_late
        if late:  # timers that entered the window as real time passed: the sweep the rule would have run
            swept_late |= late
            engine.sweep_now()
            settle(engine)
            continue
        upcoming = min([instant for instant in [*messages, *claims] if instant > now], default=None)
        if upcoming is None or upcoming > until_ms:
            clock.move_to(until_ms)
            settle(engine)
            return step + 1
        clock.move_to(upcoming)
        if any(now < claim <= upcoming for claim in claims):
            engine.sweep_now()
        settle(engine)
    raise RuntimeError(f"advance: more than {MAX_STEPS} due instants within {milliseconds / 1000:g} seconds; "
                       "advance by less at a time")


def message_instants(engine: Engine, clock: SimulatedClock) -> list[int]:
    """When each waiting delayer message comes due: receivable, and its own due time reached."""
    queue = _queue_name(engine.queue_url)
    return [_message_instant(m) for m in clock.waiting_messages() if m["queue"] == queue]


def timer_claim_instants(engine: Engine, ddb: Any) -> list[int]:
    """When the earliest timer of each shard enters the delay window (the sweeper then claims it)."""
    window_ms = engine.options.delay_window * 1000
    return [due - window_ms + 1 for due in _earliest_timers(engine, ddb)]


def waiting_for_the_clock(engine: Engine, clock: SimulatedClock, ddb: Any) -> list[tuple[str, int]]:
    """What waits for the clock to reach it, as ``(schedule id, instant due)`` in due order: each delayer message
    (a short timer's, or a retry's waiting out its backoff) and each timer due within the delay window."""
    queue = _queue_name(engine.queue_url)
    waiting = [(_message_id(m), _message_instant(m)) for m in clock.waiting_messages() if m["queue"] == queue]
    store, shards = _timer_store(engine, ddb)
    cutoff_ms = clock.now_ms() + engine.options.delay_window * 1000
    waiting += [(timer.schedule_id, timer.due_ms) for shard in range(shards)
                for page in store.due_timer_pages(shard, cutoff_ms) for timer in page]
    return sorted(waiting, key=lambda pair: pair[1])


def _queue_name(queue_url: str) -> str:
    return queue_url.rstrip("/").rsplit("/", 1)[-1]


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


def _earliest_timers(engine: Engine, ddb: Any) -> list[int]:
    """The due time of the earliest timer of each shard (the sweeper's own query, one item a shard)."""
    from scheduler_runtime.core.timeparse import MAX_EPOCH_MS  # noqa: PLC0415

    store, shards = _timer_store(engine, ddb)

    def first(shard: int) -> list[Any]:
        return next(store.due_timer_pages(shard, MAX_EPOCH_MS, page_size=1), [])

    # never more readers than the client keeps connections: one more would open and discard its own each time
    readers = min(shards, SHARD_READERS, ddb.meta.config.max_pool_connections)
    with ThreadPoolExecutor(max_workers=readers, thread_name_prefix="kit-shards") as pool:
        return [page[0].due_ms for page in pool.map(first, range(shards)) if page]
