"""Pure periodic timers (the PUT body, first and catch-up due times, DST) and listing (query, token, ranges)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scheduler_runtime.core.listing import ListQuery, make_token, parse_list_query, read_token
from scheduler_runtime.core.periodic import Spec, validate_periodic
from scheduler_runtime.core.timeparse import parse_rfc3339
from scheduler_runtime.core.validation import ApiError

TARGETS = ["default", "billing"]


def body_error(body: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        validate_periodic("p", body, TARGETS, "default")
    return caught.value


@pytest.mark.parametrize(("body", "field", "words"), [
    ({"payload": 1}, "every", "exactly one of every"),
    ({"every": 1, "cron": "* * * * ? *", "payload": 1}, "every", "exactly one of every"),
    ({"every": 0, "payload": 1}, "every", "1-"),
    ({"every": 1.5, "payload": 1}, "every", "whole number"),
    ({"every": True, "payload": 1}, "every", "whole number"),
    ({"every": "5", "payload": 1}, "every", "whole number"),
    ({"every": 5, "timeZone": "UTC", "payload": 1}, "timeZone", "cron only"),
    ({"cron": "* * * * * *", "payload": 1}, "cron", "exactly one of day-of-month and day-of-week"),
    ({"cron": "0 9 * *", "payload": 1}, "cron", "six fields"),
    ({"cron": "61 9 ? * MON *", "payload": 1}, "cron", "minutes"),
    ({"cron": "0 9 ? * MON *", "timeZone": "Mars/Olympus", "payload": 1}, "timeZone", "IANA"),
    ({"cron": "0 9 ? * MON *", "timeZone": 5, "payload": 1}, "timeZone", "IANA"),
    ({"every": 5, "startAt": "tomorrow", "payload": 1}, "startAt", "startAt"),
    ({"every": 5, "startAt": 100, "endAt": 100, "payload": 1}, "endAt", "later than startAt"),
    ({"every": 5}, "payload", "payload is required"),
    ({"every": 5, "payload": 1, "target": "nope"}, "target", "registered target"),
    ({"every": 5, "payload": 1, "dueAt": 5}, "dueAt", "unknown field"),
])
def test_each_broken_rule_names_its_field(body, field, words):
    error = body_error(body)
    assert (error.status, error.field) == (400, field) and words in error.message


def test_a_payload_over_256_kib_is_413():
    error = body_error({"every": 5, "payload": "x" * 262_144})
    assert (error.status, error.field) == (413, "payload")


def test_the_request_hash_tells_replays_from_changes():
    one = validate_periodic("p", {"every": 5, "payload": {"a": 1, "b": 2}}, TARGETS, "default")
    same = validate_periodic("p", {"payload": {"b": 2, "a": 1}, "every": 5.0}, TARGETS, "default")
    other = validate_periodic("p", {"every": 6, "payload": {"a": 1, "b": 2}}, TARGETS, "default")
    assert one.request_hash == same.request_hash != other.request_hash
    cron = validate_periodic("p", {"cron": "0  9 ? * MON *", "payload": 1}, TARGETS, "default")
    assert cron.spec.cron == "0 9 ? * MON *" and cron.spec.time_zone == "UTC"


def test_every_counts_from_start_at_or_one_period_after_the_put():
    request = validate_periodic("p", {"every": 10, "payload": 1}, TARGETS, "default")
    anchor = request.anchor_ms(1_000_000)
    assert anchor == 1_010_000 and request.spec.first_due(anchor, 1_000_000) == 1_010_000
    started = validate_periodic("p", {"every": 10, "startAt": 500, "payload": 1}, TARGETS, "default")
    anchor = started.anchor_ms(1_000_000)
    # startAt in the past: the first occurrence on its grid at or after now; none before.
    assert started.spec.first_due(anchor, 1_000_000) == 1_000_000
    assert started.spec.first_due(anchor, 1_000_001) == 1_010_000
    ended = validate_periodic("p", {"every": 10, "startAt": 500, "endAt": 900, "payload": 1}, TARGETS, "default")
    assert ended.spec.first_due(ended.anchor_ms(1_000_000), 1_000_000) is None


@given(due=st.integers(0, 10**12), every_s=st.integers(1, 10**5), late_ms=st.integers(0, 10**9),
       end_after=st.one_of(st.none(), st.integers(1, 10**9)))
def test_every_catch_up_delivers_the_latest_due_and_arms_the_first_future_one(due, every_s, late_ms, end_after):
    every = every_s * 1000
    end = None if end_after is None else due + end_after
    spec = Spec(every_ms=every, end_ms=end)
    now = due + late_ms
    latest, skipped, following = spec.catch_up(due, now)
    assert latest == due + skipped * every and latest <= now
    assert end is None or latest < end
    if following is not None:
        assert following == latest + every > now or (end is not None and latest + every >= end)
        assert following > now
        assert end is None or following < end
    else:
        assert end is not None and latest + every >= end


def test_cron_catch_up_counts_the_missed_minutes_and_arms_the_next():
    spec = Spec(cron="*/15 * * * ? *", time_zone="UTC")
    due = parse_rfc3339("2026-03-01T10:00:00Z")
    latest, skipped, following = spec.catch_up(due, parse_rfc3339("2026-03-01T11:07:30Z"))
    assert (latest, skipped) == (parse_rfc3339("2026-03-01T11:00:00Z"), 4)
    assert following == parse_rfc3339("2026-03-01T11:15:00Z")
    assert spec.catch_up(due, due + 1) == (due, 0, parse_rfc3339("2026-03-01T10:15:00Z"))
    bounded = Spec(cron="*/15 * * * ? *", time_zone="UTC", end_ms=parse_rfc3339("2026-03-01T10:30:00Z"))
    assert bounded.catch_up(due, parse_rfc3339("2026-03-01T12:00:00Z")) == (parse_rfc3339("2026-03-01T10:15:00Z"), 1, None)


@pytest.mark.parametrize(("zone", "expression", "after", "expected"), [
    # Paris springs forward at 02:00 on 2026-03-29: 02:30 does not exist that night, so it is skipped.
    ("Europe/Paris", "30 2 * * ? *", "2026-03-28T00:00:00Z", ["2026-03-28T01:30:00Z", "2026-03-30T00:30:00Z"]),
    # Paris falls back at 03:00 on 2026-10-25: 02:30 happens twice; it fires once, the first time (CEST).
    ("Europe/Paris", "30 2 * * ? *", "2026-10-24T02:00:00Z", ["2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"]),
    # New York: 2026-03-08 has no 02:30, and 2026-11-01 has two 01:30s, fired at the first (EDT).
    ("America/New_York", "30 2 * * ? *", "2026-03-07T12:00:00Z", ["2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"]),
    ("America/New_York", "30 1 * * ? *", "2026-10-31T12:00:00Z", ["2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"]),
])
def test_a_definition_crosses_both_clock_changes_by_the_documented_rule(zone, expression, after, expected):
    spec = Spec(cron=expression, time_zone=zone)
    first = spec.first_due(0, parse_rfc3339(after))
    _, skipped, second = spec.catch_up(first, first)
    assert [first, second] == [parse_rfc3339(t) for t in expected] and skipped == 0


def test_list_query_rules():
    key = "table"
    assert parse_list_query({}, key) == ListQuery(None, None, None, 50, None)
    for params, field in (({"status": "FIRED"}, "status"), ({"status": "nope"}, "status"), ({"limit": "0"}, "limit"),
                          ({"limit": "101"}, "limit"), ({"limit": "ten"}, "limit"), ({"dueAfter": "soon"}, "dueAfter"),
                          ({"sort": "x"}, "sort"), ({"nextToken": "abc"}, "nextToken")):
        with pytest.raises(ApiError) as caught:
            parse_list_query(params, key)
        assert (caught.value.status, caught.value.field) == (400, field)
    query = parse_list_query({"status": "QUEUED", "dueAfter": "1000", "dueBefore": "2026-01-01T00:00:00Z"}, key)
    assert query.stored_statuses == ("QUEUED", "SCHEDULED") and query.due_after_ms == 1_000_000
    # Epoch seconds in the query string are read exactly, as in a body: never rounded down.
    assert parse_list_query({"dueAfter": "1763719200.12300001"}, key).due_after_ms == 1_763_719_200_124


def test_page_tokens_are_checked_and_bound_to_their_filters():
    token = make_token("000000000001000#a", ["", None, None], "table-1")
    assert read_token(token, "table-1") == ("000000000001000#a", ["", None, None])
    body, mac = token.split(".")
    for tampered in (body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac, body + "." + mac[::-1], token[:-1],
                     "not-a-token", ""):
        with pytest.raises(ApiError):
            read_token(tampered, "table-1")
    with pytest.raises(ApiError):
        read_token(token, "table-2")  # another scheduler's token
    with pytest.raises(ApiError) as caught:
        parse_list_query({"status": "FAILED", "nextToken": token}, "table-1")
    assert "other filters" in caught.value.message
    assert parse_list_query({"nextToken": token}, "table-1").cursor == "000000000001000#a"


def test_key_ranges_are_exclusive_at_both_ends_and_after_the_cursor():
    query = ListQuery(None, 1000, 2000, 10, None)
    low, high = query.key_range()
    assert low > "000000000001000#zzz" and low < "000000000001001#a"
    assert high > "000000000001999#zzz" and high < "000000000002000#a"
    after = ListQuery(None, None, None, 10, "000000000001500#b")
    low, _ = after.key_range()
    assert "000000000001500#b" < low < "000000000001500#b-" and low < "000000000001500#c"
    assert ListQuery(None, 2000, 1000, 10, None).key_range() is None
