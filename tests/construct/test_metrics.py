"""The ``metric_*`` methods: each reads what the runtime or AWS emits, in this scheduler's namespace and
dimensions."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_cloudwatch as cloudwatch

from cdk_delayed_scheduler._contract import contract


def test_metrics(stacks):
    stack, s = stacks["defaults"].stack, stacks["defaults"].scheduler
    lateness = s.metric_lateness()
    assert (lateness.namespace, lateness.metric_name, lateness.statistic) == ("DelayedScheduler", "LatenessMs", "p99")
    assert lateness.unit == cloudwatch.Unit.MILLISECONDS
    dimensions = stack.resolve(lateness.dimensions)
    dispatcher = stack.get_logical_id(s.dispatcher_function.node.default_child)
    assert dimensions == {"Service": "DelayedScheduler", "FunctionName": {"Ref": dispatcher}}  # this instance's
    assert stacks["custom"].scheduler.metric_lateness(statistic="Maximum").namespace == "Acme/Timers"
    assert s.metric_lateness(period=cdk.Duration.minutes(1), label="late").period.to_seconds() == 60
    depth = s.metric_dead_letter_queue_depth(period=cdk.Duration.minutes(1))
    assert depth.metric_name == "ApproximateNumberOfMessagesVisible" and depth.statistic == "Maximum"
    assert stack.resolve(depth.dimensions["QueueName"]) == {
        "Fn::GetAtt": [stack.get_logical_id(s.dead_letter_queue.node.default_child), "QueueName"]}
    assert depth.period.to_seconds() == 60
    assert s.metric_dispatcher_errors().metric_name == "Errors"


def test_delayer_depth_is_visible_plus_delayed(stacks):
    """Most of the delayer queue is delayed messages: the depth adds them to the visible ones."""
    stack, s = stacks["defaults"].stack, stacks["defaults"].scheduler
    depth = s.metric_delayer_queue_depth(period=cdk.Duration.minutes(1))
    assert isinstance(depth, cloudwatch.MathExpression)
    assert depth.expression == "visible + delayed" and depth.period.to_seconds() == 60
    queue_name = {"Fn::GetAtt": [stack.get_logical_id(s.delayer_queue.node.default_child), "QueueName"]}
    used = {key: (m.metric_name, m.statistic, m.period.to_seconds(), stack.resolve(m.dimensions["QueueName"]))
            for key, m in depth.using_metrics.items()}
    assert used == {"visible": ("ApproximateNumberOfMessagesVisible", "Maximum", 60, queue_name),
                    "delayed": ("ApproximateNumberOfMessagesDelayed", "Maximum", 60, queue_name)}
    alarm = cloudwatch.Alarm(cdk.Stack(cdk.App(), "A"), "Deep", metric=s.metric_delayer_queue_depth(statistic="Average"),
                             threshold=1000, evaluation_periods=1)
    assert alarm.metric.using_metrics["delayed"].statistic == "Average"


def test_one_metric_method_per_runtime_emf_figure(stacks):
    """Every figure ``contract.json`` names for the runtime's EMF records has a ``metric_*`` method that
    reads it, in the scheduler's namespace (a limited target's own figures: test_target_metrics.py; the flow
    queue's depth, an SQS figure of a queue this scheduler has only with a limited target: test_flow_queue.py)."""
    figures = {contract.LATENESS_METRIC, contract.FAILED_ATTEMPTS_METRIC, contract.SWEEPS_STOPPED_EARLY_METRIC}
    s = stacks["defaults"].scheduler
    readers = {m.metric_name: name for name in dir(s) if name.startswith("metric_")
               and not name.startswith(("metric_target_", "metric_flow_queue_"))
               for m in [getattr(s, name)()] if isinstance(m, cloudwatch.Metric) and m.namespace == s.metrics_namespace}
    assert figures and set(readers) == figures


def test_metric_reads_any_runtime_figure_in_this_schedulers_namespace_and_dimensions(stacks):
    """``metric(name)`` is what the runtime emits: the namespace prop, the service dimension and this
    scheduler's dispatcher (the function that emits); ``metric_lateness`` is it with its defaults."""
    b = stacks["custom"]
    s = b.scheduler
    figure = s.metric("SomeFigure", statistic="Sum", period=cdk.Duration.minutes(1))
    assert (figure.namespace, figure.metric_name, figure.statistic, figure.period.to_seconds()) == (
        "Acme/Timers", "SomeFigure", "Sum", 60)
    dispatcher = b.stack.get_logical_id(s.dispatcher_function.node.default_child)
    assert b.stack.resolve(figure.dimensions) == {**contract.METRIC_DIMENSIONS, "FunctionName": {"Ref": dispatcher}}
    lateness = s.metric_lateness()
    assert b.stack.resolve(lateness.dimensions) == b.stack.resolve(figure.dimensions)
    assert (lateness.metric_name, lateness.statistic) == (contract.LATENESS_METRIC, "p99")


def test_the_delayer_depth_takes_every_metric_option(stacks):
    s = stacks["defaults"].scheduler
    depth = s.metric_delayer_queue_depth()
    assert depth.period.to_seconds() == 300 and depth.label == "Delayer queue depth"
    assert {m.statistic for m in depth.using_metrics.values()} == {"Maximum"}
    labelled = s.metric_delayer_queue_depth(label="Waiting", color="#ff0000", statistic="p90", unit=cloudwatch.Unit.COUNT)
    assert (labelled.label, labelled.color) == ("Waiting", "#ff0000")
    assert {(m.statistic, m.unit) for m in labelled.using_metrics.values()} == {("p90", cloudwatch.Unit.COUNT)}


def test_each_new_figure_takes_the_metric_options_and_reads_this_schedulers_resources(stacks):
    """The figures the alarms read: each is this scheduler's (its functions, queues, API stage) and takes
    ``period``, ``statistic`` and ``label`` like any ``metric_*``."""
    b = stacks["custom"]
    stack, s = b.stack, b.scheduler

    def name_of(construct) -> dict:
        return {"Ref": stack.get_logical_id(construct.node.default_child)}

    queue = {"Fn::GetAtt": [stack.get_logical_id(s.delayer_queue.node.default_child), "QueueName"]}
    dlq = {"Fn::GetAtt": [stack.get_logical_id(s.dead_letter_queue.node.default_child), "QueueName"]}
    service = dict(contract.METRIC_DIMENSIONS)
    expected = {
        "metric_dispatcher_throttles": ("AWS/Lambda", "Throttles", "Sum", {"FunctionName": name_of(s.dispatcher_function)}),
        "metric_delivered": ("Acme/Timers", contract.LATENESS_METRIC, "SampleCount",
                             {**service, "FunctionName": name_of(s.dispatcher_function)}),
        "metric_failed_attempts": ("Acme/Timers", contract.FAILED_ATTEMPTS_METRIC, "Sum",
                                   {**service, "FunctionName": name_of(s.dispatcher_function)}),
        "metric_parked": ("AWS/SQS", "NumberOfMessagesSent", "Sum", {"QueueName": dlq}),
        "metric_delayer_oldest_message_age": ("AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum",
                                              {"QueueName": queue}),
        "metric_enqueuer_iterator_age": ("AWS/Lambda", "IteratorAge", "Maximum",
                                         {"FunctionName": name_of(s.enqueuer_function)}),
        "metric_sweeper_errors": ("AWS/Lambda", "Errors", "Sum", {"FunctionName": name_of(s.sweeper_function)}),
        "metric_sweeps_stopped_early": ("Acme/Timers", contract.SWEEPS_STOPPED_EARLY_METRIC, "Sum",
                                        {**service, "FunctionName": name_of(s.sweeper_function)}),
        "metric_api_server_errors": ("AWS/ApiGateway", "5XXError", "Sum",
                                     {"ApiName": "acme-timers", "Stage": name_of(s.api_stage)}),
    }
    for method, (namespace, name, statistic, dimensions) in expected.items():
        metric = getattr(s, method)()
        assert (metric.namespace, metric.metric_name, metric.statistic, stack.resolve(metric.dimensions),
                metric.period.to_seconds()) == (namespace, name, statistic, dimensions, 300), method
        changed = getattr(s, method)(period=cdk.Duration.minutes(1), statistic="Average", label="x")
        assert (changed.period.to_seconds(), changed.statistic, changed.label) == (60, "Average", "x"), method
