"""The scheduler's metrics, as methods of ``DelayedScheduler``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, TypedDict, Union

from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from ._contract import contract
from ._validation import describe

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: The dimensions the runtime puts on every metric it emits (``contract.json``), beside ``FunctionName``
#: (the emitting function's name, which tells one scheduler from another in the same namespace).
SERVICE_DIMENSION: dict[str, str] = dict(contract.METRIC_DIMENSIONS)
#: The runtime's EMF figure names (``contract.json``).
LATENESS_METRIC: str = contract.LATENESS_METRIC
FAILED_ATTEMPTS_METRIC: str = contract.FAILED_ATTEMPTS_METRIC
SWEEPS_STOPPED_EARLY_METRIC: str = contract.SWEEPS_STOPPED_EARLY_METRIC
#: A limited target's own figures (``contract.json``), with its name as the ``TARGET_DIMENSION`` dimension.
TARGET_DIMENSION: str = contract.TARGET_DIMENSION
WAITING_FOR_ROOM_METRIC: str = contract.WAITING_FOR_ROOM_METRIC
HELD_BACK_METRIC: str = contract.HELD_BACK_METRIC


class MetricOptions(TypedDict, total=False):
    """The fields of ``aws_cdk.aws_cloudwatch.MetricOptions``, as keyword arguments."""

    account: str
    color: str
    dimensions_map: Mapping[str, str]
    id: str
    label: str
    period: Duration
    region: str
    stack_account: str
    stack_region: str
    statistic: str
    unit: cloudwatch.Unit
    visible: bool


class SchedulerMetrics:
    """``metric_*`` methods; the class that mixes this in has the queues, the dispatcher function
    and ``metrics_namespace``."""

    dead_letter_queue: sqs.Queue
    delayer_queue: sqs.Queue
    flow_queue: Optional[sqs.Queue]
    dispatcher_function: lambda_.Function
    enqueuer_function: lambda_.Function
    sweeper_function: lambda_.Function
    api_stage: Optional[Union[apigwv2.HttpStage, apigw.Stage]]
    metrics_namespace: str
    _target_json: dict[str, Any]
    _on_flow_queue: Optional[Callable[[], None]] = None
    """Called when the flow queue is made, if it is made after the dashboard: its depth joins the queues' graph."""

    def metric_dead_letter_queue_depth(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Messages waiting in the dead-letter queue (``ApproximateNumberOfMessagesVisible``);
        anything above zero is a schedule or a batch that needs attention.

        :param options: the ``cloudwatch.MetricOptions`` fields (``period``, ``statistic``, ``label``, ...).
            Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.dead_letter_queue.metric_approximate_number_of_messages_visible(**options)

    def metric_delayer_queue_depth(self, **options: Unpack[MetricOptions]) -> cloudwatch.MathExpression:
        """Schedules waiting in the delayer queue: ``visible + delayed``, a math expression over
        ``ApproximateNumberOfMessagesVisible`` and ``ApproximateNumberOfMessagesDelayed`` (most of
        the queue is delayed: each message waits out its schedule's delay). Messages a dispatcher
        holds are in ``delayer_queue.metric_approximate_number_of_messages_not_visible()``.

        :param options: the ``cloudwatch.MetricOptions`` fields of both metrics (``period``,
            ``statistic``, ...); ``period``, ``label`` and ``color`` also apply to the expression.
            Default: maximum over 5 minutes, labelled ``"Delayer queue depth"``.
        """
        return _queue_depth(self.delayer_queue, "", "Delayer queue depth", options)

    def metric_flow_queue_depth(self, **options: Unpack[MetricOptions]) -> cloudwatch.MathExpression:
        """Deliveries to limited targets (``flow_control``) waiting in the flow queue: ``flowVisible + flowDelayed``,
        a math expression over its ``ApproximateNumberOfMessagesVisible`` and ``ApproximateNumberOfMessagesDelayed``
        (its own ids, so that it may share a graph or an alarm with ``metric_delayer_queue_depth``). A limited
        target's backlog (more due than its limits let start) shows here, apart from the delayer queue.

        :param options: the ``cloudwatch.MetricOptions`` fields of both metrics (``period``,
            ``statistic``, ...); ``period``, ``label`` and ``color`` also apply to the expression.
            Default: maximum over 5 minutes, labelled ``"Flow queue depth"``.
        :raises ValueError: when no target has ``flow_control``: there is no flow queue (``flow_queue`` is
            ``None``) until the first one is registered.
        """
        if self.flow_queue is None:
            raise ValueError("metric_flow_queue_depth: this scheduler has no flow queue (flow_queue is None): it is "
                             "made with the first target with flow_control")
        return _queue_depth(self.flow_queue, "flow", "Flow queue depth", options)

    def metric(self, metric_name: str, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """One of the runtime's own metrics (``metric_name``, e.g. ``"LatenessMs"``), as the runtime
        emits it: in ``metrics_namespace``, with the dimensions ``Service=DelayedScheduler`` and
        ``FunctionName=<this scheduler's dispatcher function>``, so each scheduler has its own.

        :param metric_name: the figure's name.
        :param options: the ``cloudwatch.MetricOptions`` fields. Default: average over 5 minutes.
        """
        return self._runtime_metric(self.dispatcher_function, metric_name, options)

    def _runtime_metric(self, function: lambda_.Function, metric_name: str, options: MetricOptions,
                        dimensions: Optional[Mapping[str, str]] = None) -> cloudwatch.Metric:
        """``metric_name`` as ``function`` emits it (EMF): the namespace prop, the service dimension and
        the function's name, plus ``dimensions`` (a limited target's name)."""
        options.setdefault("dimensions_map", {**SERVICE_DIMENSION, "FunctionName": function.function_name,
                                              **(dimensions or {})})
        return cloudwatch.Metric(namespace=self.metrics_namespace, metric_name=metric_name, **options)

    def _limited_target_names(self) -> list[str]:
        """The registered targets with flow control (their description carries ``flowControl``), in the order
        they were added: the only targets the dispatcher emits figures of their own for."""
        return [name for name, description in self._target_json.items() if contract.FLOW_CONTROL_FIELD in description]

    def _check_limited_target(self, prop: str, target_name: Any) -> None:
        """Refuse, naming ``prop``, a name that is not a registered target, or one without flow control (the
        dispatcher never emits its figures: a metric or an alarm on them would read nothing)."""
        if not isinstance(target_name, str) or target_name not in self._target_json:
            raise ValueError(f"{prop}: must be the name of a registered target with flow_control "
                             f"({', '.join(map(repr, self._limited_target_names())) or 'this scheduler has none'}), "
                             f"got {describe(target_name)}")
        if target_name not in self._limited_target_names():
            raise ValueError(f"{prop}: target {target_name!r} has no flow_control, so the dispatcher emits no figures "
                             f"of its own for it (only a limited target's are emitted); its deliveries are in "
                             f"metric_lateness() and metric_delivered()")

    def _target_metric(self, target_name: str, metric_name: str, options: MetricOptions) -> cloudwatch.Metric:
        """``metric_name`` as the dispatcher emits it for the limited target ``target_name``."""
        self._check_limited_target("target_name", target_name)
        return self._runtime_metric(self.dispatcher_function, metric_name, options, {TARGET_DIMENSION: target_name})

    def metric_lateness(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """How late deliveries start after their ``dueAt``, in milliseconds (``LatenessMs``, which
        the dispatcher emits as CloudWatch Embedded Metric Format, with the dimensions
        ``Service=DelayedScheduler`` and ``FunctionName=<this scheduler's dispatcher function>``, so
        each scheduler has its own).

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: p99 over 5 minutes.
        """
        options.setdefault("statistic", "p99")
        options.setdefault("unit", cloudwatch.Unit.MILLISECONDS)
        return self.metric(LATENESS_METRIC, **options)

    def metric_target_lateness(self, target_name: str, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """How late deliveries to one limited target start after their ``dueAt``, in milliseconds: ``LatenessMs``
        with the dimension ``Target=<target_name>`` beside the others, a value per delivery to it. Its
        deliveries also count in ``metric_lateness``; this one shows the target's own backlog (deliveries
        waiting for room start that much later than due), which a rate below what is due makes grow.

        :param target_name: a registered target with ``flow_control`` (the dispatcher emits figures of their
            own only for those; any other name raises ``ValueError``).
        :param options: the ``cloudwatch.MetricOptions`` fields. Default: p99 over 5 minutes.
        """
        options.setdefault("statistic", "p99")
        options.setdefault("unit", cloudwatch.Unit.MILLISECONDS)
        return self._target_metric(target_name, LATENESS_METRIC, options)

    def metric_target_waiting(self, target_name: str, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Deliveries to one limited target sent back to wait for room in the flow queue (``WaitingForRoom``,
        with the dimension ``Target=<target_name>``): its next start more than a second ahead, every one of its
        ``max_in_flight`` places held, or the target held back (``metric_target_held_back``). Each wait is
        counted, so a delivery that waits twice counts twice; a steady count is the target's limits doing their
        work, a growing one a backlog.

        :param target_name: a registered target with ``flow_control`` (any other name raises ``ValueError``).
        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        options.setdefault("statistic", "Sum")
        return self._target_metric(target_name, WAITING_FOR_ROOM_METRIC, options)

    def metric_target_held_back(self, target_name: str, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Answers from one limited target that said slow down (``HeldBack``, with the dimension
        ``Target=<target_name>``): an HTTPS 429 or 503, a throttling error of its service. Each one holds the
        whole target back (for its ``Retry-After``, else a backoff from 1 second up to a minute), and the
        attempt it answered is sent again; above zero, the target takes less than its limits allow.

        :param target_name: a registered target with ``flow_control`` (any other name raises ``ValueError``).
        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        options.setdefault("statistic", "Sum")
        return self._target_metric(target_name, HELD_BACK_METRIC, options)

    def metric_dispatcher_errors(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Failed dispatcher invocations (Lambda ``Errors``).

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        return self.dispatcher_function.metric_errors(**options)

    def metric_dispatcher_throttles(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Throttled dispatcher invocations (Lambda ``Throttles``): each throttled batch counts as a receive
        of its messages, which brings them closer to the dead-letter queue.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        return self.dispatcher_function.metric_throttles(**options)

    def metric_delivered(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Deliveries made: the sample count of ``LatenessMs``, which the dispatcher emits once per delivery
        (so this costs no metric of its own).

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sample count over 5 minutes.
        """
        options.setdefault("statistic", "SampleCount")
        return self.metric(LATENESS_METRIC, **options)

    def metric_failed_attempts(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Delivery attempts that failed and went back to their queue (the delayer queue, the flow queue for a limited
        target) for a retry (``FailedAttempts``,
        which the dispatcher emits as EMF in the same record as ``LatenessMs``, only for a batch that has
        one): a target failing, a write or a send of the dispatcher failing (throttled, say), or a
        malformed message.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        options.setdefault("statistic", "Sum")
        return self.metric(FAILED_ATTEMPTS_METRIC, **options)

    def metric_parked(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Messages sent to the dead-letter queue (its ``NumberOfMessagesSent``): the envelopes the dispatcher
        parks (retries exhausted, undeliverable), failed stream batches and sweep events. Messages SQS itself
        moves there past ``max_receive_count`` are not counted by SQS; they show in
        ``metric_dead_letter_queue_depth``.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        options.setdefault("statistic", "Sum")
        return self.dead_letter_queue.metric_number_of_messages_sent(**options)

    def metric_delayer_oldest_message_age(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """The age of the delayer queue's oldest message, in seconds (``ApproximateAgeOfOldestMessage``).
        A message is as old as its delay when it surfaces (at most ``delay_window``), plus a visibility
        timeout for each retry; SQS looks past a message received three times. Older than that, deliveries
        have stalled.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.delayer_queue.metric_approximate_age_of_oldest_message(**options)

    def metric_enqueuer_iterator_age(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """How old the newest stream record was when the enqueuer received it, in milliseconds (Lambda
        ``IteratorAge``): claims waiting to become delayed messages. Growing, claims are stuck.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.enqueuer_function.metric("IteratorAge", **options)

    def metric_sweeper_errors(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Failed sweeps (the sweeper's Lambda ``Errors``): claims failed (e.g. throttled) and wait for the
        next sweep, or the sweep crashed.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        return self.sweeper_function.metric_errors(**options)

    def metric_sweeps_stopped_early(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Sweeps that ran short of time and stopped before their last shard (``SweepsStoppedEarly``, 1 per
        such sweep, which the sweeper emits as EMF, with ``FunctionName=<this scheduler's sweeper>``); the
        next sweep resumes there, so the rest is claimed a minute later. Often, the sweeper needs more
        memory (``sweeper_memory_size``) or the shards more timers claimed in parallel.

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        options.setdefault("statistic", "Sum")
        return self._runtime_metric(self.sweeper_function, SWEEPS_STOPPED_EARLY_METRIC, options)

    def metric_api_server_errors(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """The API's 5xx answers, on its stage: ``5xx`` (``ApiId``, ``Stage``) for the HTTP API, ``5XXError``
        (``ApiName``, ``Stage``) for the REST API, both in ``AWS/ApiGateway``. The scheduler answers bad
        input with a 4xx: a 5xx is a fault (the api function failing, throttled or timing out).

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        :raises ValueError: with ``SchedulerApi.none()``, which has no API.
        """
        if self.api_stage is None:
            raise ValueError("metric_api_server_errors: this scheduler has no API (SchedulerApi.none()); "
                             "the api function's errors are api_function.metric_errors()")
        options.setdefault("statistic", "Sum")
        return self.api_stage.metric_server_error(**options)


def _queue_depth(queue: sqs.IQueue, prefix: str, label: str, options: MetricOptions) -> cloudwatch.MathExpression:
    """``queue``'s messages visible plus delayed, as a math expression whose metric ids start with ``prefix``
    (``visible``/``delayed``, or ``<prefix>Visible``/``<prefix>Delayed``), by default their maximum and labelled
    ``label``."""
    options.setdefault("statistic", "Maximum")
    visible, delayed = (f"{prefix}Visible", f"{prefix}Delayed") if prefix else ("visible", "delayed")
    return cloudwatch.MathExpression(
        expression=f"{visible} + {delayed}",
        using_metrics={
            visible: queue.metric_approximate_number_of_messages_visible(**options),
            delayed: queue.metric("ApproximateNumberOfMessagesDelayed", **options),
        },
        period=options.get("period"), label=options.get("label", label), color=options.get("color"),
    )
