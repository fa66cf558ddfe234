"""Numbers in a request through the api handler on in-process moto: epoch seconds are read exactly
(rounded up to the millisecond, never down), a leap second is the last millisecond of its minute
where a time may be one and refused elsewhere, and payload numbers are stored as before.
"""

from __future__ import annotations

import pytest

from .conftest import call_api, store

pytestmark = pytest.mark.usefixtures("virtual_clock")


@pytest.mark.parametrize("written, answered", [
    ("1763719200.12300001", "2025-11-21T10:00:00.124Z"),  # a float would make it .123: early
    ("1763719200.123", "2025-11-21T10:00:00.123Z"),
    ("1763719200.1230000000000000000000001", "2025-11-21T10:00:00.124Z"),
    ("1.7637192001229999e9", "2025-11-21T10:00:00.123Z"),
    ("1763719200.123" + "0" * 5000 + "1", "2025-11-21T10:00:00.124Z"),  # longer than int() reads: still no 500
    ('"2016-12-31T23:59:60Z"', "2016-12-31T23:59:59.999Z"),  # a leap second: the last millisecond of its minute
    ('"2016-12-31T18:59:60.5-05:00"', "2016-12-31T23:59:59.999Z"),
])
def test_due_at_is_read_exactly_and_never_rounded_down(aws, written, answered):
    status, body = call_api("POST", "/schedules", f'{{"dueAt": {written}, "payload": 1}}')
    assert (status, body["dueAt"]) == (201, answered)


def test_periodic_bounds_are_read_exactly_and_a_leap_second_elsewhere_is_refused(aws):
    status, body = call_api("PUT", "/periodic/exact", '{"every": 60, "startAt": 4102444800.00000001, '
                                                      '"endAt": "2100-06-30T23:59:60Z", "payload": 1}')
    assert status == 201
    assert (body["startAt"], body["endAt"]) == ("2100-01-01T00:00:00.001Z", "2100-06-30T23:59:59.999Z")
    status, body = call_api("PUT", "/periodic/leap", '{"every": 60, "startAt": "2100-01-01T12:30:60Z", "payload": 1}')
    assert (status, body["field"]) == (400, "startAt") and "leap second" in body["message"]


def test_payload_numbers_round_trip_as_before(aws):
    text = '{"id": "nums", "delaySeconds": 600, "payload": {"x": 1.5, "y": [0.1, 1e5, -2.5e-7, 1.0], "n": 12345678901234567890}}'
    assert call_api("POST", "/schedules", text)[0] == 201
    assert store().get("nums").payload_json == '{"n":12345678901234567890,"x":1.5,"y":[0.1,100000.0,-2.5e-07,1.0]}'
