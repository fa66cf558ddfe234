"""The engine's options and flags for the dispatcher's mapping and the precision carry the construct's prop
names and refuse what the construct refuses."""

from __future__ import annotations

import pytest

from cdk_delayed_scheduler.local.cli import build_parser
from cdk_delayed_scheduler.local.engine_options import EngineOptions


def test_the_flags_carry_the_prop_names_and_reach_the_options():
    args = build_parser().parse_args(["local", "--dispatcher-batch-size", "100", "--dispatcher-max-batching-window",
                                      "1", "--precision", "second"])
    assert (args.dispatcher_batch_size, args.dispatcher_max_batching_window, args.precision) == (100, 1, "SECOND")
    options = EngineOptions(dispatcher_batch_size=args.dispatcher_batch_size,
                            dispatcher_max_batching_window=args.dispatcher_max_batching_window, precision=args.precision)
    assert (options.dispatcher_batch_size, options.dispatcher_max_batching_window, options.precision) == (100, 1, "SECOND")


def test_the_defaults_are_the_constructs():
    options = EngineOptions()
    assert (options.dispatcher_batch_size, options.dispatcher_max_batching_window, options.precision) == (
        10, 0, "SUB_SECOND")


@pytest.mark.parametrize("given, message", [
    ({"dispatcher_batch_size": 11}, r"dispatcher_batch_size above 10 needs a dispatcher_max_batching_window"),
    ({"dispatcher_batch_size": 10_001, "dispatcher_max_batching_window": 1}, r"dispatcher_batch_size must be 1-10000"),
    ({"dispatcher_max_batching_window": 301}, r"dispatcher_max_batching_window must be 0-300 seconds"),
    ({"precision": "MILLISECOND"}, r"precision must be one of SUB_SECOND, SECOND"),
])
def test_what_the_construct_refuses_the_engine_refuses(given, message):
    with pytest.raises(ValueError, match=message):
        EngineOptions(**given)
