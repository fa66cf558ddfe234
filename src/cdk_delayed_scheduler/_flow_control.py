"""``targets.FlowControl``: how fast, and how many at once, deliveries to one target (and to each of its groups)
start; and the ``flowControl`` object a limited target's description carries for the runtime (its bounds are
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
    later, never early and never lost: it waits in its message in the scheduler's flow queue (``flow_queue``,
    where every message of a delivery to a limited target goes instead of the delayer queue, so that a limited
    target's backlog waits apart from the other targets' timers), its schedule stays ``QUEUED``, and a cancel
    (or a reschedule, or a group cancel) still wins while it waits. A place among ``max_in_flight`` held by a
    dispatcher that died is freed when the flow queue hands its message out again (its visibility timeout, 6
    times ``dispatcher_timeout``, as the delayer queue's). The limits hold for one-shot schedules and periodic
    occurrences alike, retries included. When the target says slow down (an HTTPS 429 or 503, a throttling error of its
    service), the whole target is held back for its ``Retry-After`` (else a backoff from 1 second, doubling while
    it keeps saying so, up to a minute), and the attempt it answered is sent again without being spent; it still
    counts against the schedule's ``retry.maxAgeSeconds``. The ``outcomes`` target takes no limits.

    With ``per_group``, each group (a schedule's or periodic timer's ``group``: a tenant, a user) has its own limits
    within the target's: a delivery whose schedule has a group starts only when both its group's limits and the
    target's have room, and one without a group is held to the target's alone. Each group is limited on its own (its
    share is not taken from a fixed pool), so one group's million due deliveries never starve another's ten.

    What it costs: each limited target has one item in the Schedules table, written conditionally by every
    start: one write per start for a rate (two when the target just went from idle to queued or back), and two
    more for ``max_in_flight`` (taking a place and giving it back). One item is one partition, about 1,000 writes
    a second, so a target faster than 250 starts a second spreads its limits over several items, one per 250 a
    second, each with a share of the rate and the places (never more items than ``max_in_flight``); a place is
    held from a lead before its start (20 ms on DynamoDB's latencies) until the target answers. With
    ``per_group``, a grouped delivery writes its group's item too, up to four writes more per start (its group's
    slot and the check of its group's rate at the target slot; its group's place taken and given back); a group's
    item is one partition of its own. The dispatcher writes that table already. The first limited target adds
    the flow queue (``FlowQueue``, made like the delayer queue) and the dispatcher's event source mapping on it,
    whose pollers' receives are SQS requests as the delayer queue's are, and lets the functions that send to the
    delayer queue send to it. Targets without limits pay nothing, and a scheduler without a limited target has
    no flow queue. Example::

        timers.add_target("email", targets.HttpsEndpoint(url, signing_secret=secret,
            flow_control=targets.FlowControl(rate=100, period=Duration.seconds(1), max_in_flight=20)))
        timers.add_target("reports", targets.LambdaInvoke(report_fn, flow_control=targets.FlowControl(max_in_flight=5)))
        timers.add_target("tenants", targets.SqsSendMessage(queue, flow_control=targets.FlowControl(
            rate=100, max_in_flight=20, per_group=targets.FlowControl(rate=5, max_in_flight=2))))

    :param rate: the most deliveries that start in any window of one ``period``: a whole number, 1-100000.
        Default: no rate limit (then ``max_in_flight`` or ``per_group`` is needed).
    :param period: the window ``rate`` counts starts in: whole seconds, 1 second to 1 day, and only with a
        ``rate``. Default: 1 second.
    :param max_in_flight: the most deliveries under way at once: a whole number, 1-1000. Default: no limit on
        deliveries under way (then ``rate`` or ``per_group`` is needed).
    :param per_group: each group's own limits, a ``FlowControl`` with ``rate``, ``period`` and ``max_in_flight``
        (no ``per_group`` of its own), within this one's: its rate per second (``rate / period``) at most this
        one's, its ``max_in_flight`` at most this one's, where both have one. A target may limit only its groups.
        Default: no per-group limits.
    """

    def __init__(self, *, rate: Optional[int] = None, period: Optional[Duration] = None,
                 max_in_flight: Optional[int] = None, per_group: Optional["FlowControl"] = None) -> None:
        _check_whole(f"{PROP}.rate", rate, "rate")
        _check_period(period, rate)
        _check_whole(f"{PROP}.max_in_flight", max_in_flight, "maxInFlight")
        if rate is None and max_in_flight is None and per_group is None:
            raise ValueError(f"{PROP}: must set rate, max_in_flight or per_group (one or more), got none")
        self.rate: Optional[int] = rate
        """The most starts in any window of one ``period``; ``None``: no rate limit."""
        self.period: Optional[Duration] = period
        """The window ``rate`` counts starts in, as given; ``None``: the default, 1 second (with a rate)."""
        self.max_in_flight: Optional[int] = max_in_flight
        """The most deliveries under way at once; ``None``: no such limit."""
        self.per_group: Optional[FlowControl] = _checked_per_group(per_group, self)
        """Each group's own limits, within these; ``None``: no per-group limits."""

    def settings(self) -> dict[str, Any]:
        """The ``flowControl`` object of the target's description: ``rate``, ``periodSeconds``, ``maxInFlight``
        and ``perGroup`` (the same object for each group), each only when given (a token stays a token)."""
        given = {"rate": self.rate, "periodSeconds": self._period_seconds(), "maxInFlight": self.max_in_flight,
                 contract.PER_GROUP_FIELD: None if self.per_group is None else self.per_group.settings()}
        return {name: value for name, value in given.items() if value is not None}

    def __repr__(self) -> str:
        shown = {"rate": self.rate, "period": None if self.period is None else f"{self.period.to_seconds()} s",
                 "max_in_flight": self.max_in_flight, "per_group": self.per_group}
        return f"FlowControl({', '.join(f'{name}={value}' for name, value in shown.items() if value is not None)})"

    def _period_seconds(self) -> Any:
        """``period`` in whole seconds (a token stays a token); ``None`` when not given."""
        return None if self.period is None else seconds(self.period)

    def _window(self) -> Any:
        """The seconds ``rate`` counts starts in: ``period``, else the runtime's default."""
        given = self._period_seconds()
        return contract.FLOW_CONTROL["periodSeconds"]["default"] if given is None else given


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


def judged_limits(limits: Mapping[str, Any]) -> dict[str, Any]:
    """A description's ``flowControl`` as it is judged at synth: each limit that is an unresolved token (a parameter's
    value) stands in as the value no rule refuses, so that only its name is judged (the functions check its value when
    they start): a target's own at its loosest (the highest rate and places, the shortest period) and a group's at its
    tightest, so that a group's concrete limit is never refused against its target's token, nor the reverse."""
    judged = _stand_ins(limits, loosest=True)
    group = limits.get(contract.PER_GROUP_FIELD)
    if isinstance(group, Mapping):
        judged[contract.PER_GROUP_FIELD] = _stand_ins(group, loosest=False)
    return judged


def _stand_ins(limits: Mapping[str, Any], *, loosest: bool) -> dict[str, Any]:
    """``limits`` with each token of a bounded limit as its loosest or tightest allowed value."""
    def stand_in(name: str, value: Any) -> Any:
        if name not in _STAND_INS or not isinstance(value, (int, float)) or not Token.is_unresolved(value):
            return value
        return contract.FLOW_CONTROL[name][_STAND_INS[name][0 if loosest else 1]]

    return {name: stand_in(name, value) for name, value in limits.items()}


#: Each limit's loosest bound and its tightest: the most starts and places over the shortest period, and the reverse.
_STAND_INS = {"rate": ("max", "min"), "periodSeconds": ("min", "max"), "maxInFlight": ("max", "min")}


def _checked_per_group(per_group: Any, target: FlowControl) -> Optional[FlowControl]:
    """``per_group``, a ``FlowControl`` without a ``per_group`` of its own whose limits are within ``target``'s
    (``contract.flow_control_problem``'s rule; a token on either side is not judged here)."""
    prop = f"{PROP}.per_group"
    if per_group is None:
        return None
    if not isinstance(per_group, FlowControl):
        raise ValueError(f"{prop}: must be a targets.FlowControl, e.g. targets.FlowControl(rate=5, max_in_flight=2), "
                         f"got {describe(per_group)}")
    if per_group.per_group is not None:
        raise ValueError(f"{prop}: takes no per_group of its own (a group's limits are not divided further)")
    rate, period, group_rate, group_period = target.rate, target._window(), per_group.rate, per_group._window()
    if (rate is not None and group_rate is not None and _resolved(rate, period, group_rate, group_period)
            and group_rate * period > rate * group_period):
        raise ValueError(f"{prop}.rate: must be at most the target's rate per second: {group_rate} per "
                         f"{seconds_or_days(group_period)} is more than {rate} per {seconds_or_days(period)}")
    places, group_places = target.max_in_flight, per_group.max_in_flight
    if places is not None and group_places is not None and _resolved(places, group_places) and group_places > places:
        raise ValueError(f"{prop}.max_in_flight: must be at most the target's max_in_flight, {places}, "
                         f"got {group_places}")
    return per_group


def _resolved(*values: Any) -> bool:
    """Whether no value is an unresolved token (a parameter's value, judged by the functions when they start)."""
    return not any(Token.is_unresolved(value) for value in values)


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
