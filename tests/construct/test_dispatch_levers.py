"""The dispatcher's mapping batches and gathers as its props say, and every function reads the same
batching window and precision from its environment (the runtime sends messages early by that window)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from cdk_delayed_scheduler import DelayedScheduler, DeliveryPrecision, targets
from cdk_delayed_scheduler._contract import contract
from construct_stacks import ENV, FUNCTION_IDS, Built, callback, environment

NAMES = contract.ENV


def _built(**props) -> Built:
    stack = cdk.Stack(cdk.App(), "Levers", env=ENV)
    return Built(stack, DelayedScheduler(stack, "Timers", target=targets.LambdaInvoke(callback(stack)), **props))


def _queue_mapping(b: Built) -> dict:
    """The delayer queue's mapping (the stream's has a starting position)."""
    mappings = b.template.find_resources("AWS::Lambda::EventSourceMapping").values()
    return next(m["Properties"] for m in mappings if "StartingPosition" not in m["Properties"])


def test_a_batching_window_and_a_large_batch_reach_the_mapping_and_every_functions_environment():
    b = _built(dispatcher_batch_size=500, dispatcher_max_batching_window=cdk.Duration.seconds(1))
    b.template.has_resource_properties("AWS::Lambda::EventSourceMapping", {
        "BatchSize": 500, "MaximumBatchingWindowInSeconds": 1,
        "FunctionResponseTypes": ["ReportBatchItemFailures"]})
    for fid in FUNCTION_IDS:
        env = environment(b, fid)
        assert (env[NAMES.dispatcher_max_batching_window_seconds], env[NAMES.precision]) == ("1", "SUB_SECOND")


def test_without_a_window_the_functions_send_with_no_lead_and_wait_out_the_sub_second_rest():
    b = _built()
    env = environment(b, "DispatcherFunction")
    assert (env[NAMES.dispatcher_max_batching_window_seconds], env[NAMES.precision]) == ("0", contract.DEFAULT_PRECISION)
    mapping = _queue_mapping(b)
    assert mapping["BatchSize"] == 10 and "MaximumBatchingWindowInSeconds" not in mapping


def test_second_precision_reaches_every_function_as_its_name():
    b = _built(precision=DeliveryPrecision.SECOND)
    assert {environment(b, fid)[NAMES.precision] for fid in FUNCTION_IDS} == {"SECOND"}


def test_a_precision_read_from_text_is_the_same_choice_and_bad_text_names_the_prop():
    assert DeliveryPrecision.of("second") == DeliveryPrecision.SECOND
    with pytest.raises(ValueError, match=r"^precision: must be one of SUB_SECOND, SECOND, got 'MILLISECOND'$"):
        DeliveryPrecision.of("MILLISECOND")


def test_a_timeout_that_covers_the_window_plus_ten_seconds_is_accepted():
    b = _built(dispatcher_max_batching_window=cdk.Duration.seconds(20), dispatcher_timeout=cdk.Duration.seconds(30))
    b.template.has_resource_properties("AWS::Lambda::EventSourceMapping", {"MaximumBatchingWindowInSeconds": 20})
