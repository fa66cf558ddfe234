"""A target's limits on the engine (the construct's ``targets.FlowControl``): the ``flowControl`` object of its
description, ``{"rate": n, "periodSeconds": s, "maxInFlight": m, "perGroup": {...}}``, checked as the runtime checks
it and rendered into the functions' ``TARGETS``; and the CLI's flags for the default target's limits and its groups'."""

from __future__ import annotations

import argparse
from typing import Any, Callable, Mapping

from .._contract import contract

FlowControl = Mapping[str, Any]
"""A target's limits as its description carries them: ``rate`` starts per ``periodSeconds`` (default 1) and at most
``maxInFlight`` deliveries under way at once, and ``perGroup``, each group's own limits (the same fields, within the
target's); one or more of them (bounds in ``contract.json``'s ``flowControl``)."""
_FLAGS = {"rate": "--flow-control-rate", "periodSeconds": "--flow-control-period",
          "maxInFlight": "--flow-control-max-in-flight"}
"""Each limit's flag, for the default target."""
_GROUP_FLAGS = {name: flag.replace("--flow-control-", "--flow-control-per-group-") for name, flag in _FLAGS.items()}
"""Each limit's flag for each group of the default target (``--flow-control-per-group-rate``...)."""


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
    max_in_flight=, per_group=FlowControl(...)))``); a named target's are the ``flowControl`` of its description in
    ``--targets FILE``."""
    _add_limit_flags(parser, _FLAGS, "the default target", "FlowControl({}=)")
    _add_limit_flags(parser, _GROUP_FLAGS, "each group of the default target (a schedule's group)",
                     "FlowControl(per_group=FlowControl({}=))")


def flow_control_from_flags(args: argparse.Namespace) -> dict[str, Any] | None:
    """The default target's limits the flags give, with its groups' as ``perGroup``, or None; ``ValueError`` naming
    the flag for a period without a rate (the rest is checked as the runtime checks it, by ``EngineOptions``)."""
    limits: dict[str, Any] = _limits_from_flags(args, _FLAGS)
    group = _limits_from_flags(args, _GROUP_FLAGS)
    if group:
        limits[contract.PER_GROUP_FIELD] = group
    return limits or None


def _add_limit_flags(parser: argparse.ArgumentParser, flags: Mapping[str, str], whose: str, prop: str) -> None:
    """The flags of one set of limits: ``whose`` they are, and the construct's argument each mirrors (``prop``, with
    ``{}`` for the argument's name)."""
    parser.add_argument(flags["rate"], type=_bounded("rate"), metavar="N",
                        help=f"the rate of {whose}: at most N deliveries start in any window of one period, "
                             f"one period/N apart (the construct's {prop.format('rate')}; {_range('rate')})")
    parser.add_argument(flags["periodSeconds"], type=_bounded("periodSeconds"), metavar="SECONDS",
                        help=f"the window {flags['rate']} counts starts in, only with it ({prop.format('period')}; "
                             f"{_range('periodSeconds')}; default {contract.FLOW_CONTROL['periodSeconds']['default']})")
    parser.add_argument(flags["maxInFlight"], type=_bounded("maxInFlight"), metavar="N",
                        help=f"the most deliveries to {whose} under way at once ({prop.format('max_in_flight')}; "
                             f"{_range('maxInFlight')})")


def _limits_from_flags(args: argparse.Namespace, flags: Mapping[str, str]) -> dict[str, int]:
    """The limits ``flags`` give; ``ValueError`` naming the flag for a period without a rate."""
    given = {name: getattr(args, _attribute(flag)) for name, flag in flags.items()}
    limits = {name: value for name, value in given.items() if value is not None}
    if "periodSeconds" in limits and "rate" not in limits:
        raise ValueError(f"{flags['periodSeconds']} needs {flags['rate']} (it is the window the rate counts "
                         "starts in)")
    return limits


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
