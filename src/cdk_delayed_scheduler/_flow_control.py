"""``targets.FlowControl``: how fast, and how many at once, deliveries to one target start; and the
``flowControl`` object a limited target's description carries for the runtime (its bounds are
``contract.json``'s ``flowControl``). Each wrong value raises ``ValueError`` naming the prop; unresolved tokens
are left to the runtime, which refuses a description out of bounds when it starts."""

from __future__ import annotations

from typing import Any, Mapping, Optional

from aws_cdk import Duration, Token

from ._contract import contract
from ._validation import check_duration, check_range, check_whole_seconds, describe, seconds, seconds_or_days

#: The prop every refusal here names.
PROP = "flow_control"


class FlowControl:
    """Limits on the deliveries to one target: at most ``rate`` starts in any window of one ``period``, and at
    most ``max_in_flight`` deliveries under way at once (from just before a start until the target answers).

    Starts under a rate are evenly spaced, one ``period / rate`` apart, with no burst: 100 a second start
    10 ms apart, even when a thousand schedules are due at the same instant. A delivery over a limit starts
    later, never early and never lost: it waits in its delayer message, its schedule stays ``QUEUED``, and a
    cancel (or a reschedule, or a group cancel) still wins while it waits. A place among ``max_in_flight`` held
    by a dispatcher that died is freed when the delayer queue hands its message out again (its visibility
    timeout, 6 times ``dispatcher_timeout``). The limits hold for one-shot schedules and periodic occurrences
    alike, retries included. When the target says slow down (an HTTPS 429 or 503, a throttling error of its
    service), the whole target is held back for its ``Retry-After`` (else a backoff from 1 second, doubling while
    it keeps saying so, up to a minute), and the attempt it answered is sent again without being spent; it still
    counts against the schedule's ``retry.maxAgeSeconds``. The ``outcomes`` target takes no limits.

    What it costs: each limited target has one item in the Schedules table, written conditionally by every
    start: one write per start for a rate, and two more for ``max_in_flight``
    (taking a place and giving it back). One item is one partition, about 1,000 writes a second, so the highest
    rate one target can have is about 1,000 starts a second with a rate alone and about 330 with
    ``max_in_flight`` too. The dispatcher writes that table already: no new permission. Targets without
    limits pay nothing. Example::

        timers.add_target("email", targets.HttpsEndpoint(url, signing_secret=secret,
            flow_control=targets.FlowControl(rate=100, period=Duration.seconds(1), max_in_flight=20)))
        timers.add_target("reports", targets.LambdaInvoke(report_fn, flow_control=targets.FlowControl(max_in_flight=5)))

    :param rate: the most deliveries that start in any window of one ``period``: a whole number, 1-100000.
        Default: no rate limit (then ``max_in_flight`` is needed).
    :param period: the window ``rate`` counts starts in: whole seconds, 1 second to 1 day, and only with a
        ``rate``. Default: 1 second.
    :param max_in_flight: the most deliveries under way at once: a whole number, 1-1000. Default: no limit on
        deliveries under way (then ``rate`` is needed).
    """

    def __init__(self, *, rate: Optional[int] = None, period: Optional[Duration] = None,
                 max_in_flight: Optional[int] = None) -> None:
        _check_whole(f"{PROP}.rate", rate, "rate")
        _check_period(period, rate)
        _check_whole(f"{PROP}.max_in_flight", max_in_flight, "maxInFlight")
        if rate is None and max_in_flight is None:
            raise ValueError(f"{PROP}: must set rate, max_in_flight or both, got neither")
        self.rate: Optional[int] = rate
        """The most starts in any window of one ``period``; ``None``: no rate limit."""
        self.period: Optional[Duration] = period
        """The window ``rate`` counts starts in, as given; ``None``: the default, 1 second (with a rate)."""
        self.max_in_flight: Optional[int] = max_in_flight
        """The most deliveries under way at once; ``None``: no such limit."""

    def settings(self) -> dict[str, Any]:
        """The ``flowControl`` object of the target's description: ``rate``, ``periodSeconds`` and
        ``maxInFlight``, each only when given (a token stays a token)."""
        given = {"rate": self.rate, "periodSeconds": None if self.period is None else seconds(self.period),
                 "maxInFlight": self.max_in_flight}
        return {name: value for name, value in given.items() if value is not None}

    def __repr__(self) -> str:
        shown = {"rate": self.rate, "period": None if self.period is None else f"{self.period.to_seconds()} s",
                 "max_in_flight": self.max_in_flight}
        return f"FlowControl({', '.join(f'{name}={value}' for name, value in shown.items() if value is not None)})"


def flow_control_of(value: Any) -> Optional[FlowControl]:
    """A target's ``flow_control`` argument, checked: a ``FlowControl`` or ``None``."""
    if value is None or isinstance(value, FlowControl):
        return value
    raise ValueError(f"{PROP}: must be a targets.FlowControl, e.g. targets.FlowControl(rate=100, max_in_flight=20), "
                     f"got {describe(value)}")


def with_flow_control(description: Mapping[str, Any], flow_control: Optional[FlowControl]) -> dict[str, Any]:
    """``description`` (what ``describe_target`` renders) with ``flow_control``'s ``flowControl`` field; the same
    fields without it when ``flow_control`` is ``None``."""
    limited = dict(description)
    if flow_control is not None:
        limited[contract.FLOW_CONTROL_FIELD] = flow_control.settings()
    return limited


def _check_whole(prop: str, value: Any, bound: str) -> None:
    """A whole number within the contract's ``flowControl.<bound>`` (``None`` and tokens are not judged here)."""
    if value is None or (isinstance(value, (int, float)) and Token.is_unresolved(value)):
        return
    low, high = contract.FLOW_CONTROL[bound]["min"], contract.FLOW_CONTROL[bound]["max"]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{prop}: must be a whole number between {low} and {high}, got {describe(value)}")
    check_range(prop, value, low, high)


def _check_period(period: Any, rate: Any) -> None:
    """Whole seconds within the contract's ``flowControl.periodSeconds``, and only with a rate."""
    prop = f"{PROP}.period"
    if period is None:
        return
    check_duration(prop, period)
    if rate is None:
        raise ValueError(f"{prop}: only with a rate (it is the window the rate counts starts in); "
                         "max_in_flight alone takes no period")
    check_whole_seconds(prop, period)
    bounds = contract.FLOW_CONTROL["periodSeconds"]
    check_range(prop, seconds(period), bounds["min"], bounds["max"], show=seconds_or_days)
