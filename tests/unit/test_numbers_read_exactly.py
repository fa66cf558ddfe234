"""Numbers in a body are read exactly, and what a request means is what it hashes.

A request hash is stored with every record and definition, so it must not change for bodies
that were already valid: the hashes below were computed before numbers were read exactly.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from scheduler_runtime.core.periodic import validate_periodic
from scheduler_runtime.core.timeparse import JsonNumber, ceil_milliseconds, exact_decimal
from scheduler_runtime.core.validation import ApiError, parse_json_body, validate_create

NOW = 1_763_719_200_000


def create(text: str):
    return validate_create(parse_json_body(text), NOW, ["default"], "default")


@pytest.mark.parametrize("text, request_hash, payload_json", [
    ('{"id":"h1","dueAt":1763719200.5,"payload":{"x":1.5,"y":[0.1,1e5,-2.5e-7],"s":"\\u00e9","n":12345678901234567890}}',
     "d4442b469b3b82b5d6f36a857b3f7b3f", '{"n":12345678901234567890,"s":"é","x":1.5,"y":[0.1,100000.0,-2.5e-07]}'),
    ('{"id":"h2","delaySeconds":5,"payload":[1.0,2.50,3]}', "b65d348074d64fefdda5a28b4f4bc070", "[1.0,2.5,3]"),
    ('{"id":"h3","delaySeconds":2.5,"payload":{"z":0.30000000000000004}}', "c13b7b750c59a0b0b31d3051917782a0",
     '{"z":0.30000000000000004}'),
    ('{"id":"h4","dueAt":"2026-11-21T10:00:00.250+01:00","payload":1.23456789012345678901}',
     "426a87aba4fbd0ec96587bd6f0da6c8c", "1.2345678901234567"),
])
def test_payload_bytes_and_request_hashes_of_ordinary_bodies_are_unchanged(text, request_hash, payload_json):
    request = create(text)
    assert (request.request_hash.hex(), request.payload_json) == (request_hash, payload_json)


def test_a_periodic_definitions_hash_is_unchanged_and_every_is_whole_or_refused():
    definition = validate_periodic("p1", parse_json_body('{"every":60,"startAt":1763719200.25,"payload":{"f":[0.5,1e-3]}}'),
                                   ["default"], "default")
    assert (definition.request_hash.hex(), definition.payload_json) == ("a27ed6bf86cbbccfbed0762b3e358b53", '{"f":[0.5,0.001]}')
    assert definition.spec.start_ms == NOW + 250
    for every, rule in (("1e400", "every must be 1-"), ("-1e400", "every must be 1-"), ("60.0000000000000001", "whole")):
        with pytest.raises(ApiError, match=rule):  # 1e400 used to be int(inf): OverflowError, a 500
            validate_periodic("p1", parse_json_body(f'{{"every":{every},"payload":1}}'), ["default"], "default")


@pytest.mark.parametrize("spellings", [("5", "5.0", "5.000", "0.5e1", "5000e-3"), ("2.5", "2.50", "25e-1")])
def test_one_duration_written_several_ways_is_one_request(spellings):
    requests = [create(f'{{"id":"d","delaySeconds":{s},"payload":1}}') for s in spellings]
    assert len({(r.request_hash, r.due_ms) for r in requests}) == 1


@pytest.mark.parametrize("delay, due_ms", [("0.0010000001", NOW + 2), ("0.001", NOW + 1), ("0.0000000001", NOW + 1),
                                           ("1e-999999", NOW + 1), ("0e999999", NOW), ("2.5", NOW + 2500)])
def test_delay_seconds_are_read_exactly_and_rounded_up(delay, due_ms):
    assert create(f'{{"delaySeconds":{delay},"payload":1}}').due_ms == due_ms


def test_json_numbers_keep_their_digits_and_behave_as_floats():
    number = parse_json_body('{"n": 1763719200.12300001}')["n"]
    assert isinstance(number, JsonNumber) and number == 1763719200.123 and number.text == "1763719200.12300001"
    assert exact_decimal(number) == Decimal("1763719200.12300001")
    assert exact_decimal(1763719200.0005) == Decimal("1763719200.0005") and exact_decimal(7) == 7


@pytest.mark.parametrize("seconds, milliseconds", [
    ("1763719200.12300001", 1763719200124), ("1763719200.123", 1763719200123), ("-0.0005", 0), ("-1.0005", -1000),
    ("0.0000001", 1), ("1E+2", 100_000), ("0", 0), ("-0.000", 0), ("1." + "0" * 5000 + "1", 1001),
])
def test_ceil_milliseconds_is_exact(seconds, milliseconds):
    assert ceil_milliseconds(Decimal(seconds)) == milliseconds
