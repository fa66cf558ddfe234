"""Whether the engine is quiet: nothing left that could still deliver (see ``Engine.wait_until_quiet``)."""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

DELAYER_COUNTS = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesDelayed",
                  "ApproximateNumberOfMessagesNotVisible"]
CHECK_INTERVAL_SECONDS = 0.25
QUIET_CHECKS = 2
"""Checks in a row that must find the engine quiet."""


class StreamProgress(Protocol):
    @property
    def caught_up(self) -> bool:
        """Whether the last pass over the stream's shards read no record."""


class QuietCheck:
    """Reads the counts of the queues where deliveries wait (the delayer queue, and the flow queue when there is
    one), asks whether every claim was enqueued or written back, whether the stream poller has caught up, and
    queries each timer shard (never a scan) for a timer due within the window."""

    def __init__(self, session: Any, queue_urls: Sequence[str], table_name: str, delay_window: int, shard_count: int,
                 claims_settled: Callable[[], bool], stream: StreamProgress) -> None:
        self._sqs = session.client("sqs")
        self._ddb = session.client("dynamodb")
        self._queue_urls = tuple(queue_urls)
        self._table = table_name
        self._delay_window = delay_window
        self._shard_count = shard_count
        self._claims_settled = claims_settled
        self._stream = stream

    def receivable_messages(self) -> int:
        """Messages of the queues a receive would get now."""
        return sum(self._counts(url, ["ApproximateNumberOfMessages"])[0] for url in self._queue_urls)

    def is_quiet(self) -> bool:
        if any(self._delayer_counts()):
            return False
        return self._claims_settled() and self._stream.caught_up and not self._timer_due_within_window()

    def pending(self) -> list[str]:
        """What keeps the engine from being quiet now, each said in a few words (empty when it is quiet)."""
        states = ("receivable", "delayed", "in flight (being delivered, or waiting out a retry's backoff)")
        messages = [f"{count} {state}" for count, state in zip(self._delayer_counts(), states) if count]
        pending = [f"delayer messages: {', '.join(messages)}"] if messages else []
        if not self._claims_settled():
            pending.append("a claim not yet enqueued or written back")
        if not self._stream.caught_up:
            pending.append("the table's stream not read to its end")
        if self._timer_due_within_window():
            pending.append(f"timers due within the delay window ({self._delay_window} s) that no sweep claimed yet")
        return pending

    def _delayer_counts(self) -> list[int]:
        """The queues' messages receivable, delayed and in flight, each summed over the queues."""
        return [sum(counts) for counts in zip(*(self._counts(url, DELAYER_COUNTS) for url in self._queue_urls))]

    def _counts(self, queue_url: str, names: list[str]) -> list[int]:
        attributes = self._sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
        return [int(attributes[name]) for name in names]

    def _timer_due_within_window(self) -> bool:
        """Whether a shard holds a timer item due within the window: the sweeper's own query, one item a shard."""
        from scheduler_runtime.aws.shards import ShardMark  # noqa: PLC0415 - importable once the engine started
        from scheduler_runtime.aws.store import ScheduleStore  # noqa: PLC0415
        from scheduler_runtime.clock import PROCESS  # noqa: PLC0415 - the runtime's clock, as the sweeper reads it

        store = ScheduleStore(self._ddb, self._table)
        cutoff_ms = PROCESS.now_ms() + self._delay_window * 1000
        shards = max(self._shard_count, ShardMark(self._ddb, self._table).read() or 0)
        return any(next(store.due_timer_pages(shard, cutoff_ms, page_size=1), []) for shard in range(shards))

    def wait(self, timeout: float) -> None:
        """Return once :meth:`is_quiet` held on ``QUIET_CHECKS`` checks in a row; TimeoutError after ``timeout`` s."""
        deadline = time.monotonic() + timeout
        streak = 0
        while True:
            streak = streak + 1 if self.is_quiet() else 0
            if streak >= QUIET_CHECKS:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the engine did not become quiet within {timeout} s: "
                                   f"{'; '.join(self.pending()) or 'nothing pending at the last check'}")
            time.sleep(CHECK_INTERVAL_SECONDS)


class DispatcherProgress(Protocol):
    @property
    def in_flight(self) -> int:
        """Invocations under way, and a short receive."""

    @property
    def messages_received(self) -> int:
        """Messages the receives handed to invocations so far."""


class Mappings:
    """The dispatcher's mappings (one for each queue it reads) as one :class:`DispatcherProgress`: their sums."""

    def __init__(self, pollers: Sequence[DispatcherProgress]) -> None:
        self._pollers = tuple(pollers)

    @property
    def in_flight(self) -> int:
        return sum(poller.in_flight for poller in self._pollers)

    @property
    def messages_received(self) -> int:
        return sum(poller.messages_received for poller in self._pollers)


def under_way(poller: DispatcherProgress, claims_settled: Callable[[], bool], events_running: Callable[[], int],
              delayer_counts: Callable[[], tuple[int, int | None]], *, read_counts_when_busy: bool) -> list[str]:
    """What is under way (see ``Engine.under_way``), each said in a few words: empty when nothing is."""
    # read on both sides of the queue's counts: a message received in between shows in one of them
    in_flight, taken = poller.in_flight, poller.messages_received
    settled, events = claims_settled(), events_running()
    if read_counts_when_busy or not (in_flight or events or not settled):
        receivable, handed_out = delayer_counts()
    else:
        receivable, handed_out = 0, None  # busy already: the queue's counts are not read
    in_flight = max(in_flight, poller.in_flight)
    untaken = 0 if handed_out is None else handed_out - max(taken, poller.messages_received)
    return [what for what, busy in ((f"{in_flight} dispatcher invocations", in_flight),
                                    (f"{untaken} delayer messages received, not yet handed to an invocation", untaken),
                                    (f"{events} target functions invoked as an event", events),
                                    ("a claim not yet enqueued", not settled),
                                    (f"{receivable} receivable delayer messages", receivable)) if busy]
