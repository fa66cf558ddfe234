"""The scheduler's CloudWatch alarms (``add_alarms``) and dashboard (``add_dashboard``), as methods of
``DelayedScheduler``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Union

from aws_cdk import Duration, Token
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cloudwatch_actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sns as sns
from constructs import Construct

from ._contract import contract
from ._dashboard import alarm_row, dashboard_widgets
from ._metrics import MetricOptions, SchedulerMetrics
from ._validation import check_duration, check_range, describe
from ._wiring import KEY_PRODUCER, grant_key

#: The ``Alarms`` scope's children, by attribute of ``SchedulerAlarms``: construct IDs, part of the public
#: contract (renaming one replaces the alarm).
ALARM_IDS: dict[str, str] = {
    "dead_letter_queue_not_empty": "DeadLetterQueueNotEmpty",
    "lateness": "Lateness",
    "dispatcher_errors": "DispatcherErrors",
    "dispatcher_throttles": "DispatcherThrottles",
    "enqueuer_iterator_age": "EnqueuerIteratorAge",
    "sweeper_errors": "SweeperErrors",
    "sweeps_stopped_early": "SweepsStoppedEarly",
    "delivery_stalled": "DeliveryStalled",
    "api_server_errors": "ApiServerErrors",
}
#: The construct ID of a limited target's lateness alarm (``add_alarms(target_lateness=...)``), under ``Alarms``:
#: this prefix and the target's name as it was registered (its characters, ``A-Za-z0-9._:-``, are all allowed).
TARGET_LATENESS_ALARM_ID = "TargetLateness"
_MAX_ALARM_SPAN_SECONDS = 86_400  # CloudWatch: period x evaluation periods at most one day


@dataclass(frozen=True)
class SchedulerAlarms:
    """The alarms ``DelayedScheduler.add_alarms`` created, each under the scheduler's ``Alarms`` scope
    with the construct ID ``ALARM_IDS`` gives it; a limited target's lateness alarm has the ID
    ``TargetLateness<target name>``."""

    dead_letter_queue_not_empty: cloudwatch.Alarm
    """The dead-letter queue holds a message (maximum depth > 0, at once: it never empties by itself)."""
    lateness: cloudwatch.Alarm
    """Delivery lateness p99 above ``lateness_threshold``."""
    dispatcher_errors: cloudwatch.Alarm
    """Failed dispatcher invocations (> 0)."""
    dispatcher_throttles: cloudwatch.Alarm
    """Throttled dispatcher invocations (> 0)."""
    enqueuer_iterator_age: cloudwatch.Alarm
    """The enqueuer's stream iterator age above ``iterator_age_threshold``: claims stuck."""
    sweeper_errors: cloudwatch.Alarm
    """Failed sweeps (> 0)."""
    sweeps_stopped_early: cloudwatch.Alarm
    """Sweeps that ran short of time (> 0)."""
    delivery_stalled: cloudwatch.Alarm
    """The delayer queue's oldest message older than ``delay_window`` + ``stalled_margin``."""
    api_server_errors: Optional[cloudwatch.Alarm]
    """The API's 5xx answers (> 0); ``None`` with ``SchedulerApi.none()``."""
    target_lateness: Mapping[str, cloudwatch.Alarm] = field(default_factory=dict)
    """Each limited target's lateness alarm, by target name, one per ``target_lateness`` entry (construct ID
    ``TargetLateness<target name>``): its lateness p99 at or above the duration given for it."""

    @property
    def all(self) -> list[cloudwatch.Alarm]:
        """Every alarm created, in ``ALARM_IDS`` order, then the targets' lateness alarms in the order given."""
        return [alarm for name in ALARM_IDS if (alarm := getattr(self, name)) is not None] + [
            *self.target_lateness.values()]


def _seconds(prop: str, duration: Any) -> float:
    """``duration`` in seconds, after checking it is a ``Duration`` known at synthesis (an alarm's
    threshold is a number CloudFormation cannot compute)."""
    check_duration(prop, duration)
    value = duration.to_seconds(integral=False)
    if Token.is_unresolved(value):
        raise ValueError(f"{prop}: must be a Duration known at synthesis, got a token")
    return float(value)


def _check_period(period: Duration) -> None:
    period_s = _seconds("period", period)
    check_range("period", period_s, 60, 86_400, "seconds")
    if period_s % 60:
        raise ValueError(f"period: must be whole minutes, got {period_s:g} seconds")


def _alarm_action(action: Any) -> Optional[cloudwatch.IAlarmAction]:
    """An ``sns.ITopic`` as an ``SnsAction``; an ``IAlarmAction`` as it is; ``None``."""
    if action is None:
        return None
    if hasattr(action, "topic_arn"):
        return cloudwatch_actions.SnsAction(action)
    if callable(getattr(action, "bind", None)):
        return action  # type: ignore[no-any-return]
    raise ValueError(f"alarm_action: must be an sns.ITopic or a cloudwatch.IAlarmAction "
                     f"(e.g. cloudwatch_actions.SnsAction(topic)), got {describe(action)}")


def _let_cloudwatch_use_the_key(topic: Any) -> None:
    """CloudWatch publishes to a topic encrypted with a customer managed key only if the key lets it: the
    actions a producer needs (``KEY_PRODUCER``), named, not ``kms:GenerateDataKey*``."""
    grant_key(getattr(topic, "master_key", None), iam.ServicePrincipal("cloudwatch.amazonaws.com"), *KEY_PRODUCER)


class SchedulerMonitoring(SchedulerMetrics):
    """``add_alarms`` and ``add_dashboard``; the class that mixes this in is the scheduler construct."""

    delay_window: Duration
    dispatcher_timeout: Duration
    _scheduler_alarms: Optional[SchedulerAlarms] = None
    _scheduler_dashboard: Optional[cloudwatch.Dashboard] = None

    def add_alarms(
        self,
        *,
        alarm_action: Union[cloudwatch.IAlarmAction, sns.ITopic, None] = None,
        lateness_threshold: Optional[Duration] = None,
        evaluation_periods: int = 3,
        period: Optional[Duration] = None,
        iterator_age_threshold: Optional[Duration] = None,
        stalled_margin: Optional[Duration] = None,
        target_lateness: Optional[Mapping[str, Duration]] = None,
    ) -> SchedulerAlarms:
        """CloudWatch alarms on every figure that says the scheduler needs a look (``SchedulerAlarms``
        lists them), under the construct ``Alarms``. Missing data is not breaching (an idle scheduler
        emits no lateness and runs no dispatcher). Call it once: a second call raises ``ValueError``.

        Example::

            alarms = timers.add_alarms(alarm_action=ops_topic, lateness_threshold=Duration.seconds(2))
            alarms.lateness.add_ok_action(cloudwatch_actions.SnsAction(ops_topic))

        :param alarm_action: what each alarm does when it goes into ALARM: an ``sns.ITopic`` (published
            to; a topic of this app encrypted with a customer managed key has its key let CloudWatch use
            it) or any ``cloudwatch.IAlarmAction``. Default: none (the alarms only change state).
        :param lateness_threshold: the lateness p99 above which deliveries are late. Allowed: 1 ms to
            1 hour. Default: 1 second.
        :param evaluation_periods: how many consecutive periods a figure must breach before its alarm
            goes off; every alarm but the dead-letter queue's (which goes off at its first message) uses
            it. Allowed: 1 or more, with ``period`` x this at most 1 day. Default: 3.
        :param period: the period each alarm evaluates. Allowed: whole minutes, 1 minute to 1 day.
            Default: 1 minute.
        :param iterator_age_threshold: the enqueuer's stream iterator age above which claims are stuck.
            Allowed: 1 second to 1 day. Default: 1 minute.
        :param stalled_margin: how much older than ``delay_window`` the delayer queue's oldest message may
            be before deliveries count as stalled. Allowed: 1 minute to 1 day. Default: twice the delayer
            queue's visibility timeout (12 x ``dispatcher_timeout``: 12 minutes by default), the age two
            retries of a failing target add (SQS looks past a message received three times).
        :param target_lateness: a lateness alarm per limited target: ``{target name: duration}``, each alarm going
            off when that target's lateness p99 (``metric_target_lateness``) is at or above its duration, i.e. its
            deliveries waiting for room start that late (more is due than its ``flow_control`` lets start, or it
            keeps saying slow down). Each name must be a registered target with ``flow_control``. Allowed: 1 ms to
            1 day. Default: none.
        """
        if self._scheduler_alarms is not None:
            raise ValueError("add_alarms: this scheduler has its alarms already (the first call's SchedulerAlarms); "
                             "call it once")
        action = _alarm_action(alarm_action)
        period = period or Duration.minutes(1)
        _check_period(period)
        if isinstance(evaluation_periods, bool) or not isinstance(evaluation_periods, int):
            raise ValueError(f"evaluation_periods: must be a whole number >= 1, got {describe(evaluation_periods)}")
        check_range("evaluation_periods", evaluation_periods, 1,
                    _MAX_ALARM_SPAN_SECONDS // int(period.to_seconds()), "periods")
        lateness_s = _seconds("lateness_threshold", lateness_threshold or Duration.seconds(1))
        check_range("lateness_threshold", lateness_s, 0.001, 3600, "seconds")
        iterator_age_s = _seconds("iterator_age_threshold", iterator_age_threshold or Duration.minutes(1))
        check_range("iterator_age_threshold", iterator_age_s, 1, 86_400, "seconds")
        stalled_after = self._stalled_after(stalled_margin)
        target_thresholds_ms = self._target_lateness_thresholds_ms(target_lateness)

        scope = Construct(self, "Alarms")  # type: ignore[arg-type]
        one_period: MetricOptions = {"period": period}

        def alarm(name: str, metric: cloudwatch.IMetric, threshold: float, description: str,
                  periods: int = evaluation_periods, construct_id: Optional[str] = None,
                  comparison: cloudwatch.ComparisonOperator = cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD
                  ) -> cloudwatch.Alarm:
            created = cloudwatch.Alarm(
                scope, construct_id or ALARM_IDS[name], metric=metric, threshold=threshold, evaluation_periods=periods,
                comparison_operator=comparison,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING, alarm_description=description)
            if action is not None:
                created.add_alarm_action(action)
            return created

        alarms = SchedulerAlarms(
            dead_letter_queue_not_empty=alarm(
                "dead_letter_queue_not_empty", self.metric_dead_letter_queue_depth(**one_period), 0,
                "The delayed scheduler's dead-letter queue holds messages: schedules parked with their reason, or "
                "batches that failed. Read them, fix the cause, redrive or delete them.", periods=1),
            lateness=alarm(
                "lateness", self.metric_lateness(**one_period), lateness_s * 1000,
                "Deliveries start late (lateness p99 in ms above the threshold): see the dispatcher's duration, "
                "throttles and the delayer queue's depth."),
            dispatcher_errors=alarm(
                "dispatcher_errors", self.metric_dispatcher_errors(**one_period), 0,
                "Dispatcher invocations fail (a crash or a timeout): their batches come back after the "
                "visibility timeout. See the dispatcher's log."),
            dispatcher_throttles=alarm(
                "dispatcher_throttles", self.metric_dispatcher_throttles(**one_period), 0,
                "The dispatcher is throttled: each throttled batch counts as a receive of its messages."),
            enqueuer_iterator_age=alarm(
                "enqueuer_iterator_age", self.metric_enqueuer_iterator_age(**one_period),
                iterator_age_s * 1000,
                "Claims are stuck: the enqueuer's stream iterator age (ms) is above the threshold. See the "
                "enqueuer's errors and log."),
            sweeper_errors=alarm(
                "sweeper_errors", self.metric_sweeper_errors(**one_period), 0,
                "Sweeps fail: their claims wait for the next sweep. See the sweeper's log."),
            sweeps_stopped_early=alarm(
                "sweeps_stopped_early", self.metric_sweeps_stopped_early(**one_period), 0,
                "Sweeps run short of time and stop before their last shard: the rest is claimed a minute later."),
            delivery_stalled=alarm(
                "delivery_stalled", self.metric_delayer_oldest_message_age(**one_period), stalled_after,
                "Delivery has stalled: the delayer queue's oldest message (s) is older than the delay window "
                "plus the margin. See the dispatcher's event source mapping, concurrency and errors."),
            api_server_errors=alarm(
                "api_server_errors", self.metric_api_server_errors(**one_period), 0,
                "The API answers 5xx: the api function fails, is throttled or times out.")
            if self.api_stage is not None else None,
            target_lateness={target: alarm(
                "target_lateness", self.metric_target_lateness(target, **one_period), threshold_ms,
                f"Deliveries to the limited target {target!r} start late (its lateness p99 in ms at or above the "
                "threshold): more is due than its flow_control lets start, or it keeps saying slow down. See its "
                "waiting-for-room and held-back counts.",
                construct_id=f"{TARGET_LATENESS_ALARM_ID}{target}",
                comparison=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD)
                for target, threshold_ms in target_thresholds_ms.items()},
        )
        if alarm_action is not None and hasattr(alarm_action, "topic_arn"):
            _let_cloudwatch_use_the_key(alarm_action)
        self._scheduler_alarms = alarms
        if self._scheduler_dashboard is not None:  # made first: the alarms' states join it, as its last row
            self._scheduler_dashboard.add_widgets(*alarm_row(alarms.all))
        return alarms

    def _stalled_after(self, stalled_margin: Optional[Duration]) -> float:
        """The delivery-stalled threshold in seconds: the delay window plus the margin."""
        window = _seconds("delay_window", self.delay_window)
        if stalled_margin is None:
            return window + 2 * contract.VISIBILITY_TIMEOUT_FACTOR * _seconds("dispatcher_timeout",
                                                                             self.dispatcher_timeout)
        margin = _seconds("stalled_margin", stalled_margin)
        check_range("stalled_margin", margin, 60, 86_400, "seconds")
        return window + margin

    def _target_lateness_thresholds_ms(self, target_lateness: Optional[Mapping[str, Duration]]) -> dict[str, float]:
        """``add_alarms``' ``target_lateness``, checked: each limited target's threshold in milliseconds."""
        if target_lateness is None:
            return {}
        if not isinstance(target_lateness, Mapping):
            raise ValueError(f"target_lateness: must be a mapping of target name to Duration, e.g. "
                             f"{{'email': Duration.minutes(5)}}, got {describe(target_lateness)}")
        thresholds_ms = {}
        for target, duration in target_lateness.items():
            self._check_limited_target("target_lateness", target)
            prop = f"target_lateness[{target!r}]"
            lateness_s = _seconds(prop, duration)
            check_range(prop, lateness_s, 0.001, 86_400, "seconds")
            thresholds_ms[target] = lateness_s * 1000
        return thresholds_ms

    def add_dashboard(self, *, dashboard_name: Optional[str] = None, period: Optional[Duration] = None
                      ) -> cloudwatch.Dashboard:
        """One CloudWatch dashboard (construct ``Dashboard``) of the scheduler's figures: lateness (p50, p99,
        maximum), deliveries (delivered, failed attempts, parked), the queues' depth and the delayer's oldest
        message, the dispatcher's errors and throttles, the enqueuer's iterator age, the sweeper's errors and
        stopped sweeps, the API's 5xx (with an API), a row per target with ``flow_control`` registered by then (its
        lateness p50 and p99, the deliveries that waited for room, the answers that said slow down), and the
        states of the ``add_alarms`` alarms, whether ``add_alarms`` is called before or after it. Call it once: a
        second call raises ``ValueError``.

        :param dashboard_name: the dashboard's name. Default: CloudFormation's.
        :param period: the graphs' period. Allowed: whole minutes, 1 minute to 1 day. Default: 5 minutes.
        """
        if self._scheduler_dashboard is not None:
            raise ValueError("add_dashboard: this scheduler has its dashboard already (the first call's); call it once")
        period = period or Duration.minutes(5)
        _check_period(period)
        dashboard = cloudwatch.Dashboard(self, "Dashboard", dashboard_name=dashboard_name,  # type: ignore[arg-type]
                                         default_interval=Duration.hours(3))
        for row in dashboard_widgets(self, period, self._limited_target_names()):
            dashboard.add_widgets(*row)
        if self._scheduler_alarms is not None:
            dashboard.add_widgets(*alarm_row(self._scheduler_alarms.all))
        self._scheduler_dashboard = dashboard
        return dashboard
