"""The widgets of the scheduler's dashboard (``DelayedScheduler.add_dashboard``), row by row."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch

if TYPE_CHECKING:
    from ._metrics import SchedulerMetrics

_WIDTH = 8  # three graphs a row (a dashboard is 24 units wide)


def _graph(title: str, left: Sequence[cloudwatch.IMetric], right: Sequence[cloudwatch.IMetric] = ()
           ) -> cloudwatch.GraphWidget:
    return cloudwatch.GraphWidget(title=title, left=list(left), right=list(right), width=_WIDTH, height=6)


def dashboard_widgets(scheduler: "SchedulerMetrics", period: Duration, limited_targets: Sequence[str] = ()
                      ) -> list[list[cloudwatch.IWidget]]:
    """The dashboard's graphs, row by row: deliveries, queues, the stream handlers and the API, then a row per
    limited target in ``limited_targets`` (the alarms' states follow them in a row of their own,
    :func:`alarm_row`, once there are alarms)."""
    s = scheduler
    rows: list[list[cloudwatch.IWidget]] = [
        [
            _graph("Lateness (ms)", [s.metric_lateness(statistic="p50", label="p50", period=period),
                                     s.metric_lateness(label="p99", period=period),
                                     s.metric_lateness(statistic="Maximum", label="max", period=period)]),
            _graph("Deliveries", [s.metric_delivered(label="delivered", period=period),
                                  s.metric_failed_attempts(label="failed attempts", period=period),
                                  s.metric_parked(label="parked (sent to the dead-letter queue)", period=period)]),
            _graph("Dispatcher", [s.metric_dispatcher_errors(label="errors", period=period),
                                  s.metric_dispatcher_throttles(label="throttles", period=period)]),
        ],
        [
            _queues_graph(s, period),
            _graph("Delayer queue's oldest message (s)",
                   [s.metric_delayer_oldest_message_age(label="age", period=period)]),
            _graph("Enqueuer iterator age (ms)", [s.metric_enqueuer_iterator_age(label="max", period=period)]),
        ],
    ]
    last: list[cloudwatch.IWidget] = [
        _graph("Sweeper", [s.metric_sweeper_errors(label="errors", period=period),
                           s.metric_sweeps_stopped_early(label="sweeps stopped early", period=period)]),
    ]
    if s.api_stage is not None:
        last.append(_graph("API 5xx", [s.metric_api_server_errors(label="5xx", period=period)]))
    rows.append(last)
    rows += [_target_row(s, target, period) for target in limited_targets]
    return rows


def _queues_graph(scheduler: "SchedulerMetrics", period: Duration) -> cloudwatch.GraphWidget:
    """The queues' depth: the delayer queue's, the dead-letter queue's and the flow queue's. A flow queue made after
    this graph (the first target with ``flow_control`` registered after ``add_dashboard``) joins it then."""
    s = scheduler
    graph = _graph("Queues (messages)", [s.metric_delayer_queue_depth(label="delayer queue", period=period),
                                         s.metric_dead_letter_queue_depth(label="dead-letter queue", period=period)])

    def add_flow_queue() -> None:
        graph.add_left_metric(s.metric_flow_queue_depth(label="flow queue", period=period))

    if s.flow_queue is None:
        s._on_flow_queue = add_flow_queue
    else:
        add_flow_queue()
    return graph


def _target_row(scheduler: "SchedulerMetrics", target: str, period: Duration) -> list[cloudwatch.IWidget]:
    """One limited target's row: how late its deliveries start (p50, p99), how many waited for room, and how many
    of its answers said slow down."""
    s = scheduler
    return [
        _graph(f"Target {target}: lateness (ms)",
               [s.metric_target_lateness(target, statistic="p50", label="p50", period=period),
                s.metric_target_lateness(target, label="p99", period=period)]),
        _graph(f"Target {target}: waiting for room", [s.metric_target_waiting(target, label="sent back to wait",
                                                                              period=period)]),
        _graph(f"Target {target}: held back", [s.metric_target_held_back(target, label="slow-down answers",
                                                                         period=period)]),
    ]


def alarm_row(alarms: Sequence[cloudwatch.Alarm]) -> list[cloudwatch.IWidget]:
    """The dashboard's last row: the states of ``alarms``."""
    return [cloudwatch.AlarmStatusWidget(alarms=list(alarms), title="Alarms", width=24)]
