"""The scheduler's metrics, as methods of ``DelayedScheduler``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, TypedDict

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sqs as sqs

from ._contract import contract

if TYPE_CHECKING:
    from typing_extensions import Unpack

#: The dimensions the runtime puts on every metric it emits (``contract.json``), beside ``FunctionName``
#: (the emitting function's name, which tells one scheduler from another in the same namespace).
SERVICE_DIMENSION: dict[str, str] = dict(contract.METRIC_DIMENSIONS)
#: The runtime's EMF figure names (``contract.json``).
LATENESS_METRIC: str = contract.LATENESS_METRIC


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
    dispatcher_function: lambda_.Function
    metrics_namespace: str

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
        options.setdefault("statistic", "Maximum")
        queue = self.delayer_queue
        return cloudwatch.MathExpression(
            expression="visible + delayed",
            using_metrics={
                "visible": queue.metric_approximate_number_of_messages_visible(**options),
                "delayed": queue.metric("ApproximateNumberOfMessagesDelayed", **options),
            },
            period=options.get("period"), label=options.get("label", "Delayer queue depth"),
            color=options.get("color"),
        )

    def metric(self, metric_name: str, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """One of the runtime's own metrics (``metric_name``, e.g. ``"LatenessMs"``), as the runtime
        emits it: in ``metrics_namespace``, with the dimensions ``Service=DelayedScheduler`` and
        ``FunctionName=<this scheduler's dispatcher function>``, so each scheduler has its own.

        :param metric_name: the figure's name.
        :param options: the ``cloudwatch.MetricOptions`` fields. Default: average over 5 minutes.
        """
        options.setdefault("dimensions_map", {**SERVICE_DIMENSION,
                                              "FunctionName": self.dispatcher_function.function_name})
        return cloudwatch.Metric(namespace=self.metrics_namespace, metric_name=metric_name, **options)

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

    def metric_dispatcher_errors(self, **options: Unpack[MetricOptions]) -> cloudwatch.Metric:
        """Failed dispatcher invocations (Lambda ``Errors``).

        :param options: the ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        return self.dispatcher_function.metric_errors(**options)
