import pytest

from scheduler_runtime.core.timeparse import (
    JsonNumber,
    MAX_EPOCH_MS,
    InvalidInstant,
    format_rfc3339_ms,
    parse_epoch_seconds,
    parse_instant,
    parse_rfc3339,
)

BASE_MS = 1_795_255_200_000  # 2026-11-21T10:00:00Z


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-21T10:00:00Z", BASE_MS),
        ("2026-11-21T10:00:00z", BASE_MS),
        ("2026-11-21t10:00:00Z", BASE_MS),
        ("2026-11-21 10:00:00Z", BASE_MS),
        ("2026-11-21T10:00:00.250Z", BASE_MS + 250),
        ("2026-11-21T10:00:00.2Z", BASE_MS + 200),
        ("2026-11-21T11:00:00+01:00", BASE_MS),
        ("2026-11-21T05:30:00-04:30", BASE_MS),
        ("2026-11-21T10:00:00.250+00:00", BASE_MS + 250),
        # Sub-millisecond fractions round up: never earlier than written.
        ("2026-11-21T10:00:00.250001Z", BASE_MS + 251),
        ("2026-11-21T10:00:00.000000001Z", BASE_MS + 1),
    ],
)
def test_rfc3339_with_offset(text, expected):
    assert parse_rfc3339(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-21T10:00:00",  # no offset
        "2026-11-21T10:00:00.250",  # no offset
        "2026-11-21",
        "2026-13-01T00:00:00Z",  # month 13
        "2026-02-30T00:00:00Z",  # no such day
        "2026-11-21T25:00:00Z",
        "2026-11-21T10:00:00+0100",  # offset without a colon
        "tomorrow",
        "",
    ],
)
def test_rfc3339_rejects(text):
    with pytest.raises(InvalidInstant):
        parse_rfc3339(text)


def test_offset_message_names_the_rule():
    with pytest.raises(InvalidInstant, match="offset"):
        parse_rfc3339("2026-11-21T10:00:00")


@pytest.mark.parametrize(
    "value, expected",
    [
        (1_795_255_200, BASE_MS),
        (1_795_255_200.25, BASE_MS + 250),
        (1_795_255_200.001, BASE_MS + 1),
        (1_795_255_200.0005, BASE_MS + 1),  # rounds up, never early
        (0, 0),
    ],
)
def test_epoch_seconds_keep_milliseconds(value, expected):
    assert parse_epoch_seconds(value) == expected


@pytest.mark.parametrize("value", [-1, float("inf"), float("nan"), 10**12, True, "1795255200", 1e308, -1e308, 2.6e11])
def test_epoch_seconds_rejects(value):
    with pytest.raises(InvalidInstant):
        parse_epoch_seconds(value)


def test_instant_dispatches_on_type():
    assert parse_instant("2026-11-21T10:00:00Z") == parse_instant(1_795_255_200) == BASE_MS
    for bad in (None, [], {}, False):
        with pytest.raises(InvalidInstant):
            parse_instant(bad)


@pytest.mark.parametrize(
    "epoch_ms, text",
    [(BASE_MS, "2026-11-21T10:00:00.000Z"), (BASE_MS + 250, "2026-11-21T10:00:00.250Z"), (0, "1970-01-01T00:00:00.000Z"),
     (MAX_EPOCH_MS, "9999-12-31T23:59:59.999Z")],
)
def test_format_is_utc_with_milliseconds(epoch_ms, text):
    assert format_rfc3339_ms(epoch_ms) == text
    assert parse_rfc3339(text) == epoch_ms


@pytest.mark.parametrize(
    "text, expected",
    [
        # A leap second is the last millisecond of its minute (epoch time has none).
        ("2016-12-31T23:59:60Z", 1_483_228_799_999),
        ("2016-12-31T23:59:60.999999Z", 1_483_228_799_999),
        ("2016-12-31T18:59:60-05:00", 1_483_228_799_999),
        ("2015-07-01T01:59:60+02:00", 1_435_708_799_999),
    ],
)
def test_a_leap_second_is_the_last_millisecond_of_its_minute(text, expected):
    assert parse_rfc3339(text) == expected


@pytest.mark.parametrize("text", ["2016-12-31T23:58:60Z", "2016-12-31T12:00:60Z", "2016-12-31T23:59:60+01:00",
                                  "2016-12-31T23:59:61Z"])
def test_a_leap_second_anywhere_but_23_59_60_utc_is_refused(text):
    with pytest.raises(InvalidInstant, match="leap second|not a valid date"):
        parse_rfc3339(text)


def test_epoch_seconds_written_as_json_are_read_exactly():
    # As a binary float, .12300001 is .123 (early by < 1 µs); as written it rounds up.
    assert parse_epoch_seconds(JsonNumber("1763719200.12300001")) == 1_763_719_200_124
    assert parse_epoch_seconds(JsonNumber("1763719200.123")) == 1_763_719_200_123
    assert parse_epoch_seconds(1763719200.12300001) == 1_763_719_200_123  # a plain float: its shortest form
