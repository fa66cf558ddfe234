"""EventBridge cron expressions in any IANA time zone: parsing and the next occurrence.

Six fields, ``minutes hours day-of-month month day-of-week year``, as EventBridge Scheduler takes
them: ``*``, ``?``, ranges ``a-b``, lists ``a,b``, steps ``a/n`` and ``a-b/n``, the names
``JAN``-``DEC`` and ``SUN``-``SAT`` (day of week 1 is Sunday), ``L`` (the last day of the month; in
the day-of-week field alone, Saturday; ``nL`` there, the month's last weekday ``n``), ``nW`` and
``LW`` (the weekday nearest day ``n``, or the last weekday, within the month) and ``n#k`` (the
``k``-th weekday ``n`` of the month). Exactly one of the two day fields is ``?``. As in EventBridge's
table, day-of-week takes no step ``/``, and day-of-month no ``nL``.

Occurrences are whole minutes of local time, and daylight-saving time follows EventBridge
Scheduler's rule:

- a local time the clock skips (spring forward) has no occurrence;
- a local time the clock passes twice (fall back) has one, the first time it passes.

Due times come from the expression alone, never from a previous firing, so nothing drifts.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass
from typing import Callable, Iterator
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FIELDS = ("minutes", "hours", "day-of-month", "month", "day-of-week", "year")
_BOUNDS = {"minutes": (0, 59), "hours": (0, 23), "day-of-month": (1, 31), "month": (1, 12),
           "day-of-week": (1, 7), "year": (1970, 2199)}
_NAMES = {"month": {name: i + 1 for i, name in enumerate(
              ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"))},
          "day-of-week": {name: i + 1 for i, name in enumerate(("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"))}}
DayRule = Callable[[int, int], "frozenset[int]"]  # (year, month) -> the matching days
_BEFORE_ANY_INSTANT_MS = -2 * 86_400_000  # before 1970-01-01 in every time zone: instants start there


class CronError(ValueError):
    """A cron expression that breaks a rule; the message names the field and the rule."""


@dataclass(frozen=True)
class Cron:
    """A parsed expression: the allowed values of each plain field and the rule for the days."""

    expression: str
    minutes: frozenset[int]
    hours: frozenset[int]
    months: frozenset[int]
    years: frozenset[int]
    days: DayRule

    def matches(self, local: dt.datetime) -> bool:
        """Whether the local wall time ``local`` (seconds ignored) is one of the expression's minutes."""
        return (local.minute in self.minutes and local.hour in self.hours and local.month in self.months
                and local.year in self.years and local.day in self.days(local.year, local.month))

    def occurrences(self, after_ms: int, zone: dt.tzinfo) -> Iterator[int]:
        """Every occurrence strictly after ``after_ms`` (epoch milliseconds), in order, as epoch milliseconds."""
        start = dt.datetime.fromtimestamp(after_ms / 1000, dt.timezone.utc).astimezone(zone).replace(
            tzinfo=None, second=0, microsecond=0, fold=0)
        floor = (start.year, start.month, start.day, start.hour, start.minute)
        for year in sorted(y for y in self.years if y >= floor[0]):
            for month in sorted(m for m in self.months if (year, m) >= floor[:2]):
                for day in sorted(d for d in self.days(year, month) if (year, month, d) >= floor[:3]):
                    for hour in sorted(h for h in self.hours if (year, month, day, h) >= floor[:4]):
                        for minute in sorted(m for m in self.minutes if (year, month, day, hour, m) >= floor):
                            instant = _first_instant(dt.datetime(year, month, day, hour, minute), zone)
                            if instant is not None and instant > after_ms:
                                yield instant

    def next_after(self, after_ms: int, zone: dt.tzinfo) -> int | None:
        """The first occurrence strictly after ``after_ms``, or None when there is none (up to year 2199)."""
        return next(self.occurrences(after_ms, zone), None)

    def never_fires_from(self, from_ms: int, zone: dt.tzinfo) -> str | None:
        """None when an occurrence falls at or after ``from_ms``; else why none does, as a rule naming ``cron``:
        the expression matches no date at all (day 30 of February), or every minute it matches is past."""
        if self.next_after(from_ms - 1, zone) is not None:
            return None
        if self.next_after(_BEFORE_ANY_INSTANT_MS, zone) is None:
            return (f"cron {self.expression!r} matches no date at all (as with day 30 of February): "
                    f"a periodic timer on it would never fire")
        return (f"cron {self.expression!r} has no occurrence to come: every minute it matches is past (the last "
                f"year it allows is {max(self.years)}), so a periodic timer on it would never fire")


def zone_of(name: str) -> dt.tzinfo:
    """The IANA time zone ``name``; :class:`CronError` when there is none."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:  # OSError: a name too long for a file name
        raise CronError(f"timeZone must be an IANA time zone name such as Europe/Paris (got {name!r})") from exc


def _first_instant(wall: dt.datetime, zone: dt.tzinfo) -> int | None:
    """Epoch ms of the first instant the clock shows ``wall`` in ``zone``; None when it never does."""
    first = wall.replace(tzinfo=zone, fold=0)
    instant = first.astimezone(dt.timezone.utc)
    if instant.astimezone(zone).replace(tzinfo=None) != wall:
        return None  # skipped by a spring-forward change
    return int(instant.timestamp()) * 1000


def parse(expression: str) -> Cron:
    """Parse an EventBridge cron expression; :class:`CronError` names the field and the rule it breaks."""
    if not isinstance(expression, str):
        raise CronError("cron must be a string of six fields: minutes hours day-of-month month day-of-week year")
    parts = expression.split()
    if len(parts) != 6:
        raise CronError(f"cron must have six fields, minutes hours day-of-month month day-of-week year (got {len(parts)})")
    minute, hour, dom, month, dow, year = (p.upper() for p in parts)
    if (dom == "?") == (dow == "?"):
        raise CronError("cron: exactly one of day-of-month and day-of-week must be '?'")
    days = _day_of_week_rule(dow) if dom == "?" else _day_of_month_rule(dom)
    return Cron(expression, _values("minutes", minute), _values("hours", hour), _values("month", month),
                _values("year", year), days)


def _values(field: str, text: str) -> frozenset[int]:
    """The values a plain field allows: ``*``, ``a``, ``a-b``, ``a/n``, ``a-b/n``, ``*/n``, and lists of them."""
    low, high = _BOUNDS[field]
    out: set[int] = set()
    for item in text.split(","):
        base, slash, step_text = item.partition("/")
        step = _number(field, step_text, 1, high - low + 1, "a step") if slash else 1  # '5/' has an empty step
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, _, b = base.partition("-")
            first, last = _value(field, a), _value(field, b)
            if first > last:
                raise CronError(f"cron: {field} range {base} runs backwards")
        else:
            first = _value(field, base)
            last = high if slash else first
        out.update(range(first, last + 1, step))
    return frozenset(out)


def _value(field: str, text: str) -> int:
    named = _NAMES.get(field, {}).get(text)
    if named is not None:
        return named
    return _number(field, text, *_BOUNDS[field], "a value")


def _number(field: str, text: str, low: int, high: int, what: str) -> int:
    if not (text.isascii() and text.isdigit()) or not low <= int(text) <= high:  # '²' is a digit, not a number
        raise CronError(f"cron: {field} allows {what} of {low}-{high}"
                        + (" or a name" if field in _NAMES and what == "a value" else "") + f" (got {text!r})")
    return int(text)


def _day_of_month_rule(text: str) -> DayRule:
    if "L" in text or "W" in text:
        if "," in text or "-" in text or "/" in text:
            raise CronError("cron: day-of-month L and W stand alone, not in lists, ranges or steps")
        if text == "L":
            return lambda year, month: frozenset({_last_day(year, month)})
        if text == "LW":
            return lambda year, month: frozenset({_nearest_weekday(year, month, _last_day(year, month))})
        if not text.endswith("W") or "L" in text:
            raise CronError(f"cron: day-of-month takes L, LW or nW (the weekday nearest day n) (got {text!r})")
        day = _number("day-of-month", text[:-1], 1, 31, "a W day")
        return lambda year, month: frozenset(
            {_nearest_weekday(year, month, day)} if day <= _last_day(year, month) else set())
    allowed = _values("day-of-month", text)
    return lambda year, month: frozenset(d for d in allowed if d <= _last_day(year, month))


def _day_of_week_rule(text: str) -> DayRule:
    if text == "L":
        text = "7"  # alone, L is the last day of the week: Saturday
    if "/" in text:
        raise CronError(f"cron: day-of-week takes no step '/' (EventBridge allows , - * ? L # there) (got {text!r})")
    if "#" in text or "L" in text:
        if "," in text or "-" in text:
            raise CronError("cron: day-of-week # and L stand alone, not in lists or ranges")
        if text.endswith("L"):
            weekday = _value("day-of-week", text[:-1])
            return lambda year, month: frozenset({max(d for d in _weekdays(year, month, weekday))})
        day_text, _, nth_text = text.partition("#")
        weekday, nth = _value("day-of-week", day_text), _number("day-of-week", nth_text, 1, 5, "an occurrence #")
        return lambda year, month: frozenset(_weekdays(year, month, weekday)[nth - 1: nth])
    allowed = _values("day-of-week", text)
    return lambda year, month: frozenset(
        d for d in range(1, _last_day(year, month) + 1) if _cron_weekday(year, month, d) in allowed)


def _last_day(year: int, month: int) -> int:
    return calendar.monthrange(year, month)[1]


def _cron_weekday(year: int, month: int, day: int) -> int:
    """1 (Sunday) to 7 (Saturday)."""
    return (dt.date(year, month, day).weekday() + 1) % 7 + 1


def _weekdays(year: int, month: int, weekday: int) -> list[int]:
    return [d for d in range(1, _last_day(year, month) + 1) if _cron_weekday(year, month, d) == weekday]


def _nearest_weekday(year: int, month: int, day: int) -> int:
    """The Monday-to-Friday day nearest ``day``, never leaving the month."""
    weekday = dt.date(year, month, day).weekday()  # Monday 0 .. Sunday 6
    last = _last_day(year, month)
    if weekday == 5:  # Saturday: the Friday before, or the Monday after on the 1st
        return day - 1 if day > 1 else day + 2
    if weekday == 6:  # Sunday: the Monday after, or the Friday before on the last day
        return day + 1 if day < last else day - 2
    return day
