"""Pure: whether a validated periodic definition would never fire from a given ``now`` (``core.periodic.never_fires``),
at exact instants: the rule and the field, or None when an occurrence is to come."""

from __future__ import annotations

import pytest

from scheduler_runtime.core.periodic import never_fires, validate_periodic
from scheduler_runtime.core.timeparse import parse_rfc3339

NOW = parse_rfc3339("2026-06-15T12:00:00Z")


def refusal(body: dict) -> tuple[str, str] | None:
    error = never_fires(validate_periodic("p", {"payload": 1, **body}, ["default"], "default"), NOW)
    return None if error is None else (error.field or "", error.message)


@pytest.mark.parametrize(("body", "field", "message"), [
    ({"cron": "0 9 1 1 ? 2026"}, "cron", "cron '0 9 1 1 ? 2026' has no occurrence to come: every minute it matches is "
                                         "past (the last year it allows is 2026), so a periodic timer on it would never fire"),
    ({"cron": "0 9 31 2,4,6,9,11 ? *"}, "cron", "cron '0 9 31 2,4,6,9,11 ? *' matches no date at all (as with day 30 of "
                                                "February): a periodic timer on it would never fire"),
    ({"every": 60, "startAt": "2026-06-15T11:00:00Z", "endAt": "2026-06-15T12:00:00Z"}, "endAt",
     "endAt must be in the future (got 2026-06-15T12:00:00.000Z, now 2026-06-15T12:00:00.000Z): the timer would never "
     "fire"),
    ({"every": 60, "endAt": "2026-06-15T12:01:00Z"}, "endAt",
     "endAt 2026-06-15T12:01:00.000Z must be later than the first occurrence, 2026-06-15T12:01:00.000Z: the timer "
     "would never fire"),
    ({"cron": "0 13 * * ? *", "timeZone": "Europe/Paris", "endAt": "2026-06-15T11:00:00.001Z",
      "startAt": "2026-06-15T10:00:00Z"}, "endAt",
     "endAt must be in the future (got 2026-06-15T11:00:00.001Z, now 2026-06-15T12:00:00.000Z): the timer would never "
     "fire"),
    ({"cron": "0 9 * * ? 2026", "startAt": "2027-01-01T00:00:00Z"}, "startAt",
     "startAt 2027-01-01T00:00:00.000Z is after the last occurrence of cron '0 9 * * ? 2026': the timer would never "
     "fire"),
])
def test_a_definition_without_an_occurrence_to_come_is_refused_naming_the_field(body, field, message):
    assert refusal(body) == (field, message)


@pytest.mark.parametrize("body", [
    {"every": 60, "endAt": "2026-06-15T12:01:00.001Z"},  # one occurrence, at 12:01: enough
    {"cron": "0 12 15 6 ? 2026", "endAt": "2026-06-15T12:00:00.001Z"},  # now itself is an occurrence
    {"cron": "0 9 29 2 ? *"},  # a leap day: 2028
    {"cron": "0 9 ? 2 2#5 *"},  # a fifth Monday in February: 2044
    {"every": 1, "startAt": "2020-01-01T00:00:00Z", "endAt": "2026-06-15T12:00:01Z"},  # the last second of its run
])
def test_a_definition_with_an_occurrence_to_come_is_kept(body):
    assert refusal(body) is None
