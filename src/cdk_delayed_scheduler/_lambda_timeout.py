"""A Lambda target's timeout, as the dispatcher's check reads it: a defined function's own, Lambda's
limits, and the synth warning on a function whose timeout is not known."""

from __future__ import annotations

from typing import Any, Optional

from aws_cdk import Duration, Token
from aws_cdk import aws_lambda as lambda_

from ._validation import DISPATCH_MARGIN_SECONDS, check_duration, check_range, check_whole_seconds, seconds


# Lambda's own default, for a function defined without a timeout (``Function.timeout`` is then None).
_LAMBDA_DEFAULT_TIMEOUT = Duration.seconds(3)
#: Lambda's longest function timeout, the most ``LambdaInvoke(timeout=)`` takes.
LAMBDA_MAX_TIMEOUT_SECONDS = 900
#: The id of the synth warning on a scheduler with a Lambda target whose timeout is not known (an
#: imported function without ``LambdaInvoke(timeout=)``); ``Annotations.of(scheduler).acknowledge_warning``
#: takes it.
LAMBDA_TIMEOUT_UNKNOWN_WARNING = "cdk-delayed-scheduler:lambdaTargetTimeoutUnknown"


def own_timeout(handler: Any) -> Optional[Duration]:
    """The timeout of a function defined in this app, or of the function behind its alias or
    version; ``None`` for an imported one, whose timeout is not known here."""
    if isinstance(handler, lambda_.Alias):
        handler = handler.version
    if isinstance(handler, lambda_.Version):
        handler = handler.lambda_
    if isinstance(handler, lambda_.Function):
        return handler.timeout or _LAMBDA_DEFAULT_TIMEOUT
    return None


def waited_timeout(handler: Any, timeout: Optional[Duration], waited: bool) -> Optional[Duration]:
    """``LambdaInvoke``'s ``timeout`` checked (1-900 whole seconds, only for a function invoked
    synchronously whose own timeout is not known), else the function's own when it is waited for."""
    if timeout is not None and not waited:
        raise ValueError("timeout: only for a function invoked synchronously (invocation_type "
                         "REQUEST_RESPONSE); the dispatcher does not wait for an EVENT invoke's run")
    own = own_timeout(handler) if waited else None
    if timeout is None:
        return own
    check_duration("timeout", timeout)
    check_whole_seconds("timeout", timeout)
    check_range("timeout", seconds(timeout), 1, LAMBDA_MAX_TIMEOUT_SECONDS, unit="seconds")
    if own is not None:
        raise ValueError("timeout: only for a function whose timeout the construct cannot read (an imported "
                         "one); this function is defined in this app, and its own timeout is used")
    return timeout


def unknown_timeout_warning(name: str, dispatcher_timeout: Duration) -> str:
    """The warning on target ``name``, a Lambda function whose timeout is not known: what is assumed,
    and how to state it."""
    have = seconds(dispatcher_timeout)
    budget = f"{int(have) - DISPATCH_MARGIN_SECONDS} seconds" if not Token.is_unresolved(have) else "its run"
    return (f"target {name!r}: the Lambda function's timeout is not known here (an imported function), so it is "
            f"assumed to end within {budget} (dispatcher_timeout less {DISPATCH_MARGIN_SECONDS} seconds); a longer "
            "run times out the dispatcher and the delivery is repeated. State it with "
            "targets.LambdaInvoke(fn, timeout=Duration.seconds(n)) to have it checked and this warning go.")
