"""Payload storage (compressed when smaller, exact round trip) and the shared contract file."""

import json

import pytest

from cdk_delayed_scheduler._runtime_asset import runtime_asset_path
from scheduler_runtime.core import contract as runtime_contract
from scheduler_runtime.core import payload


@pytest.mark.parametrize(
    "value",
    ["x", {"a": 1}, {"order": {"lines": [{"sku": f"SKU-{i}", "qty": i, "note": "ünïcode ✓"} for i in range(40)]}}],
)
def test_payload_round_trips_exactly(value):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    kind, stored = payload.encode(text)
    assert payload.decode(kind, stored) == text


def test_compressible_payload_is_stored_smaller_and_small_one_as_text():
    text = json.dumps({"lines": [{"sku": f"SKU-{i}", "qty": 1, "warehouse": "eu-west-1a"} for i in range(30)]})
    kind, stored = payload.encode(text)
    assert kind == "B" and len(stored) < len(text) / 2
    assert payload.encode('{"a":1}') == ("S", '{"a":1}')


def test_short_payload_is_stored_as_text_even_when_compressible():
    text = json.dumps("a" * (payload.COMPRESS_FROM_BYTES - 3))
    assert len(text) == payload.COMPRESS_FROM_BYTES - 1
    assert payload.encode(text) == ("S", text)
    assert payload.encode(json.dumps("a" * payload.COMPRESS_FROM_BYTES))[0] == "B"


def test_construct_and_runtime_read_one_contract():
    shared = json.loads((runtime_asset_path() / "scheduler_runtime" / "contract.json").read_text())
    assert runtime_contract.ID_PATTERN.pattern == shared["idPattern"]
    assert runtime_contract.MAX_BATCH_SIZE == shared["maxBatchSize"]
    assert runtime_contract.DEFAULT_DELAY_WINDOW_SECONDS == shared["delayWindowSeconds"]["default"]
    assert shared["delayWindowSeconds"]["max"] <= shared["sqsMaxDelaySeconds"]
