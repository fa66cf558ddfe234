"""The reschedule and redrive cost table in docs/benchmarks.md: its arithmetic, from the price table."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.operation_costs import AWS_CALL_MS, RESCHEDULES, per_million
from bench.pricing import PRICES

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_a_redrive_per_parked_delivery_is_a_read_unit_a_write_unit_and_three_tenths_of_an_sqs_request() -> None:
    redrive = per_million()["redrive"]
    expected = PRICES["ddb_od_per_million_rru"] + PRICES["ddb_od_per_million_wru"] + 0.3 * PRICES[
        "sqs_per_million_requests"]
    assert redrive["on_demand"] == pytest.approx(expected) == pytest.approx(redrive["calls_on_demand"])


def test_a_reschedule_adds_the_api_request_and_the_functions_request_and_time_to_its_own_requests() -> None:
    table = per_million()["reschedules"]
    door = PRICES["apigw_http_per_million"] + PRICES["lambda_per_million_requests"]
    per_call_ms = 1e6 * AWS_CALL_MS / 1000 * PRICES["lambda_memory_mb"]["api"] / 1024 * PRICES["lambda_arm_per_gb_second"]
    log_lines = {case: figures["on_demand"] - figures["calls_on_demand"] - door - len(RESCHEDULES[case]) * per_call_ms
                 for case, figures in table.items()}
    assert len(set(round(x, 9) for x in log_lines.values())) == 1  # the access log line, the same for every case
    assert 0 < next(iter(log_lines.values())) < 0.5


def test_moving_a_scheduled_timer_costs_two_writes_more_than_moving_a_queued_message() -> None:
    table = per_million()["reschedules"]
    for where in ("within", "beyond"):
        queued = table[f"from QUEUED to a due time {where} the window"]["calls_on_demand"]
        scheduled = table[f"from SCHEDULED to a due time {where} the window"]["calls_on_demand"]
        assert scheduled - queued == pytest.approx(2 * PRICES["ddb_od_per_million_wru"])


def test_the_api_and_client_docs_quote_the_figures_the_table_renders() -> None:
    c = per_million()
    r, extras = c["reschedules"], list(c["extras"].values())
    cheapest, dearest = r["to a new payload at the same due time"], r["from SCHEDULED to a due time beyond the window"]
    api = " ".join((DOCS / "api.md").read_text().split())
    quoted = [f"${x:.2f}" for x in (cheapest["on_demand"], dearest["on_demand"], *(e["on_demand"] for e in extras))]
    quoted += [f"${x:.3f}" for x in (cheapest["calls_on_demand"], dearest["calls_on_demand"])]  # as the table has them
    assert [figure for figure in quoted if figure not in api] == []
    client = " ".join((DOCS / "client.md").read_text().split())
    assert f"${c['redrive']['on_demand']:.2f} per million on demand (${c['redrive']['provisioned']:.2f} provisioned)" in client
