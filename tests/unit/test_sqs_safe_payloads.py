"""Every payload the API accepts can be written into an SQS message, at no cost in size for most."""

from __future__ import annotations

import json
import re

import pytest

from scheduler_runtime.core.envelope import sqs_safe_json, sqs_safe_text

SQS_ALLOWED = re.compile("^[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*$")


@pytest.mark.parametrize("value", [
    {"text": "a\ufffeb\uffffc"}, ["\uffff" * 3, {"k\ufffe": 1}], "\x00\x1f\x7f\ud7ff\ue000\ufffd\U0001f600\U0010ffff",
    {"n": [1, 1.5, -2.5e-07, 12345678901234567890], "t": True, "z": None},
])
def test_the_body_is_the_same_json_value_and_holds_only_what_sqs_allows(value):
    body = sqs_safe_json(value)
    assert SQS_ALLOWED.match(body) and json.loads(body) == value


def test_only_refused_characters_grow_and_ascii_or_other_text_is_byte_for_byte_compact_json():
    for value in ({"a": [1, 2.5], "s": "plain"}, {"s": "é" * 1000 + "漢字" + "\U0001f600"}):
        assert sqs_safe_json(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    odd = {"s": "x" * 98 + "\ufffe\uffff"}
    raw = json.dumps(odd, separators=(",", ":"), ensure_ascii=False).encode()
    assert len(sqs_safe_json(odd).encode()) - len(raw) == 2 * 3  # each: a 6-byte escape where its UTF-8 form was 3


def test_an_attribute_keeps_what_sqs_allows_and_replaces_the_rest():
    assert sqs_safe_text("delivery failed: Odd\uffff\x00Error\tsee\nlog é") == "delivery failed: Odd\ufffd\ufffdError\tsee\nlog é"
    assert sqs_safe_text("plain ascii") == "plain ascii"
