"""The engine's outcomes target: made as a named target is, under a name of its own that no schedule can pick, and
described in the functions' ``OUTCOMES`` as the construct renders ``outcomes=Outcomes(target, kinds=...,
include_payload=...)``."""

from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from .._contract import contract
from .deliveries import LocalTarget, ResourceTarget, handler_target, url_target
from .engine_options import EngineOptions
from .named_targets import LOCAL_TARGET_FUNCTION, MadeTarget, make_target

OUTCOMES_FUNCTION = f"{LOCAL_TARGET_FUNCTION}-outcomes"
"""The outcomes target's function on the engine's Lambda endpoint, when it is a callable or a ``LambdaTarget``
(a named target's is ``local-target-<n>``)."""


def make_outcome_target(session: Any, options: EngineOptions, functions: dict[str, Callable[[Any], Any]],
                        local_target: Callable[[LocalTarget], LocalTarget]) -> MadeTarget | None:
    """Make ``options.outcomes`` (``<name_prefix>-outcomes`` in moto, or :data:`OUTCOMES_FUNCTION`); None without."""
    if options.outcomes is None:
        return None
    return make_target(session, f"{options.name_prefix}-outcomes", OUTCOMES_FUNCTION, options.outcomes, functions,
                       local_target)


def outcomes_setting(options: EngineOptions, made: MadeTarget) -> str:
    """The functions' ``OUTCOMES``: the target's description, the kinds when chosen, and ``includePayload``."""
    setting: dict[str, Any] = {"target": made.description}
    if options.outcome_kinds is not None:
        setting["kinds"] = list(options.outcome_kinds)
    if options.outcomes_include_payload:
        setting["includePayload"] = True
    return json.dumps(setting)


def add_outcome_flags(parser: argparse.ArgumentParser) -> None:
    """Where each occurrence's outcome event goes when it ends (the construct's ``outcomes=Outcomes(target, kinds=...,
    include_payload=...)``), and which kinds."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--outcomes-url", metavar="URL",
                       help="POST each outcome event as JSON to this URL (the construct's outcomes)")
    where.add_argument("--outcomes-handler", metavar="MODULE:FUNCTION",
                       help="call this Lambda-style handler in-process with each outcome event")
    where.add_argument("--outcomes", metavar="NAME",
                       help="send the outcome events to the target NAME of --targets FILE, which is then the "
                            "outcomes target only, not a target a schedule can pick")
    parser.add_argument("--outcome-kinds", type=_outcome_kinds, metavar="KINDS",
                        help=f"the outcome kinds sent, comma-separated, of {','.join(contract.OUTCOME_KINDS)} "
                             f"(default {','.join(contract.DEFAULT_OUTCOME_KINDS)})")
    parser.add_argument("--outcomes-include-payload", action="store_true",
                        help="each outcome event carries the schedule's payload")


def outcomes_from_flags(args: argparse.Namespace, named: dict[str, ResourceTarget]) -> LocalTarget | ResourceTarget | None:
    """The outcomes target the flags name (taken out of ``named`` for ``--outcomes NAME``), or None; ``ValueError``
    naming the flag."""
    if args.outcomes_url:
        return url_target(args.outcomes_url, where="--outcomes-url")
    if args.outcomes_handler:
        return handler_target(args.outcomes_handler, where="--outcomes-handler")
    if args.outcomes:
        if not args.targets:
            raise ValueError(f"--outcomes {args.outcomes!r} names a target of --targets FILE: give that file too")
        if args.outcomes not in named:
            raise ValueError(f"--outcomes {args.outcomes!r} is not a target of --targets FILE "
                             f"(it has {', '.join(named) or 'none'})")
        return named.pop(args.outcomes)
    if args.outcome_kinds or args.outcomes_include_payload:
        raise ValueError("--outcome-kinds and --outcomes-include-payload need an outcomes target: "
                         "--outcomes-url, --outcomes-handler or --outcomes NAME")
    return None


def _outcome_kinds(text: str) -> tuple[str, ...]:
    """An argument type: outcome kinds, comma-separated."""
    kinds = tuple(kind.strip().upper() for kind in text.split(","))
    if not all(kind in contract.OUTCOME_KINDS for kind in kinds) or len(set(kinds)) < len(kinds):
        raise argparse.ArgumentTypeError(f"must be one or more of {','.join(contract.OUTCOME_KINDS)}, each once, "
                                         f"comma-separated, got {text!r}")
    return kinds
