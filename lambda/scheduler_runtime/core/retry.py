"""A schedule's retry policy: the ``retry`` field of a create body, and when a failed delivery is parked.

``retry: {"maxAttempts": n, "maxAgeSeconds": s}`` (either or both) on ``POST /schedules``, batch items
and ``PUT /periodic/{id}``. What a body leaves out follows the deployment: ``maxAttempts`` the
construct's ``max_receive_count`` (also its cap: SQS's redrive parks a message past it whatever the
record says), ``maxAgeSeconds`` the construct's ``retry_max_age`` (``RETRY_MAX_AGE_SECONDS``).

**The rule** (:meth:`Limits.park_reason`), checked when an attempt fails: the delivery is parked in
the dead-letter queue, with its payload and the limit reached as the reason, instead of retried, when
that attempt was attempt ``maxAttempts``, or when the next attempt would start after
``dueAt + maxAgeSeconds``. The first attempt is always made, however late. A limit only ever parks:
it never drops a delivery, and never makes one early. A body's ``retry`` is read by
:func:`~.validation.validate_retry`.

**The lateness bound** (:meth:`Limits.stale_reason`), checked before each attempt starts, the first one
included: a schedule's ``maxLatenessSeconds`` (or the construct's ``max_lateness``; neither: no bound) ends
a delivery that would start more than that after its due time instead of starting it. ``maxAgeSeconds``
limits retries and never stops a first attempt; ``maxLatenessSeconds`` stops any attempt that would come
too late. A delivery redriven by an operator is not held to it.
"""

from __future__ import annotations

from dataclasses import dataclass

FIELD = "retry"
MAX_ATTEMPTS, MAX_AGE_SECONDS = "maxAttempts", "maxAgeSeconds"
MAX_LATENESS = "maxLatenessSeconds"
"""The lateness bound's field (a create's, a batch item's, a periodic timer's) and the attribute that keeps it."""
STALE = "stale"
"""How the reason of a delivery ended by its lateness bound begins."""
POLICY_FIELDS = (MAX_ATTEMPTS, MAX_AGE_SECONDS)
"""The fields of ``retry``, and the names of the record's or definition's attributes that keep them."""


@dataclass(frozen=True)
class RetryPolicy:
    """What a request's ``retry`` gave: each limit it set, None for one left to the deployment."""

    max_attempts: int | None = None
    max_age_seconds: int | None = None

    def to_json(self) -> dict[str, int]:
        """The fields given, as the API answers them (and as the request hash holds them)."""
        values = {MAX_ATTEMPTS: self.max_attempts, MAX_AGE_SECONDS: self.max_age_seconds}
        return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class Limits:
    """The limits one delivery is held to: its policy, the deployment's defaults filling the gaps."""

    max_attempts: int
    max_age_seconds: int
    max_lateness_seconds: int | None = None

    def stale_reason(self, late_ms: int) -> str | None:
        """Why an attempt that would start ``late_ms`` after the due time must not start, or None."""
        if self.max_lateness_seconds is None or late_ms <= self.max_lateness_seconds * 1000:
            return None
        return (f"{STALE}: it would start {late_ms / 1000:g} s after its due time, past "
                f"{MAX_LATENESS} {self.max_lateness_seconds}")

    def attempts_reached(self) -> str:
        return f"{MAX_ATTEMPTS} {self.max_attempts} reached"

    def park_reason(self, attempt: int, due_ms: int, next_attempt_ms: int) -> str | None:
        """Why attempt ``attempt`` (which failed) is the last one, or None to retry at ``next_attempt_ms``."""
        if attempt >= self.max_attempts:
            return self.attempts_reached()
        return self.age_reason(due_ms, next_attempt_ms)

    def age_reason(self, due_ms: int, next_attempt_ms: int) -> str | None:
        """Why no attempt may start at ``next_attempt_ms`` (past ``dueAt + maxAgeSeconds``), or None."""
        if next_attempt_ms > due_ms + self.max_age_seconds * 1000:
            return f"{MAX_AGE_SECONDS} {self.max_age_seconds} exceeded"
        return None


def limits_of(policy: RetryPolicy | None, max_receive_count: int, default_max_age_seconds: int,
              max_lateness_seconds: int | None = None) -> Limits:
    """The limits of a delivery under ``policy`` and its lateness bound (``max_lateness_seconds``: the
    schedule's, else the deployment's, if any); ``maxAttempts`` never above the deployment's
    ``max_receive_count`` (a record written before a redeploy that lowered it included)."""
    given = policy or RetryPolicy()
    attempts = max_receive_count if given.max_attempts is None else min(given.max_attempts, max_receive_count)
    age = default_max_age_seconds if given.max_age_seconds is None else given.max_age_seconds
    return Limits(attempts, age, max_lateness_seconds)


__all__ = ["FIELD", "MAX_LATENESS", "STALE", "Limits", "POLICY_FIELDS", "RetryPolicy", "limits_of"]
