"""Pieces of the local engine's stand-ins that need no AWS."""

import threading

from cdk_delayed_scheduler.local.pollers import FunctionSpec, LambdaContext


def test_context_counts_down_and_reports_no_time_once_the_engine_stops():
    stopping = threading.Event()
    context = LambdaContext("sweeper", 60, stopping)
    assert 59_000 < context.get_remaining_time_in_millis() <= 60_000
    stopping.set()
    assert context.get_remaining_time_in_millis() == 0


def test_function_spec_hands_its_limits_to_the_handler():
    stopping = threading.Event()
    seen = []
    spec = FunctionSpec("f", lambda event, context: seen.append((event, context.function_name, context.get_remaining_time_in_millis())), 5, stopping)
    spec.invoke({"a": 1})
    stopping.set()
    spec.invoke({"a": 2})
    assert seen[0][:2] == ({"a": 1}, "f") and 4_000 < seen[0][2] <= 5_000
    assert seen[1][2] == 0
