"""The scheduler's metrics, as methods of ``DelayedScheduler``."""

from __future__ import annotations

from typing import Any

from aws_cdk import aws_cloudwatch as cloudwatch


class SchedulerMetrics:
    """``metric_*`` methods; the class that mixes this in has the queues, the dispatcher function
    and ``metrics_namespace``."""

    def metric_dead_letter_queue_depth(self, **options: Any) -> cloudwatch.Metric:
        """Messages waiting in the dead-letter queue (``ApproximateNumberOfMessagesVisible``);
        anything above zero is a schedule or a batch that needs attention.

        :param options: ``cloudwatch.MetricOptions`` fields (``period``, ``statistic``, ...).
            Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.dead_letter_queue.metric_approximate_number_of_messages_visible(**options)

    def metric_delayer_queue_depth(self, **options: Any) -> cloudwatch.Metric:
        """Schedules waiting in the delayer queue, visible and delayed.

        :param options: ``cloudwatch.MetricOptions`` fields. Default: maximum over 5 minutes.
        """
        options.setdefault("statistic", "Maximum")
        return self.delayer_queue.metric_approximate_number_of_messages_visible(**options)

    def metric_lateness(self, **options: Any) -> cloudwatch.Metric:
        """How late deliveries start after their ``dueAt``, in milliseconds (``LatenessMs``, which
        the dispatcher emits as CloudWatch Embedded Metric Format, dimension
        ``Service=DelayedScheduler``).

        :param options: ``cloudwatch.MetricOptions`` fields. Default: p99 over 5 minutes.
        """
        options.setdefault("statistic", "p99")
        return cloudwatch.Metric(namespace=self.metrics_namespace, metric_name="LatenessMs",
                                 dimensions_map={"Service": "DelayedScheduler"}, unit=cloudwatch.Unit.MILLISECONDS,
                                 **options)

    def metric_dispatcher_errors(self, **options: Any) -> cloudwatch.Metric:
        """Failed dispatcher invocations (Lambda ``Errors``).

        :param options: ``cloudwatch.MetricOptions`` fields. Default: sum over 5 minutes.
        """
        return self.dispatcher_function.metric_errors(**options)
