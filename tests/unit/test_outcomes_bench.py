"""Outcome events in docs/benchmarks.md: what they add per event and per kind of outcomes target (the cost section),
and the lateness of the same workload with and without them (the precision section), from small fixtures."""

from __future__ import annotations

import pytest

from bench import cost_outcomes, costmodel, report_outcomes
from bench.common import OUTCOME_MESSAGE_PREFIX
from bench.pricing import PRICES
from bench.render import fill, parts, section_text, summary_text
from bench.target_costs import per_kind

from scheduler_runtime.core.outcomes import message_body

TIMERS = 10
OUTCOME_ONLY_MS = 12.0
FLUSH_MS = 4.0


def _scenario(outcomes: bool) -> dict:
    """A sparse short scenario as ``bench.cost.scenario`` records it: each timer one create and one delivery in an
    invocation of its own; with outcomes, each delivery's flush and an invocation of its outcome message alone."""
    per = 2 if outcomes else 1  # the mapping's receives and deletes, and the dispatcher's invocations, per timer
    counts = {("api", "dynamodb", "PutItem"): 1, ("api", "sqs", "SendMessage"): 1,
              ("dispatcher", "dynamodb", "UpdateItem"): 1, ("esm:sqs:dispatcher", "sqs", "ReceiveMessage"): per,
              ("esm:sqs:dispatcher", "sqs", "DeleteMessageBatch"): per}
    if outcomes:
        counts.update({("dispatcher", "sqs", "SendMessageBatch"): 1, ("dispatcher", "sqs", "SendMessage"): 1})
    s = {"n": TIMERS, "cancel": False, "delivered": TIMERS, "create_requests": TIMERS, "request_bytes": [1200] * TIMERS,
         "calls": [{"caller": c, "service": sv, "operation": op, "tag": "non-empty" if op == "ReceiveMessage" else "",
                    "count": k * TIMERS} for (c, sv, op), k in counts.items()],
         "capacity": [{"caller": c, "service": sv, "operation": op, "item": "record" if sv == "dynamodb" else "",
                       "calls": k * TIMERS, **({"wru": 2 * TIMERS} if sv == "dynamodb" else {"chunks": k * TIMERS})}
                      for (c, sv, op), k in counts.items()],
         "functions": {"dispatcher": {"ms": [500.0] * TIMERS + [OUTCOME_ONLY_MS] * (TIMERS if outcomes else 0),
                                      "records": [1] * (per * TIMERS), "claimed": [None] * (per * TIMERS),
                                      "outcome_records": [0] * TIMERS + [1] * (TIMERS if outcomes else 0)}},
         "metric_lines": [300] * TIMERS, "log_bytes": {}, "call_ms": {"dispatcher|sqs|SendMessageBatch": FLUSH_MS * TIMERS,
                                                                      "dispatcher|sqs|SendMessage": 5.0 * TIMERS}}
    if outcomes:
        s["outcomes"] = {"events": TIMERS, "distinct": TIMERS, "kinds": {"DELIVERED": TIMERS}, "bytes_mean": 290.0}
    s["summary"] = costmodel.summarise(s)
    return s


def _measured() -> dict:
    pairs = {"sparse": cost_outcomes.compare(_scenario(False), _scenario(True))}
    targets = [{"path": "short", "writes": 2.0, "writes_target": 2}, {"path": "long", "writes": 4.0, "writes_target": 4}]
    return {"path": "short", "payload": "1KB", "n": TIMERS, "levels": pairs, "kinds": cost_outcomes.priced_per_kind(pairs),
            "lean": cost_outcomes.lean_path(targets, pairs)}


def test_an_outcome_message_is_told_apart_by_how_the_runtime_writes_it() -> None:
    assert message_body({"outcome": "DELIVERED", "id": "a"}).startswith(OUTCOME_MESSAGE_PREFIX)
    assert not '{"id":"a","token":"t","dueMs":1}'.startswith(OUTCOME_MESSAGE_PREFIX)


def test_a_sparse_outcome_event_costs_its_flush_its_own_invocation_and_the_mappings_receive_and_delete() -> None:
    sparse = _measured()["levels"]["sparse"]
    gb_s = (OUTCOME_ONLY_MS + FLUSH_MS) / 1000 * PRICES["lambda_memory_mb"]["dispatcher"] / 1024
    expected = 3 * PRICES["sqs_per_million_requests"] + PRICES["lambda_per_million_requests"] + \
        1e6 * gb_s * PRICES["lambda_arm_per_gb_second"]  # the target's SendMessage is priced per kind, not here
    assert sparse["total_on_demand"] == pytest.approx(expected)
    assert {r["group"] for r in sparse["rows"]} == {"SQS", "Lambda"}  # no DynamoDB: the writes stay as they were
    assert sparse["writes"] == {"off": 2.0, "on": 2.0}


def test_each_kind_of_outcomes_target_adds_its_own_request_to_the_runtimes_share() -> None:
    m = _measured()
    runtime, table = m["levels"]["sparse"]["total_on_demand"], per_kind(message_bytes=290)["kinds"]
    for kind, row in m["kinds"]["rows"].items():
        assert row["sparse"] == pytest.approx(runtime + table[kind]["total"])


def test_the_lean_path_bar_is_missed_by_a_write_more_per_timer() -> None:
    pairs = _measured()["levels"]
    assert cost_outcomes.lean_path([{"path": "short", "writes": 2.0, "writes_target": 2}], pairs)["met"]
    assert not cost_outcomes.lean_path([{"path": "short", "writes": 3.0, "writes_target": 2}], pairs)["met"]


def test_the_cost_sections_outcomes_table_renders_each_kind_and_the_lean_path() -> None:
    figures = report_outcomes.cost({"outcomes": _measured()})
    assert figures is not None
    row = fill(parts("cost"), "outcomes_row", figures.pop("summary_row"))
    text = fill(parts("cost"), "outcomes", figures)
    assert "`./dev bench --only cost`" in text and "**The lean-path bar: met.**" in text
    kinds = [line for line in text.splitlines() if line.startswith(("| lambda", "| sqs", "| sns", "| eventbridge",
                                                                    "| stepfunctions", "| https"))]
    assert len(kinds) == len(per_kind()["kinds"])
    assert row.startswith("| outcome events per million") and "lean path" in row and ": met" in row


def _run(p50: float, p99: float, peak: float, outcomes: bool = False) -> dict:
    late = {"n": 300, "min": 5.0, "p50": p50, "p90": p50, "p99": p99, "max": peak, "mean": p50, "early": 0}
    return {"n": 300, "delivered": 300, "undelivered": 0, "by_path": {"short": late}, "all": late,
            "path_differs_from_plan": 0, "create_lag_s": {"p99": 0.01}, "create_retries_5xx": 0, "moto_errors": 0,
            "put_back": 0, "duplicates": 0,
            **({"outcomes": {"events": 300, "kinds": {"DELIVERED": 300},
                             "after_delivery_ms": {"n": 300, "p50": 9.0, "p99": 40.0}}} if outcomes else {})}


def _precision(on_p99: float) -> dict:
    pairs = [{"off": _run(20.0, 50.0, 60.0), "on": _run(21.0, on_p99, 70.0, outcomes=True)} for _ in range(3)]
    return {"precision": {"n": 300, "span_s": 20.0, "lead_s": [2.0, 22.0], "sweep_interval_s": 1.0, "mixed_window_s": 5,
                          "runs": [_run(20.0, 50.0, 60.0)], "mixed_runs": [], "outcome_kinds": ["DELIVERED", "CANCELLED"],
                          "outcome_pairs": pairs}}


def test_the_precision_section_shows_each_pair_and_judges_the_median_ratio() -> None:
    text = section_text("precision", _precision(on_p99=55.0))
    assert "### With outcome events and without" in text and "`./dev bench --only precision`" in text
    assert "| 1 | off, on | 20 / 50 / 60 | 21 / 55 / 70 | 1.05 / 1.10 / 1.17 |" in text
    assert "| 2 | on, off |" in text and "300 (DELIVERED 300)" in text
    assert "lateness unchanged with outcome events on** (the median of the pairs' p50 and p99 ratios at most 1.25" in text
    assert "with nothing changed, put their p99 at 50 – 50 ms" in text
    assert text.rstrip().endswith(": met.")
    assert "p99 ≤ 1.25, 0 early): **missed**" in summary_text("precision", _precision(on_p99=75.0))
