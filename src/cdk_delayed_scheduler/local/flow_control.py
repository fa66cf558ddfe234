"""A target's limits on the engine (the construct's ``targets.FlowControl``): the ``flowControl`` object of its
description, ``{"rate": n, "periodSeconds": s, "maxInFlight": m}``, checked as the runtime checks it and rendered
into the functions' ``TARGETS``; and the CLI's flags for the default target's limits."""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping

from .._contract import contract

FlowControl = Mapping[str, Any]
"""A target's limits as its description carries them: ``rate`` starts per ``periodSeconds`` (default 1) and at most
``maxInFlight`` deliveries under way at once, either limit or both (bounds in ``contract.json``'s ``flowControl``)."""
_FLAGS = {"rate": "--flow-control-rate", "periodSeconds": "--flow-control-period",
          "maxInFlight": "--flow-control-max-in-flight"}
"""Each limit's flag, for the default target."""


def check_flow_control(value: Any, where: str = "flow_control") -> None:
    """``ValueError`` starting with ``where`` unless ``value`` is ``None`` or limits the runtime accepts."""
    if value is None:
        return
    problem = contract.flow_control_problem(value)
    if problem is not None:
        raise ValueError(f"{where}: {problem}")


def with_flow_control(description: Mapping[str, Any], flow_control: FlowControl | None) -> dict[str, Any]:
    """``description`` with its ``flowControl`` field when the target has limits (as the construct renders it)."""
    limited = dict(description)
    if flow_control is not None:
        limited[contract.FLOW_CONTROL_FIELD] = dict(flow_control)
    return limited


def add_flow_control_flags(parser: argparse.ArgumentParser) -> None:
    """The default target's limits (the construct's ``target=...(flow_control=FlowControl(rate=, period=,
    max_in_flight=))``); a named target's are the ``flowControl`` of its description in ``--targets FILE``."""
    parser.add_argument(_FLAGS["rate"], type=_bounded("rate"), metavar="N",
                        help="the default target's rate: at most N deliveries start in any window of one period, "
                             "one period/N apart (the construct's FlowControl(rate=); " + _range("rate") + ")")
    parser.add_argument(_FLAGS["periodSeconds"], type=_bounded("periodSeconds"), metavar="SECONDS",
                        help="the window the rate counts starts in, only with --flow-control-rate (FlowControl(period=); "
                             + _range("periodSeconds") + "; default "
                             + str(contract.FLOW_CONTROL["periodSeconds"]["default"]) + ")")
    parser.add_argument(_FLAGS["maxInFlight"], type=_bounded("maxInFlight"), metavar="N",
                        help="the most deliveries to the default target under way at once (FlowControl(max_in_flight=); "
                             + _range("maxInFlight") + ")")


def flow_control_from_flags(args: argparse.Namespace) -> dict[str, int] | None:
    """The default target's limits the flags give, or None; ``ValueError`` naming the flag for a period without a
    rate."""
    given = {name: getattr(args, _attribute(flag)) for name, flag in _FLAGS.items()}
    limits = {name: value for name, value in given.items() if value is not None}
    if "periodSeconds" in limits and "rate" not in limits:
        raise ValueError(f"{_FLAGS['periodSeconds']} needs {_FLAGS['rate']} (it is the window the rate counts "
                         "starts in)")
    return limits or None


def _attribute(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


def _range(name: str) -> str:
    bounds = contract.FLOW_CONTROL[name]
    return f"{bounds['min']}-{bounds['max']}"


def _bounded(name: str) -> Callable[[str], int]:
    """An argument type: a whole number within the contract's ``flowControl.<name>``."""

    def parse(text: str) -> int:
        bounds = contract.FLOW_CONTROL[name]
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not bounds["min"] <= value <= bounds["max"]:
            raise argparse.ArgumentTypeError(f"must be a whole number, {_range(name)}, got {text!r}")
        return value

    return parse
