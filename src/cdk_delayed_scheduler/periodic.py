"""Periodic timers declared in the stack: ``PeriodicTimer``, and ``DelayedScheduler.add_periodic``.

At deploy, a custom resource puts the definition through the api function, by the same route as
``PUT /periodic/{id}`` (so the same validation runs): CDK's provider framework (``custom_resources.Provider``)
invokes the api function with CloudFormation's event. An update puts the new definition (it replaces
the old from its next occurrence), removing the timer from the stack deletes it (``DELETE
/periodic/{id}``), and a change of its id creates the new one and deletes the old. A definition the
API refuses fails the deploy with the API's message, naming the field and the rule.

What can be judged without tokens is judged at synth: the id, exactly one of ``cron`` and ``every``,
the cron expression (by the runtime's own parser), the time zone, the bounds, the target's name, the
group, a retry limit beyond the scheduler's ``max_receive_count``, the lateness bound, and a timer that
would never fire (a cron that matches no date or only past ones, an end already past, or none of the
cron's occurrences between the start and the end; the synth's time stands for the deploy's)::

    timers.add_periodic("nightly-report", cron="0 2 * * ? *", time_zone="Europe/Paris",
                        payload={"report": "daily"})
"""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING, Any, Mapping, Optional, cast

import jsii

from aws_cdk import CustomResource, Duration, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct, IValidation

from . import _nag
from ._contract import contract, load_core_module
from ._validation import check_duration, check_range, check_whole_seconds, describe, seconds, seconds_or_days

if TYPE_CHECKING:
    from scheduler_runtime.core import cron
else:
    cron = load_core_module("cron")

__all__ = ["PeriodicTimer", "SchedulerPeriodic", "RESOURCE_TYPE"]

RESOURCE_TYPE = "Custom::DelayedSchedulerPeriodic"
"""The CloudFormation type of each periodic timer declared in a stack."""
PROVIDER_ID = "PeriodicTimersProvider"
"""The construct id of the scheduler's provider (made with its first periodic timer); its role is
``PeriodicTimersProviderRole`` and its log group ``PeriodicTimersProviderLogs``."""


class SchedulerPeriodic:
    """``add_periodic``, and the provider its periodic timers share; the class that mixes this in is the
    ``DelayedScheduler``, with its api function, its target names and its logs' retention and removal policy."""

    api_function: lambda_.Function
    _log_options: Mapping[str, Any]
    _targets: Mapping[str, Any]
    _max_receive_count: Any  # the scheduler's max_receive_count prop: an int, or a token

    def add_periodic(self, timer_id: str, *, payload: Any, cron: Optional[str] = None, every: Optional[Duration] = None,
                     time_zone: Optional[str] = None, start_at: Optional[dt.datetime] = None,
                     end_at: Optional[dt.datetime] = None, target: Optional[str] = None,
                     retry_max_attempts: Optional[int] = None, retry_max_age: Optional[Duration] = None,
                     max_lateness: Optional[Duration] = None, group: Optional[str] = None) -> "PeriodicTimer":
        """Declare a periodic timer in this stack (``PeriodicTimer``, with the construct id
        ``Periodic-<timer_id>``); the parameters are ``PeriodicTimer``'s.

        Example::

            timers.add_periodic("nightly-report", cron="0 2 * * ? *", time_zone="Europe/Paris",
                                payload={"report": "daily"})
            timers.add_periodic("heartbeat", every=Duration.minutes(5), payload={}, target="billing")
            timers.add_periodic("tenant-7-digest", cron="0 8 * * ? *", payload={"tenant": 7}, group="tenant-7")
        """
        if Token.is_unresolved(timer_id):
            raise ValueError("timer_id: add_periodic names the construct after it, so it must be concrete text; "
                             "for a token, use PeriodicTimer(scope, id, scheduler=..., timer_id=...)")
        scope = cast(Construct, self)
        return PeriodicTimer(scope, f"Periodic-{timer_id}", scheduler=self, timer_id=timer_id, payload=payload,
                             cron=cron, every=every, time_zone=time_zone, start_at=start_at, end_at=end_at,
                             target=target, retry_max_attempts=retry_max_attempts, retry_max_age=retry_max_age,
                             max_lateness=max_lateness, group=group)

    def _periodic_provider(self) -> cr.Provider:
        """The provider framework that hands CloudFormation's events to the api function: one per scheduler,
        made with its first periodic timer, with a role and a log group of its own."""
        scope = cast(Construct, self)
        existing = scope.node.try_find_child(PROVIDER_ID)
        if existing is not None:
            return cast(cr.Provider, existing)
        log_group = logs.LogGroup(scope, f"{PROVIDER_ID}Logs", **self._log_options)
        role = iam.Role(scope, f"{PROVIDER_ID}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
                        description="Hands periodic timers of the stack to the api function (delayed scheduler)")
        # Instead of the managed AWSLambdaBasicExecutionRole: write to this log group only.
        role.add_to_principal_policy(iam.PolicyStatement(actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                                                         resources=[log_group.log_group_arn]))
        provider = cr.Provider(scope, PROVIDER_ID, on_event_handler=self.api_function,
                               framework_on_event_role=role, log_group=log_group)
        _acknowledge_versions(scope, role, self.api_function)
        return provider


def _acknowledge_versions(scope: Construct, role: iam.Role, handler: lambda_.IFunction) -> None:
    """AwsSolutions-IAM5 on the provider framework's grant to invoke the api function's versions too."""
    versions = _nag.flatten_reference(Stack.of(scope).resolve(f"{handler.function_arn}:*"))
    _nag.acknowledge(
        role.node.find_child("DefaultPolicy"),
        rule=f"AwsSolutions-IAM5[Resource::{versions}]",
        reason="CDK's provider framework grants lambda:InvokeFunction on the api function and its versions "
               "(the :* suffix); it invokes only the api function, with the stack's periodic timers.",
    )


class PeriodicTimer(Construct):
    """A periodic timer declared in the stack (``Custom::DelayedSchedulerPeriodic``), put through
    ``scheduler``'s api function at deploy by the route of ``PUT /periodic/{id}``, so the API's own
    validation runs: a definition it refuses fails the deploy with its message (the field and the
    rule). A change of the definition replaces it from its next occurrence; a change of ``timer_id``
    creates the new timer, then deletes the old; removing it from the stack deletes it (``DELETE
    /periodic/{id}``). What needs no token is judged at synth. (``DelayedScheduler.add_periodic`` is
    the short form.)

    Example::

        PeriodicTimer(self, "Nightly", scheduler=timers, timer_id="nightly-report", cron="0 2 * * ? *",
                      time_zone="Europe/Paris", payload={"report": "daily"})

    :param scheduler: the ``DelayedScheduler`` that keeps and delivers it.
    :param timer_id: its id (what ``GET /periodic/{id}`` reads): 1-128 characters of ``A-Za-z0-9._:-``.
        A new id replaces the timer: the new one is created, then the old one deleted.
    :param payload: any JSON value (tokens allowed), delivered in each occurrence's envelope; at most
        256 KiB serialized (judged at deploy).
    :param cron: EventBridge's six fields (``minutes hours day-of-month month day-of-week year``, e.g.
        ``0 9 ? * MON-FRI *``), checked at synth by the runtime's own parser; one that matches no date
        (``0 9 30 2 ? *``, 30 February) or only past ones (its years are past) raises ``ValueError``.
        Exactly one of ``cron`` and ``every``. Default: none.
    :param every: the period, whole seconds, at least 1 second. Default: none.
    :param time_zone: the IANA time zone ``cron`` is read in, e.g. ``Europe/Paris``; with ``cron`` only.
        Default: ``UTC``.
    :param start_at: no occurrence before this instant (timezone-aware); ``every`` counts from it; not
        after ``cron``'s last occurrence. Default: ``every`` counts from the deploy, ``cron`` starts at once.
    :param end_at: no occurrence at or after this instant (timezone-aware): later than ``start_at``, than
        the synth's time, and than ``cron``'s first occurrence (the deploy refuses an end the timer
        cannot reach, with the API's message). Default: none (no end).
    :param target: the name of a target registered on ``scheduler`` (checked at synth, so a target
        added later counts). Default: the scheduler's ``"default"`` target.
    :param retry_max_attempts: each occurrence's ``retry.maxAttempts``: delivery attempts in all, the
        first included, before it is parked in the dead-letter queue. Allowed: 1 to the scheduler's
        ``max_receive_count`` (checked at synth). Default: the scheduler's ``max_receive_count``.
    :param retry_max_age: each occurrence's ``retry.maxAgeSeconds``: a failed attempt whose next one
        would start later than this after the occurrence's due time is parked instead. Allowed: 60
        seconds to 1 day, whole seconds. Default: the scheduler's ``retry_max_age``.
    :param max_lateness: each occurrence's lateness bound (the definition's ``maxLatenessSeconds``): an
        occurrence whose delivery would start more than this long after its due time (first attempt or
        retry) is skipped and counted in ``skippedCount``. Allowed: 1 second to 365 days, whole seconds.
        Default: the scheduler's ``max_lateness`` (none: a late occurrence is delivered late).
    :param group: the group it joins, as ``PUT /periodic/{id}`` with ``group``: ``DELETE /groups/{group}``
        deletes it with the group's other members, and ``GET /periodic?group=`` lists it. Allowed: 1-64
        characters of ``A-Za-z0-9._:-``. Default: none.
    """

    def __init__(self, scope: Construct, id: str, *, scheduler: SchedulerPeriodic, timer_id: str, payload: Any,
                 cron: Optional[str] = None, every: Optional[Duration] = None, time_zone: Optional[str] = None,
                 start_at: Optional[dt.datetime] = None, end_at: Optional[dt.datetime] = None,
                 target: Optional[str] = None, retry_max_attempts: Optional[int] = None,
                 retry_max_age: Optional[Duration] = None, max_lateness: Optional[Duration] = None,
                 group: Optional[str] = None) -> None:
        if not isinstance(scheduler, SchedulerPeriodic):
            raise ValueError(f"scheduler: must be a DelayedScheduler, got {describe(scheduler)}")
        body = _definition(timer_id, payload, cron, every, time_zone, start_at, end_at, target, group,
                           now=dt.datetime.now(dt.timezone.utc))
        if max_lateness is not None:
            body["maxLatenessSeconds"] = _bounded_seconds("max_lateness", max_lateness, contract.MAX_LATENESS_SECONDS)
        retry = _retry(retry_max_attempts, retry_max_age, scheduler._max_receive_count)
        definition = _render(scope, {**body, "retry": retry} if retry else body)
        super().__init__(scope, id)
        self.timer_id: str = timer_id
        """The timer's id, as the API names it."""
        self.resource: CustomResource = CustomResource(
            self, "Resource", service_token=scheduler._periodic_provider().service_token,
            resource_type=RESOURCE_TYPE,
            properties={"Id": timer_id, "Definition": definition},
        )
        """The custom resource (``Custom::DelayedSchedulerPeriodic``); its physical id is the timer's id."""
        if target is not None and not Token.is_unresolved(target):
            self.node.add_validation(_TargetRegistered(scheduler, target))

    @property
    def next_due_at(self) -> str:
        """When its next occurrence is due, as the deploy left it (RFC 3339 UTC with milliseconds; empty
        once it has ended): ``Fn::GetAtt`` of ``NextDueAt``."""
        return self.resource.get_att_string("NextDueAt")

    @property
    def status(self) -> str:
        """Its status after the deploy (``ACTIVE`` or ``ENDED``): ``Fn::GetAtt`` of ``Status``."""
        return self.resource.get_att_string("Status")


@jsii.implements(IValidation)
class _TargetRegistered:
    """A synth-time check: the target a timer names is registered (by then, every ``add_target`` ran)."""

    def __init__(self, scheduler: SchedulerPeriodic, target: str) -> None:
        self._scheduler, self._target = scheduler, target

    def validate(self) -> list[str]:
        names = list(self._scheduler._targets)
        if self._target in names:
            return []
        return [f"target: {self._target!r} is not a target of this scheduler; registered: {', '.join(names)}"]


def _definition(timer_id: Any, payload: Any, expression: Any, every: Any, time_zone: Any, start_at: Any,
                end_at: Any, target: Any, group: Any, *, now: dt.datetime) -> dict[str, Any]:
    """The ``PUT /periodic/{id}`` body, after every check that needs no token (``now``: the synth's time)."""
    if not Token.is_unresolved(timer_id) and not (isinstance(timer_id, str) and contract.ID_PATTERN.match(timer_id)):
        raise ValueError(f"timer_id: must be 1-128 characters of A-Za-z0-9._:-, got {describe(timer_id)}")
    if (expression is None) == (every is None):
        raise ValueError("cron/every: exactly one is required: cron (six fields, e.g. '0 9 ? * MON-FRI *') or "
                         "every (a Duration of whole seconds, at least 1 second)")
    body: dict[str, Any] = {"payload": _json("payload", payload)}
    if every is not None:
        check_duration("every", every)
        check_whole_seconds("every", every)
        check_range("every", seconds(every), contract.PERIODIC_MIN_EVERY_SECONDS, None, unit="seconds")
        if time_zone is not None:
            raise ValueError("time_zone: applies to cron only; every counts seconds, which have no time zone")
        body["every"] = seconds(every)
    else:
        body["cron"] = _checked(expression, "cron", cron.parse)
        if time_zone is not None:
            body["timeZone"] = _checked(time_zone, "time_zone", cron.zone_of)
    for prop, field, instant in (("start_at", "startAt", start_at), ("end_at", "endAt", end_at)):
        if instant is not None:
            if not isinstance(instant, dt.datetime) or instant.tzinfo is None:
                raise ValueError(f"{prop}: must be a timezone-aware datetime, e.g. datetime(2027, 1, 1, "
                                 f"tzinfo=timezone.utc), got {describe(instant)}")
            body[field] = _rfc3339(instant)
    if start_at is not None and end_at is not None and end_at <= start_at:
        raise ValueError("end_at: must be later than start_at")
    if target is not None:
        if not Token.is_unresolved(target) and not isinstance(target, str):
            raise ValueError(f"target: must be a target name, got {describe(target)}")
        body["target"] = target
    if group is not None:
        if not Token.is_unresolved(group) and not (isinstance(group, str) and contract.GROUP_PATTERN.fullmatch(group)):
            raise ValueError(f"group: must be 1-64 characters of A-Za-z0-9._:-, got {describe(group)}")
        body["group"] = group
    _check_fires(expression, time_zone, start_at, end_at, now)
    return body


def _check_fires(expression: Any, time_zone: Any, start_at: Optional[dt.datetime], end_at: Optional[dt.datetime],
                 now: dt.datetime) -> None:
    """Refuse, naming the prop, a timer that would never fire, as the API does at deploy (where ``every``'s first
    occurrence is known): a cron that matches no date or only past ones, a start after the cron's last
    occurrence, an end already past or not later than the cron's first occurrence. ``now`` stands for the
    deploy's time, which comes later: an end close ahead may still be refused then, with the API's message."""
    first_ms = None
    if expression is not None and not Token.is_unresolved(expression) and not (
            time_zone is not None and Token.is_unresolved(time_zone)):
        parsed, zone = cron.parse(expression), cron.zone_of(time_zone or contract.PERIODIC_DEFAULT_TIME_ZONE)
        rule = parsed.never_fires_from(_ms(now), zone)
        if rule is not None:
            raise ValueError(f"cron: {rule}")
        first_ms = parsed.next_after(_ms(max(now, start_at or now)) - 1, zone)
        if first_ms is None:
            raise ValueError(f"start_at: must not be after the last occurrence of cron {expression!r}, got "
                             f"{_rfc3339(start_at or now)}: the timer would never fire")
    if end_at is None:
        return
    if end_at <= now:
        raise ValueError(f"end_at: must be in the future, got {_rfc3339(end_at)}: the timer would never fire")
    if first_ms is not None and first_ms >= _ms(end_at):
        first = _rfc3339(dt.datetime.fromtimestamp(first_ms / 1000, dt.timezone.utc))
        raise ValueError(f"end_at: must be later than the first occurrence of cron {expression!r}, {first}, got "
                         f"{_rfc3339(end_at)}: the timer would never fire")


def _ms(instant: dt.datetime) -> int:
    """An aware datetime in epoch milliseconds, rounded down (as its RFC 3339 text in the body is)."""
    return (instant - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)


def _rfc3339(instant: dt.datetime) -> str:
    """An aware datetime as the API's RFC 3339 UTC text with milliseconds."""
    return instant.astimezone(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _retry(max_attempts: Any, max_age: Any, max_receive_count: Any) -> dict[str, Any]:
    """The body's ``retry`` (empty when neither is given), after the checks that need no token; ``max_receive_count``
    is the scheduler's, the most ``max_attempts`` may be."""
    retry: dict[str, Any] = {}
    if max_attempts is not None:
        if not Token.is_unresolved(max_attempts) and (isinstance(max_attempts, bool) or not isinstance(max_attempts, int)):
            raise ValueError(f"retry_max_attempts: must be an int, got {describe(max_attempts)}")
        check_range("retry_max_attempts", max_attempts, 1, contract.MAX_RECEIVE_COUNT.max)
        if not Token.is_unresolved(max_attempts) and not Token.is_unresolved(max_receive_count) \
                and max_attempts > max_receive_count:
            raise ValueError(f"retry_max_attempts: must be at most the scheduler's max_receive_count, "
                             f"{max_receive_count}, got {max_attempts}: SQS parks a delayer message after that many "
                             f"receives, whatever its retry policy")
        retry["maxAttempts"] = max_attempts
    if max_age is not None:
        retry["maxAgeSeconds"] = _bounded_seconds("retry_max_age", max_age, contract.RETRY_MAX_AGE_SECONDS)
    return retry


def _bounded_seconds(prop: str, duration: Any, bounds: contract.Bounds) -> Any:
    """``duration``'s whole seconds (or its token), once it is a ``Duration`` of whole seconds within ``bounds``
    (``ValueError`` naming ``prop`` otherwise)."""
    check_duration(prop, duration)
    check_whole_seconds(prop, duration)
    check_range(prop, seconds(duration), bounds.min, bounds.max, show=seconds_or_days)
    return seconds(duration)


def _checked(value: Any, prop: str, parse: Any) -> Any:
    """``value`` when the runtime's ``parse`` accepts it (or it is a token); else its message, naming ``prop``."""
    if Token.is_unresolved(value):
        return value
    if not isinstance(value, str):
        raise ValueError(f"{prop}: must be text, got {describe(value)}")
    try:
        parse(value)
    except cron.CronError as exc:
        raise ValueError(f"{prop}: {exc}") from None
    return value


def _render(scope: Construct, body: dict[str, Any]) -> str:
    """The body as JSON text: as written when it holds no token; else through ``Stack.to_json_string``,
    which quotes each token's value, but drops a ``None`` (JSON null), so that is refused beside a token."""
    leaves = list(_leaves(body))
    if not any(Token.is_unresolved(leaf) for leaf in leaves):
        return json.dumps(body, separators=(",", ":"))
    if any(leaf is None for leaf in leaves):
        raise ValueError("payload: None (JSON null) cannot be rendered beside a token (CDK drops it); "
                         "leave the key out, or use a value such as \"\"")
    return Stack.of(scope).to_json_string(body)


def _leaves(value: Any) -> Any:
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


def _json(prop: str, value: Any) -> Any:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        raise ValueError(f"{prop}: must be a JSON value (dicts, lists, text, numbers, booleans, None), "
                         f"got {describe(value)}") from None
    return value

