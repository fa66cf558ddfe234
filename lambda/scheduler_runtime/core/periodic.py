"""Periodic timers, pure: the ``PUT /periodic/{id}`` body, and the due times a definition makes.

A definition makes occurrences in one of two ways:

- ``every`` N seconds: ``anchor + k * N`` for k = 0, 1, ..., where the anchor is ``startAt``, or,
  without one, the time of the PUT plus N (so "every 60 s" first fires a minute after the PUT);
- ``cron`` in ``timeZone`` (IANA, default UTC): the expression's minutes, with daylight-saving
  time handled by :mod:`.cron` (a skipped local time has no occurrence, a repeated one fires once).

Occurrences fall in ``[startAt, endAt)``. Due times always come from the definition, never from a
previous firing, so nothing drifts. A definition with no occurrence to come is refused
(:func:`never_fires`).

**Missed occurrences** (an outage, or a dispatcher so late that the next occurrence is due too):
the pending occurrence is delivered once, late, as the *latest* occurrence already due, and every
earlier one that was passed over is counted in ``skippedCount``. The next occurrence armed is the
first one after that, always in the future. So an outage of any length costs one late delivery,
never a burst.

**Paused** (``PATCH`` with ``{"state": "PAUSED"}``): no occurrence is due until ``{"state":
"ACTIVE"}`` resumes it with the first occurrence after the resume. The occurrences passed over
meanwhile, from the one pending at the pause, are counted in ``pausedCount`` (:meth:`Spec.count_between`)
and delivered never: neither as a late one nor in ``skippedCount``.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from datetime import tzinfo
from typing import Any, Iterable

from . import cron as cron_module
from .contract import DEFAULT_MAX_RECEIVE_COUNT, PERIODIC_DEFAULT_TIME_ZONE, PERIODIC_MIN_EVERY_SECONDS
from .retry import FIELD as RETRY
from .retry import MAX_LATENESS, RetryPolicy
from .states import DefinitionStatus
from .timeparse import InvalidInstant, exact_decimal, format_rfc3339_ms, parse_instant
from .validation import (GROUP_FIELD, ApiError, canonical_json, group_hashed, optional_group, retry_hashed,
                         validate_max_lateness, validate_new_id, validate_payload, validate_retry,
                         validate_state_change, validate_target)

ALLOWED_FIELDS = ("payload", "target", "startAt", "endAt", "every", "cron", "timeZone", RETRY, MAX_LATENESS,
                  GROUP_FIELD)
ACTIVE, ENDED, DELETED = DefinitionStatus.ACTIVE, DefinitionStatus.ENDED, DefinitionStatus.DELETED
PAUSED = DefinitionStatus.PAUSED
STATE_FIELD = "state"
"""The one field of a ``PATCH /periodic/{id}`` body."""
STATES = (ACTIVE, PAUSED)
"""The states a ``PATCH /periodic/{id}`` may ask for."""
MAX_EVERY_SECONDS = 100 * 366 * 86_400
# An outage of a minute-by-minute cron is walked occurrence by occurrence to count what it skipped;
# past this many, the count stops there and the walk jumps to the present.
MAX_CATCH_UP_STEPS = 200_000


@dataclass(frozen=True)
class Spec:
    """When a definition's occurrences fall: ``every_ms`` or ``cron`` (in ``time_zone``), within the bounds."""

    every_ms: int | None = None
    cron: str | None = None
    time_zone: str | None = None
    start_ms: int | None = None
    end_ms: int | None = None

    def first_due(self, anchor_ms: int, now_ms: int) -> int | None:
        """The first occurrence at or after ``now_ms`` (and ``startAt``); None when there is none."""
        floor = max(now_ms, self.start_ms or now_ms)
        if self.every_ms is not None:
            steps = max(0, math.ceil((floor - anchor_ms) / self.every_ms))
            return self._bounded(anchor_ms + steps * self.every_ms)
        return self._bounded(self._cron().next_after(floor - 1, self._zone()))

    def catch_up(self, due_ms: int, now_ms: int) -> tuple[int, int, int | None]:
        """For the pending occurrence ``due_ms`` found at ``now_ms``: ``(deliver_ms, skipped, next_ms)``.

        ``deliver_ms`` is the latest occurrence due by now (``due_ms`` itself unless later ones are
        due too), ``skipped`` how many earlier ones it stands for, and ``next_ms`` the occurrence
        to arm next (always after ``now_ms``), or None when the definition has ended.
        """
        if self.every_ms is not None:
            steps = max(0, (now_ms - due_ms) // self.every_ms)
            if self.end_ms is not None:
                steps = min(steps, max(0, math.ceil((self.end_ms - due_ms) / self.every_ms) - 1))
            latest = due_ms + steps * self.every_ms
            return latest, steps, self._bounded(latest + self.every_ms)
        zone, expression = self._zone(), self._cron()
        latest, skipped = due_ms, 0
        upcoming = expression.occurrences(due_ms, zone)
        for candidate in upcoming:
            if candidate > now_ms or self._bounded(candidate) is None:
                return latest, skipped, self._bounded(candidate)
            latest, skipped = candidate, skipped + 1
            if skipped >= MAX_CATCH_UP_STEPS:
                return latest, skipped, self._bounded(expression.next_after(now_ms, zone))
        return latest, skipped, None

    def count_between(self, first_ms: int, until_ms: int) -> int:
        """How many occurrences fall in ``[first_ms, until_ms)`` (and before ``endAt``), ``first_ms`` being
        one; a cron timer's count stops at ``MAX_CATCH_UP_STEPS``, as :meth:`catch_up`'s does."""
        until_ms = min(until_ms, self.end_ms) if self.end_ms is not None else until_ms
        if first_ms >= until_ms:
            return 0
        if self.every_ms is not None:
            return math.ceil((until_ms - first_ms) / self.every_ms)
        count = 1
        for candidate in self._cron().occurrences(first_ms, self._zone()):
            if candidate >= until_ms or count >= MAX_CATCH_UP_STEPS:
                break
            count += 1
        return count

    def _bounded(self, due_ms: int | None) -> int | None:
        if due_ms is None or (self.end_ms is not None and due_ms >= self.end_ms):
            return None
        return due_ms

    def _cron(self) -> cron_module.Cron:
        assert self.cron is not None
        return cron_module.parse(self.cron)

    def _zone(self) -> tzinfo:
        return cron_module.zone_of(self.time_zone or PERIODIC_DEFAULT_TIME_ZONE)


@dataclass(frozen=True)
class PeriodicRequest:
    """A validated ``PUT /periodic/{id}`` body."""

    periodic_id: str
    spec: Spec
    payload_json: str
    target: str
    request_hash: bytes
    """The first 16 bytes of a SHA-256 of the normalized body: the same body again is a replay."""
    retry: RetryPolicy | None = None
    """The body's ``retry`` (every occurrence's delivery is held to it), None when it gave none."""
    group: str | None = None
    """The body's ``group``, None when it gave none."""
    max_lateness_seconds: int | None = None
    """The body's ``maxLatenessSeconds`` (an occurrence later than that is skipped), None when it gave none."""

    def anchor_ms(self, now_ms: int) -> int:
        """Where ``every`` counts from: ``startAt``, else one period after the PUT."""
        if self.spec.every_ms is None:
            return self.spec.start_ms or now_ms
        return self.spec.start_ms if self.spec.start_ms is not None else now_ms + self.spec.every_ms


def validate_periodic(periodic_id: str, body: dict[str, Any], targets: Iterable[str], default_target: str, *,
                      max_receive_count: int = DEFAULT_MAX_RECEIVE_COUNT) -> PeriodicRequest:
    """Validate a PUT body; raise :class:`ApiError` naming the field and the rule on the first one broken.
    ``max_receive_count``: the deployment's, the most ``retry.maxAttempts`` may be."""
    validate_new_id(periodic_id)
    unknown = sorted(set(body) - set(ALLOWED_FIELDS))
    if unknown:
        raise ApiError(400, f"unknown field '{unknown[0]}'; allowed fields are {', '.join(ALLOWED_FIELDS)}", unknown[0])
    if ("every" in body) == ("cron" in body):
        raise ApiError(400, "exactly one of every (whole seconds >= 1) or cron (six fields) is required", "every")
    normalized: dict[str, Any] = {"id": periodic_id}
    if "every" in body:
        every = body["every"]
        if isinstance(every, bool) or not isinstance(every, (int, float)):
            raise ApiError(400, "every must be a whole number of seconds", "every")
        if not PERIODIC_MIN_EVERY_SECONDS <= every <= MAX_EVERY_SECONDS:  # before any exact arithmetic: 1e400 is inf
            raise ApiError(400, f"every must be {PERIODIC_MIN_EVERY_SECONDS}-{MAX_EVERY_SECONDS} seconds", "every")
        if exact_decimal(every) != int(every):  # 60.0 is 60, but 60.0000000000000001 is not whole
            raise ApiError(400, "every must be a whole number of seconds", "every")
        if "timeZone" in body:
            raise ApiError(400, "timeZone applies to cron only; every counts seconds, which have no time zone", "timeZone")
        spec_fields: dict[str, Any] = {"every_ms": int(every) * 1000}
        normalized["every"] = int(every)
    else:
        expression, zone = body["cron"], body.get("timeZone", PERIODIC_DEFAULT_TIME_ZONE)
        if not isinstance(zone, str):
            raise ApiError(400, "timeZone must be an IANA time zone name such as Europe/Paris", "timeZone")
        try:
            cron_module.parse(expression)
        except cron_module.CronError as exc:
            raise ApiError(400, str(exc), "cron") from None
        try:
            cron_module.zone_of(zone)
        except cron_module.CronError as exc:
            raise ApiError(400, str(exc), "timeZone") from None
        spec_fields = {"cron": " ".join(expression.split()), "time_zone": zone}
        normalized.update(cron=spec_fields["cron"], timeZone=zone)
    for field, name in (("startAt", "start_ms"), ("endAt", "end_ms")):
        if field in body:
            try:
                spec_fields[name] = parse_instant(body[field])
            except InvalidInstant as exc:
                raise ApiError(400, f"{field} {exc}", field) from None
            normalized[field] = spec_fields[name]
    if "start_ms" in spec_fields and "end_ms" in spec_fields and spec_fields["end_ms"] <= spec_fields["start_ms"]:
        raise ApiError(400, "endAt must be later than startAt", "endAt")
    payload_json = validate_payload(body)
    target = validate_target(body, targets, default_target)
    retry = validate_retry(body, max_receive_count)
    group = optional_group(body)
    max_lateness = validate_max_lateness(body)
    normalized.update(payload=payload_json, target=target, **retry_hashed(retry), **group_hashed(group),
                      **({} if max_lateness is None else {MAX_LATENESS: max_lateness}))
    request_hash = hashlib.sha256(canonical_json(normalized).encode("utf-8")).digest()[:16]
    return PeriodicRequest(periodic_id, Spec(**spec_fields), payload_json, target, request_hash, retry, group,
                           max_lateness)


def never_fires(request: PeriodicRequest, now_ms: int) -> ApiError | None:
    """Why a definition PUT at ``now_ms`` would never fire, as a 400 naming the field and the rule, or None when an
    occurrence is to come: a cron that matches no date or only past ones (``cron``), a ``startAt`` after the cron's
    last occurrence (``startAt``), an ``endAt`` already past or not later than the first occurrence (``endAt``)."""
    spec, anchor_ms = request.spec, request.anchor_ms(now_ms)
    if spec.first_due(anchor_ms, now_ms) is not None:
        return None
    unbounded = replace(spec, end_ms=None)
    first_ms = unbounded.first_due(anchor_ms, now_ms)
    if spec.cron is not None:
        rule = spec._cron().never_fires_from(now_ms, spec._zone())
        if rule is not None:
            return ApiError(400, rule, "cron")
        if first_ms is None:  # an occurrence to come, but none from startAt on
            return ApiError(400, f"startAt {format_rfc3339_ms(spec.start_ms or now_ms)} is after the last occurrence "
                                 f"of cron {spec.cron!r}: the timer would never fire", "startAt")
    # Unbounded, it has a first occurrence (every always does, and cron was checked): endAt leaves it out.
    assert spec.end_ms is not None and first_ms is not None
    if spec.end_ms <= now_ms:
        return ApiError(400, f"endAt must be in the future (got {format_rfc3339_ms(spec.end_ms)}, now "
                             f"{format_rfc3339_ms(now_ms)}): the timer would never fire", "endAt")
    return ApiError(400, f"endAt {format_rfc3339_ms(spec.end_ms)} must be later than the first occurrence, "
                         f"{format_rfc3339_ms(first_ms)}: the timer would never fire", "endAt")


def validate_state(body: dict[str, Any]) -> DefinitionStatus:
    """Validate a ``PATCH /periodic/{id}`` body, ``{"state": "PAUSED"}`` or ``{"state": "ACTIVE"}``; raise
    :class:`ApiError` naming the field and the rule."""
    return DefinitionStatus(validate_state_change(body, STATES, STATE_FIELD))
