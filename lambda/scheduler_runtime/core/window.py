"""Window and never-early arithmetic.

SQS delays have whole-second resolution and a 900 s ceiling. A timer is
claimed once it is due within the claim window. How its message is delayed is
the deployment's :class:`DelayRule`: with ``SUB_SECOND`` precision, by the whole
seconds left less the dispatcher mapping's batching window (the *lead*), rounded
down, so it surfaces at most the lead plus a second early, while the mapping
gathers it into a batch, and the dispatcher waits out the rest; with ``SECOND``
precision, by the whole seconds left rounded up, so it surfaces at its due time
or up to a second after, and is delivered on arrival. Either way a message that
reaches the dispatcher early waits (never early), and one more than
``EARLY_TOLERANCE_MS`` plus the lead early is put back.
"""

from __future__ import annotations

from dataclasses import dataclass

from .contract import API_FUNCTION_TIMEOUT_SECONDS, DEFAULT_PRECISION, SQS_MAX_DELAY_SECONDS

EARLY_TOLERANCE_MS = 1000
# A message or timer whose record is missing may still be waiting for the api call that wrote
# it to write the record; once that call can no longer write (its function timed out), plus a
# margin for clock skew between hosts, it is a stray.
CLOCK_SKEW_MARGIN_MS = 5_000
STRAY_AFTER_MS = API_FUNCTION_TIMEOUT_SECONDS * 1000 + CLOCK_SKEW_MARGIN_MS
START_DEADLINE_MS = 500
"""A delivery may start (its target be called) only this long after the last read or write that allowed
it: a periodic occurrence's advance, a grouped schedule's read of its group's cancel."""
SETTLE_MS = 1_000
"""A DELETE or pause of a periodic timer, and a group's cancel, answers no sooner than this after the write
that stops deliveries: any start allowed before it has started by then (``START_DEADLINE_MS``), with up to
half a second of clock skew between hosts."""
SLOW_WRITE_PAUSES = (0.05, 0.1, 0.2, 0.4)
"""The dispatcher's pauses between re-reads that wait for a write another call has not made yet (a
one-shot's record, which a message sent with no delay can overtake; a periodic predecessor's
advance), before it puts the message back: about 0.75 s in all."""


def is_stray_age(created_ms: int, now_ms: int) -> bool:
    """True once the create attempt that wrote a message or timer at ``created_ms`` cannot write any more."""
    return now_ms - created_ms > STRAY_AFTER_MS


def claim_cutoff_ms(now_ms: int, window_seconds: int) -> int:
    """Timers due at or before this instant are ready to be claimed."""
    return now_ms + window_seconds * 1000


def is_within_window(due_ms: int, now_ms: int, window_seconds: int) -> bool:
    return due_ms <= claim_cutoff_ms(now_ms, window_seconds)


def enqueue_delay_seconds(due_ms: int, now_ms: int) -> int:
    """The SQS ``DelaySeconds`` for a timer: whole seconds left, floored, capped at 900 (no lead)."""
    return DelayRule().delay_seconds(due_ms, now_ms)


@dataclass(frozen=True)
class DispatchTiming:
    """What the dispatcher does with a message: deliver after ``wait_ms``, or put it back."""

    wait_ms: int
    put_back_seconds: int

    @property
    def put_back(self) -> bool:
        return self.put_back_seconds > 0


def dispatch_timing(due_ms: int, now_ms: int) -> DispatchTiming:
    """Never early: wait a small remainder, put back a message that is early by more (no lead)."""
    return DelayRule().timing(due_ms, now_ms)


@dataclass(frozen=True)
class DelayRule:
    """How a deployment delays its delayer messages, and what the dispatcher does with one that arrives.

    ``lead_ms``: the dispatcher mapping's batching window. With ``SUB_SECOND`` precision a message is
    sent to surface that much earlier, so that the mapping's gathering ends about when it is due and
    messages due in the same second share one invocation and one wait. ``round_up`` (``SECOND``
    precision): the whole seconds left rounded up, no lead; the message surfaces at or after its due
    time (at most a second, plus the batching window, late) and is delivered on arrival, with no wait.
    """

    lead_ms: int = 0
    round_up: bool = False

    @classmethod
    def of(cls, batching_window_seconds: int, precision: str = DEFAULT_PRECISION) -> "DelayRule":
        """The rule of a deployment: its mapping's batching window and its precision (``PRECISION``)."""
        if precision == "SECOND":
            return cls(lead_ms=0, round_up=True)
        return cls(lead_ms=max(0, batching_window_seconds) * 1000, round_up=False)

    @property
    def tolerance_ms(self) -> int:
        """How early a message may reach the dispatcher and still be waited for, not put back."""
        return EARLY_TOLERANCE_MS + self.lead_ms

    def delay_seconds(self, due_ms: int, now_ms: int) -> int:
        """The SQS ``DelaySeconds`` of a message due at ``due_ms`` sent at ``now_ms``, in 0-900."""
        remaining_ms = due_ms - now_ms - self.lead_ms
        if remaining_ms <= 0:
            return 0
        whole = -(-remaining_ms // 1000) if self.round_up else remaining_ms // 1000
        return min(whole, SQS_MAX_DELAY_SECONDS)

    def timing(self, due_ms: int, now_ms: int) -> DispatchTiming:
        """Never early: wait out what is left when it is within the tolerance, else put the message back
        (delayed by this rule again)."""
        remaining_ms = due_ms - now_ms
        if remaining_ms <= 0:
            return DispatchTiming(wait_ms=0, put_back_seconds=0)
        if remaining_ms <= self.tolerance_ms:
            return DispatchTiming(wait_ms=remaining_ms, put_back_seconds=0)
        return DispatchTiming(wait_ms=0, put_back_seconds=max(1, self.delay_seconds(due_ms, now_ms)))


def record_expiry_seconds(now_ms: int, attempts_left: int, attempt_interval_seconds: int,
                          retention_seconds: int) -> int:
    """The TTL (epoch seconds) a record gets when a delivery attempt starts or ends at ``now_ms``.

    Each of the ``attempts_left`` attempts may come up to ``attempt_interval_seconds`` after the one
    before (for a one-shot, the delayer queue's visibility timeout), and one more interval after the
    last, SQS's redrive may park the message in the dead-letter queue without the dispatcher. The
    record outlives that moment by ``retention_seconds``, so a retry never meets a record that TTL
    deleted, and a parked message always names a record that can still be read.
    """
    return now_ms // 1000 + (max(attempts_left, 0) + 1) * attempt_interval_seconds + retention_seconds
