"""Virtual time for the handler tests: one :class:`~scheduler_runtime.clock.VirtualClock` that the runtime reads
(set with :func:`scheduler_runtime.clock.use`) and that in-process moto's SQS reads too, so that message delays,
visibility timeouts and ``SentTimestamp`` follow it, as ``local/moto_clock.py`` makes the engine's moto child
follow the kit's clock. Nothing waits: a test moves the clock to the next instant something comes due.
"""

from __future__ import annotations

import calendar
import time
from contextlib import contextmanager
from typing import Any, Iterator

from scheduler_runtime import clock
from scheduler_runtime.clock import VirtualClock

START_MS = calendar.timegm((2030, 1, 1, 0, 0, 0)) * 1000
"""Where the virtual clock starts: 2030-01-01T00:00:00Z, a whole minute (and hour, and day)."""
ACCOUNT, REGION = "123456789012", "us-east-1"


def now_ms() -> int:
    """The runtime's time (the virtual clock's, when one is in use)."""
    return clock.PROCESS.now_ms()


def now_s() -> float:
    return now_ms() / 1000


def virtual() -> VirtualClock:
    """The virtual clock in use; a test that needs one asks for the ``virtual_clock`` fixture."""
    in_use = clock.in_use()
    assert isinstance(in_use, VirtualClock), "this helper runs on virtual time: use the virtual_clock fixture"
    return in_use


def iso(epoch_ms: int) -> str:
    """``epoch_ms`` as the API writes an instant (``2030-01-01T00:15:00.000Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(epoch_ms // 1000)) + f".{epoch_ms % 1000:03d}Z"


@contextmanager
def sqs_following(virtual_clock: VirtualClock, monkeypatch: Any) -> Iterator[None]:
    """In-process moto's SQS reads ``virtual_clock`` (its delays, visibility timeouts and timestamps) until exit.

    Two of moto's ways assume a clock that moves by itself, and follow SQS instead: a message is visible again
    at the instant its visibility timeout ends (moto: only once that millisecond has passed, so a message made
    visible "at once" would stay hidden); and a long poll (``WaitTimeSeconds``) that finds nothing answers at
    the instant a message can be received, or once its wait has passed, empty, the clock moved there."""
    import moto.core.utils as moto_utils
    import moto.sqs.models as sqs_models

    real_seconds = moto_utils.unix_time
    real_receive = sqs_models.SQSBackend.receive_message

    def unix_time(dt: Any = None) -> float:
        return virtual_clock.at_ms / 1000 if dt is None else real_seconds(dt)

    def unix_time_millis(dt: Any = None) -> float:
        return unix_time(dt) * 1000.0

    def receive_message(backend: Any, queue_name: str, count: int, wait_seconds_timeout: int, *args: Any,
                        **kwargs: Any) -> Any:
        messages = real_receive(backend, queue_name, count, 0, *args, **kwargs)
        if messages or not wait_seconds_timeout:
            return messages
        until_ms = virtual_clock.at_ms + int(wait_seconds_timeout) * 1000
        coming = [instant for instant in _receivable_instants(backend.get_queue(queue_name), virtual_clock.at_ms)
                  if instant <= until_ms]
        virtual_clock.move_to(coming[0] if coming else until_ms)
        return real_receive(backend, queue_name, count, 0, *args, **kwargs)

    def visible(message: Any) -> bool:
        return bool(virtual_clock.at_ms >= message.visible_at)

    with monkeypatch.context() as patched:
        for module in (moto_utils, sqs_models):  # moto's SQS reads them by name, as moto_clock.install notes
            patched.setattr(module, "unix_time", unix_time)
            patched.setattr(module, "unix_time_millis", unix_time_millis)
        patched.setattr(sqs_models.Message, "visible", property(visible))
        patched.setattr(sqs_models.SQSBackend, "receive_message", receive_message)
        yield


def _queue(queue_url: str) -> Any:
    import moto.sqs.models as sqs_models

    return sqs_models.sqs_backends[ACCOUNT][REGION].queues[queue_url.rsplit("/", 1)[-1]]


def receivable_instants(queue_url: str) -> list[int]:
    """When each message of ``queue_url`` that cannot be received now (delayed, or in flight) will be, in order."""
    return _receivable_instants(_queue(queue_url), now_ms())


def _receivable_instants(queue: Any, now: int) -> list[int]:
    instants = []
    for message in list(queue._messages):  # noqa: SLF001 - moto keeps them there
        instant = int(max(message.visible_at, message.delayed_until))
        if instant > now:
            instants.append(instant)
    return sorted(instants)


def step_to_next_message(queue_url: str, within_seconds: float) -> int:
    """Move the virtual clock to the instant the next message of ``queue_url`` can be received, which must
    come within ``within_seconds``; answers that instant."""
    now = now_ms()
    instants = receivable_instants(queue_url)
    assert instants, f"nothing waits in {queue_url} at {iso(now)}"
    assert instants[0] <= now + within_seconds * 1000, (
        f"the next message of {queue_url} comes at {iso(instants[0])}, more than {within_seconds} s after {iso(now)}")
    virtual().move_to(instants[0])
    return instants[0]
