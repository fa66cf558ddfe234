"""The per-kind target cost table in docs/benchmarks.md: its arithmetic, from the price table."""

from __future__ import annotations

import pytest

from bench.pricing import PRICES
from bench.target_costs import TARGET_PRICES, envelope_bytes, per_kind


def test_the_envelope_size_grows_with_the_payload_byte_for_byte() -> None:
    assert envelope_bytes(1300) - envelope_bytes(300) == 1000


def test_a_delivery_over_64_kb_bills_two_chunks_at_every_per_chunk_kind() -> None:
    small, large = per_kind(payload_bytes=1000), per_kind(payload_bytes=70 * 1024)
    for kind, price in (("sqs", "sqs_standard_per_million"), ("sns", "sns_standard_publish_per_million"),
                        ("eventbridge", "eventbridge_custom_event_per_million")):
        assert small["kinds"][kind]["service"] == pytest.approx(TARGET_PRICES[price])
        assert large["kinds"][kind]["service"] == pytest.approx(2 * TARGET_PRICES[price])


def test_the_dispatcher_share_is_its_memory_times_the_call_time_at_lambdas_price() -> None:
    table = per_kind(function_ms=250.0)
    gb_second = PRICES["lambda_memory_mb"]["dispatcher"] / 1024 * 0.250
    assert table["kinds"]["lambda (RequestResponse)"]["dispatcher"] == pytest.approx(
        1_000_000 * gb_second * PRICES["lambda_arm_per_gb_second"])


def test_https_egress_is_billed_per_byte_sent_and_an_express_start_at_its_100_ms_minimum() -> None:
    table = per_kind(payload_bytes=300, express_ms=20.0)
    https = table["kinds"]["https"]["service"]
    assert per_kind(payload_bytes=1_300)["kinds"]["https"]["service"] - https == pytest.approx(
        TARGET_PRICES["egress_per_gb"], rel=1e-3)  # 1,000 more bytes per delivery: 1 GB more per million
    express = table["kinds"]["stepfunctions (EXPRESS)"]["service"]
    assert express == pytest.approx(1.0 + 1_000_000 * 64 / 1024 * 0.1 * TARGET_PRICES["stepfunctions_express_gb_second"])
