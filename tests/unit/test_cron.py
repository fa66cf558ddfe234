"""EventBridge cron expressions: known calendars, errors that name the rule, and an oracle.

The oracle walks UTC minute by minute and asks, for each local wall time, a predicate built
with the expression from its parts (nothing of the runtime's parsing or day rules): it is
obviously right and slow. Generated expressions (hypothesis) must give the runtime's fast
search the same next occurrences, across leap days, year ends and daylight-saving days.
"""

from __future__ import annotations

import calendar
import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler_runtime.core.cron import CronError, parse, zone_of

ZONES = ["UTC", "Europe/Paris", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata"]


def ms(iso: str) -> int:
    return int(dt.datetime.fromisoformat(iso).timestamp() * 1000)


def local_times(expression: str, after: str, zone: str, n: int = 4) -> list[str]:
    z = zone_of(zone)
    occurrences = parse(expression).occurrences(ms(after), z)
    return [dt.datetime.fromtimestamp(t / 1000, z).isoformat() for _, t in zip(range(n), occurrences)]


@pytest.mark.parametrize("expression, after, zone, expected", [
    ("0 9 ? * MON-FRI *", "2026-11-20T12:00:00+00:00", "Europe/Paris",
     ["2026-11-23T09:00:00+01:00", "2026-11-24T09:00:00+01:00", "2026-11-25T09:00:00+01:00", "2026-11-26T09:00:00+01:00"]),
    # the skipped hour of 29 March 2026 in Paris has no 02:30
    ("30 2 * * ? *", "2026-03-27T00:00:00+00:00", "Europe/Paris",
     ["2026-03-27T02:30:00+01:00", "2026-03-28T02:30:00+01:00", "2026-03-30T02:30:00+02:00", "2026-03-31T02:30:00+02:00"]),
    # the repeated hour of 25 October 2026 has one 02:30, the first
    ("30 2 * * ? *", "2026-10-24T00:00:00+00:00", "Europe/Paris",
     ["2026-10-24T02:30:00+02:00", "2026-10-25T02:30:00+02:00", "2026-10-26T02:30:00+01:00", "2026-10-27T02:30:00+01:00"]),
    ("*/20 1 * * ? *", "2026-11-01T05:00:00+00:00", "America/New_York",  # 1 November: 01:xx twice, fired once
     ["2026-11-01T01:20:00-04:00", "2026-11-01T01:40:00-04:00", "2026-11-02T01:00:00-05:00", "2026-11-02T01:20:00-05:00"]),
    ("0 12 L * ? *", "2028-01-01T00:00:00+00:00", "UTC",
     ["2028-01-31T12:00:00+00:00", "2028-02-29T12:00:00+00:00", "2028-03-31T12:00:00+00:00", "2028-04-30T12:00:00+00:00"]),
    ("0 12 ? * 6L *", "2026-11-01T00:00:00+00:00", "UTC",  # last Friday
     ["2026-11-27T12:00:00+00:00", "2026-12-25T12:00:00+00:00", "2027-01-29T12:00:00+00:00", "2027-02-26T12:00:00+00:00"]),
    ("0 12 ? * TUE#2 *", "2026-11-01T00:00:00+00:00", "UTC",
     ["2026-11-10T12:00:00+00:00", "2026-12-08T12:00:00+00:00", "2027-01-12T12:00:00+00:00", "2027-02-09T12:00:00+00:00"]),
    ("0 12 15W * ? *", "2026-11-01T00:00:00+00:00", "UTC",  # 15 November 2026 is a Sunday
     ["2026-11-16T12:00:00+00:00", "2026-12-15T12:00:00+00:00", "2027-01-15T12:00:00+00:00", "2027-02-15T12:00:00+00:00"]),
    ("0 12 1W * ? *", "2026-08-01T00:00:00+00:00", "UTC",  # 1 August 2026 is a Saturday: Monday the 3rd
     ["2026-08-03T12:00:00+00:00", "2026-09-01T12:00:00+00:00", "2026-10-01T12:00:00+00:00", "2026-11-02T12:00:00+00:00"]),
    ("0 0 29 FEB ? *", "2026-01-01T00:00:00+00:00", "UTC",
     ["2028-02-29T00:00:00+00:00", "2032-02-29T00:00:00+00:00", "2036-02-29T00:00:00+00:00", "2040-02-29T00:00:00+00:00"]),
    ("0 0 30 2 ? *", "2026-01-01T00:00:00+00:00", "UTC", []),
    ("0 10 * * ? 2027", "2027-12-31T09:59:00+00:00", "UTC", ["2027-12-31T10:00:00+00:00"]),
])
def test_known_calendars(expression, after, zone, expected):
    assert local_times(expression, after, zone) == expected


@pytest.mark.parametrize("expression, words", [
    ("0 9 * * *", "six fields"),
    ("0 9 * * MON *", "exactly one of day-of-month and day-of-week"),
    ("0 9 ? * ? *", "exactly one of day-of-month and day-of-week"),
    ("60 9 * * ? *", "minutes allows a value of 0-59 (got '60')"),
    ("0 24 * * ? *", "hours allows a value of 0-23"),
    ("0 9 0 * ? *", "day-of-month allows a value of 1-31"),
    ("0 9 * 13 ? *", "month allows a value of 1-12 or a name"),
    ("0 9 ? * 8 *", "day-of-week allows a value of 1-7 or a name"),
    ("0 9 * * ? 1969", "year allows a value of 1970-2199"),
    ("0 9 ? * FRI-MON *", "day-of-week range FRI-MON runs backwards"),
    ("*/0 9 * * ? *", "minutes allows a step of 1-60"),
    ("0 9 ? * 2#6 *", "an occurrence # of 1-5"),
    ("0 9 L,3 * ? *", "L and W stand alone"),
    ("0 9 ? * 1#1,3 *", "# and L stand alone"),
])
def test_each_rule_broken_is_named(expression, words):
    with pytest.raises(CronError) as err:
        parse(expression)
    assert words in str(err.value)


@pytest.mark.parametrize("expression", ["0 0 5L * ? *", "0 0 31L * ? *", "0 0 1L * ? *", "0 0 WL * ? *",
                                        "0 0 L5 * ? *"])
def test_day_of_month_takes_no_nl(expression):
    """EventBridge documents L, LW and nW in day-of-month; 5L must not fire as 5W would."""
    with pytest.raises(CronError, match=r"day-of-month takes L, LW or nW"):
        parse(expression)


@pytest.mark.parametrize("expression, field", [
    ("5/ 9 * * ? *", "minutes"), ("*/ 9 * * ? *", "minutes"), ("0 1-5/ * * ? *", "hours"),
    ("0 9 * * ? 2027/", "year"), ("0 9 1/ * ? *", "day-of-month"), ("0 9 * JAN/ ? *", "month"),
])
def test_an_empty_step_is_refused(expression, field):
    with pytest.raises(CronError, match=f"{field} allows a step of 1-"):
        parse(expression)


@pytest.mark.parametrize("expression", ["0 9 ? * */2 *", "0 9 ? * 1-7/2 *", "0 9 ? * MON/2 *", "0 9 ? * 2/ *"])
def test_day_of_week_takes_no_step(expression):
    """EventBridge's table allows no '/' in day-of-week: an expression means the same here and there."""
    with pytest.raises(CronError, match="day-of-week takes no step"):
        parse(expression)


@pytest.mark.parametrize("name", ["Europe/Atlantis", "x" * 300, "../../etc/passwd", "/etc/localtime", "", "Europe/"])
def test_an_unknown_time_zone_is_named(name):
    with pytest.raises(CronError, match="IANA time zone"):
        zone_of(name)


# --- the oracle ----------------------------------------------------------------------------
def _last(d: dt.date) -> int:
    return calendar.monthrange(d.year, d.month)[1]


def _cron_weekday(d: dt.date) -> int:
    return d.isoweekday() % 7 + 1  # SUN 1 .. SAT 7


@st.composite
def plain(draw, low: int, high: int, steps: bool = True) -> tuple[str, set]:
    """A plain field's text and the values it means, built side by side (day-of-week takes no steps)."""
    kind = draw(st.sampled_from(["*", "value", "range", "list"] + (["step", "range-step"] if steps else [])))
    a, b = sorted(draw(st.tuples(st.integers(low, high), st.integers(low, high))))
    k = draw(st.integers(1, max(1, (high - low) // 2)))
    if kind == "*":
        return "*", set(range(low, high + 1))
    if kind == "step":
        return f"*/{k}", set(range(low, high + 1, k))
    if kind == "value":
        return str(a), {a}
    if kind == "range":
        return f"{a}-{b}", set(range(a, b + 1))
    if kind == "list":
        return f"{a},{b}", {a, b}
    return f"{a}-{b}/{k}", set(range(a, b + 1, k))


@st.composite
def day_fields(draw) -> tuple[str, str, object]:
    """Day-of-month and day-of-week texts, and a predicate on a date that the pair means."""
    kind = draw(st.sampled_from(["dom", "dow", "L", "W", "LW", "nL", "#"]))
    if kind == "dom":
        text, values = draw(plain(1, 31))
        return text, "?", lambda d: d.day in values
    if kind == "dow":
        text, values = draw(plain(1, 7, steps=False))
        return "?", text, lambda d: _cron_weekday(d) in values
    if kind == "L":
        return "L", "?", lambda d: d.day == _last(d)
    weekday = draw(st.integers(1, 7))
    if kind in ("W", "LW"):
        target = draw(st.integers(1, 31))

        def nearest(d: dt.date, target: int = target) -> bool:
            goal = _last(d) if kind == "LW" else target
            if goal > _last(d):
                return False
            weekdays = [x for x in range(1, _last(d) + 1) if dt.date(d.year, d.month, x).isoweekday() <= 5]
            return d.day == min(weekdays, key=lambda x: (abs(x - goal), x))

        return ("LW" if kind == "LW" else f"{target}W"), "?", nearest
    if kind == "nL":
        return "?", f"{weekday}L", lambda d: _cron_weekday(d) == weekday and d.day + 7 > _last(d)
    nth = draw(st.integers(1, 5))
    return "?", f"{weekday}#{nth}", lambda d: _cron_weekday(d) == weekday and (d.day - 1) // 7 + 1 == nth


INTERESTING = [dt.datetime(2028, 2, 27), dt.datetime(2026, 12, 30), dt.datetime(2026, 3, 28), dt.datetime(2026, 10, 24),
               dt.datetime(2026, 3, 7), dt.datetime(2026, 10, 31), dt.datetime(2026, 4, 4), dt.datetime(2027, 6, 15)]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(minutes=plain(0, 59), hours=plain(0, 23), days=day_fields(), zone=st.sampled_from(ZONES),
       start=st.sampled_from(INTERESTING), offset_minutes=st.integers(0, 3 * 1440))
def test_the_fast_search_agrees_with_a_minute_by_minute_walk(minutes, hours, days, zone, start, offset_minutes):
    (minute_text, minute_values), (hour_text, hour_values), (dom, dow, day_ok) = minutes, hours, days
    expression = f"{minute_text} {hour_text} {dom} * {dow} *"
    z = zone_of(zone)
    after = int((start.replace(tzinfo=dt.timezone.utc) + dt.timedelta(minutes=offset_minutes, seconds=17)).timestamp() * 1000)
    horizon = 3 * 1440
    found = []
    t = (after // 60_000 + 1) * 60_000
    for _ in range(horizon):
        local = dt.datetime.fromtimestamp(t / 1000, z)
        if local.fold == 0 and local.minute in minute_values and local.hour in hour_values and day_ok(local.date()):
            found.append(t)
            if len(found) == 3:
                break
        t += 60_000
    fast = [x for _, x in zip(range(3), parse(expression).occurrences(after, z))]
    in_horizon = [x for x in fast if x < (after // 60_000 + 1 + horizon) * 60_000]
    assert in_horizon == found[: len(in_horizon)] and len(found) == len(in_horizon), expression


DST_DAYS = {"Europe/Paris": [dt.datetime(2026, 3, 28, 22), dt.datetime(2026, 10, 24, 22)],
            "America/New_York": [dt.datetime(2026, 3, 8, 4), dt.datetime(2026, 11, 1, 3)],
            "Australia/Lord_Howe": [dt.datetime(2026, 4, 4, 13), dt.datetime(2026, 10, 3, 14)]}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(minutes=plain(0, 59), zone=st.sampled_from(sorted(DST_DAYS)), which=st.integers(0, 1),
       offset_minutes=st.integers(0, 240))
def test_around_each_clock_change_the_search_agrees_with_the_walk(minutes, zone, which, offset_minutes):
    """Every hour of the night of a change (a half-hour change at Lord Howe), so skipped and repeated
    wall times are in every example."""
    minute_text, minute_values = minutes
    z = zone_of(zone)
    start = DST_DAYS[zone][which].replace(tzinfo=dt.timezone.utc) + dt.timedelta(minutes=offset_minutes)
    after = int(start.timestamp() * 1000)
    expression = f"{minute_text} 0-5 * * ? *"
    found, t = [], (after // 60_000 + 1) * 60_000
    while len(found) < 5:
        local = dt.datetime.fromtimestamp(t / 1000, z)
        if local.fold == 0 and local.minute in minute_values and local.hour <= 5:
            found.append(t)
        t += 60_000
    assert [x for _, x in zip(range(5), parse(expression).occurrences(after, z))] == found, expression
