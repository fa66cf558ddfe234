"""The checks prop validation is made of: a wrong value raises ``ValueError`` naming the prop and
what is allowed; ``None`` and unresolved tokens are left alone (CloudFormation judges those). The
construct's props are checked by the rules of ``_props``; ``SchedulerApi``'s factories use these too."""

from __future__ import annotations

import re
from typing import Any, Callable, Optional

from aws_cdk import Duration, Token
from aws_cdk import aws_lambda as lambda_

from ._log_level import LogLevel

#: The oldest Python the runtime is tested on; a ``runtime`` prop must be this or later.
OLDEST_PYTHON = (3, 11)
#: The dispatcher's own part of a delivery (the wait for the due time, the delivery start's write),
#: which ``dispatcher_timeout`` must leave beside a Lambda target's timeout.
DISPATCH_MARGIN_SECONDS = 5


def describe(value: Any) -> str:
    """A wrong value as an error message shows it: a literal as written, anything else by its type."""
    return repr(value) if isinstance(value, (str, int, float, bool)) else f"a {type(value).__name__}"


def check_range(prop: str, value: Any, low: float, high: Optional[float], unit: str = "",
                show: Optional[Callable[[float], str]] = None) -> None:
    """Raise ``ValueError`` naming ``prop`` and its range (``high=None``: no upper bound); skip ``None``
    and unresolved tokens. ``show`` writes a bound or the value with its unit (default: the number,
    then ``unit`` after the range)."""
    if value is None or (isinstance(value, (int, float, str)) and Token.is_unresolved(value)):
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{prop}: must be a number, got {describe(value)}")
    suffix = f" {unit}" if unit and show is None else ""
    shown: Callable[[float], str] = show or str
    if high is None:
        if value < low:
            raise ValueError(f"{prop}: must be >= {shown(low)}{suffix}, got {shown(value)}")
    elif not low <= value <= high:
        raise ValueError(f"{prop}: must be between {shown(low)} and {shown(high)}{suffix}, got {shown(value)}")


def check_whole_seconds(prop: str, duration: Optional[Duration]) -> None:
    if duration is None:
        return
    seconds = duration.to_seconds(integral=False)
    if not Token.is_unresolved(seconds) and float(seconds) != int(seconds):
        raise ValueError(f"{prop}: must be whole seconds, got {seconds} seconds")


def seconds(duration: Duration) -> Any:
    """Whole seconds of ``duration``, or the unresolved token."""
    return duration.to_seconds()


def seconds_or_days(value: float) -> str:
    """A number of seconds as a reader counts them: ``"3650 days"``, ``"1 day"``, ``"59 seconds"``, ``"1 second"``."""
    days, rest = divmod(value, 86400)
    if days and not rest:
        return f"{int(days)} day{'s' if days != 1 else ''}"
    return f"{int(value) if float(value).is_integer() else value} second{'' if value == 1 else 's'}"


def check_type(prop: str, value: Any, expected: type, example: str) -> None:
    """Raise ``ValueError`` unless ``value`` is ``None`` or an ``expected``, naming an example."""
    if value is not None and not isinstance(value, expected):
        raise ValueError(f"{prop}: must be {example}, got {describe(value)}")


def check_duration(prop: str, value: Any) -> None:
    example = f"Duration.seconds({value})" if isinstance(value, (int, float)) else "Duration.seconds(60)"
    check_type(prop, value, Duration, f"a Duration, e.g. {example}")


def check_log_level(log_level: Any) -> None:
    if isinstance(log_level, str):
        raise ValueError(f"log_level: must be a LogLevel, e.g. LogLevel.INFO, or LogLevel.of(text) for text "
                         f"or a token; got {log_level!r}")
    check_type("log_level", log_level, LogLevel, "a LogLevel, e.g. LogLevel.INFO")


def check_runtime(runtime: Any) -> None:
    """A Python Lambda runtime, ``OLDEST_PYTHON`` or later (an unknown newer name is allowed)."""
    oldest = ".".join(map(str, OLDEST_PYTHON))
    check_type("runtime", runtime, lambda_.Runtime, f"a Lambda runtime, e.g. Runtime.PYTHON_{oldest.replace('.', '_')}")
    match = re.fullmatch(r"python(\d+)\.(\d+)", runtime.name)
    if runtime.family != lambda_.RuntimeFamily.PYTHON or not match or (int(match[1]), int(match[2])) < OLDEST_PYTHON:
        raise ValueError(f"runtime: must be a Python {oldest} or later Lambda runtime (the scheduler's runtime is "
                         f"Python), got {runtime.name}")


def check_non_empty(prop: str, value: Any) -> None:
    if not Token.is_unresolved(value) and not value:
        raise ValueError(f"{prop}: must be a non-empty string")


def text(value: Any) -> str:
    """An environment variable's text: a whole number as ``"16"``, a token as a token string."""
    if Token.is_unresolved(value):
        return Token.as_string(value)
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def check_dispatcher_covers(name: str, target_timeout: Optional[Duration], dispatcher_timeout: Duration,
                            what: str = "a Lambda function") -> None:
    """A target's run the dispatcher waits for (``what``: a Lambda function's, an HTTPS endpoint's answer)
    must fit in the dispatcher's, or its deliveries would time out and repeat."""
    if target_timeout is None or Token.is_unresolved(target_timeout.to_seconds()):
        return
    run = int(target_timeout.to_seconds())
    needed, have = run + DISPATCH_MARGIN_SECONDS, int(dispatcher_timeout.to_seconds())
    if have < needed:
        raise ValueError(
            f"dispatcher_timeout: must be at least {needed} seconds to cover target {name!r}, {what} "
            f"with a {run}-second timeout (the dispatcher waits for it, plus {DISPATCH_MARGIN_SECONDS} seconds of "
            f"its own), got {have} seconds")
